"""The untyped syntax tree of a `.mce` file, as the parser builds it.

Every node is a frozen, slotted dataclass whose last field is its ``span``. No
Lark object ever appears here: :mod:`mcec.syntax.parser` (the only module that
knows Lark exists) builds these classes directly. The checker turns this tree
into the typed IR of :mod:`mcec.check.typed`; nothing ever mutates a syntax node.

Chains are flat: ``a >>= b >>= c`` is one :class:`Bind` with three parts, and a
block ``{ s1; s2; }`` is a :class:`Block` of statements, so a 100,000-step
pipeline is a wide node, not a 100,000-deep one. Parentheses leave no node
behind: ``(e)`` is just ``e`` (with ``e``'s own span). Precedence, loosest
first, is ``orelse`` < ``catch`` < ``>>=`` < terms (docs/language.md §5).

The unions :data:`Expr`, :data:`TypeExpr` and :data:`Decl` are closed: every
function that walks them dispatches with ``match`` and ends in
``assert_never``, so a node kind added here is a mypy error in every phase
that does not handle it yet (``tests/syntax/test_exhaustive.py`` proves it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar, TypeAlias, assert_never

from mcec.span import Frame, Span

__all__ = [
    "Arm",
    "Bind",
    "Block",
    "Budget",
    "Catch",
    "Comment",
    "Decl",
    "Each",
    "ErrorDecl",
    "ErrorList",
    "Expr",
    "FnDecl",
    "FromImport",
    "IfElse",
    "ImportedName",
    "KeywordNode",
    "LlmDecl",
    "AskDecl",
    "Local",
    "Loop",
    "Match",
    "ModelDecl",
    "ModelOption",
    "Module",
    "ModuleImport",
    "Name",
    "Node",
    "OrElse",
    "POSITION_FIELDS",
    "Par",
    "Pattern",
    "PipelineDecl",
    "QualName",
    "Ref",
    "RenameDecl",
    "Retry",
    "Spawn",
    "ServerDecl",
    "SubAgent",
    "StateDecl",
    "Template",
    "Statement",
    "StepDecl",
    "Timeout",
    "ToolboxDecl",
    "ToolDecl",
    "TypeApply",
    "TypeLiteral",
    "TypeExpr",
    "TypeUnion",
    "expr_children",
    "type_children",
]

#: The fields that say where a node (or a part of it) is, not what it is.
#: Comparing trees "by meaning" (``mcec fmt``'s self-check, tests) skips them.
POSITION_FIELDS: frozenset[str] = frozenset(
    {"span", "bases", "keyword", "limit_span", "command_span", "bound_span", "attempts_span", "backoff_span", "seconds_span"}
)


class Node:
    """Base of every syntax node but :class:`Module`: offsets read through the span."""

    __slots__ = ()

    span: Span

    @property
    def start(self) -> int:
        """The offset where the node starts (``span.start``)."""
        return self.span.start

    @property
    def end(self) -> int:
        """The offset just past the node (``span.end``)."""
        return self.span.end


class KeywordNode(Node):
    """Base of the expressions written with a keyword: ``par``, ``each``, ``local``, ``catch``, ``orelse``,
    and (v2) ``match``, ``if``, ``loop``, ``retry``, ``timeout``.

    Each keeps the span of its keyword in ``keyword`` (diagnostics and the
    formatter point at it).
    """

    __slots__ = ()

    #: The keyword, as written.
    KEYWORD: ClassVar[str]
    keyword: Span


@dataclass(frozen=True, slots=True)
class Name(Node):
    """An identifier as written."""

    text: str
    span: Span


@dataclass(frozen=True, slots=True)
class QualName(Node):
    """A dotted name such as ``impl.plan_action`` or ``examples.research.impl``."""

    parts: tuple[Name, ...]
    span: Span

    @property
    def dotted(self) -> str:
        """The name joined with dots, as written."""
        return ".".join(part.text for part in self.parts)


# ---------------------------------------------------------------- type syntax


@dataclass(frozen=True, slots=True)
class TypeApply(Node):
    """A generic applied to arguments: ``list[str]``, ``dict[str, int]``, ``tuple[A, B]``."""

    head: QualName
    args: tuple[TypeExpr, ...]
    span: Span


@dataclass(frozen=True, slots=True)
class TypeUnion(Node):
    """``A | B | C`` (two or more members, flattened)."""

    members: tuple[TypeExpr, ...]
    span: Span


@dataclass(frozen=True, slots=True)
class TypeLiteral(Node):
    """A string or int literal: an argument of ``Literal["a", 3]`` (v2), or a ``match`` pattern."""

    value: str | int
    span: Span


#: A type expression. A type written as a name is that name, with no node
#: around it: a :class:`Name` (``str``, ``A``) or, dotted, a :class:`QualName`
#: (``impl.ToolCall``). A :class:`TypeLiteral` is valid only inside ``Literal[…]``
#: (the checker says so elsewhere).
TypeExpr: TypeAlias = Name | QualName | TypeApply | TypeUnion | TypeLiteral


def type_children(expr: TypeExpr) -> tuple[TypeExpr, ...]:
    """The type expressions directly inside ``expr``."""
    match expr:
        case Name() | QualName() | TypeLiteral():
            return ()
        case TypeApply(args=args):
            return args
        case TypeUnion(members=members):
            return members
        case _:
            assert_never(expr)


@dataclass(frozen=True, slots=True)
class ErrorList(Node):
    """The ``! E1 | E2`` clause of a step, tool or pipeline; each entry names an error type."""

    errors: tuple[TypeExpr, ...]
    span: Span


# ---------------------------------------------------------------- expressions


@dataclass(frozen=True, slots=True)
class Ref(Node):
    """A use of a declared step, fn, tool or pipeline: its name, where it is written."""

    name: str
    span: Span


@dataclass(frozen=True, slots=True)
class Bind(Node):
    """``e1 >>= e2 >>= …``: two or more parts, run left to right."""

    parts: tuple[Expr, ...]
    span: Span


@dataclass(frozen=True, slots=True)
class Par(KeywordNode):
    """``par <e1, …, en>``. The parser keeps a one-branch group so that the
    checker can report MCE019 for it."""

    KEYWORD: ClassVar[str] = "par"

    branches: tuple[Expr, ...]
    keyword: Span
    span: Span


@dataclass(frozen=True, slots=True)
class Each(KeywordNode):
    """``each e`` or ``each(limit=k) e``; ``limit_span`` points at ``k``."""

    KEYWORD: ClassVar[str] = "each"

    body: Expr
    limit: int | None
    limit_span: Span | None
    keyword: Span
    span: Span


@dataclass(frozen=True, slots=True)
class Local(KeywordNode):
    """``local e``: run ``e`` and give back the input state."""

    KEYWORD: ClassVar[str] = "local"

    body: Expr
    keyword: Span
    span: Span


@dataclass(frozen=True, slots=True)
class SubAgent(KeywordNode):
    """``local(state=f) p``: run ``p`` from the state ``f`` makes, and give back the input state
    (a sub-agent adapter, §11). Its own node, not an option of :class:`Local`, so that every phase
    must say what it does with one."""

    KEYWORD: ClassVar[str] = "local"

    adapter: Name
    body: Expr
    keyword: Span
    span: Span


@dataclass(frozen=True, slots=True)
class Catch(KeywordNode):
    """``body catch E1 | E2 => handler``; chained catches nest to the left."""

    KEYWORD: ClassVar[str] = "catch"

    body: Expr
    errors: tuple[TypeExpr, ...]
    handler: Expr
    keyword: Span
    span: Span


@dataclass(frozen=True, slots=True)
class OrElse(KeywordNode):
    """``body orelse fallback``; chains nest to the left."""

    KEYWORD: ClassVar[str] = "orelse"

    body: Expr
    fallback: Expr
    keyword: Span
    span: Span


#: What a ``match`` arm tests: a type name (``_`` is the wildcard) or a literal.
Pattern: TypeAlias = Name | QualName | TypeLiteral


@dataclass(frozen=True, slots=True)
class Arm(Node):
    """``pattern => body``, one arm of a ``match``."""

    pattern: Pattern
    body: Expr
    span: Span

    @property
    def is_wildcard(self) -> bool:
        """True for ``_ => …``, which matches anything."""
        return isinstance(self.pattern, Name) and self.pattern.text == "_"


@dataclass(frozen=True, slots=True)
class Match(KeywordNode):
    """``match { P1 => e1, …, Pn => en }`` (v2): branch on the input's type or literal value."""

    KEYWORD: ClassVar[str] = "match"

    arms: tuple[Arm, ...]
    keyword: Span
    span: Span


