"""The checker's environment: what every name of a `.mce` file refers to.

One namespace holds everything a file binds at top level (docs/language.md §3: names
are visible in the whole file): imported names, module aliases, the roots of
plain ``import a.b`` statements, and the declared steps, fns, tools, pipelines
and servers, plus the predeclared built-in error types. They share one
namespace because they become names of one generated Python module.

The :class:`Env` resolves names (types, implementation references) and records
which bindings were used, for W001. It reports nothing itself: resolution
returns a :class:`Failure` describing the problem, and the caller decides which
diagnostic that is in its situation (MCE002 for an implementation, MCE017 for a
type).
"""

from __future__ import annotations

import difflib
import enum
from dataclasses import dataclass, field
from typing import assert_never

from mcec import syntax
from mcec.span import Span
from mcec.check.pyindex import Missing, PyClass, PyFunction, PyModule, PythonIndex, PyValue
from mcec.check.typed import PyRef, RefKind
from mcec.check.types import (
    BUILTIN_ERRORS,
    BUILTIN_NAMES,
    GENERIC_ARITY,
    ANY,
    Builtin,
    ClassRef,
    Generic,
    GenericName,
    Lit,
    Type,
    literal_text,
    runtime_error,
    union,
)


class Kind(enum.Enum):
    """What a top-level name is bound to; ``value`` is the word used in messages."""

    FROM_IMPORT = "imported name"
    MODULE = "module"
    MODULE_ROOT = "imported module"
    STEP = "step"
    FN = "fn"
    TOOL = "tool"
    PIPELINE = "pipeline"
    SERVER = "server"
    MODEL = "model"
    LLM = "llm step"
    ASK = "ask step"
    TOOLBOX = "toolbox"
    BUILTIN_ERROR = "built-in error type"

    @property
    def article(self) -> str:
        """The kind with its indefinite article, for messages: "a step", "an imported name"."""
        return ("an " if self.value[0] in "aeiou" or self in (Kind.LLM, Kind.ASK) else "a ") + self.value


#: The builtin types by name, and the generic heads by name (typed lookups).
_BUILTINS: dict[str, Builtin] = {name: Builtin(name) for name in BUILTIN_NAMES}
_GENERIC_HEADS: dict[str, GenericName] = {head: head for head in GENERIC_ARITY}

#: Kinds a pipeline body may refer to by name: one per kind of reference (derived, so that a new
#: kind of reference is callable everywhere a name is looked up).
CALLABLE_KINDS: tuple[Kind, ...] = tuple(Kind[kind.name] for kind in RefKind)


@dataclass(frozen=True, slots=True)
class Binding:
    """One top-level name: its kind, where it is declared, and (for imports) its target.

    ``target`` is the resolved dotted path: ``a.b.X`` for ``from a.b import X``,
    ``a.b`` for ``import a.b as m``, ``a`` for the root of ``import a.b``, and
    ``agentmonad.X`` for a built-in error. ``site`` is the name as declared
    (None only for built-ins).
    """

    name: str
    kind: Kind
    site: syntax.Name | None
    target: str = ""

    @property
    def span(self) -> Span | None:
        """Where the name is declared; None for a built-in."""
        return None if self.site is None else self.site.span


@dataclass(frozen=True, slots=True)
class Failure:
    """Why a name did not resolve: ``message`` and an optional ``help``, at ``span``."""

    message: str
    span: Span
    help: str | None = None


#: How many candidate names the "did you mean" help of one file may compare, in all (see
#: :meth:`Env.suggestion`). difflib takes a few µs a candidate: a file of 100,000 lines with
#: 60,000 names and 8,000 unknown ones took over seven minutes to check, nearly all of it
#: spent on suggestions no one would read past the first screen.
SUGGESTION_BUDGET = 250_000


def suggest(name: str, candidates: list[str] | set[str] | tuple[str, ...]) -> str | None:
    """A help line naming the candidates closest to ``name`` (difflib), or None."""
    matches = difflib.get_close_matches(name, sorted(candidates), n=3, cutoff=0.6)
    if not matches:
        return None
    if len(matches) == 1:
        return f"did you mean `{matches[0]}`?"
    return "did you mean one of " + ", ".join(f"`{m}`" for m in matches) + "?"


