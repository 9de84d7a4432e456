"""Pipelines: their dependency order, cycles, and their declared signatures.

A pipeline may use other pipelines by name, and a pipeline without ``!`` has
its errors inferred, so pipelines are checked callees first. The order comes
from Tarjan's strongly connected components (iterative, so a long dependency
chain cannot overflow the stack); a component with more than one pipeline, or
a pipeline that uses itself, is a cycle (MCE015). Members of a cycle are still
checked, each seeing the others' declared types (errors: declared, or none), so
their other problems are reported too.

After inference, a body is compared with the declaration: input and output
(MCE012) and escaping errors (MCE013, pointing at the step that introduces
the error).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import assert_never

from mcec import syntax
from mcec.check import report
from mcec.check.env import CALLABLE_KINDS, Kind
from mcec.check.expr import POISONED, ExprChecker, state_text
from mcec.check.names import DeclarationChecker, Declared, DeclaredPipeline, DeclaredToolbox
from mcec.check.report import Situation
from mcec.diagnostics import Diagnostic, DiagnosticSink, Label
from mcec.span import Span
from mcec.check.typed import (
    Sig,
    TBind,
    TCatch,
    TEach,
    TExpr,
    TIdentity,
    TIf,
    TLocal,
    TSubAgent,
    TLoop,
    TMatch,
    TOrElse,
    TPar,
    TPipeline,
    TRef,
    TRetry,
    TTimeout,
    TBudget,
    TSpawn,
    TToolbox,
    TUsed,
)
from mcec.check.types import MERGE_CONFLICT, Compat, Type, error_union, flows, render_errors, sorted_errors


@dataclass(frozen=True, slots=True)
class Reference:
    """A use of pipeline ``callee`` inside the body of pipeline ``caller``."""

    caller: str
    callee: str
    span: Span


def pipeline_references(declared: Declared, unchecked: frozenset[str] = frozenset()) -> dict[str, list[Reference]]:
    """For each pipeline, its references to pipelines, in source order (an explicit-stack walk);
    none for an ``unchecked`` one (its body is not read)."""
    env = declared.env
    result: dict[str, list[Reference]] = {}
    for name, pipeline in declared.pipelines.items():
        found: list[Reference] = []
        if name in unchecked:
            result[name] = found
            continue
        body = pipeline.decl.body
        stack: list[syntax.Expr] = (
            [s.expr for s in reversed(body.statements)] if isinstance(body, syntax.Block) else [body]
        )
        while stack:
            expr = stack.pop()
            if isinstance(expr, syntax.Ref):
                binding = env.bindings.get(expr.name)
                # another spec's pipeline (§11) is checked already: no edge of this file's order
                if binding is not None and binding.kind is Kind.PIPELINE and expr.name in declared.pipelines:
                    found.append(Reference(name, expr.name, expr.span))
            stack.extend(reversed(syntax.expr_children(expr)))
        result[name] = found
    return result


def components(names: list[str], references: dict[str, list[Reference]]) -> list[list[str]]:
    """Tarjan's strongly connected components, callees before callers.

    Iterative; DFS starts follow ``names`` (source order), so the result is deterministic.
    """
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    result: list[list[str]] = []
    counter = 0
    for root in names:
        if root in index:
            continue
        work: list[tuple[str, int]] = [(root, 0)]
        while work:
            node, position = work.pop()
            if position == 0:
                index[node] = low[node] = counter
                counter += 1
                stack.append(node)
                on_stack.add(node)
            edges = references.get(node, [])
            if position < len(edges):
                work.append((node, position + 1))
                callee = edges[position].callee
                if callee not in index:
                    work.append((callee, 0))
                elif callee in on_stack:
                    low[node] = min(low[node], index[callee])
                continue
            if low[node] == index[node]:
                component: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                result.append(list(reversed(component)))
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return result


def _cycle_path(component: list[str], references: dict[str, list[Reference]]) -> list[Reference]:
    """One cycle through the component's first member, as the references that form it."""
    members = set(component)
    start = component[0]
    # Breadth-first search back to `start` gives the shortest cycle through it.
    previous: dict[str, Reference] = {}
    frontier = [start]
    while frontier:
        following: list[str] = []
        for node in frontier:
            for ref in references.get(node, []):
                if ref.callee not in members:
                    continue
                if ref.callee == start:
                    path = [ref]
                    while path[0].caller != start:
                        path.insert(0, previous[path[0].caller])
                    return path
                if ref.callee not in previous:
                    previous[ref.callee] = ref
                    following.append(ref.callee)
        frontier = following
    raise AssertionError("a strongly connected component without a cycle")


