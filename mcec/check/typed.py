"""The checked, typed program: what the checker produces and the code generator
and the reference interpreter consume.

Every expression node carries its :class:`Sig` (``A -> B ! E`` plus whether it
changes state) and the span of the syntax it came from. Like the syntax tree,
everything here is frozen; the checker builds new nodes instead of annotating
old ones. Only a program without errors is ever turned into a
:class:`Program`, so consumers may assume every name resolves and every type fits.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Literal, TypeAlias, assert_never

from mcec.span import Span
from mcec.check.types import ClassRef, ErrorSet, Type, render_errors


@dataclass(frozen=True, slots=True)
class Sig:
    """``input -> output ! errors``; ``stateful`` per docs/language.md §5."""

    input: Type
    output: Type
    errors: ErrorSet
    stateful: bool

    def __str__(self) -> str:
        text = f"{self.input} -> {self.output}"
        return text if not self.errors else f"{text} ! {render_errors(self.errors)}"


@dataclass(frozen=True, slots=True)
class PyRef:
    """A Python object the spec names: its resolved path and the spec's spelling.

    ``PyRef("examples.research.impl.plan_action", "impl.plan_action")``: the
    generated module imports what the spec imports, so ``spelling`` is a valid
    expression there; ``module``/``attr`` let the interpreter import it.
    """

    module: str
    attr: str
    spelling: str

    @property
    def path(self) -> str:
        """The resolved dotted path."""
        return f"{self.module}.{self.attr}"


# ---------------------------------------------------------------- imports


@dataclass(frozen=True, slots=True)
class TFromImport:
    """``from module import name as alias`` (alias None: bound as ``name``)."""

    module: str
    names: tuple[tuple[str, str | None], ...]
    span: Span


@dataclass(frozen=True, slots=True)
class TModuleImport:
    """``import module as alias`` (alias None: plain ``import module``)."""

    module: str
    alias: str | None
    span: Span


TImport: TypeAlias = TFromImport | TModuleImport


# ---------------------------------------------------------------- declarations

class RefKind(enum.Enum):
    """Which kind of declaration a :class:`TRef` uses. Every question about it is a ``match`` that
    ends in ``assert_never`` (mypy's strict equality rejects a comparison with a string), so a new
    kind is a type error wherever a reference is run, drawn or emitted."""

    STEP = "step"
    FN = "fn"
    TOOL = "tool"
    LLM = "llm"
    ASK = "ask"
    PIPELINE = "pipeline"

    @property
    def word(self) -> str:
        """The keyword that declares this kind, as messages and drawings name it."""
        return self.value


@dataclass(frozen=True, slots=True)
class TStep:
    """A ``step`` or ``async step``; ``sig.errors`` are the declared errors."""

    name: str
    is_async: bool
    sig: Sig
    impl: PyRef
    span: Span


@dataclass(frozen=True, slots=True)
class TRename:
    """``rename OLD -> NEW``: the effect ``new`` was ``old`` in an earlier version (docs/language.md §13)."""

    old: str
    new: str
    span: Span


@dataclass(frozen=True, slots=True)
class TFn:
    """A pure ``fn``: cannot fail, sees no state."""

    name: str
    sig: Sig
    impl: PyRef
    span: Span


@dataclass(frozen=True, slots=True)
class TServer:
    """``server n = stdio "COMMAND"``."""

    name: str
    command: str
    span: Span


@dataclass(frozen=True, slots=True)
class TTool:
    """``tool n : A -> B ! E = server.tool_name``; ``sig.errors`` include ToolFailed and ToolUnavailable."""

    name: str
    sig: Sig
    server: str
    tool_name: str
    span: Span


#: A model option's value: a string, an int, or a float (docs/language.md §10).
OptionValue = str | int | float


@dataclass(frozen=True, slots=True)
class TModel:
    """``model n = openai "MODEL_ID" [(OPTION=VALUE, …)]``; ``options`` are the valid ones, in the
    order written, as the keyword arguments of ``agentmonad.llm.Model`` (MCE027 for the others)."""

    name: str
    model_id: str
    span: Span
    options: tuple[tuple[str, OptionValue], ...] = ()


@dataclass(frozen=True, slots=True)
class TLlm:
    """``llm n : A -> B = model TEMPLATE``; ``sig.errors`` are ``LLMFailed | LLMUnavailable``.

    ``template`` is the template's text (a ``file`` template read at check
    time); ``template_name`` is how messages name it (the path as written, or
    None for an inline template).
    """

    name: str
    sig: Sig
    model: str
    template: str
    template_name: str | None
    span: Span
    #: Declared ``stream llm`` (docs/language.md §14).
    stream: bool = False
    #: For a streaming step: the partial type of each class its answer is built of (the output
    #: classes and the record classes their fields hold), as far as their fields could be read.
    partials: tuple[TPartial, ...] = ()


@dataclass(frozen=True, slots=True)
class TAsk:
    """``ask n : A -> B [= TEMPLATE] [within S]`` (docs/language.md §15); ``sig.errors`` are
    ``NoOneToAsk | NoAnswer | BadAnswer``. ``template`` is the template's text (``None``: none),
    ``template_name`` how messages name it, ``within`` the seconds to wait (``None``: no limit)."""

    name: str
    sig: Sig
    template: str | None
    template_name: str | None
    within: float | None
    span: Span


@dataclass(frozen=True, slots=True)
class TPartial:
    """The partial type the compiler generates for one record class a streaming llm step answers
    with (docs/language.md §14): ``fields`` are the class's fields in order, with their types
    (None: an annotation mcec cannot read, which the partial types as ``Any``)."""

    cls: ClassRef
    fields: tuple[tuple[str, Type | None], ...]


@dataclass(frozen=True, slots=True)
class TUsed:
    """A pipeline of another spec this one uses (``from agents.research_mce import research``).

    ``name`` is what this spec binds; ``pipeline`` its name in ``spec``, whose
    generated module is ``module``; ``sig`` is its checked signature with types
    spelled in this spec's terms; ``program`` is the other spec, checked (what the
    interpreter runs). ``state`` is that spec's state type, in this spec's terms;
    ``own_state`` says whether it is this spec's (if not, a use needs a sub-agent
    adapter, ``local(state=f) p``).
    """

    name: str
    module: str
    pipeline: str
    spec: str
    sig: Sig
    program: Program
    span: Span
    state: Type | None = None
    own_state: bool = True


# ---------------------------------------------------------------- expressions


@dataclass(frozen=True, slots=True)
class TRef:
    """A use of a declaration by name; ``kind`` says which table holds it."""

    name: str
    kind: RefKind
    sig: Sig
    span: Span


@dataclass(frozen=True, slots=True)
class TBind:
    """A chain ``e1 >>= … >>= en`` (n ≥ 2); a block body is a TBind too (or its single statement)."""

    parts: tuple[TExpr, ...]
    sig: Sig
    span: Span


#: How a group's branch states are merged (docs/language.md §5, §6):
#:
#: - ``"none"``: no branch changes state; the group's state is its input state;
#: - ``"declared"``: the file's own merge (``state T merge f``), which cannot report a conflict;
#: - ``"one_writer"``: the default merge over a ``par`` with exactly one stateful branch,
#:   which cannot conflict (a field only one branch changes takes its value);
#: - ``"by_field"``: the default merge over two or more stateful runs: ``MergeConflict``
#:   is in the group's error set.
MergeKind = Literal["none", "declared", "one_writer", "by_field"]


@dataclass(frozen=True, slots=True)
class TPar:
    """``par <…>``; ``merge`` says how the branch states are merged."""

    branches: tuple[TExpr, ...]
    merge: MergeKind
    sig: Sig
    span: Span


@dataclass(frozen=True, slots=True)
class TEach:
    """``each(limit=k) e``; ``limit`` None means unbounded; ``merge`` as for :class:`TPar`
    (never ``"one_writer"``: the body runs once per element)."""

    body: TExpr
    limit: int | None
    merge: MergeKind
    sig: Sig
    span: Span


@dataclass(frozen=True, slots=True)
class TLocal:
    """``local e``: ``e`` runs, and the input state is given back."""

    body: TExpr
    sig: Sig
    span: Span


@dataclass(frozen=True, slots=True)
class TSubAgent:
    """``local(state=f) p`` (§11): ``adapter`` (a reference to a ``fn`` from this spec's state to
    the body's) makes the state that ``body`` (a pipeline of another spec) runs from; the input
    state is given back."""

    adapter: TRef
    body: TRef
    sig: Sig
    span: Span


@dataclass(frozen=True, slots=True)
class TCatch:
    """``body catch E1 | E2 => handler``; ``errors`` are the caught types."""

    body: TExpr
    errors: tuple[Type, ...]
    handler: TExpr
    sig: Sig
    span: Span


@dataclass(frozen=True, slots=True)
class TOrElse:
    """``body orelse fallback``."""

    body: TExpr
    fallback: TExpr
    sig: Sig
    span: Span


#: The standard identity fn: a name every spec has without declaring it (one it declares or
#: imports itself takes its place), of type ``A -> A`` for the ``A`` it is given where it stands
#: (docs/language.md §5, "The standard `id`"). ``par <id, classify>`` keeps an input beside what
#: is made of it.
IDENTITY_FN = "id"


@dataclass(frozen=True, slots=True)
class TIdentity:
    """Passes value and state through: the body of an empty block ``{ }`` (needs A ≤ B), or the
    standard fn :data:`IDENTITY_FN` where a spec names it (``written``)."""

    sig: Sig
    span: Span
    written: str | None = None


# ---------------------------------------------------------------- v2 control flow


@dataclass(frozen=True, slots=True)
class PClass:
    """An arm pattern that tests a class (``isinstance``) or ``None`` (``is None``): ``type``
    is a :class:`~mcec.check.types.ClassRef` or a :class:`~mcec.check.types.Builtin`."""

    type: Type


@dataclass(frozen=True, slots=True)
class PLiteral:
    """An arm pattern that tests a literal: equal value of the same type (``1`` is not ``True``)."""

    value: str | int


@dataclass(frozen=True, slots=True)
class PWildcard:
    """The ``_`` pattern: matches anything."""


TPattern: TypeAlias = PClass | PLiteral | PWildcard


@dataclass(frozen=True, slots=True)
class TArm:
    """``pattern => body``; ``narrowed`` is the type the arm's body receives (the match's input,
    less what earlier arms took, narrowed by the pattern)."""

    pattern: TPattern
    body: TExpr
    narrowed: Type
    span: Span


@dataclass(frozen=True, slots=True)
class TMatch:
    """``match { … }``: the first arm whose pattern matches runs (the checker proved one does)."""

    arms: tuple[TArm, ...]
    sig: Sig
    span: Span


@dataclass(frozen=True, slots=True)
class TIf:
    """``if condition then then else otherwise``: both branches receive the original input."""

    condition: TExpr
    then: TExpr
    otherwise: TExpr
    sig: Sig
    span: Span


@dataclass(frozen=True, slots=True)
class TLoop:
    """``loop(bound) body``: a result of type ``continues`` (the loop's input type, testable at
    run time) runs the body again; any other result ends the loop."""

    body: TExpr
    bound: int
    continues: Type
    sig: Sig
    span: Span


#: The pause before the second attempt of a ``retry`` without ``backoff=`` (docs/language.md §6).
DEFAULT_BACKOFF = 0.5


@dataclass(frozen=True, slots=True)
class TRetry:
    """``retry(attempts, on=…, backoff=…) body``; ``on`` None: every error of the body is retried."""

    body: TExpr
    attempts: int
    on: tuple[Type, ...] | None
    backoff: float
    sig: Sig
    span: Span


@dataclass(frozen=True, slots=True)
class TTimeout:
    """``timeout(seconds) body``: ``Timeout`` joins the body's errors."""

    body: TExpr
    seconds: float
    sig: Sig
    span: Span


