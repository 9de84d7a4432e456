// Drives editors/vscode/extension.js as VS Code would and prints, as one JSON line, what the
// extension asked vscode-languageclient for and what the language server it names answered.
//
//   node vscode_client.js EXTENSION_DIR NODE_MODULES WORKSPACE SPEC
//
// VS Code itself cannot run here, so the `vscode` module the extension imports is stood in for by
// the few members it uses (the setting read gives the manifest's default, as VS Code does when it
// is not set), and `vscode-languageclient/node` by a recorder of the client the extension builds.
// The server the extension names is then started as vscode-languageclient's node client starts a
// stdio server (a child process with those command, arguments and cwd), and spoken to through
// vscode-languageserver-protocol's own connection (what the client uses underneath, installed
// with it): initialize, open SPEC, wait for the diagnostics published for it, shut down.
"use strict";

const Module = require("module");
const childProcess = require("child_process");
const fs = require("fs");
const path = require("path");
const { pathToFileURL } = require("url");

const [extensionDir, modulesDir, workspace, spec] = process.argv.slice(2);
const manifest = JSON.parse(fs.readFileSync(path.join(extensionDir, "package.json"), "utf8"));
const settings = manifest.contributes.configuration.properties;
const protocol = require(path.join(modulesDir, "vscode-languageserver-protocol", "node"));

const vscode = {
  workspace: {
    workspaceFolders: [{ uri: { fsPath: workspace } }],
    getConfiguration: (section) => ({
      get: (key, fallback) => {
        const setting = settings[`${section}.${key}`];
        return setting === undefined ? fallback : setting.default;
      },
    }),
    createFileSystemWatcher: (glob) => ({ glob, dispose() {} }),
  },
};

const built = [];
// the values vscode-languageclient gives TransportKind (lib/node/main.js)
const TransportKind = { stdio: 0, ipc: 1, pipe: 2, socket: 3 };
class LanguageClient {
  constructor(id, name, serverOptions, clientOptions) {
    built.push({ id, name, serverOptions, clientOptions });
  }
  start() {
    return Promise.resolve();
  }
  stop() {
    return Promise.resolve();
  }
  dispose() {}
}

const load = Module._load;
Module._load = function (request, parent, isMain) {
  if (request === "vscode") return vscode;
  if (request === "vscode-languageclient/node") return { LanguageClient, TransportKind };
  return load.call(this, request, parent, isMain);
};

async function main() {
  const extension = require(path.join(extensionDir, manifest.main));
  const context = { subscriptions: [] };
  await extension.activate(context);
  const [client] = built;
  const server = client.serverOptions.run;
  const child = childProcess.spawn(server.command, server.args, {
    cwd: server.options.cwd,
    stdio: ["pipe", "pipe", "inherit"],
  });
  const spawned = new Promise((resolve, reject) => {
    child.on("spawn", resolve);
    child.on("error", reject);
  });
  const exited = new Promise((resolve) => child.on("exit", (code) => resolve(code)));
  await spawned;
  const connection = protocol.createProtocolConnection(
    new protocol.StreamMessageReader(child.stdout),
    new protocol.StreamMessageWriter(child.stdin)
  );
  const uri = pathToFileURL(spec).href;
  const published = new Promise((resolve) => {
    connection.onNotification(protocol.PublishDiagnosticsNotification.type, (params) => {
      if (params.uri === uri) resolve(params.diagnostics);
    });
  });
  connection.listen();
  const root = pathToFileURL(workspace).href;
  const initialized = await connection.sendRequest(protocol.InitializeRequest.type, {
    processId: process.pid,
    rootUri: root,
    workspaceFolders: [{ uri: root, name: path.basename(workspace) }],
    capabilities: { textDocument: { publishDiagnostics: {} } },
  });
  await connection.sendNotification(protocol.InitializedNotification.type, {});
  await connection.sendNotification(protocol.DidOpenTextDocumentNotification.type, {
    textDocument: { uri, languageId: "mce", version: 1, text: fs.readFileSync(spec, "utf8") },
  });
  const diagnostics = await published;
  await connection.sendRequest(protocol.ShutdownRequest.type);
  await connection.sendNotification(protocol.ExitNotification.type);
  const exitCode = await exited;
  connection.dispose();
  process.stdout.write(
    JSON.stringify({
      clients: built.length,
      id: client.id,
      server: { command: server.command, args: server.args, cwd: server.options.cwd, transport: server.transport },
      debugServerIsTheSame: client.serverOptions.debug === server,
      documentSelector: client.clientOptions.documentSelector,
      watching: client.clientOptions.synchronize.fileEvents.glob,
      subscribed: context.subscriptions.length,
      serverName: initialized.serverInfo ? initialized.serverInfo.name : null,
      diagnostics,
      exitCode,
    }) + "\n"
  );
}

main().catch((error) => {
  process.stderr.write(`${error && error.stack ? error.stack : error}\n`);
  process.exit(1);
});
