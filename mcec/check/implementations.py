"""Do the Python implementations fit their declarations? (MCE026)

``step n : A -> B ! E = impl.f`` promises that ``impl.f`` is a
``def f(state: S, value: A) -> Outcome[S, E, B]`` (an ``async def`` for an
``async step``), and ``fn n : A -> B = impl.g`` that ``impl.g`` is a
``def g(value: A) -> B``. With the implementation read from its source
(:mod:`mcec.check.pyindex`), the checker holds each declaration to that, in
the spec's terms: the wrong kind of function, the wrong number of
parameters, a parameter or return type that cannot fit, an error the
implementation may fail with that the declaration does not list. What the
annotations leave open (no annotation, a type the index cannot read, two
classes it cannot relate) is mypy's to settle on the generated code; the
annotations it cannot read are counted among the check's unknown relations.
"""

from __future__ import annotations

from dataclasses import dataclass

from mcec import syntax
from mcec.check import report
from mcec.check.pyindex import PyFunction
from mcec.check.typed import Sig
from mcec.check.types import Compat, ErrorSet, Type, error_union, flows, leave_to_mypy, render_errors, sorted_errors
from mcec.diagnostics import Diagnostic
from mcec.span import Span

__all__ = ["StepContract", "check_fn", "check_step"]


@dataclass(frozen=True, slots=True)
class StepContract:
    """What a ``step`` declaration promises about its implementation."""

    decl: syntax.StepDecl
    sig: Sig
    state: Type | None


def check_step(contract: StepContract, impl: PyFunction) -> list[Diagnostic]:
    """The ways ``impl`` does not fit the step declaration ``contract``."""
    decl, sig = contract.decl, contract.sig
    where, name = decl.impl.span, decl.impl.dotted
    leave_to_mypy(impl.unread)
    found: list[Diagnostic] = []
    keyword = "async step" if decl.is_async else "step"
    if impl.is_async and not decl.is_async:
        found.append(
            report.implementation(
                f"`{name}` is an `async def`, but `{decl.name.text}` is declared a `step`",
                where,
                decl.name.span,
                f"declare it `async step {decl.name.text} : …`",
            )
        )
    elif decl.is_async and not impl.is_async:
        found.append(
            report.implementation(
                f"`{name}` is not an `async def`, but `{decl.name.text}` is declared an `async step`",
                where,
                decl.name.span,
                f"declare it `step {decl.name.text} : …`, or make `{name}` an `async def`",
            )
        )
    arity = _arity_problem(impl, 2)
    if arity is not None:
        takes_one = arity == "few" and len(impl.params) == 1
        found.append(
            report.implementation(
                f"`{name}` takes {_count(impl)}, but a `{keyword}` is called with a state and a value",
                where,
                decl.name.span,
                f"a `fn` takes only the value: declare it `fn {decl.name.text} : …`"
                if takes_one
                else f"write it `def {impl.path.rsplit('.', 1)[1]}(state, value)`",
            )
        )
        return found
    state_param, value_param = impl.params[0], impl.params[1]
    if contract.state is not None and state_param.type is not None and flows(contract.state, state_param.type) is Compat.NO:
        found.append(_type_problem(f"the state parameter of `{name}` is `{state_param.type}`, but the spec's state is `{contract.state}`", where, decl))
    if value_param.type is not None and flows(sig.input, value_param.type) is Compat.NO:
        found.append(_type_problem(f"`{name}` takes `{value_param.type}`, but `{decl.name.text}` is declared to take `{sig.input}`", where, decl))
    returns = impl.step_returns
    if returns is None:
        if impl.returns is not None:
            found.append(
                report.implementation(
                    f"`{name}` returns `{impl.returns}`, not an `Outcome`",
                    where,
                    decl.name.span,
                    "a step returns `Ok(value, state)` or `Err(error, state)`: annotate it "
                    f"`-> Outcome[{contract.state or 'S'}, {render_errors(sig.errors)}, {sig.output}]`, "
                    f"or declare it `fn {decl.name.text} : …` if it needs no state",
                )
            )
        return found
    if returns.output is not None and flows(returns.output, sig.output) is Compat.NO:
        found.append(_type_problem(f"`{name}` returns `{returns.output}`, but `{decl.name.text}` is declared to return `{sig.output}`", where, decl))
    if contract.state is not None and returns.state is not None and flows(returns.state, contract.state) is Compat.NO:
        found.append(_type_problem(f"`{name}` returns a state of type `{returns.state}`, but the spec's state is `{contract.state}`", where, decl))
    if returns.errors is not None:
        found.extend(_undeclared_errors(returns.errors, sig.errors, name, decl))
    return found