@dataclass(slots=True)
class Env:
    """Bindings of a file, the modules it imports plainly, and which were used."""

    bindings: dict[str, Binding] = field(default_factory=dict)
    #: Full dotted paths of plain ``import a.b`` statements (resolvable as ``a.b.X``);
    #: add to it with :meth:`import_plainly`.
    plain_modules: set[str] = field(default_factory=set)
    #: Names of bindings used by some resolution.
    used: set[str] = field(default_factory=set)
    #: Plain-imported module paths used by some resolution.
    used_modules: set[str] = field(default_factory=set)
    # The memos of suggestions. Each entry keeps how many bindings there were when it
    # was made: bindings are only ever added, so an entry is valid while that count holds.
    _names: dict[tuple[Kind, ...], tuple[int, tuple[str, ...]]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )
    _suggestions: dict[tuple[str, tuple[Kind, ...], tuple[str, ...]], tuple[int, str | None]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )
    _suggestion_budget: int = field(default_factory=lambda: SUGGESTION_BUDGET, init=False, repr=False, compare=False)
    #: What the Python names read as (None: no class knowledge; every class relation is left to mypy).
    index: PythonIndex | None = field(default=None, compare=False, repr=False)

    @classmethod
    def with_builtins(cls, index: PythonIndex | None = None) -> Env:
        """An environment holding only the predeclared built-in error types."""
        env = cls(index=index)
        for name in BUILTIN_ERRORS:
            env.bindings[name] = Binding(name, Kind.BUILTIN_ERROR, None, runtime_error(name).path)
        return env

    def shadow(self, binding: Binding) -> None:
        """Bind ``binding`` in place of a built-in error it shadows (v2's ``LoopExhausted``, ``Timeout``)."""
        self.bindings[binding.name] = binding

    def bind(self, binding: Binding) -> Binding | None:
        """Add ``binding``; if its name is taken, keep the first and return it."""
        first = self.bindings.setdefault(binding.name, binding)
        return None if first is binding else first

    def import_plainly(self, module: str) -> None:
        """Record a plain ``import module`` (its root is bound separately, with :meth:`bind`)."""
        self.plain_modules.add(module)

    def lookup(self, name: str) -> Binding | None:
        """The binding of ``name`` (marking it used), or None."""
        binding = self.bindings.get(name)
        if binding is not None:
            self.used.add(name)
        return binding

    def names_of(self, kinds: tuple[Kind, ...]) -> tuple[str, ...]:
        """Every bound name of one of ``kinds``, sorted (made once while the bindings stay as they are)."""
        count = len(self.bindings)
        made = self._names.get(kinds)
        if made is None or made[0] != count:
            made = (count, tuple(sorted(b.name for b in self.bindings.values() if b.kind in kinds)))
            self._names[kinds] = made
        return made[1]

    def suggestion(self, name: str, kinds: tuple[Kind, ...], extra: tuple[str, ...] = ()) -> str | None:
        """:func:`suggest` for ``name`` among ``extra`` and the bound names of ``kinds``.

        Bounded, so that a file with many unknown names among many declared
        ones does not take quadratic time to report them: the same question
        is answered once (a missing import is often used many times), and the
        comparisons of a file stop at ``SUGGESTION_BUDGET`` candidates, after
        which diagnostics come without the help line. The first questions
        asked keep theirs: the checker goes through the file in order, the
        declarations first, then the pipeline bodies.
        """
        key = (name, kinds, extra)
        count = len(self.bindings)
        made = self._suggestions.get(key)
        if made is not None and made[0] == count:
            return made[1]
        names = self.names_of(kinds)
        size = len(extra) + len(names)
        help = None
        # The candidates are joined only when they will be compared: once the budget is spent,
        # every further question would otherwise still copy all the names for nothing.
        if size <= self._suggestion_budget:
            self._suggestion_budget -= size
            help = suggest(name, (*extra, *names))
        self._suggestions[key] = (count, help)
        return help

    # ------------------------------------------------------------ dotted paths

    def resolve_path(self, qual: syntax.QualName) -> tuple[str, str] | Failure:
        """Resolve an imported Python object to ``(module, attr)``.

        ``X`` must be a from-imported name; ``m.X`` goes through a module alias
        (or a from-imported module); ``a.b.X`` needs a plain ``import a.b``.
        """
        parts = qual.parts
        first = parts[0]
        text = first.text
        binding = self.bindings.get(text)
        if len(parts) == 1:
            if binding is None:
                return Failure(
                    f"unknown name `{text}`",
                    first.span,
                    self.suggestion(text, (Kind.FROM_IMPORT,))
                    or f"import it (`from MODULE import {text}`) or name it through a module (`m.{text}`)",
                )
            if binding.kind is not Kind.FROM_IMPORT:
                return Failure(
                    f"`{text}` is {binding.kind.article}, not an imported Python name",
                    first.span,
                    f"import it: `from MODULE import {text}`",
                )
            self.used.add(text)
            module, _, attr = binding.target.rpartition(".")
            return module, attr
        attr = parts[-1].text
        if binding is not None:
            kind = binding.kind
            if kind is Kind.MODULE or kind is Kind.FROM_IMPORT:
                self.used.add(text)
                if len(parts) == 2:
                    return binding.target, attr
                return ".".join([binding.target, *[p.text for p in parts[1:-1]]]), attr
            if kind is Kind.MODULE_ROOT:
                module = ".".join([p.text for p in parts[:-1]])
                imported = self._plain_module_of(module)
                if imported is not None:
                    self.used.add(text)
                    self.used_modules.add(imported)
                    return module, attr
                return Failure(
                    f"module `{module}` is not imported",
                    qual.span,
                    f"add `import {module}`",
                )
            return Failure(
                f"`{text}` is {kind.article}, not a module",
                first.span,
            )
        module = ".".join([p.text for p in parts[:-1]])
        return Failure(
            f"unknown name `{text}`",
            first.span,
            self.suggestion(text, (Kind.MODULE, Kind.MODULE_ROOT, Kind.FROM_IMPORT))
            or f"import the module: `import {module}`",
        )

    def _plain_module_of(self, module: str) -> str | None:
        """The plainly imported module that makes ``module`` reachable, if any."""
        if module in self.plain_modules:
            return module
        # `import a.b` makes `a.b.c.X` an attribute chain of a.b; the longest wins.
        candidates = [m for m in self.plain_modules if module.startswith(m + ".")]
        return max(candidates, key=len) if candidates else None

    def resolve_impl(self, qual: syntax.QualName) -> PyRef | Failure:
        """Resolve the ``= m.f`` of a step or fn (or a state's merge) to a :class:`PyRef`."""
        resolved = self.resolve_path(qual)
        if isinstance(resolved, Failure):
            return resolved
        module, attr = resolved
        return PyRef(module, attr, qual.dotted)

    # ------------------------------------------------------------------ types

    def resolve_type(self, expr: syntax.TypeExpr, failures: list[Failure]) -> Type:
        """The :class:`Type` written as ``expr``.

        Problems are appended to ``failures`` and the offending part becomes
        ``Any``, so that one bad type does not cause further diagnostics.
        (:meth:`mcec.check.names.DeclarationChecker.type_of` remembers the
        result by the expression's source text.)
        """
        match expr:
            case syntax.Name():
                return self._resolve_name(syntax.QualName((expr,), expr.span), failures)
            case syntax.QualName():
                return self._resolve_name(expr, failures)
            case syntax.TypeApply():
                return self._resolve_apply(expr, failures)
            case syntax.TypeUnion():
                return union([self.resolve_type(m, failures) for m in expr.members])
            case syntax.TypeLiteral():
                failures.append(
                    Failure(
                        f"`{literal_text(expr.value)}` is a value, not a type",
                        expr.span,
                        f"a literal type is written `Literal[{literal_text(expr.value)}]`",
                    )
                )
                return ANY
            case _:
                assert_never(expr)

    def _resolve_name(self, qual: syntax.QualName, failures: list[Failure]) -> Type:
        parts = qual.parts
        if len(parts) == 1:
            text = parts[0].text
            builtin = _BUILTINS.get(text)
            if builtin is not None:
                return builtin
            generic = _GENERIC_HEADS.get(text)
            if generic is not None:
                failures.append(_arity_failure(generic, 0, qual.span))
                return ANY
            binding = self.bindings.get(text)
            if binding is None:
                failures.append(
                    Failure(
                        f"unknown type `{text}`",
                        qual.span,
                        self.suggestion(text, (Kind.FROM_IMPORT, Kind.BUILTIN_ERROR), BUILTIN_NAMES),
                    )
                )
                return ANY
            if binding.kind is Kind.BUILTIN_ERROR:
                self.used.add(text)
                return runtime_error(text)
            if binding.kind is not Kind.FROM_IMPORT:
                failures.append(
                    Failure(
                        f"`{text}` is {binding.kind.article}, not a type",
                        qual.span,
                        "a type is a builtin, a generic, or a class imported with `from … import`",
                    )
                )
                return ANY
        resolved = self.resolve_path(qual)
        if isinstance(resolved, Failure):
            failures.append(Failure(resolved.message.replace("unknown name", "unknown type"), resolved.span, resolved.help))
            return ANY
        module, attr = resolved
        return self._imported_class(module, attr, qual, failures)

    def _imported_class(self, module: str, attr: str, qual: syntax.QualName, failures: list[Failure]) -> Type:
        """``module.attr`` as a type: what the Python index reads of it (its canonical path and its
        ancestry), or a class nothing is known of when there is no index or it cannot be read."""
        unknown = ClassRef(f"{module}.{attr}", qual.dotted)
        if self.index is None or isinstance(self.index.module(module), Missing):
            return unknown  # a module that cannot be found is reported once, at its import
        found = self.index.member(module, attr)
        match found:
            case PyClass():
                return ClassRef(found.path, qual.dotted, found.info)
            case PyValue():
                return unknown  # a type alias, a name made at run time: mypy knows
            case PyFunction():
                failures.append(Failure(f"`{qual.dotted}` is a function, not a type", qual.span, _TYPE_HELP))
                return ANY
            case PyModule():
                failures.append(Failure(f"`{qual.dotted}` is a module, not a type", qual.span, _TYPE_HELP))
                return ANY
            case Missing():
                if len(qual.parts) == 1:
                    return unknown  # a from-imported name that is not there: reported at its import
                failures.append(Failure(found.message, qual.parts[-1].span, found.help))
                return ANY
            case _:
                assert_never(found)

    def _resolve_apply(self, expr: syntax.TypeApply, failures: list[Failure]) -> Type:
        spelled = expr.head.dotted
        if spelled == "Literal" and "Literal" not in self.bindings:
            return self._resolve_literal(expr, failures)
        args = tuple(self.resolve_type(a, failures) for a in expr.args)
        head = _GENERIC_HEADS.get(spelled)
        if head is None:
            failures.append(
                Failure(
                    f"`{spelled}` is not a generic type",
                    expr.head.span,
                    "the generic types are `list[T]`, `set[T]`, `dict[K, V]` and `tuple[A, …]`",
                )
            )
            return ANY
        arity = GENERIC_ARITY[head]
        if (arity is None and not args) or (arity is not None and len(args) != arity):
            failures.append(_arity_failure(head, len(args), expr.span))
            return ANY
        return Generic(head, args)


    def _resolve_literal(self, expr: syntax.TypeApply, failures: list[Failure]) -> Type:
        """``Literal["a", 3]`` (v2): the union of its values; every argument must be a string or an int."""
        values: list[Type] = []
        for arg in expr.args:
            if isinstance(arg, syntax.TypeLiteral):
                values.append(Lit(arg.value))
            else:
                failures.append(
                    Failure(
                        "`Literal[…]` takes strings and whole numbers, not types",
                        arg.span,
                        'write `Literal["a", "b"]`; for a union of types write `A | B`',
                    )
                )
                return ANY
        return union(values)


_TYPE_HELP = "a type is a builtin, a generic, or a class imported with `from … import`"


def _arity_failure(head: GenericName, given: int, span: Span) -> Failure:
    """The MCE017 failure for ``head`` applied to ``given`` arguments."""
    arity = GENERIC_ARITY[head]
    wanted = "at least one argument" if arity is None else f"{arity} argument{'s' if arity != 1 else ''}"
    example = {"list": "list[T]", "set": "set[T]", "dict": "dict[K, V]", "tuple": "tuple[A, B]"}[head]
    return Failure(
        f"`{head}` takes {wanted}, but {given} {'was' if given == 1 else 'were'} given",
        span,
        f"write `{example}`",
    )