@dataclass(frozen=True, slots=True)
class IfElse(KeywordNode):
    """``if condition then then else otherwise`` (v2); both branches receive the original input."""

    KEYWORD: ClassVar[str] = "if"

    condition: Expr
    then: Expr
    otherwise: Expr
    keyword: Span
    span: Span


@dataclass(frozen=True, slots=True)
class Loop(KeywordNode):
    """``loop(N) body`` (v2): run ``body`` again while its result is of the loop's input type."""

    KEYWORD: ClassVar[str] = "loop"

    body: Expr
    bound: int
    bound_span: Span
    keyword: Span
    span: Span


@dataclass(frozen=True, slots=True)
class Retry(KeywordNode):
    """``retry(N[, on=E1 | E2][, backoff=S]) body`` (v2); ``on`` None: every error of ``body``,
    ``backoff`` None: the default pause."""

    KEYWORD: ClassVar[str] = "retry"

    body: Expr
    attempts: int
    attempts_span: Span
    on: tuple[TypeExpr, ...] | None
    backoff: float | None
    backoff_span: Span | None
    keyword: Span
    span: Span


@dataclass(frozen=True, slots=True)
class Timeout(KeywordNode):
    """``timeout(S) body`` (v2): fail with ``Timeout`` when ``body`` takes longer than S seconds."""

    KEYWORD: ClassVar[str] = "timeout"

    body: Expr
    seconds: float
    seconds_span: Span
    keyword: Span
    span: Span