@dataclass(frozen=True, slots=True)
class TBudget:
    """``budget(tokens) body``: ``BudgetExceeded`` joins the body's errors."""

    body: TExpr
    tokens: int
    sig: Sig
    span: Span


@dataclass(frozen=True, slots=True)
class TSpawn:
    """``spawn(toolbox) planner`` (§12): ``planner`` takes a ``PlanRequest`` and gives the plan text;
    the sig is the toolbox's, with ``PlanRejected`` and the planner's errors."""

    toolbox: str
    planner: TExpr
    sig: Sig
    span: Span


TExpr: TypeAlias = (
    TRef
    | TBind
    | TPar
    | TEach
    | TLocal
    | TSubAgent
    | TCatch
    | TOrElse
    | TIdentity
    | TMatch
    | TIf
    | TLoop
    | TRetry
    | TTimeout
    | TBudget
    | TSpawn
)


def children(expr: TExpr) -> tuple[TExpr, ...]:
    """The expressions directly inside ``expr``, in source order."""
    match expr:
        case TRef() | TIdentity():
            return ()
        case TSubAgent(body=body):
            # the adapter is not a child: it runs on the state, not as a part of the value's flow
            return (body,)
        case TBind(parts=parts):
            return parts
        case TPar(branches=branches):
            return branches
        case TEach(body=body) | TLocal(body=body):
            return (body,)
        case TCatch(body=body, handler=handler):
            return (body, handler)
        case TOrElse(body=body, fallback=fallback):
            return (body, fallback)
        case TMatch(arms=arms):
            return tuple(arm.body for arm in arms)
        case TIf(condition=condition, then=then, otherwise=otherwise):
            return (condition, then, otherwise)
        case TLoop(body=body) | TRetry(body=body) | TTimeout(body=body) | TBudget(body=body):
            return (body,)
        case TSpawn(planner=planner):
            return (planner,)
        case _:
            assert_never(expr)