def check_fn(decl: syntax.FnDecl, sig: Sig, impl: PyFunction) -> list[Diagnostic]:
    """The ways ``impl`` does not fit the fn declaration ``decl``."""
    where, name = decl.impl.span, decl.impl.dotted
    leave_to_mypy(impl.unread)
    if impl.is_async:
        return [
            report.implementation(
                f"`{name}` is an `async def`, but a `fn` is called directly",
                where,
                decl.name.span,
                f"declare it `async step {decl.name.text} : …` (it then receives the state too)",
            )
        ]
    arity = _arity_problem(impl, 1)
    if arity is not None:
        takes_two = arity == "many" and len([p for p in impl.params if not p.has_default]) == 2
        return [
            report.implementation(
                f"`{name}` takes {_count(impl)}, but a `fn` is called with the value only",
                where,
                decl.name.span,
                f"a `fn` takes only the value; declare it `step {decl.name.text} : …`"
                if takes_two
                else f"write it `def {impl.path.rsplit('.', 1)[1]}(value)`",
            )
        ]
    found: list[Diagnostic] = []
    param = impl.params[0]
    if param.type is not None and flows(sig.input, param.type) is Compat.NO:
        found.append(_type_problem(f"`{name}` takes `{param.type}`, but `{decl.name.text}` is declared to take `{sig.input}`", where, decl))
    if impl.step_returns is not None:
        found.append(
            report.implementation(
                f"`{name}` returns an `Outcome`, but a `fn` returns its value",
                where,
                decl.name.span,
                f"declare it `step {decl.name.text} : …`",
            )
        )
    elif impl.returns is not None and flows(impl.returns, sig.output) is Compat.NO:
        found.append(_type_problem(f"`{name}` returns `{impl.returns}`, but `{decl.name.text}` is declared to return `{sig.output}`", where, decl))
    return found


def _arity_problem(impl: PyFunction, wanted: int) -> str | None:
    """``"few"`` or ``"many"`` when ``impl`` cannot be called with ``wanted`` positional arguments."""
    required = len([p for p in impl.params if not p.has_default])
    if required > wanted:
        return "many"
    if len(impl.params) < wanted and not impl.var_positional:
        return "few"
    return None


def _count(impl: PyFunction) -> str:
    names = ", ".join(f"`{p.name}`" for p in impl.params)
    count = len(impl.params)
    return f"{count} argument{'s' if count != 1 else ''} ({names})" if count else "no arguments"


def _type_problem(message: str, where: Span, decl: syntax.StepDecl | syntax.FnDecl) -> Diagnostic:
    return report.implementation(message, where, decl.name.span, "make the annotation and the declaration agree")


def _undeclared_errors(
    errors: ErrorSet, declared: ErrorSet, name: str, decl: syntax.StepDecl
) -> list[Diagnostic]:
    """MCE026 for each error the implementation's annotation admits that the declaration does not list."""
    allowed = error_union(declared)
    found: list[Diagnostic] = []
    for error_type in sorted_errors(errors):
        if flows(error_type, allowed) is Compat.NO:
            fixed = render_errors(declared | {error_type})
            found.append(
                report.implementation(
                    f"`{name}` may fail with `{error_type}`, which `{decl.name.text}` does not declare",
                    decl.impl.span,
                    decl.name.span,
                    f"add it to the step's errors: `! {fixed}`",
                )
            )
    return found
