"""Diagnostics as data: every phase reports problems as :class:`Diagnostic` values.

Prose for a problem is written where the problem is detected, once; rendering
(source excerpt, carets, colour, JSON) lives in ``mcec.render``. Codes are stable
and listed in :data:`CODES` (docs/language.md §8); a code not listed there is a bug.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Literal, TypeAlias

from mcec.span import Span


class Severity(enum.Enum):
    """How bad a diagnostic is; any ``ERROR`` makes the run exit 1."""

    ERROR = "error"
    WARNING = "warning"


#: Every diagnostic code mcec emits. A code is this type, not a string, so that mypy rejects a
#: misspelt or unregistered code where it is written; a test holds it to :data:`CODES` and to the
#: reference's table (docs/language.md §8, what ``mcec explain`` prints).
Code: TypeAlias = Literal[
    "MCE001",
    "MCE002",
    "MCE003",
    "MCE004",
    "MCE005",
    "MCE006",
    "MCE007",
    "MCE010",
    "MCE011",
    "MCE012",
    "MCE013",
    "MCE014",
    "MCE015",
    "MCE016",
    "MCE017",
    "MCE018",
    "MCE019",
    "MCE020",
    "MCE021",
    "MCE022",
    "MCE023",
    "MCE024",
    "MCE025",
    "MCE026",
    "MCE027",
    "MCE028",
    "MCE029",
    "MCE030",
    "MCE031",
    "MCE032",
    "MCE033",
    "MCE034",
    "MCE035",
    "MCE040",
    "MCE100",
    "W001",
    "W002",
    "W003",
    "W004",
    "W005",
]


#: Every diagnostic code mcec emits, with a one-line description (docs/language.md §8).
CODES: dict[Code, str] = {
    "MCE001": "syntax error",
    "MCE002": "unknown name",
    "MCE003": "a name declared twice",
    "MCE004": "state missing or declared twice",
    "MCE005": "file could not be read",
    "MCE006": "output could not be written",
    "MCE007": "the spec's Python side could not be loaded (a module that raises, a missing implementation)",
    "MCE010": "bind mismatch",
    "MCE011": "par branches take different input types",
    "MCE012": "pipeline body does not have its declared type",
    "MCE013": "an undeclared error escapes",
    "MCE014": "catch of an error that cannot happen",
    "MCE015": "pipelines, or specs, refer to each other in a cycle",
    "MCE016": "Python keyword or reserved word used as a name",
    "MCE017": "unknown type or wrong generic arity",
    "MCE018": "error type not declared",
    "MCE019": "a number out of range: par with fewer than two branches, each limit, loop/retry bound below 1, timeout not above 0",
    "MCE020": "catch handler or orelse fallback does not fit",
    "MCE021": "a match that does not cover its input type",
    "MCE022": "a loop whose body never continues or never ends, or a pattern or loop input that cannot be tested at run time",
    "MCE023": "an llm template that does not parse, reads a variable its input does not give, or is a missing, non-regular or oversized file",
    "MCE024": "an llm output type the runtime cannot parse a model's answer into",
    "MCE025": "a type that cannot play its role: an error type isinstance cannot test, a tool input that is not a model",
    "MCE026": "a step's or fn's Python implementation does not fit its declaration",
    "MCE027": "a model option that is unknown, given twice, of the wrong kind or out of range (or a key in the spec)",
    "MCE028": "a pipeline of another spec whose state type differs, used without a sub-agent adapter",
    "MCE029": "a spec this one uses does not check",
    "MCE030": "a sub-agent adapter local(state=f) p that does not fit: f not a fn from this state to p's, or p not another spec's pipeline",
    "MCE031": "a toolbox entry that cannot be one, a spawn of no toolbox, or a plan naming something outside its toolbox",
    "MCE032": "a plan that is too big: too long, too many names, or nested too deep",
    "MCE033": "a value a durable run records (an effect's value or error, the state) whose type cannot be recorded as JSON",
    "MCE034": "an ask step's answer type that a person's answer cannot be validated as",
    "MCE035": "a migration that does not fit: a migrate_state or migrate_output_NAME fn not giving the type it migrates to, or of no step, tool, llm or ask; a rename of a name still declared, or to no effect",
    "MCE040": "a replayed run asked for an effect its recording does not hold, or holds as another effect or with a value of another type",
    "MCE100": "mypy reported a problem in the generated code",
    "W001": "declaration never used",
    "W002": "a match arm that can never be reached",
    "W003": "a declaration that shadows a built-in name",
    "W004": "an llm template not checked against its input or state type, whose fields cannot be read statically",
    "W005": "a stream llm whose answer has nothing to stream before its value (neither text nor a class)",
}


@dataclass(frozen=True, slots=True)
class Label:
    """A secondary span with a short message (``produces str``, ``first declared here``)."""

    span: Span
    message: str


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """One problem: code, severity, message, where, and how to fix it."""

    code: Code
    severity: Severity
    message: str
    span: Span
    labels: tuple[Label, ...] = ()
    help: str | None = None
    #: More detail for those who ask (``--verbose``, the JSON output): mypy's own
    #: words behind an MCE100, say. Not part of what a diagnostic is.
    note: str | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if self.code not in CODES:
            raise ValueError(f"unregistered diagnostic code {self.code!r}")

    @property
    def is_error(self) -> bool:
        """True for errors, False for warnings."""
        return self.severity is Severity.ERROR

    def sort_key(self) -> tuple[str, int, int, str]:
        """Order diagnostics by file, then position, then code."""
        return (self.span.path, self.span.start, self.span.end, self.code)


def error(
    code: Code,
    message: str,
    span: Span,
    labels: tuple[Label, ...] = (),
    help: str | None = None,
    note: str | None = None,
) -> Diagnostic:
    """Shorthand for an error diagnostic."""
    return Diagnostic(code, Severity.ERROR, message, span, labels, help, note)


def warning(
    code: Code,
    message: str,
    span: Span,
    labels: tuple[Label, ...] = (),
    help: str | None = None,
) -> Diagnostic:
    """Shorthand for a warning diagnostic."""
    return Diagnostic(code, Severity.WARNING, message, span, labels, help)


@dataclass(slots=True)
class DiagnosticSink:
    """Collects diagnostics so that a phase can report many problems and keep going."""

    items: list[Diagnostic] = field(default_factory=list)

    def add(self, diagnostic: Diagnostic) -> None:
        """Record one diagnostic."""
        self.items.append(diagnostic)

    def extend(self, diagnostics: tuple[Diagnostic, ...] | list[Diagnostic]) -> None:
        """Record several diagnostics."""
        self.items.extend(diagnostics)

    @property
    def has_errors(self) -> bool:
        """True when any recorded diagnostic is an error."""
        return any(d.is_error for d in self.items)

    def sorted(self) -> tuple[Diagnostic, ...]:
        """The diagnostics in source order, duplicates removed."""
        unique = dict.fromkeys(self.items)
        return tuple(sorted(unique, key=Diagnostic.sort_key))
