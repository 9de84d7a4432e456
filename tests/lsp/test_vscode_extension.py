"""editors/vscode: the manifest and configuration are well formed, the TextMate grammar is the one
generate_grammar.py makes from grammar/mce.lark, and, run over every example by a small TextMate
tokenizer below (one line at a time, earliest match first, begin/end rules across lines, as
VS Code's engine does), it gives the parser's keywords, declared names and comments their scopes."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mcec.check.pyindex import PythonIndex
from mcec.lsp.analysis import Role, analyse
from mcec.lsp.features import keyword_spans
from mcec.span import SourceFile

ROOT = Path(__file__).resolve().parents[2]
EXTENSION = ROOT / "editors" / "vscode"
# the generator is a script of the extension, not a module of the project: loaded from its file
_spec = importlib.util.spec_from_file_location("generate_grammar", EXTENSION / "generate_grammar.py")
assert _spec is not None and _spec.loader is not None
generate_grammar = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(generate_grammar)

EXAMPLES = sorted((ROOT / "examples").rglob("*.mce"))
GRAMMAR = json.loads((EXTENSION / "syntaxes" / "mce.tmLanguage.json").read_text(encoding="utf-8"))


def test_the_manifest_declares_the_language_grammar_and_client() -> None:
    manifest = json.loads((EXTENSION / "package.json").read_text(encoding="utf-8"))
    [language] = manifest["contributes"]["languages"]
    assert language["id"] == "mce" and language["extensions"] == [".mce"]
    assert (EXTENSION / language["configuration"]).is_file()
    [grammar] = manifest["contributes"]["grammars"]
    assert grammar["language"] == "mce" and grammar["scopeName"] == GRAMMAR["scopeName"] == "source.mce"
    assert (EXTENSION / grammar["path"]).is_file()
    assert (EXTENSION / manifest["main"]).is_file()
    assert "vscode-languageclient" in manifest["dependencies"] and "@vscode/vsce" in manifest["devDependencies"]
    assert manifest["contributes"]["configuration"]["properties"]["mce.server.command"]["default"] == ["mcec", "lsp"]
    configuration = json.loads((EXTENSION / "language-configuration.json").read_text(encoding="utf-8"))
    assert configuration["comments"]["lineComment"] == "#"
    assert ["{", "}"] in configuration["brackets"]


def _node_and_npm() -> tuple[str, str]:
    """The machine's ``node`` and ``npm``: the client is tested, never skipped (.ci/run installs
    Debian's ``nodejs`` and ``npm`` where they are missing)."""
    node, npm = shutil.which("node"), shutil.which("npm")
    assert node is not None and npm is not None, "the VS Code client's test needs node and npm (apt-get install nodejs npm)"
    return node, npm


