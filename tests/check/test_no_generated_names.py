"""No diagnostic names what mcec generated (issue 20).

A user reads diagnostics about the spec they wrote, so no diagnostic text — a
message, a label, a help line — across the golden suite may name a generated
module (``…_mce.py``), a name the code generator allocates (``_p_orelse_g``,
``SITE_3``), a runtime function only generated code calls (``"stop"``,
``raised(``), or a line of generated code; and every diagnostic is placed in a
``.mce`` file. mypy's own words stay available in a diagnostic's ``note``
(``--verbose``, the JSON output), which is therefore not held to this.

The vocabulary is derived from the compiler itself, not typed in: the
generated module's name from :func:`mcec.codegen.module_name_for`, the
allocated names from the ``fresh(…)`` calls of the emitter (read with
:mod:`ast`), the runtime names from what the emitter imports from the
runtime's modules for generated code and from ``agentmonad.compiled.__all__``.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

import agentmonad.compiled
from mcec.codegen import emitter, module_name_for
from mcec.codegen.mypy_check import in_spec_terms
from mcec.syntax.errors import KEYWORDS

ROOT = Path(__file__).resolve().parents[2]
#: Golden files that are not diagnostics: generated modules, parse trees.
NOT_DIAGNOSTICS = (".py.txt", ".ast.txt")
GOLDENS = sorted(
    path
    for pattern in ("tests/**/*cases*/**/*.txt", "tests/**/*cases*/**/*.json")
    for path in ROOT.glob(pattern)
    if not path.name.endswith(NOT_DIAGNOSTICS)
)


def _emitter_tree() -> ast.Module:
    return ast.parse(Path(emitter.__file__).read_text(encoding="utf-8"))


def _constant(node: ast.expr) -> str | None:
    """The value of a string constant, or of a module-level constant of the emitter it names."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name) and isinstance(getattr(emitter, node.id, None), str):
        return str(getattr(emitter, node.id))
    return None


def _runtime_names() -> frozenset[str]:
    """Names generated code takes from the runtime's modules for it (not the top-level ``agentmonad``,
    whose ``Ok``, ``Err``, ``Outcome`` the user writes too): ``self.runtime("stop", COMPILED)``."""
    names = set(agentmonad.compiled.__all__)
    for node in ast.walk(_emitter_tree()):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "runtime":
            if len(node.args) != 2 or (name := _constant(node.args[0])) is None:
                continue  # no module given: the runtime's top level
            module = _constant(node.args[1])  # None: an expression, `f"{RUNTIME}.tools"`
            if module is None or module.startswith(f"{emitter.RUNTIME}."):
                names.add(name)  # not `runtime("Never", "typing")`
    return frozenset(names)


def _allocated_patterns() -> list[str]:
    """The emitter's ``fresh(…)`` names as patterns (``f"_{owner}_{label}"`` → ``_\\w+_\\w+``), those
    no spec would write: a leading underscore or capital. ``r``, ``v``, ``state`` are words of specs too."""
    patterns: list[str] = []
    for node in ast.walk(_emitter_tree()):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("fresh", "shared")):
            continue
        [argument] = node.args
        if isinstance(argument, ast.JoinedStr):
            parts = [re.escape(p.value) if isinstance(p, ast.Constant) else r"[A-Za-z0-9]\w*" for p in argument.values]
            pattern = "".join(parts)
        elif (value := _constant(argument)) is not None:
            pattern = re.escape(value)
        else:
            continue
        if pattern.startswith("_") or pattern[:1].isupper():
            patterns.append(pattern)
    return patterns


def _forbidden() -> re.Pattern[str]:
    generated_module = re.escape(module_name_for("x.mce").removeprefix("x") + ".py")  # `_mce.py`
    keywords = set(KEYWORDS.values())
    runtime: list[str] = []
    for name in sorted(_runtime_names()):
        runtime.append(f'"{re.escape(name)}"')  # as mypy quotes names
        if name not in keywords:  # `each(limit=2)` is spec syntax; `group(` is generated code
            runtime.append(rf"(?<!\w){re.escape(name)}[(\[]")
    allocated = [rf"(?<![\w`]){p}(?!\w)" for p in _allocated_patterns()]
    generated_line = [r"\.py:\d+", r"\bgenerated (?:code |module )?(?:at |on )?line", r"\bline \d+ of the generated"]
    return re.compile("|".join([generated_module, *runtime, *allocated, *generated_line]))


FORBIDDEN = _forbidden()


def _a_source(file: str) -> bool:
    """A file a diagnostic may name: a spec, or a plan's text (``<plan t>``, docs/language.md §12)."""
    return file.endswith(".mce") or (file.startswith("<plan ") and file.endswith(">"))


