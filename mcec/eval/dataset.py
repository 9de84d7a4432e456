"""A dataset of cases, read from JSONL or YAML and validated against a pipeline's types.

A case is an object with ``inputs`` (the pipeline's input), optionally ``name`` (its id in
the report; ``case N`` when absent), ``expected_output`` (a value of the pipeline's output
type) and ``metadata`` (anything) — the field names of pydantic-evals' own dataset files,
so a pydantic-evals YAML dataset (``cases: [...]``) loads as it is. JSONL holds one case a
line (blank lines are skipped); YAML (``.yaml``, ``.yml``) and JSON (``.json``, read as YAML,
which keeps the positions) hold a list of cases, or a mapping with ``cases`` (and optionally
``name``).

Every problem is a :class:`DatasetProblem` at its line (and, in YAML and JSON, the column of
the offending value or key): a line that is not JSON, a case that is not an object, an unknown or
missing key, a name used twice, an input or expected output that does not fit the type
(one problem per place that does not fit, as ``mcec run --input`` says it). Values are
validated as ``mcec run --input`` validates its JSON (pydantic, JSON mode), so a case that
loads is one ``mcec run`` would accept.
"""

from __future__ import annotations

import difflib
import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import TypeAdapter, ValidationError

if TYPE_CHECKING:
    from pydantic_evals import Case

__all__ = ["DatasetError", "DatasetProblem", "LoadedCase", "load_dataset"]

#: The keys a case may have (pydantic-evals' names).
CASE_KEYS = ("name", "inputs", "expected_output", "metadata")
#: The last part of a path that stands for a mapping's key itself, not its value (YAML positions).
KEY = "\0key"
#: The keys a YAML dataset mapping may have.
DATASET_KEYS = ("name", "cases")


@dataclass(frozen=True, slots=True)
class DatasetProblem:
    """One problem of a dataset, at a line (1-based) and column (1-based) of its file."""

    path: str
    line: int
    column: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}:{self.column}: error: {self.message}"


class DatasetError(Exception):
    """The dataset cannot be used: its problems, in the order of the file."""

    def __init__(self, problems: list[DatasetProblem]) -> None:
        super().__init__(f"{len(problems)} problem(s)")
        self.problems = problems


@dataclass(frozen=True, slots=True)
class LoadedCase:
    """A validated case, the line it starts at, and the digest of the case as written (a
    case edited since a run was stored is run again)."""

    case: Case[Any, Any, Any]
    line: int
    digest: str


@dataclass(slots=True)
class _Raw:
    """A case as read, before validation: its value and where its parts are."""

    value: Any
    line: int
    column: int
    #: (line, column) of a place in the case, by its path of keys and indexes (YAML only).
    places: dict[tuple[str | int, ...], tuple[int, int]] = field(default_factory=dict)

    def where(self, path: tuple[str | int, ...]) -> tuple[int, int]:
        """The position of ``path`` in the case, or of the deepest enclosing part known."""
        for end in range(len(path), -1, -1):
            if path[:end] in self.places:
                return self.places[path[:end]]
        return self.line, self.column


def load_dataset(path: Path, input_type: Any, output_type: Any) -> list[LoadedCase]:
    """The cases of ``path`` (JSON lines; ``.yaml``/``.yml``/``.json``: one document), validated against
    the pipeline's ``input_type`` and ``output_type``. Raises :class:`DatasetError` with every
    problem found, ``OSError`` when the file cannot be read."""
    text = path.read_text(encoding="utf-8")
    shown = str(path)
    problems: list[DatasetProblem] = []
    if path.suffix.lower() in (".yaml", ".yml", ".json"):  # a JSON document is read as YAML: it keeps the positions
        raws = _yaml_cases(text, shown, problems)
    else:
        raws = list(_jsonl_cases(text, shown, problems))
    cases = _validated(raws, shown, input_type, output_type, problems)
    if not problems and not cases:
        problems.append(DatasetProblem(shown, 1, 1, "the dataset has no cases"))
    if problems:
        raise DatasetError(sorted(problems, key=lambda p: (p.line, p.column)))
    return cases


def _jsonl_cases(text: str, path: str, problems: list[DatasetProblem]) -> Iterator[_Raw]:
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.append(DatasetProblem(path, number, exc.colno, f"this line is not JSON: {exc.msg}"))
            continue
        yield _Raw(value, number, len(line) - len(line.lstrip()) + 1)


