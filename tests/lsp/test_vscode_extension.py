"""editors/vscode: the manifest and configuration are well formed, the TextMate grammar is the one
generate_grammar.py makes from grammar/mce.lark, and, run over every example by a small TextMate
tokenizer below (one line at a time, earliest match first, begin/end rules across lines, as
VS Code's engine does), it gives the parser's keywords, declared names and comments their scopes."""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import subprocess
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


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_the_client_is_valid_javascript() -> None:
    subprocess.run(["node", "--check", str(EXTENSION / "extension.js")], check=True, timeout=60)


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