def _texts_of_json(path: Path) -> Iterator[tuple[str, str]]:
    """(where, text) of each diagnostic text in a JSON-lines golden; the diagnostic's file too."""
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        record = json.loads(line)
        if "severity" not in record:
            continue  # a summary
        yield f"{path.name}:{number} file", "" if _a_source(record["file"]) else f"not a spec: {record['file']}"
        yield f"{path.name}:{number} message", record["message"]
        yield f"{path.name}:{number} help", record.get("help") or ""
        for label in record.get("labels", []):
            yield f"{path.name}:{number} label", label["message"]
            yield f"{path.name}:{number} label file", "" if _a_source(label["file"]) else f"not a spec: {label['file']}"


#: The lines of rendered text that are mcec's words, not the spec's source: the header
#: (``error[MCE013]: …``), where it is (`` --> f.mce:1:2``), labels (``|   ^^^ text``), help.
_RENDERED = re.compile(r"^(?:(?:error|warning)\[\w+\]: .*|\s*--> .*|\s*\|\s*[\^\-]+ .*|\s*= help: .*)$")


def _texts_of_text(path: Path) -> Iterator[tuple[str, str]]:
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if _RENDERED.match(line):
            if line.lstrip().startswith("--> "):
                # `--> f.mce:1:2`, `--> f.mce` (a whole file), or `--> g.mce:1:2: label` for a
                # label in another file
                found = re.match(r"\s*--> (.+?)(?::\d+:\d+(?:: (.*))?)?$", line)
                assert found is not None, line
                where = found.group(1)
                yield f"{path.name}:{number}", "" if _a_source(where) else f"not a spec: {where}"
                yield f"{path.name}:{number} label", found.group(2) or ""
            else:
                yield f"{path.name}:{number}", line


def test_the_golden_suite_is_found() -> None:
    folders = {path.parent.relative_to(ROOT).as_posix() for path in GOLDENS}
    assert {"tests/check/cases", "tests/check/python_cases", "tests/syntax/cases/errors"} <= folders, folders
    assert any(path.name.endswith(".check.txt") for path in GOLDENS)  # mypy's findings, in spec terms


@pytest.mark.parametrize("path", GOLDENS, ids=[p.relative_to(ROOT).as_posix() for p in GOLDENS])
def test_no_golden_diagnostic_names_generated_code(path: Path) -> None:
    texts = list(_texts_of_json(path) if path.suffix == ".json" else _texts_of_text(path))
    assert texts or not path.read_text(encoding="utf-8").strip(), f"no diagnostic read from {path}"
    offending = [(where, text) for where, text in texts if text.startswith("not a spec:") or FORBIDDEN.search(text)]
    assert not offending, offending


#: What mypy says of generated code naming generated things (issue 20's examples) …
RAW_GENERATED = [
    'Argument 1 to "stop" has incompatible type "Err[app.S, app.E2]"; expected "Err[app.S, app.E1]"  [arg-type]',
    'Argument 2 to "_p_orelse_g" has incompatible type "app.Turn"; expected "str"  [arg-type]',
    'Argument 4 to "raised" has incompatible type "tuple[type[app.E2]]"; expected "tuple[type[app.E1], ...]"  [arg-type]',
    'Name "_main_par_catch" is not defined  [name-defined]',
]
#: … and without (the implementation signatures of the issue, a body's result).
RAW_OTHER = [
    'Incompatible types in assignment (expression has type "Callable[[app.S, str], Coroutine[Any, Any, '
    'Err[app.S, Never] | Ok[app.S, str]]]", variable has type "Callable[[app.S, str], Ok[app.S, str] | Err[app.S, Never]]")  [assignment]',
    'Incompatible return value type (got "Ok[app.S, app.Turn] | Err[app.S, Never]", expected '
    '"Ok[app.S, app.Answer] | Err[app.S, Never]")  [return-value]',
]


@pytest.mark.parametrize("raw", RAW_GENERATED)
def test_the_vocabulary_recognises_generated_names(raw: str) -> None:
    """The check above can fail: mypy's raw words on generated code are caught by it …"""
    assert FORBIDDEN.search(raw), raw


@pytest.mark.parametrize("raw", RAW_GENERATED + RAW_OTHER)
def test_mypy_findings_are_said_without_generated_names(raw: str) -> None:
    """… and what an MCE100 says of them is not."""
    said = in_spec_terms(raw)
    assert not FORBIDDEN.search(said) and "[arg-type]" not in said, said


def test_the_vocabulary_is_the_emitters() -> None:
    """The derived lists hold what the issue names, so an emitter change that renames them is noticed."""
    assert {"stop", "raised", "group", "check_fresh"} <= _runtime_names()
    allocated = re.compile("|".join(f"(?:{p})$" for p in _allocated_patterns()))
    for name in ("_p_orelse_g", "_main_body", "SITE_3"):
        assert allocated.match(name), name
    assert FORBIDDEN.search("error_escapes_mce.py:29:21: error")
