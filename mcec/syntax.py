"""The untyped syntax tree of a `.mce` file, as the parser builds it.

Every node is a frozen, slotted dataclass with a ``span``. No Lark object ever
appears here: the parsers (``mcec.descent``, and ``mcec.lalr``, the only module
that knows Lark exists) build these classes directly. The checker turns this tree into the typed
IR of ``mcec.typed``; nothing ever mutates a syntax node.

Chains are flat: ``a >>= b >>= c`` is one :class:`Bind` with three parts, and a
block ``{ s1; s2; }`` is a :class:`Block` of statements, so a 100,000-step
pipeline is a wide node, not a 100,000-deep one. Parentheses leave no node
behind: ``(e)`` is just ``e`` (with ``e``'s own span). Precedence, loosest
first, is ``orelse`` < ``catch`` < ``>>=`` < terms (LANGUAGE.md §5).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeAlias

from mcec.span import Span


@dataclass(frozen=True, slots=True)
class Name:
    """An identifier as written, with its span."""

    text: str
    span: Span


@dataclass(frozen=True, slots=True)
class QualName:
    """A dotted name such as ``impl.plan_action`` or ``examples.research.impl``."""

    parts: tuple[Name, ...]
    span: Span

    @property
    def dotted(self) -> str:
        """The name joined with dots, as written."""
        return ".".join(part.text for part in self.parts)


# ---------------------------------------------------------------- type syntax


@dataclass(frozen=True, slots=True)
class TypeName:
    """A type written as a (possibly dotted) name: ``str``, ``None``, ``impl.ToolCall``."""

    name: QualName
    span: Span


@dataclass(frozen=True, slots=True)
class TypeApply:
    """A generic applied to arguments: ``list[str]``, ``dict[str, int]``, ``tuple[A, B]``."""

    head: QualName
    args: tuple[TypeExpr, ...]
    span: Span


@dataclass(frozen=True, slots=True)
class TypeUnion:
    """``A | B | C`` (two or more members, flattened)."""

    members: tuple[TypeExpr, ...]
    span: Span


TypeExpr: TypeAlias = TypeName | TypeApply | TypeUnion


@dataclass(frozen=True, slots=True)
class ErrorList:
    """The ``! E1 | E2`` clause of a step, tool or pipeline; each entry names an error type."""

    errors: tuple[TypeExpr, ...]
    span: Span


# ---------------------------------------------------------------- expressions


@dataclass(frozen=True, slots=True)
class Ref:
    """A use of a declared step, fn, tool or pipeline."""

    name: Name
    span: Span


@dataclass(frozen=True, slots=True)
class Bind:
    """``e1 >>= e2 >>= …``: two or more parts, run left to right."""

    parts: tuple[Expr, ...]
    span: Span


@dataclass(frozen=True, slots=True)
class Par:
    """``par <e1, …, en>``. The parser keeps a one-branch group so that the
    checker can report MCE019 for it; ``keyword`` is the span of ``par``."""

    branches: tuple[Expr, ...]
    keyword: Span
    span: Span


@dataclass(frozen=True, slots=True)
class Each:
    """``each e`` or ``each(limit=k) e``; ``limit_span`` points at ``k``."""

    body: Expr
    limit: int | None
    limit_span: Span | None
    keyword: Span
    span: Span


@dataclass(frozen=True, slots=True)
class Local:
    """``local e``: run ``e`` and give back the input state."""

    body: Expr
    keyword: Span
    span: Span


@dataclass(frozen=True, slots=True)
class Catch:
    """``body catch E1 | E2 => handler``; chained catches nest to the left."""

    body: Expr
    errors: tuple[TypeExpr, ...]
    handler: Expr
    keyword: Span
    span: Span


@dataclass(frozen=True, slots=True)
class OrElse:
    """``body orelse fallback``; chains nest to the left."""

    body: Expr
    fallback: Expr
    keyword: Span
    span: Span


Expr: TypeAlias = Ref | Bind | Par | Each | Local | Catch | OrElse


@dataclass(frozen=True, slots=True)
class Statement:
    """One statement of a block pipeline: ``[step] EXPR ;``."""

    expr: Expr
    has_step_keyword: bool
    span: Span


@dataclass(frozen=True, slots=True)
class Block:
    """The ``{ s1; s2; … }`` body of a block pipeline (possibly empty)."""

    statements: tuple[Statement, ...]
    span: Span


# ---------------------------------------------------------------- declarations


@dataclass(frozen=True, slots=True)
class ImportedName:
    """``X`` or ``X as Y`` inside a from-import; ``bound`` is the name it binds."""

    name: Name
    alias: Name | None
    span: Span

    @property
    def bound(self) -> Name:
        """The name this entry brings into scope."""
        return self.alias if self.alias is not None else self.name


@dataclass(frozen=True, slots=True)
class FromImport:
    """``from a.b import X, Y as Z``."""

    module: QualName
    names: tuple[ImportedName, ...]
    span: Span


@dataclass(frozen=True, slots=True)
class ModuleImport:
    """``import a.b as m`` (alias set) or ``import a.b`` (refer to it as ``a.b.X``)."""

    module: QualName
    alias: Name | None
    span: Span


@dataclass(frozen=True, slots=True)
class StateDecl:
    """``state T`` or ``state T merge m.f``."""

    type: TypeExpr
    merge: QualName | None
    span: Span


@dataclass(frozen=True, slots=True)
class ErrorDecl:
    """``error T``."""

    type: TypeExpr
    span: Span


@dataclass(frozen=True, slots=True)
class StepDecl:
    """``[async] step n : A -> B [! E…] = m.f``; ``errors`` is None when ``!`` is omitted."""

    name: Name
    is_async: bool
    input: TypeExpr
    output: TypeExpr
    errors: ErrorList | None
    impl: QualName
    span: Span


@dataclass(frozen=True, slots=True)
class FnDecl:
    """``fn n : A -> B = m.f``."""

    name: Name
    input: TypeExpr
    output: TypeExpr
    impl: QualName
    span: Span


@dataclass(frozen=True, slots=True)
class ServerDecl:
    """``server n = stdio "COMMAND LINE"``; ``command`` is the decoded string."""

    name: Name
    command: str
    command_span: Span
    span: Span


@dataclass(frozen=True, slots=True)
class ToolDecl:
    """``tool n : A -> B [! E…] = server.tool_name``."""

    name: Name
    input: TypeExpr
    output: TypeExpr
    errors: ErrorList | None
    server: Name
    tool_name: Name
    span: Span


@dataclass(frozen=True, slots=True)
class PipelineDecl:
    """``pipeline n : A -> B [! E…] = EXPR;`` or ``… { STMT … }``.

    ``errors`` is None when the error set is to be inferred; ``! Never`` is an
    :class:`ErrorList` holding the single type name ``Never``.
    """

    name: Name
    input: TypeExpr
    output: TypeExpr
    errors: ErrorList | None
    body: Expr | Block
    span: Span


Decl: TypeAlias = (
    FromImport
    | ModuleImport
    | StateDecl
    | ErrorDecl
    | StepDecl
    | FnDecl
    | ServerDecl
    | ToolDecl
    | PipelineDecl
)


@dataclass(frozen=True, slots=True)
class Comment:
    """A ``# …`` comment, kept so that ``mcec fmt`` can put it back."""

    text: str
    span: Span


@dataclass(frozen=True, slots=True)
class Module:
    """A whole `.mce` file: its declarations in source order, and its comments."""

    path: str
    decls: tuple[Decl, ...]
    comments: tuple[Comment, ...]
    span: Span