def _yaml_cases(text: str, path: str, problems: list[DatasetProblem]) -> list[_Raw]:
    import yaml  # type: ignore[import-untyped]  # PyYAML ships no annotations

    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, column = (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)
        problems.append(DatasetProblem(path, line, column, f"this is not YAML: {exc.problem or exc.context}"))
        return []
    except yaml.YAMLError as exc:
        problems.append(DatasetProblem(path, 1, 1, f"this is not YAML: {exc}"))
        return []
    if root is None:
        return []
    items: Any = root
    if isinstance(root, yaml.MappingNode):
        items = None
        for key, value in root.value:
            name = key.value if isinstance(key, yaml.ScalarNode) else None
            if name == "cases":
                items = value
            elif name not in DATASET_KEYS:
                problems.append(DatasetProblem(path, key.start_mark.line + 1, key.start_mark.column + 1,
                                               "unknown key `evaluators` of a dataset: evaluators are given to `mcec eval` "
                                               "(--evaluator, --judge)" if name == "evaluators" else
                                               f"unknown key `{name}` of a dataset{_close(str(name), DATASET_KEYS)}"))
        if items is None:
            problems.append(DatasetProblem(path, 1, 1, "the dataset has no `cases`"))
            return []
    if not isinstance(items, yaml.SequenceNode):
        mark = items.start_mark
        problems.append(DatasetProblem(path, mark.line + 1, mark.column + 1, "the cases are not a list"))
        return []
    constructor = yaml.SafeLoader("")
    raws: list[_Raw] = []
    for node in items.value:
        raw = _Raw(constructor.construct_document(node), node.start_mark.line + 1, node.start_mark.column + 1)
        _place(node, (), raw.places)
        raws.append(raw)
    return raws


def _place(node: Any, path: tuple[str | int, ...], places: dict[tuple[str | int, ...], tuple[int, int]]) -> None:
    """Record where each part of a YAML node is, by its path of keys and indexes."""
    import yaml

    places[path] = (node.start_mark.line + 1, node.start_mark.column + 1)
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode):
                places[(*path, key.value, KEY)] = (key.start_mark.line + 1, key.start_mark.column + 1)
                _place(value, (*path, key.value), places)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _place(item, (*path, index), places)


def _validated(
    raws: list[_Raw], path: str, input_type: Any, output_type: Any, problems: list[DatasetProblem]
) -> list[LoadedCase]:
    from pydantic_evals import Case

    inputs_adapter: TypeAdapter[Any] = TypeAdapter(input_type)
    output_adapter: TypeAdapter[Any] = TypeAdapter(output_type)
    first_line: dict[str, int] = {}
    cases: list[LoadedCase] = []
    for index, raw in enumerate(raws, start=1):
        before = len(problems)

        def problem(where: tuple[str | int, ...], message: str, raw: _Raw = raw) -> None:
            line, column = raw.where(where)
            problems.append(DatasetProblem(path, line, column, message))

        if not isinstance(raw.value, dict):
            problem((), f"a case is an object with `inputs` (and optionally `name`, `expected_output`, "
                        f"`metadata`), not {_kind(raw.value)}")
            continue
        for key in raw.value:
            if key not in CASE_KEYS:
                problem((str(key), KEY), f"unknown key `{key}` of a case{_close(str(key), CASE_KEYS)}")
        name = raw.value.get("name", f"case {index}")
        label = f"case `{name}`" if "name" in raw.value else "the case"
        if not isinstance(name, str) or not name:
            problem(("name",), f"a case's `name` is a non-empty string, not {_kind(name)}")
            name, label = f"case {index}", "the case"
        if name in first_line:
            problem(("name",), f"the name `{name}` is used twice (first at line {first_line[name]})")
        first_line.setdefault(name, raw.line)
        if "inputs" not in raw.value:
            problem((), f"{label} has no `inputs`")
            continue
        inputs = _fit(inputs_adapter, raw.value["inputs"], "inputs", label, problem)
        expected = None
        if raw.value.get("expected_output") is not None:
            expected = _fit(output_adapter, raw.value["expected_output"], "expected_output", label, problem)
        if len(problems) > before:
            continue
        written = json.dumps(raw.value, sort_keys=True, default=str, ensure_ascii=False)
        case: Case[Any, Any, Any] = Case(
            name=name, inputs=inputs, expected_output=expected, metadata=raw.value.get("metadata")
        )
        cases.append(LoadedCase(case, raw.line, hashlib.sha256(written.encode()).hexdigest()))
    return cases


def _fit(adapter: TypeAdapter[Any], value: Any, key: str, label: str, problem: Any) -> Any:
    """``value`` validated as ``mcec run --input`` validates its JSON; one problem a place that
    does not fit (None then)."""
    try:
        return adapter.validate_json(json.dumps(value, default=str))
    except ValidationError as exc:
        for err in exc.errors():
            where = tuple(err["loc"])
            shown = ".".join(str(part) for part in (key, *where))
            problem((key, *where), f"{label}: {shown}: {err['msg']}")
        return None


def _kind(value: object) -> str:
    """``a list``, ``a number``, …: what a JSON value is, for a message."""
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if value is None:
        return "null"
    return f"a {type(value).__name__}"


def _close(word: str, known: tuple[str, ...]) -> str:
    close = difflib.get_close_matches(word, known, n=1)
    return f"; did you mean `{close[0]}`?" if close else f" (expected {', '.join(f'`{k}`' for k in known)})"