class PipelineChecker:
    """Checks every pipeline body in dependency order and builds the typed pipelines."""

    def __init__(
        self, declared: Declared, declarations: DeclarationChecker, sink: DiagnosticSink, unchecked: frozenset[str] = frozenset()
    ) -> None:
        self.declared = declared
        self.sink = sink
        #: Pipelines whose bodies are not checked (:func:`mcec.check.check`'s ``unchecked``).
        self.unchecked = unchecked
        self.sigs: dict[str, Sig] = {}
        self.exprs = ExprChecker(declared, declarations, sink, self.sig_of)
        #: The checked toolboxes (§12), in source order, once :meth:`run` has run.
        self.toolboxes: list[TToolbox] = []

    def sig_of(self, name: str) -> Sig:
        """A pipeline's signature: inferred if already checked, else (in a cycle) as declared."""
        sig = self.sigs.get(name)
        if sig is not None:
            return sig
        used = self.declared.uses.get(name)
        if used is not None:
            return used.sig
        if name in self.declared.poisoned:
            return POISONED
        pipeline = self.declared.pipelines[name]
        return Sig(pipeline.input, pipeline.output, pipeline.errors or frozenset(), False)

    def run(self) -> list[TPipeline]:
        """Report cycles, then check each pipeline, callees first."""
        references = pipeline_references(self.declared, self.unchecked)
        order = components(list(self.declared.pipelines), references)
        for component in order:
            cyclic = len(component) > 1 or any(r.callee == component[0] for r in references[component[0]])
            if cyclic:
                path = _cycle_path(component, references)
                self.sink.add(report.cycle([r.caller for r in path], [r.span for r in path]))
        result: list[TPipeline] = []
        for component in order:
            for name in component:
                if name not in self.unchecked:
                    result.append(self._pipeline(self.declared.pipelines[name]))
        # entries are typed last: a plan may use any pipeline, whose signature is known by now
        self.toolboxes = [self._toolbox(toolbox) for toolbox in self.declared.toolboxes.values()]
        return result

    def _toolbox(self, toolbox: DeclaredToolbox) -> TToolbox:
        """A toolbox's entries, each typed as a reference (MCE002 unknown) that must name something
        a plan can run on this spec's state, once (MCE031)."""
        decl = toolbox.decl
        env = self.declared.env
        seen: dict[str, syntax.Name] = {}
        entries: list[TRef] = []
        for entry in decl.entries:
            first = seen.get(entry.text)
            if first is not None:
                self.sink.add(
                    report.outside_toolbox(
                        f"`{entry.text}` is listed twice in toolbox `{decl.name.text}`",
                        entry.span,
                        (Label(first.span, "first listed here"),),
                        help="list each entry once",
                    )
                )
                continue
            seen[entry.text] = entry
            binding = env.lookup(entry.text)
            if binding is not None and binding.kind not in CALLABLE_KINDS:
                self.sink.add(
                    report.outside_toolbox(
                        f"`{entry.text}` is {binding.kind.article}, which a plan cannot run: a toolbox lists "
                        "steps, fns, tools, llm steps and pipelines",
                        entry.span,
                        help="list what a plan may call; a plan reaches servers and models only through them",
                    )
                )
                continue
            used = self.declared.uses.get(entry.text)
            if used is not None and not used.own_state:
                self.sink.add(self._other_state_entry(decl, used, entry))
                continue
            ref = self.exprs.infer(syntax.Ref(entry.text, entry.span))
            if isinstance(ref, TIdentity):  # the standard `id`: nothing a plan would want to call
                self.sink.add(
                    report.outside_toolbox(
                        f"`{entry.text}` is the standard identity fn, which a plan has without a toolbox "
                        "listing it: a toolbox lists steps, fns, tools, llm steps and pipelines",
                        entry.span,
                        help="remove it from the toolbox; a plan may write `id` as any spec does",
                    )
                )
            elif isinstance(ref, TRef) and ref.sig is not POISONED:
                entries.append(ref)
        sig = Sig(toolbox.input, toolbox.output, toolbox.errors, self.exprs.toolbox_stateful(toolbox))
        return TToolbox(decl.name.text, sig, tuple(entries), decl.span)

    def _other_state_entry(self, decl: syntax.ToolboxDecl, used: TUsed, entry: syntax.Name) -> Diagnostic:
        """MCE031 for a toolbox entry that is another spec's pipeline on another state: a plan runs
        its entries on this spec's state, and an entry is a name, where no adapter can be written
        (docs/language.md §12); the help says how to wrap it in a pipeline of this spec."""
        ours, theirs = state_text(self.declared.state), state_text(used.state)
        sig = used.sig
        errors = f" ! {render_errors(sig.errors)}" if sig.errors else ""
        return report.outside_toolbox(
            f"`{entry.text}` is a pipeline of `{used.spec}` on state `{theirs}`, not this spec's state "
            f"`{ours}`: toolbox `{decl.name.text}` lists only what a plan can run on this spec's state",
            entry.span,
            help=(
                f"wrap it as a sub-agent and list the wrapper: declare `fn f : {ours} -> {theirs}`, "
                f"`pipeline {entry.text}_here : {sig.input} -> {sig.output}{errors} = local(state=f) {entry.text}` "
                "(docs/language.md §11)"
            ),
        )

    def _pipeline(self, pipeline: DeclaredPipeline) -> TPipeline:
        decl = pipeline.decl
        body = self.exprs.infer_body(decl.body, pipeline.input)
        self._check_ends(pipeline, body)
        if pipeline.errors is None:
            errors = body.sig.errors
        else:
            errors = pipeline.errors
            self._check_errors(pipeline, body)
        sig = Sig(pipeline.input, pipeline.output, errors, body.sig.stateful)
        self.sigs[decl.name.text] = sig
        return TPipeline(decl.name.text, sig, body, decl.span)

    def _check_ends(self, pipeline: DeclaredPipeline, body: TExpr) -> None:
        """MCE012: the declared input must flow into the body, the body's output into the declared one."""
        decl = pipeline.decl
        name = decl.name.text
        if isinstance(body, TIdentity) and body.written is None:
            if flows(pipeline.input, pipeline.output) is Compat.NO:
                self.sink.add(
                    report.mismatch(
                        Situation.EMPTY_BODY,
                        actual=pipeline.input,
                        expected=pipeline.output,
                        producer=("", body.span),
                        consumer=(name, decl.output.span),
                        primary=body.span,
                    )
                )
            return
        if flows(pipeline.input, body.sig.input) is Compat.NO:
            first = _first_span(body)
            self.sink.add(
                report.mismatch(
                    Situation.PIPELINE_INPUT,
                    actual=pipeline.input,
                    expected=body.sig.input,
                    producer=(name, decl.input.span),
                    consumer=("", first),
                    primary=decl.input.span,
                )
            )
        if flows(body.sig.output, pipeline.output) is Compat.NO:
            last = _last_span(body)
            self.sink.add(
                report.mismatch(
                    Situation.PIPELINE_OUTPUT,
                    actual=body.sig.output,
                    expected=pipeline.output,
                    producer=("", last),
                    consumer=(name, decl.output.span),
                    primary=decl.output.span,
                )
            )

    def _check_errors(self, pipeline: DeclaredPipeline, body: TExpr) -> None:
        """MCE013: every error the body may raise must fit an error the pipeline declares."""
        declared = pipeline.errors or frozenset()
        allowed = error_union(declared)
        decl = pipeline.decl
        assert decl.errors is not None
        for error_type in sorted_errors(body.sig.errors):
            if flows(error_type, allowed) is not Compat.NO:
                continue
            origin = find_origin(body, error_type)
            fixed = render_errors(declared | {error_type})
            self.sink.add(
                report.escaping_error(
                    error_type,
                    decl.name.text,
                    origin,
                    decl.errors.span,
                    render_errors(declared),
                    fixed,
                )
            )