@pytest.fixture(scope="module")
def client_modules(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The extension's dependencies (vscode-languageclient and what it brings), installed from the
    npm registry by the extension's own package.json, outside the checkout."""
    _, npm = _node_and_npm()
    folder = tmp_path_factory.mktemp("vscode-client")
    shutil.copy(EXTENSION / "package.json", folder / "package.json")
    done = subprocess.run([npm, "install", "--omit=dev", "--no-audit", "--no-fund", "--ignore-scripts"],
                          cwd=folder, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return folder / "node_modules"


def test_the_client_starts_the_server_and_gets_its_diagnostics(client_modules: Path, tmp_path: Path) -> None:
    """extension.js activated as VS Code would (tests/lsp/vscode_client.js: the `vscode` API stood
    in for, the rest real): the client it builds names `mcec lsp` over stdio in the workspace's
    folder, for .mce specs and templates; that server, started as the client starts it and spoken
    to over the LSP, answers a spec with an unknown name with mcec check's diagnostic."""
    node, _ = _node_and_npm()
    (tmp_path / "impl.py").write_text("def ask(text: str) -> int:\n    return len(text)\n", encoding="utf-8")
    spec = tmp_path / "agent.mce"
    spec.write_text("import impl\n\nfn ask : str -> int = impl.ask\n\npipeline main : str -> int = aks;\n",
                    encoding="utf-8")
    # `mcec` as the default setting names it: this Python's, first on the PATH
    env = dict(os.environ, PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))
    done = subprocess.run(
        [node, str(Path(__file__).with_name("vscode_client.js")), str(EXTENSION), str(client_modules), str(tmp_path),
         str(spec)],
        capture_output=True, text=True, timeout=120, env=env,
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert (seen["clients"], seen["id"], seen["subscribed"]) == (1, "mce", 1)
    assert seen["server"] == {"command": "mcec", "args": ["lsp"], "cwd": str(tmp_path), "transport": 0}  # stdio
    assert seen["debugServerIsTheSame"]
    assert {"scheme": "file", "language": "mce"} in seen["documentSelector"]
    assert {"scheme": "file", "pattern": "**/*.j2"} in seen["documentSelector"]
    errors = [d for d in seen["diagnostics"] if d["severity"] == 1]
    assert errors == [{
        "range": {"start": {"line": 4, "character": 29}, "end": {"line": 4, "character": 32}},
        "message": "unknown name `aks`\nhelp: did you mean `ask`?", "severity": 1, "code": "MCE002", "source": "mcec",
    }]
    assert seen["exitCode"] == 0  # it stopped when the client said exit


def test_the_grammar_is_generated_from_the_parsers_grammar() -> None:
    assert (EXTENSION / "syntaxes" / "mce.tmLanguage.json").read_text(encoding="utf-8") == generate_grammar.render()
    soft = {p["match"] for p in GRAMMAR["repository"]["soft-keyword"]["patterns"]}
    assert "\\bmatch(?=\\s*(?:\\{|#|$))" in soft and "\\btoolbox(?![A-Za-z0-9_])" in soft


# ---------------------------------------------------------------- a TextMate tokenizer


def _rules(patterns: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``patterns`` with every include replaced by the repository's rules."""
    flat: list[dict[str, Any]] = []
    for rule in patterns:
        if "include" in rule:
            flat.extend(_rules([GRAMMAR["repository"][rule["include"].lstrip("#")]]))
        elif "patterns" in rule and "begin" not in rule:
            flat.extend(_rules(rule["patterns"]))
        else:
            flat.append(rule)
    return flat


def tokenize(text: str) -> list[tuple[int, int, str]]:
    """(start, end, scope) of every token the grammar gives ``text``."""
    rules = _rules(GRAMMAR["patterns"])
    tokens: list[tuple[int, int, str]] = []
    open_rule: dict[str, Any] | None = None
    offset = 0
    for line in text.split("\n"):
        at = 0
        while at <= len(line):
            if open_rule is not None:
                end = re.compile(open_rule["end"]).search(line, at)
                stop = end.end() if end is not None else len(line)
                tokens.append((offset + at, offset + stop, open_rule["name"]))
                at = stop
                if end is None:
                    break
                open_rule = None
                continue
            best: tuple[re.Match[str], dict[str, Any]] | None = None
            for rule in rules:
                found = re.compile(rule.get("match") or rule["begin"]).search(line, at)
                if found is not None and (best is None or found.start() < best[0].start()):
                    best = (found, rule)
            if best is None or best[0].end() == best[0].start():
                break
            found, rule = best
            if "begin" in rule:
                open_rule = rule
                tokens.append((offset + found.start(), offset + found.end(), rule["name"]))
            elif "captures" in rule:
                for group, capture in rule["captures"].items():
                    if found.group(int(group)) is not None:
                        tokens.append((offset + found.start(int(group)), offset + found.end(int(group)), capture["name"]))
            else:
                tokens.append((offset + found.start(), offset + found.end(), rule["name"]))
            at = found.end()
        offset += len(line) + 1
    return tokens


def _scope_at(tokens: list[tuple[int, int, str]], start: int, end: int) -> str | None:
    """The scope of the token covering ``[start, end)``."""
    return next((scope for s, e, scope in tokens if s <= start and end <= e), None)


@pytest.mark.parametrize("spec", EXAMPLES, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_grammar_scopes_what_the_parser_sees(spec: Path) -> None:
    source = SourceFile(str(spec), spec.read_text(encoding="utf-8"))
    analysis = analyse(source, None, PythonIndex.for_directory(spec=spec))
    assert analysis.module is not None
    tokens = tokenize(source.text)
    for comment in analysis.module.comments:
        assert _scope_at(tokens, comment.start, comment.end) == "comment.line.number-sign.mce", comment
    for start, end in keyword_spans(analysis.module):
        scope = _scope_at(tokens, start, end)
        assert scope is not None and scope.startswith("keyword."), (source.text[start:end], scope)
    for name in analysis.names:
        scope = _scope_at(tokens, name.span.start, name.span.end)
        match name.role:
            case Role.DECL:
                assert scope == "entity.name.function.mce", (name, scope)
            case Role.TYPE if name.text[:1].isupper():
                assert scope == "entity.name.type.mce", (name, scope)
            case Role.REF:
                assert scope is not None and not scope.startswith(("keyword", "comment", "string")), (name, scope)
            case _:
                pass  # Python paths, imports, templates, lower-case types: no claim