def references(expr: TExpr) -> list[TRef]:
    """Every use of a declaration inside ``expr``, in source order (iterative: chains are long)."""
    found: list[TRef] = []
    stack = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, TRef):
            found.append(node)
        stack.extend(reversed(children(node)))
    return found


@dataclass(frozen=True, slots=True)
class TPipeline:
    """A checked pipeline; ``sig.errors`` is the declared set (or the inferred one
    when the spec omits ``!``)."""

    name: str
    sig: Sig
    body: TExpr
    span: Span


@dataclass(frozen=True, slots=True)
class TToolbox:
    """A ``toolbox`` (§12): ``sig`` is the type every plan over it must have (stateful iff an entry
    may change state), ``entries`` the names a plan may use, as references."""

    name: str
    sig: Sig
    entries: tuple[TRef, ...]
    span: Span


#: A checked declaration. :class:`Program` holds one tuple of them; each phase that reads a
#: program dispatches over this union (a ``match`` that ends in ``assert_never``), so a new kind
#: of declaration is a type error wherever one must be handled.
TDecl: TypeAlias = (
    TFromImport | TModuleImport | TStep | TFn | TServer | TTool | TModel | TLlm | TAsk | TUsed | TToolbox | TPipeline
)


@dataclass(frozen=True, slots=True)
class Program:
    """A checked `.mce` file, ready for code generation or interpretation.

    ``state`` is None when the file declares no state (S is then ``None``);
    ``merge`` is the custom merge of ``state T merge m.f``. ``decls`` holds every
    other declaration: each kind in source order, and the pipelines last, ordered
    so that a pipeline comes after every pipeline it uses (the checker rejects
    cycles). ``source`` is the spec's text (a module with a toolbox holds it:
    plans are checked against it at run time).

    The per-kind tuples (``steps``, ``pipelines``, …) are views of ``decls``,
    made once by :meth:`__post_init__`.
    """

    path: str
    source_sha256: str
    state: Type | None
    merge: PyRef | None
    decls: tuple[TDecl, ...]
    source: str = ""
    #: The ``rename OLD -> NEW`` declarations (docs/language.md §13), in source order.
    renames: tuple[TRename, ...] = ()
    imports: tuple[TImport, ...] = field(init=False)
    steps: tuple[TStep, ...] = field(init=False)
    fns: tuple[TFn, ...] = field(init=False)
    servers: tuple[TServer, ...] = field(init=False)
    tools: tuple[TTool, ...] = field(init=False)
    models: tuple[TModel, ...] = field(init=False)
    llms: tuple[TLlm, ...] = field(init=False)
    #: The ``ask`` steps (§15), in source order.
    asks: tuple[TAsk, ...] = field(init=False)
    #: The pipelines of other specs this one uses, in source order.
    uses: tuple[TUsed, ...] = field(init=False)
    #: The toolboxes plans are checked against (§12), in source order.
    toolboxes: tuple[TToolbox, ...] = field(init=False)
    pipelines: tuple[TPipeline, ...] = field(init=False)

    def __post_init__(self) -> None:
        views: dict[str, list[TDecl]] = {name: [] for name in _VIEWS}
        for decl in self.decls:
            views[_view(decl)].append(decl)
        for name, found in views.items():
            # a frozen dataclass sets its own derived fields through object.__setattr__
            object.__setattr__(self, name, tuple(found))