@dataclass(frozen=True, slots=True)
class Budget(KeywordNode):
    """``budget(N) body`` (v2, docs/language.md §10): fail with ``BudgetExceeded`` once body's model usage passes N tokens."""

    KEYWORD: ClassVar[str] = "budget"

    body: Expr
    tokens: int
    tokens_span: Span
    keyword: Span
    span: Span


@dataclass(frozen=True, slots=True)
class Spawn(KeywordNode):
    """``spawn(t) planner`` (docs/language.md §12): run the planner, check the plan text it writes
    against toolbox ``t``, and run the plan if it is accepted."""

    KEYWORD: ClassVar[str] = "spawn"

    toolbox: Name
    body: Expr
    keyword: Span
    span: Span


Expr: TypeAlias = (
    Ref
    | Bind
    | Par
    | Each
    | Local
    | SubAgent
    | Catch
    | OrElse
    | Match
    | IfElse
    | Loop
    | Retry
    | Timeout
    | Budget
    | Spawn
)


def expr_children(expr: Expr) -> tuple[Expr, ...]:
    """The expressions directly inside ``expr``, in source order."""
    match expr:
        case Ref():
            return ()
        case Bind(parts=parts):
            return parts
        case Par(branches=branches):
            return branches
        case Each(body=body) | Local(body=body) | SubAgent(body=body):
            return (body,)
        case Catch(body=body, handler=handler):
            return (body, handler)
        case OrElse(body=body, fallback=fallback):
            return (body, fallback)
        case Match(arms=arms):
            return tuple(arm.body for arm in arms)
        case IfElse(condition=condition, then=then, otherwise=otherwise):
            return (condition, then, otherwise)
        case Loop(body=body) | Retry(body=body) | Timeout(body=body) | Budget(body=body) | Spawn(body=body):
            return (body,)
        case _:
            assert_never(expr)


@dataclass(frozen=True, slots=True)
class Statement(Node):
    """One statement of a block pipeline: ``[step] EXPR ;``."""

    expr: Expr
    has_step_keyword: bool
    span: Span


@dataclass(frozen=True, slots=True)
class Block(Node):
    """The ``{ s1; s2; … }`` body of a block pipeline (possibly empty)."""

    statements: tuple[Statement, ...]
    span: Span


# ---------------------------------------------------------------- declarations


@dataclass(frozen=True, slots=True)
class ImportedName(Node):
    """``X`` or ``X as Y`` inside a from-import; ``bound`` is the name it binds."""

    name: Name
    alias: Name | None
    span: Span

    @property
    def bound(self) -> Name:
        """The name this entry brings into scope."""
        return self.alias if self.alias is not None else self.name


@dataclass(frozen=True, slots=True)
class FromImport(Node):
    """``from a.b import X, Y as Z``."""

    module: QualName
    names: tuple[ImportedName, ...]
    span: Span


@dataclass(frozen=True, slots=True)
class ModuleImport(Node):
    """``import a.b as m`` (alias set) or ``import a.b`` (refer to it as ``a.b.X``)."""

    module: QualName
    alias: Name | None
    span: Span


@dataclass(frozen=True, slots=True)
class StateDecl(Node):
    """``state T`` or ``state T merge m.f``."""

    type: TypeExpr
    merge: QualName | None
    span: Span


@dataclass(frozen=True, slots=True)
class ErrorDecl(Node):
    """``error T``."""

    type: TypeExpr
    span: Span


@dataclass(frozen=True, slots=True)
class RenameDecl(Node):
    """``rename OLD -> NEW``: the effect ``new`` of this spec was ``old`` in an earlier version
    (docs/language.md §13: runs in flight that passed ``old`` move to this version)."""

    old: Name
    new: Name
    span: Span


@dataclass(frozen=True, slots=True)
class StepDecl(Node):
    """``[async] step n : A -> B [! E…] = m.f``; ``errors`` is None when ``!`` is omitted."""

    name: Name
    is_async: bool
    input: TypeExpr
    output: TypeExpr
    errors: ErrorList | None
    impl: QualName
    span: Span


