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

Decision: a node stores where it is as three plain fields, ``source``,
``start`` and ``end`` (always its last three, in that order), and ``span`` is a
property of the shared base :class:`Node` that makes the :class:`Span` when it
is read. A node's own ``Span`` object used to be built at parse time: on the
benchmark spec (``benchmarks/frontend_bench.py``) a line built 23.9 GC-tracked
objects, 8.0 of them spans, each costing about 2,000 CPU instructions
(allocation, the class switch of :mod:`mcec.fastinit`, a Python call). Without
them the recursive-descent parse takes 78,100 instead of 89,100 instructions
per line (callgrind, deterministic; -12%) and builds 16.7 objects per line
(-30%, which also shortens the collector's pass over the tree). Most spans are
never read: name resolution reads about 0.7 per line (the ones it stores in
bindings and typed declarations), which costs it 2,000 instructions per line
more; the formatter and diagnostics read only the ones they use.

Equality and hashing mean what they did: the three fields compare ``source``,
``start`` and ``end`` as the ``Span`` field did. The repr shows
``span=Span(path, line:col-line:col)`` in place of the three fields (the
source's text may be megabytes). A keyword's span is a property too (see
:class:`KeywordNode`). The few other positions that are not
the node's own extent (``Each.limit_span``, ``ServerDecl.command_span``) stay
``Span`` fields. :class:`Module` keeps a ``span`` field.
"""

from __future__ import annotations

from dataclasses import Field, dataclass, field, fields
from typing import Any, ClassVar, TypeAlias

from mcec.span import SourceFile, Span, make_span


#: The fields that say where a node (or its keyword) is, not what it is: offsets and
#: the file. Comparing trees "by meaning" (``mcec fmt``'s check, tests) skips them.
POSITION_FIELDS: frozenset[str] = frozenset({"source", "start", "end", "keyword_at"})


class Node:
    """Base of every syntax node but :class:`Module`: the ``span`` property and the repr.

    It adds no slots (``__slots__ = ()``), so a node's layout is its own
    fields only, which :func:`mcec.fastinit.fast_constructor` relies on.
    """

    __slots__ = ()

    # Declared here for the type checker; each subclass defines them as its last three fields.
    __dataclass_fields__: ClassVar[dict[str, Field[Any]]]
    source: SourceFile
    start: int
    end: int

    @property
    def span(self) -> Span:
        """Where the node is: ``Span(source, start, end)``, made when read."""
        return make_span(self.source, self.start, self.end)

    def __repr__(self) -> str:
        # The fields shown by a dataclass repr, then the span in place of source/start/end.
        shown = [f"{f.name}={getattr(self, f.name)!r}" for f in fields(self) if f.repr]
        shown.append(f"span={self.span!r}")
        return f"{type(self).__name__}({', '.join(shown)})"


class KeywordNode(Node):
    """Base of the expressions written with a keyword: ``par``, ``each``, ``local``, ``catch``, ``orelse``.

    ``keyword`` is the keyword's span, made when read from where the keyword
    starts (``keyword_at``) and how it is spelled (``KEYWORD``), so a parse
    builds no ``Span`` for it. ``par``, ``each`` and ``local`` start their
    node, so ``keyword_at`` is ``start``; ``Catch`` and ``OrElse``, whose
    keyword stands between their parts, store it as a field of that name.
    """

    __slots__ = ()

    #: The keyword, as written.
    KEYWORD: ClassVar[str]

    @property
    def keyword_at(self) -> int:
        """Where the keyword starts: the node's own start, for a node written keyword first."""
        return self.start

    @property
    def keyword(self) -> Span:
        """The keyword's span."""
        at = self.keyword_at
        return make_span(self.source, at, at + len(self.KEYWORD))


@dataclass(frozen=True, slots=True, repr=False)
class Name(Node):
    """An identifier as written, with its span."""

    text: str
    source: SourceFile = field(repr=False)
    start: int = field(repr=False)
    end: int = field(repr=False)


@dataclass(frozen=True, slots=True, repr=False)
class QualName(Node):
    """A dotted name such as ``impl.plan_action`` or ``examples.research.impl``."""

    parts: tuple[Name, ...]
    source: SourceFile = field(repr=False)
    start: int = field(repr=False)
    end: int = field(repr=False)

    @property
    def dotted(self) -> str:
        """The name joined with dots, as written (a one-part name without a join: most are one part)."""
        parts = self.parts
        return parts[0].text if len(parts) == 1 else ".".join([part.text for part in parts])


# ---------------------------------------------------------------- type syntax


@dataclass(frozen=True, slots=True, repr=False)
class TypeApply(Node):
    """A generic applied to arguments: ``list[str]``, ``dict[str, int]``, ``tuple[A, B]``."""

    head: QualName
    args: tuple[TypeExpr, ...]
    source: SourceFile = field(repr=False)
    start: int = field(repr=False)
    end: int = field(repr=False)


@dataclass(frozen=True, slots=True, repr=False)
class TypeUnion(Node):
    """``A | B | C`` (two or more members, flattened)."""

    members: tuple[TypeExpr, ...]
    source: SourceFile = field(repr=False)
    start: int = field(repr=False)
    end: int = field(repr=False)


#: A type expression. A type written as a name is that name, with no node
#: around it: a :class:`Name` (``str``, ``A``) or, dotted, a :class:`QualName`
#: (``impl.ToolCall``). The commonest type, ``A``, is one node (it was three:
#: a type node around a qualified name around the name).
TypeExpr: TypeAlias = Name | QualName | TypeApply | TypeUnion


@dataclass(frozen=True, slots=True, repr=False)
class ErrorList(Node):
    """The ``! E1 | E2`` clause of a step, tool or pipeline; each entry names an error type."""

    errors: tuple[TypeExpr, ...]
    source: SourceFile = field(repr=False)
    start: int = field(repr=False)
    end: int = field(repr=False)


# ---------------------------------------------------------------- expressions


@dataclass(frozen=True, slots=True, repr=False)
class Ref(Node):
    """A use of a declared step, fn, tool or pipeline: its name, where it is written.

    The name is a plain string (a reference is one name token, so the node's
    own span is the name's): one node per reference instead of a ``Ref`` around
    a :class:`Name`, on the commonest node of a pipeline body.
    """

    name: str
    source: SourceFile = field(repr=False)
    start: int = field(repr=False)
    end: int = field(repr=False)


@dataclass(frozen=True, slots=True, repr=False)
class Bind(Node):
    """``e1 >>= e2 >>= …``: two or more parts, run left to right."""

    parts: tuple[Expr, ...]
    source: SourceFile = field(repr=False)
    start: int = field(repr=False)
    end: int = field(repr=False)


@dataclass(frozen=True, slots=True, repr=False)
class Par(KeywordNode):
    """``par <e1, …, en>``. The parser keeps a one-branch group so that the
    checker can report MCE019 for it."""

    KEYWORD: ClassVar[str] = "par"

    branches: tuple[Expr, ...]
    source: SourceFile = field(repr=False)
    start: int = field(repr=False)
    end: int = field(repr=False)


@dataclass(frozen=True, slots=True, repr=False)
class Each(KeywordNode):
    """``each e`` or ``each(limit=k) e``; ``limit_span`` points at ``k``."""

    KEYWORD: ClassVar[str] = "each"

    body: Expr
    limit: int | None
    limit_span: Span | None
    source: SourceFile = field(repr=False)
    start: int = field(repr=False)
    end: int = field(repr=False)


@dataclass(frozen=True, slots=True, repr=False)
class Local(KeywordNode):
    """``local e``: run ``e`` and give back the input state."""

    KEYWORD: ClassVar[str] = "local"

    body: Expr
    source: SourceFile = field(repr=False)
    start: int = field(repr=False)
    end: int = field(repr=False)


@dataclass(frozen=True, slots=True, repr=False)
class Catch(KeywordNode):
    """``body catch E1 | E2 => handler``; chained catches nest to the left."""

    KEYWORD: ClassVar[str] = "catch"

    body: Expr
    errors: tuple[TypeExpr, ...]
    handler: Expr
    #: Where ``catch`` starts (an offset, like ``start``).
    keyword_at: int = field(repr=False)
    source: SourceFile = field(repr=False)
    start: int = field(repr=False)
    end: int = field(repr=False)


@dataclass(frozen=True, slots=True, repr=False)
class OrElse(KeywordNode):
    """``body orelse fallback``; chains nest to the left."""

    KEYWORD: ClassVar[str] = "orelse"

    body: Expr
    fallback: Expr
    #: Where ``orelse`` starts (an offset, like ``start``).
    keyword_at: int = field(repr=False)
    source: SourceFile = field(repr=False)
    start: int = field(repr=False)
    end: int = field(repr=False)


Expr: TypeAlias = Ref | Bind | Par | Each | Local | Catch | OrElse


@dataclass(frozen=True, slots=True, repr=False)
class Statement(Node):
    """One statement of a block pipeline: ``[step] EXPR ;``."""

    expr: Expr
    has_step_keyword: bool
    source: SourceFile = field(repr=False)
    start: int = field(repr=False)
    end: int = field(repr=False)


@dataclass(frozen=True, slots=True, repr=False)
class Block(Node):
    """The ``{ s1; s2; … }`` body of a block pipeline (possibly empty)."""

    statements: tuple[Statement, ...]
    source: SourceFile = field(repr=False)
    start: int = field(repr=False)
    end: int = field(repr=False)


# ---------------------------------------------------------------- declarations


@dataclass(frozen=True, slots=True, repr=False)
class ImportedName(Node):
    """``X`` or ``X as Y`` inside a from-import; ``bound`` is the name it binds."""

    name: Name
    alias: Name | None
    source: SourceFile = field(repr=False)
    start: int = field(repr=False)
    end: int = field(repr=False)

    @property
    def bound(self) -> Name:
        """The name this entry brings into scope."""
        return self.alias if self.alias is not None else self.name


@dataclass(frozen=True, slots=True, repr=False)
class FromImport(Node):
    """``from a.b import X, Y as Z``."""

    module: QualName
    names: tuple[ImportedName, ...]
    source: SourceFile = field(repr=False)
    start: int = field(repr=False)
    end: int = field(repr=False)


@dataclass(frozen=True, slots=True, repr=False)
class ModuleImport(Node):
    """``import a.b as m`` (alias set) or ``import a.b`` (refer to it as ``a.b.X``)."""

    module: QualName
    alias: Name | None
    source: SourceFile = field(repr=False)
    start: int = field(repr=False)
    end: int = field(repr=False)


@dataclass(frozen=True, slots=True, repr=False)
class StateDecl(Node):
    """``state T`` or ``state T merge m.f``."""

    type: TypeExpr
    merge: QualName | None
    source: SourceFile = field(repr=False)
    start: int = field(repr=False)
    end: int = field(repr=False)


@dataclass(frozen=True, slots=True, repr=False)
class ErrorDecl(Node):
    """``error T``."""

    type: TypeExpr
    source: SourceFile = field(repr=False)
    start: int = field(repr=False)
    end: int = field(repr=False)


@dataclass(frozen=True, slots=True, repr=False)
class StepDecl(Node):
    """``[async] step n : A -> B [! E…] = m.f``; ``errors`` is None when ``!`` is omitted."""

    name: Name
    is_async: bool
    input: TypeExpr
    output: TypeExpr
    errors: ErrorList | None
    impl: QualName
    source: SourceFile = field(repr=False)
    start: int = field(repr=False)
    end: int = field(repr=False)


@dataclass(frozen=True, slots=True, repr=False)
class FnDecl(Node):
    """``fn n : A -> B = m.f``."""

    name: Name
    input: TypeExpr
    output: TypeExpr
    impl: QualName
    source: SourceFile = field(repr=False)
    start: int = field(repr=False)
    end: int = field(repr=False)


@dataclass(frozen=True, slots=True, repr=False)
class ServerDecl(Node):
    """``server n = stdio "COMMAND LINE"``; ``command`` is the decoded string."""

    name: Name
    command: str
    command_span: Span
    source: SourceFile = field(repr=False)
    start: int = field(repr=False)
    end: int = field(repr=False)


@dataclass(frozen=True, slots=True, repr=False)
class ToolDecl(Node):
    """``tool n : A -> B [! E…] = server.tool_name``."""

    name: Name
    input: TypeExpr
    output: TypeExpr
    errors: ErrorList | None
    server: Name
    tool_name: Name
    source: SourceFile = field(repr=False)
    start: int = field(repr=False)
    end: int = field(repr=False)


@dataclass(frozen=True, slots=True, repr=False)
class PipelineDecl(Node):
    """``pipeline n : A -> B [! E…] = EXPR;`` or ``… { STMT … }``.

    ``errors`` is None when the error set is to be inferred; ``! Never`` is an
    :class:`ErrorList` holding the single type name ``Never``.
    """

    name: Name
    input: TypeExpr
    output: TypeExpr
    errors: ErrorList | None
    body: Expr | Block
    source: SourceFile = field(repr=False)
    start: int = field(repr=False)
    end: int = field(repr=False)


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


@dataclass(frozen=True, slots=True, repr=False)
class Comment(Node):
    """A ``# …`` comment, kept so that ``mcec fmt`` can put it back."""

    text: str
    source: SourceFile = field(repr=False)
    start: int = field(repr=False)
    end: int = field(repr=False)


@dataclass(frozen=True, slots=True)
class Module:
    """A whole `.mce` file: its declarations in source order, and its comments."""

    path: str
    decls: tuple[Decl, ...]
    comments: tuple[Comment, ...]
    span: Span