def _first_span(expr: TExpr) -> Span:
    """The span of the first part of a chain (what takes the pipeline's input)."""
    while isinstance(expr, TBind):
        expr = expr.parts[0]
    return expr.span


def _last_span(expr: TExpr) -> Span:
    """The span of the last part of a chain (what produces the pipeline's output)."""
    while isinstance(expr, TBind):
        expr = expr.parts[-1]
    return expr.span


def find_origin(expr: TExpr, error_type: Type) -> tuple[report.Origin, str, Span]:
    """Where ``error_type`` enters ``expr``'s error set: the first reference (in
    source order) that raises it, or the ``par``/``each`` that adds ``MergeConflict``.

    Returns what kind of origin it is, a description and the span. Iterative: chains are long.
    """
    while True:
        match expr:
            case TRef():
                return report.Origin.REFERENCE, f"`{expr.name}`", expr.span
            case TBind():
                expr = next(p for p in expr.parts if error_type in p.sig.errors)
            case TPar():
                branch = next((b for b in expr.branches if error_type in b.sig.errors), None)
                if branch is None:
                    assert error_type == MERGE_CONFLICT
                    return report.Origin.PAR, "", expr.span
                expr = branch
            case TEach():
                if error_type not in expr.body.sig.errors:
                    return report.Origin.EACH, "", expr.span
                expr = expr.body
            case TLocal() | TSubAgent():
                expr = expr.body
            case TCatch():
                expr = expr.handler if error_type in expr.handler.sig.errors else expr.body
            case TOrElse():
                expr = expr.fallback
            case TIdentity():
                return report.Origin.REFERENCE, "this expression", expr.span
            case TMatch():
                expr = next(arm.body for arm in expr.arms if error_type in arm.body.sig.errors)
            case TIf():
                expr = next(p for p in (expr.condition, expr.then, expr.otherwise) if error_type in p.sig.errors)
            case TLoop():
                if error_type not in expr.body.sig.errors:
                    return report.Origin.LOOP, "", expr.span
                expr = expr.body
            case TTimeout():
                if error_type not in expr.body.sig.errors:
                    return report.Origin.TIMEOUT, "", expr.span
                expr = expr.body
            case TRetry():
                expr = expr.body
            case TBudget():
                if error_type not in expr.body.sig.errors:
                    return report.Origin.BUDGET, "", expr.span
                expr = expr.body
            case TSpawn():
                if error_type not in expr.planner.sig.errors:
                    return report.Origin.SPAWN, "", expr.span
                expr = expr.planner
            case _:
                assert_never(expr)