@dataclass(frozen=True, slots=True)
class FnDecl(Node):
    """``fn n : A -> B = m.f``."""

    name: Name
    input: TypeExpr
    output: TypeExpr
    impl: QualName
    span: Span


@dataclass(frozen=True, slots=True)
class ServerDecl(Node):
    """``server n = stdio "COMMAND LINE"``; ``command`` is the decoded string."""

    name: Name
    command: str
    command_span: Span
    span: Span


@dataclass(frozen=True, slots=True)
class ToolDecl(Node):
    """``tool n : A -> B [! E…] = server.tool_name``."""

    name: Name
    input: TypeExpr
    output: TypeExpr
    errors: ErrorList | None
    server: Name
    tool_name: Name
    span: Span


@dataclass(frozen=True, slots=True)
class ModelOption(Node):
    """One ``NAME=VALUE`` of a model's options: a decoded string, an int or a decimal, as written.

    The parser does not know the option names; the checker does (MCE027).
    """

    name: Name
    value: str | int | float
    value_span: Span
    span: Span


@dataclass(frozen=True, slots=True)
class ModelDecl(Node):
    """``model n = openai "MODEL_ID" [(OPTION=VALUE, …)]`` (docs/language.md §10); ``model_id`` is the
    decoded string; ``options`` in the order written."""

    name: Name
    provider: Name
    model_id: str
    model_id_span: Span
    options: tuple[ModelOption, ...]
    span: Span


@dataclass(frozen=True, slots=True)
class Template(Node):
    """An ``llm``'s prompt: ``"…"`` (decoded), ``\"\"\"…\"\"\"`` (as written) or ``file "PATH"``.

    ``text`` is the template itself, or the path for a ``file`` template.
    """

    text: str
    is_file: bool
    triple: bool
    span: Span


@dataclass(frozen=True, slots=True)
class LlmDecl(Node):
    """``[stream] llm n : A -> B = model TEMPLATE`` (docs/language.md §10; ``stream``: §14)."""

    name: Name
    input: TypeExpr
    output: TypeExpr
    model: Name
    template: Template
    #: Written with ``stream``: the step streams its answer to the run's event sink.
    stream: bool
    span: Span


@dataclass(frozen=True, slots=True)
class AskDecl(Node):
    """``ask n : A -> B [= TEMPLATE] [within S]`` (docs/language.md §15): a step that asks a
    person the question ``A`` and returns their answer ``B``."""

    name: Name
    input: TypeExpr
    output: TypeExpr
    #: How the question is shown (``None``: as its value's JSON).
    template: Template | None
    #: ``within S``: seconds to wait for the answer (``None``: no limit).
    within: float | None
    #: Where the seconds are written (``None``: no ``within``).
    within_span: Span | None
    span: Span


@dataclass(frozen=True, slots=True)
class ToolboxDecl(Node):
    """``toolbox t : A -> B [! E…] = n1, n2, …`` (docs/language.md §12): the type every plan over
    ``t`` must have and the names a plan may use."""

    name: Name
    input: TypeExpr
    output: TypeExpr
    errors: ErrorList | None
    entries: tuple[Name, ...]
    span: Span


@dataclass(frozen=True, slots=True)
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
    | ModelDecl
    | LlmDecl
    | AskDecl
    | ToolboxDecl
    | RenameDecl
    | PipelineDecl
)


@dataclass(frozen=True, slots=True)
class Comment(Node):
    """A ``# …`` comment, kept so that ``mcec fmt`` can put it back."""

    text: str
    span: Span


@dataclass(frozen=True, slots=True)
class Module:
    """A whole `.mce` file: its declarations in source order, and its comments.

    Each declaration's nodes hold their spans in the declaration's own
    :class:`~mcec.span.Frame`; a re-parse after an edit re-uses an unchanged
    declaration as it is and moves its frame into the new text
    (:mod:`mcec.syntax.incremental`). ``bases`` keeps where each frame is in
    this module's text, so :meth:`place` can put them back when this version
    is read again after a later one moved them.
    """

    path: str
    decls: tuple[Decl, ...]
    comments: tuple[Comment, ...]
    span: Span
    #: Per declaration, its frame's ``base`` in this module's text (taken when the module is made).
    bases: tuple[int, ...] = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "bases", tuple(decl.span.frame.base for decl in self.decls))

    def place(self) -> None:
        """Put every declaration's frame where the declaration is in this module's text.

        Needed only when a module is read again after a re-parse from it made a
        newer version (which moved the frames of the declarations they share)."""
        source = self.span.source
        for decl, base in zip(self.decls, self.bases):
            frame = decl.span.frame
            if isinstance(frame, Frame) and (frame.source is not source or frame.base != base):
                frame.source = source
                frame.base = base
