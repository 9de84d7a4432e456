// The MCE extension: starts `mcec lsp` (the language server of the mcec compiler) for .mce files.
// Everything the editor shows (diagnostics, hover, definitions, completion, fixes, formatting)
// comes from the server; this file only launches it. See README.md.
"use strict";

const vscode = require("vscode");
const { LanguageClient, TransportKind } = require("vscode-languageclient/node");

let client;

function activate(context) {
  const [command, ...args] = vscode.workspace.getConfiguration("mce").get("server.command", ["mcec", "lsp"]);
  const cwd = vscode.workspace.workspaceFolders ? vscode.workspace.workspaceFolders[0].uri.fsPath : undefined;
  const server = { command, args, transport: TransportKind.stdio, options: { cwd } };
  client = new LanguageClient(
    "mce",
    "MCE language server",
    { run: server, debug: server },
    {
      // specs, and template files (`llm n : A -> B = m file "x.j2"`), where the server completes variables
      documentSelector: [
        { scheme: "file", language: "mce" },
        { scheme: "file", pattern: "**/*.j2" },
      ],
      // a spec reads the specs it uses and its Python modules from disk: tell the server when they change
      synchronize: { fileEvents: vscode.workspace.createFileSystemWatcher("**/*.{mce,py,j2}") },
    }
  );
  context.subscriptions.push(client);
  return client.start();
}

function deactivate() {
  return client ? client.stop() : undefined;
}

module.exports = { activate, deactivate };