#: The per-kind views of a :class:`Program`, by field name.
_VIEWS = ("imports", "steps", "fns", "servers", "tools", "models", "llms", "asks", "uses", "toolboxes", "pipelines")


def _view(decl: TDecl) -> str:
    """Which per-kind view of a :class:`Program` holds ``decl``."""
    match decl:
        case TFromImport() | TModuleImport():
            return "imports"
        case TStep():
            return "steps"
        case TFn():
            return "fns"
        case TServer():
            return "servers"
        case TTool():
            return "tools"
        case TModel():
            return "models"
        case TLlm():
            return "llms"
        case TAsk():
            return "asks"
        case TUsed():
            return "uses"
        case TToolbox():
            return "toolboxes"
        case TPipeline():
            return "pipelines"
        case _:
            assert_never(decl)


def recorded_effects(program: Program) -> list[tuple[str, Span | None, Sig]]:
    """Every effect of ``program``'s own pipelines a durable run records, as (name, site span,
    signature), in the order of its declarations: its steps, tools, llms, asks, pipelines and used
    pipelines by name (``None``: the sites a checked plan makes, in the plan's own text), an ask by
    its declaration's site too; then each step, tool and llm call, ``spawn`` and ``each`` (its
    body's signature: an element a worker ran) by site, in the order of the spec's text. What :func:`mcec.durable.types.type_table` and
    a generated module's ``SPEC_INFO`` (:mod:`mcec.codegen.descriptor`) both record with."""
    named: list[tuple[str, Span | None, Sig]] = []
    sited: list[tuple[str, Span | None, Sig]] = []
    for decl in program.decls:
        match decl:
            case TStep() | TTool() | TLlm() | TPipeline() | TUsed():
                named.append((decl.name, None, decl.sig))
            case TAsk():
                # a person's answer (§15): its "human" effect's site is the ask's declaration
                named.append((decl.name, None, decl.sig))
                named.append((decl.name, decl.span, decl.sig))
            case TFromImport() | TModuleImport() | TFn() | TServer() | TModel() | TToolbox():
                pass
    for pipeline in program.pipelines:
        stack: list[TExpr] = [pipeline.body]
        while stack:
            node = stack.pop()
            match node:
                case TRef(kind=RefKind.STEP | RefKind.TOOL | RefKind.LLM):
                    sited.append((node.name, node.span, node.sig))
                case TSpawn():
                    sited.append(("spawn", node.span, node.sig))
                case TEach():
                    sited.append(("each", node.span, node.body.sig))
                case _:
                    pass
            stack.extend(children(node))
    sited.sort(key=lambda effect: (effect[1].line, effect[1].column) if effect[1] is not None else (0, 0))
    return named + sited


def limited_eaches(program: Program) -> list[TEach]:
    """Every ``each(limit=N)`` in ``program``'s own pipelines (a queued durable run hands their
    elements to workers), in the order of the spec's text."""
    found: list[TEach] = []
    for pipeline in program.pipelines:
        stack: list[TExpr] = [pipeline.body]
        while stack:
            node = stack.pop()
            if isinstance(node, TEach) and node.limit is not None:
                found.append(node)
            stack.extend(children(node))
    return sorted(found, key=lambda node: (node.span.line, node.span.column))


def stream_calls(program: Program) -> list[TRef]:
    """Every call of a ``stream llm`` step in ``program``'s own pipelines (a watched durable run
    tells the answer it replays there whole, :mod:`agentmonad.durable.watch`), in the order of
    the spec's text."""
    streams = {llm.name for llm in program.llms if llm.stream}
    found: list[TRef] = []
    for pipeline in program.pipelines if streams else ():
        found.extend(ref for ref in references(pipeline.body) if ref.kind is RefKind.LLM and ref.name in streams)
    return sorted(found, key=lambda ref: (ref.span.line, ref.span.column))
