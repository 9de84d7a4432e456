"""The emitter: a checked :class:`~mcec.check.typed.Program` to a libcst module.

Shape of the output (docs/language.md §7, docs/DESIGN.md):

* the spec's own imports, verbatim, plus the runtime names the code uses;
* one ``SITE_n = Site(step, file, line, column)`` constant per step use, so every
  failure names where it happened at no cost on the success path;
* one module-level binding per step/fn implementation, typed with the spec's
  signature (``plan: Step[S, str, Plan, LLMError] = impl.plan``) — mypy checks
  each implementation against its declaration there, and tests substitute an
  implementation by patching that module attribute;
* one ``async def`` per pipeline. A bind chain is straight-line code: per step a
  call, an ``isinstance`` check and one assignment; an exception raised by the
  step is turned into an ``Err``/``Defect`` by a ``try`` around just that call
  (zero-cost on Python 3.11 when nothing is raised). Groups (``par``, ``each``,
  ``catch``, ``orelse``, ``local``) become small helper functions that call the
  runtime's primitives, so nesting in the spec is never nesting in the code.
  Chains longer than :data:`CHUNK` steps (a ``fn`` counting two fifths of one) are split
  into helper functions (all but the last run of them) so no function grows past
  CPython's comfortable limits.

Inside a ``timeout``'s body (and in every pipeline such a body calls, and
their helpers: the *timed* code) each await a deadline can interrupt says
which state it started from: an async step's ``try`` has a second handler,
``except CancelledError: note_reached(state); raise``,
a ``local`` notes its start state the same way, a retry pause is given the
state, and groups note theirs in the runtime. The timeout reports the last
note (``deadline.reached(state)``), so the state of the last completed step
comes out of any depth of helpers (docs/language.md §6, :mod:`agentmonad.control`).
Code outside timeouts is unchanged by this, and so are v1 modules.

Every statement that stems from a spec construct is recorded with that
construct's span, for the source map (:mod:`mcec.codegen.sourcemap`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TypeAlias, assert_never

import libcst as cst

from mcec.check import typed as t
from mcec.codegen import cst as c
from mcec.codegen import template_hashes
from mcec.codegen.control import CONTROL_NODES, ControlEmitter
from mcec.codegen.descriptor import spec_info_lines
from mcec.codegen.handles import handle_classes
from mcec.codegen.names import NameAllocator, shadows_builtin
from mcec.span import Span
from mcec.check.types import Builtin, ClassRef, ErrorSet, Generic, Lit, Type, Union, members, render_errors, sorted_errors

if TYPE_CHECKING:
    from mcec.codegen.writer import Written

#: A finished top-level statement as the emitter keeps it: its syntax tree, or, when the module
#: is written a statement at a time (:attr:`Emitter.write`), its text, compiled and mapped.
Placed: TypeAlias = "cst.BaseStatement | Written"

#: Longest run of steps emitted in one function; longer chains are split.
CHUNK = 200
#: What a ``fn`` counts for towards :data:`CHUNK`, in fifths of a step: its call is 4 lines
#: (``try``, the call, the ``except`` returning the Defect), a step's 10, so a chunk of fns holds
#: 500 of them — a helper call per 200 fns cost a chain of 1,000 fns 9 % (benchmarks/README.md,
#: "fn chain").
FN_FIFTHS = 2
#: Most branches a ``par`` adds to its group in one statement (``group(b1).also(b2)…``);
#: a wider group is built over several statements, so no expression nests deeper.
GROUP_LINK = 100
#: How many finished top-level statements are written at a time (:attr:`Emitter.write`): written
#: one at a time, emitting, laying out and compiling took turns for each function, and compiling
#: 10,000 pipelines took a fifth longer (each found the processor's caches cold); the trees of 500
#: statements are a few MB.
WRITE_BATCH = 500
#: Helper names grow with nesting (`_main_par_catch`) up to about this length.
NAME_PREFIX = 24

RUNTIME = "agentmonad"
COMPILED = "agentmonad.compiled"
FRESHNESS = "agentmonad.freshness"


class Emitter:
    """Builds the generated module for one program: :meth:`module` (a libcst module), or
    :meth:`placed` with :attr:`write` set (the module's statements, each written as it is finished)."""

    def __init__(self, program: t.Program) -> None:
        self.program = program
        #: Lays out, compiles and maps a finished top-level statement (None: keep the trees); set
        #: before emitting, to a writer of this emitter's records (:mod:`mcec.codegen.writer`)
        self.write: Callable[[Sequence[cst.BaseStatement]], list[Written]] | None = None
        #: statements placed but not written yet: the list each is in, its position, itself
        self._unwritten: list[tuple[list[Placed], int, cst.BaseStatement]] = []
        self.spec_file = os.path.basename(program.path)
        self.spec_names = _spec_names(program)
        self.names = NameAllocator(self.spec_names)
        self._imports: dict[tuple[str, str], str] = {}
        self._toolbox_constants: dict[str, str] = {}
        self._builtins_alias: str | None = None
        self.site_lines: list[Placed] = []
        #: ``RUN_SITE_n = Site(pipeline, …)``: where each pipeline is declared, for its run's span
        #: (:meth:`run_entry`); numbered apart so that the steps' ``SITE_n`` stay as they were.
        self.run_site_lines: list[Placed] = []
        #: The constant of each site made so far, by step name, line and column (``SPEC_INFO`` names them).
        self.site_constants: dict[tuple[str, int, int], str] = {}
        self.functions: list[Placed] = []
        #: id() of a generated statement -> the span of the spec construct it stems from
        self.spans: dict[int, Span] = {}
        self.hints: dict[int, str] = {}
        self._error_tuples: dict[ErrorSet, cst.Tuple] = {}
        #: keeps recorded nodes alive, so id()s stay unique (until :meth:`_place` forgets them)
        self._keep: dict[int, cst.CSTNode] = {}
        self.tool_users = _tool_users(program)
        self.llm_users = _llm_users(program)
        #: the generated partial type of each record class streaming steps answer with (by path)
        self.partial_names: dict[str, str] = {}
        self.async_steps = {step.name for step in program.steps if step.is_async}
        self.timed_pipelines = _timed_pipelines(program)
        self.spawn_users = _spawn_users(program)
        #: whether the code being written runs inside a ``timeout`` (see the module docstring)
        self.timed = False
        self.control = ControlEmitter(self)
        self.state_type: cst.BaseExpression = (
            self.type_expr(program.state) if program.state is not None else c.name("None")
        )

    # ------------------------------------------------------------ names

    def runtime(self, attribute: str, module: str = RUNTIME) -> cst.Name:
        """A runtime (or typing) name, imported once under a collision-free alias."""
        key = (module, attribute)
        if key not in self._imports:
            self._imports[key] = self.names.fresh(attribute)
        return c.name(self._imports[key])

    def imported_as(self, attribute: str, module: str = RUNTIME) -> str | None:
        """The alias a runtime name was imported under so far (None: not used yet)."""
        return self._imports.get((module, attribute))

    def builtin(self, identifier: str) -> cst.BaseExpression:
        """A Python builtin, reached through ``builtins`` when the spec shadows it."""
        if not (self.names.is_taken(identifier) and shadows_builtin(identifier)):
            return c.name(identifier)
        if self._builtins_alias is None:
            self._builtins_alias = self.names.fresh("builtins")
        return c.attr(c.name(self._builtins_alias), identifier)

    def record(self, node: cst.CSTNode, span: Span, hint: str | None = None) -> None:
        """Remember that ``node`` was generated for the spec text at ``span``
        (``hint`` explains, in spec terms, what a mypy finding there means)."""
        self._keep[id(node)] = node
        self.spans[id(node)] = span
        if hint is not None:
            self.hints[id(node)] = hint

    def _place(self, statement: cst.BaseStatement, into: list[Placed]) -> None:
        """Append a finished top-level statement to ``into``; when the module is written a
        statement at a time, it is written (in a batch with those finished before it, see
        :data:`WRITE_BATCH`) and its records dropped, and with them its tree (issue 48)."""
        into.append(statement)
        self._to_write(into, len(into) - 1, statement)

    def _to_write(self, into: list[Placed], position: int, statement: cst.BaseStatement) -> None:
        """Queue ``statement`` (at ``into[position]``) to be written, and write a full batch."""
        if self.write is not None:
            self._unwritten.append((into, position, statement))
            if len(self._unwritten) >= WRITE_BATCH:
                self._write_unwritten()

    def _write_unwritten(self) -> None:
        """Write the statements placed since the last batch, in their places."""
        if self.write is None or not self._unwritten:
            return
        batch, self._unwritten = self._unwritten, []
        for (into, position, _), written in zip(batch, self.write([s for _, _, s in batch]), strict=True):
            into[position] = written
        for _, _, statement in batch:
            for node in _statements_in(statement):
                key = id(node)
                self.spans.pop(key, None)
                self.hints.pop(key, None)
                self._keep.pop(key, None)

    # ------------------------------------------------------------ types

    def type_expr(self, type_: Type) -> cst.BaseExpression:
        """A spec type as a Python annotation expression."""
        match type_:
            case Builtin(name="None"):
                return c.name("None")
            case Builtin(name="Any" | "Never"):
                return self.runtime(type_.name, "typing")
            case Builtin():
                return self.builtin(type_.name)
            case Generic():
                return c.subscript(self.builtin(type_.head), [self.type_expr(a) for a in type_.args])
            case ClassRef() if type_.is_runtime:
                return self.runtime(type_.path.rsplit(".", 1)[1])
            case ClassRef() if type_.spelling == type_.path and type_.path.split(".")[0] not in self.spec_names:
                # a class of another spec's pipeline that this spec does not import (§11): the
                # checker spelled it by its path, and the module imports it under a free name
                module, _, attribute = type_.path.rpartition(".")
                return self.runtime(attribute, module)
            case ClassRef():
                return c.dotted(type_.spelling)
            case Lit(value=value):
                written = c.string(value) if isinstance(value, str) else c.integer(value)
                return c.subscript(self.runtime("Literal", "typing"), [written])
            case Union():
                return c.bitor([self.type_expr(m) for m in type_.members])
            case _:
                assert_never(type_)

    def errors_expr(self, errors: ErrorSet) -> cst.BaseExpression:
        """An error set as the ``E`` of ``Outcome[S, E, A]`` (``Never`` when empty)."""
        ordered = sorted_errors(errors)
        if not ordered:
            return self.runtime("Never", "typing")
        return c.bitor([self.type_expr(e) for e in ordered])

    def error_classes(self, errors: ErrorSet) -> cst.Tuple:
        """The classes of an error set, for ``isinstance`` checks at run time
        (one shared node per set: long chains repeat the same few sets)."""
        if errors not in self._error_tuples:
            self._error_tuples[errors] = c.tuple_([self.type_expr(e) for e in sorted_errors(errors)])
        return self._error_tuples[errors]

    def outcome(self, sig: t.Sig) -> cst.BaseExpression:
        """``Outcome[S, E, B]`` for an expression's signature."""
        return c.subscript(
            self.runtime("Outcome"), [self.state_type, self.errors_expr(sig.errors), self.type_expr(sig.output)]
        )

    # ------------------------------------------------------------ sites

    def site(self, step: str, span: Span, *, run: bool = False) -> cst.Name:
        """A module constant ``SITE_n = Site(step, file, line, column)`` (``run``: a pipeline's
        own, ``RUN_SITE_n``)."""
        lines = self.run_site_lines if run else self.site_lines
        # two literal patterns, not one computed prefix: tests/check/test_no_generated_names.py
        # reads the emitter's fresh(f"…") names to know what a diagnostic must never show
        if run:
            constant = self.names.fresh(f"RUN_SITE_{len(lines) + 1}")
        else:
            constant = self.names.fresh(f"SITE_{len(lines) + 1}")
        value = c.call(
            self.runtime("Site"),
            c.string(step),
            c.string(self.spec_file),
            c.integer(span.line),
            c.integer(span.column),
        )
        statement = c.assign(constant, value)
        self.record(statement, span)
        self._place(statement, lines)
        self.site_constants.setdefault((step, span.line, span.column), constant)
        return c.name(constant)

    # ------------------------------------------------------------ declarations

    def bindings(self) -> list[cst.SimpleStatementLine]:
        """Typed module-level bindings of every step and fn implementation (and the merge)."""
        lines: list[cst.SimpleStatementLine] = []
        for step in self.program.steps:
            annotation = self.step_annotation("AsyncStep" if step.is_async else "Step", step.sig)
            statement = c.annotated(step.name, annotation, c.dotted(step.impl.spelling))
            self.record(statement, step.span)
            lines.append(statement)
        for fn in self.program.fns:
            annotation = c.subscript(
                self.runtime("Fn", COMPILED), [self.type_expr(fn.sig.input), self.type_expr(fn.sig.output)]
            )
            statement = c.annotated(fn.name, annotation, c.dotted(fn.impl.spelling))
            self.record(statement, fn.span)
            lines.append(statement)
        return lines

    def step_annotation(self, alias: str, sig: t.Sig) -> cst.BaseExpression:
        """``Step[S, A, B, E]`` / ``AsyncStep[S, A, B, E]``: the type a step, tool or llm binding has."""
        return c.subscript(
            self.runtime(alias, COMPILED),
            [self.state_type, self.type_expr(sig.input), self.type_expr(sig.output), self.errors_expr(sig.errors)],
        )

    def tool_bindings(self) -> list[cst.SimpleStatementLine]:
        """Servers as ``StdioServer`` constants and tools as typed async steps
        (``web_search: AsyncStep[S, A, B, E] = tool(search, "web_search", B)``)."""
        lines: list[cst.SimpleStatementLine] = []
        tools_module = f"{RUNTIME}.mcp"
        used_servers = {tool.server for tool in self.program.tools}
        for server in self.program.servers:
            if server.name not in used_servers:
                continue
            value = c.call(self.runtime("StdioServer", tools_module), c.string(server.name), c.string(server.command))
            statement = c.assign(server.name, value)
            self.record(statement, server.span)
            lines.append(statement)
        for tool in self.program.tools:
            annotation = self.step_annotation("AsyncStep", tool.sig)
            value = c.call(
                self.runtime("tool", tools_module),
                c.name(tool.server),
                c.string(tool.tool_name),
                self.type_expr(tool.sig.output),
            )
            statement = c.annotated(tool.name, annotation, value)
            self.record(statement, tool.span)
            lines.append(statement)
        return lines

    def llm_bindings(self) -> list[cst.SimpleStatementLine]:
        """Models as ``Model`` constants and llm steps as typed async steps
        (``decide: AsyncStep[S, A, B, LLMFailed | LLMUnavailable] = llm_step(fast, "…", B, name="decide")``)."""
        lines: list[cst.SimpleStatementLine] = []
        llm_module = f"{RUNTIME}.llm"
        used_models = {llm.model for llm in self.program.llms}
        for model in self.program.models:
            if model.name not in used_models:
                continue
            value = c.call(self.runtime("Model", llm_module), c.string(model.name), c.string(model.model_id))
            if model.options:
                options = [c.keyword_arg(name, _option_literal(option)) for name, option in model.options]
                value = value.with_changes(args=[*value.args, *options])
            statement = c.assign(model.name, value)
            self.record(statement, model.span)
            lines.append(statement)
        for llm in self.program.llms:
            annotation = self.step_annotation("AsyncStep", llm.sig)
            value = c.call(
                self.runtime("llm_step", llm_module),
                c.name(llm.model),
                c.string(llm.template),
                self.type_expr(llm.sig.output),
            )
            keywords = [c.keyword_arg("name", c.string(llm.name))]
            if llm.template_name is not None:
                keywords.append(c.keyword_arg("template_name", c.string(llm.template_name)))
            if llm.stream:
                keywords.extend(self.stream_arguments(llm))
            value = value.with_changes(args=[*value.args, *keywords])
            statement = c.annotated(llm.name, annotation, value)
            self.record(statement, llm.span)
            lines.append(statement)
        return lines

    def ask_bindings(self) -> list[cst.SimpleStatementLine]:
        """Ask steps as typed async steps (docs/language.md §15): ``approve: AsyncStep[S, A, B,
        NoOneToAsk | NoAnswer | BadAnswer] = ask_step("approve", B, "…", within=3600.0, site=SITE_n)``."""
        lines: list[cst.SimpleStatementLine] = []
        for ask in self.program.asks:
            annotation = self.step_annotation("AsyncStep", ask.sig)
            arguments = [c.string(ask.name), self.type_expr(ask.sig.output)]
            if ask.template is not None:
                arguments.append(c.string(ask.template))
            value = c.call(self.runtime("ask_step", f"{RUNTIME}.human"), *arguments)
            keywords = [c.keyword_arg("site", self.site(ask.name, ask.span))]
            if ask.within is not None:
                keywords.append(c.keyword_arg("within", cst.Float(repr(ask.within))))
            if ask.template_name is not None:
                keywords.append(c.keyword_arg("template_name", c.string(ask.template_name)))
            value = value.with_changes(args=[*value.args, *keywords])
            statement = c.annotated(ask.name, annotation, value)
            self.record(statement, ask.span)
            lines.append(statement)
        return lines

    # ------------------------------------------------------------ streaming (docs/language.md §14)

    def stream_arguments(self, llm: t.TLlm) -> list[cst.Arg]:
        """``stream=True`` and, for the output's own classes that have a generated partial type,
        ``partials={Answer: AnswerPartial}`` (a class without one gets it made at run time)."""
        arguments = [c.keyword_arg("stream", c.name("True"))]
        outputs = [m for m in members(llm.sig.output) if isinstance(m, ClassRef) and m.path in self.partial_names]
        if outputs:
            entries = [cst.DictElement(self.type_expr(m), c.name(self.partial_names[m.path])) for m in outputs]
            arguments.append(c.keyword_arg("partials", cst.Dict(entries)))
        return arguments

    def partial_classes(self) -> list[cst.ClassDef]:
        """One class per record class a streaming llm step answers with (``mcec.check.partials``):
        ``class AnswerPartial(Partial)`` with every field optional, defaulting to None."""
        partials: dict[str, t.TPartial] = {}
        for llm in self.program.llms:
            partials.update((p.cls.path, p) for p in llm.partials)
        for path in partials:  # named first: a class may hold one defined after it
            self.partial_names[path] = self.names.fresh(f"{path.rpartition('.')[2]}Partial")
        classes: list[cst.ClassDef] = []
        for path, partial in partials.items():
            doc = f"`{path}` as it streams (docs/language.md, section 14): every field optional."
            body: list[cst.BaseStatement] = [c.docstring(doc)]
            for field, tp in partial.fields:
                annotation = c.bitor(self.partial_members(tp, optional=True))
                line = c.annotated(field, annotation, c.name("None"))
                body.append(line.with_changes(leading_lines=[cst.EmptyLine()]) if len(body) == 1 else line)
            made = c.class_def(self.partial_names[path], self.runtime("Partial", f"{RUNTIME}.llm.partial"), body)
            classes.append(made)
        return classes

    def partial_members(self, tp: Type | None, *, optional: bool = False) -> list[cst.BaseExpression]:
        """The union members of the partial of ``tp``: a record class's partial, lists of partials,
        everything else as it is; ``optional`` adds None (once)."""
        found: list[cst.BaseExpression] = []
        none = False
        for member in members(tp) if tp is not None else (None,):
            match member:
                case None | Builtin(name="Any" | "Never"):
                    found.append(self.runtime("Any", "typing"))
                case Builtin(name="None"):
                    none = True
                case Builtin() | Lit():
                    found.append(self.type_expr(member))
                case ClassRef(path=path) if path in self.partial_names:
                    found.append(c.name(self.partial_names[path]))
                case ClassRef(path=path):
                    module, _, attribute = path.rpartition(".")
                    found.append(self.runtime(attribute, module))
                case Generic(head="dict", args=args):
                    value = c.bitor(self.partial_members(args[-1]))
                    found.append(c.subscript(self.builtin("dict"), [self.builtin("str"), value]))
                case Generic(args=args):  # list, set, tuple: what has arrived is a list
                    items = [m for arg in args for m in self.partial_members(arg)]
                    found.append(c.subscript(self.builtin("list"), [c.bitor(items)]))
                case Union():
                    raise AssertionError("members() flattens unions")
                case _:
                    assert_never(member)
        if none or optional:
            found.append(c.name("None"))
        return found

    def merge_function(self, merge: t.MergeKind) -> cst.BaseExpression:
        """The merge a group that merges without conflicts passes to the runtime."""
        if merge == "declared":
            assert self.program.merge is not None
            return c.dotted(self.program.merge.spelling)
        return self.runtime("merge_states")

    # ------------------------------------------------------------ pipelines

    def pipeline(self, pipeline: t.TPipeline) -> None:
        """Emit ``async def name(state, value)`` for a pipeline (and its helpers).

        A pipeline that reaches MCP tools runs its body inside ``tool_scope()``:
        the outermost run starts servers on first use and shuts them down when
        it ends, also on failure and cancellation (docs/language.md §9).
        """
        doc = f"Pipeline {pipeline.name} ({self.spec_file}:{pipeline.span.line}): {pipeline.sig}."
        self.timed = pipeline.name in self.timed_pipelines
        scopes: list[cst.WithItem] = []
        if pipeline.name in self.tool_users:
            scopes.append(cst.WithItem(item=c.call(self.runtime("tool_scope", f"{RUNTIME}.mcp"))))
        if pipeline.name in self.llm_users:
            # docs/language.md §10: one client per model for the run, its usage counted
            scopes.append(cst.WithItem(item=c.call(self.runtime("llm_scope", f"{RUNTIME}.llm"))))
        if not scopes:
            self.chain_function(
                pipeline.name, pipeline.sig, _flatten(pipeline.body), pipeline.span, doc, run_of=pipeline
            )
            return
        body = self.names.fresh(f"_{pipeline.name}_body")
        self.chain_function(body, pipeline.sig, _flatten(pipeline.body), pipeline.span, None)
        scope = self.names.child()
        state, value = scope.fresh("state"), scope.fresh("value")
        run = c.return_(c.await_(c.call(c.name(body), c.name(state), c.name(value))))
        scoped = cst.With(
            items=scopes,
            body=cst.IndentedBlock(body=[run]),
            asynchronous=cst.Asynchronous(),
        )
        definition = c.async_def(
            pipeline.name,
            [(state, self.state_type), (value, self.type_expr(pipeline.sig.input))],
            self.outcome(pipeline.sig),
            [c.docstring(doc), *self.run_entry(pipeline, scope, state, value), scoped],
        )
        self.record(definition, pipeline.span)
        self._place(definition, self.functions)

    def run_entry(
        self, pipeline: t.TPipeline, scope: NameAllocator, state: str, value: str, run: str | None = None
    ) -> list[cst.BaseStatement]:
        """A pipeline function's first statement: called from outside any run with something
        listening (a hook attached, or a process-wide run sink: ``agentmonad.otel.instrument``),
        it tells its own run (``RunStarted`` … ``RunEnded``) around the call of itself that runs
        the body (``agentmonad.compiled.run_sinks``). With nothing attached anywhere: two global
        reads per call, nothing per step. ``run``: the function reads its run context too (see
        :meth:`entered`), in the same test — ``run = hooked_run()`` in it, ``run = None`` in its
        ``else`` —, so the entry reads no global more than before."""
        sink = scope.fresh("sink")
        alive = c.or_([self.runtime("hooks_alive", COMPILED), self.runtime("run_sinks", COMPILED)])
        site = self.site(pipeline.name, pipeline.span, run=True)
        # the function and its arguments, not a lambda: a closure would make state and value
        # cells of the function, every step's access to them slower
        observed = c.call(
            self.runtime("observed_pipeline", COMPILED),
            c.name(sink),
            c.string(pipeline.name),
            site,
            c.name(pipeline.name),
            c.name(state),
            c.name(value),
        )
        told = c.if_(
            c.make(cst.Comparison, left=c.name(sink), comparisons=[
                c.make(cst.ComparisonTarget, operator=c.make(cst.IsNot), comparator=c.name("None"))]),
            [c.return_(c.await_(observed))],
        )
        listening = [c.assign(sink, c.call(self.runtime("run_sink", COMPILED))), told]
        if run is None:
            return [c.if_(alive, listening)]
        read = c.assign(run, c.call(self.runtime("hooked_run", COMPILED)))
        return [c.if_chain([(alive, [*listening, read])], [c.assign(run, c.name("None"))])]

    def function_of(self, expr: t.TExpr, owner: str) -> cst.BaseExpression:
        """An async callable ``(state, value) -> Outcome`` computing ``expr``."""
        if isinstance(expr, t.TRef) and expr.kind is t.RefKind.PIPELINE:
            return c.name(expr.name)
        helper = self.names.fresh(f"_{owner.lstrip('_')}_{_label(expr)}")
        # Helpers are named after the groups they sit in (`_main_par_catch`), up to
        # a point: past NAME_PREFIX characters they are named after the pipeline,
        # so 10,000-deep nesting does not make 10,000-part names (quadratic output).
        nested = helper if len(helper) <= NAME_PREFIX else owner
        if isinstance(expr, (t.TRef, t.TBind)):
            self.chain_function(helper, expr.sig, _flatten(expr), expr.span, None, nested)
        else:
            self.group_function(helper, expr, nested)
        return c.name(helper)

    def chain_function(
        self,
        function: str,
        sig: t.Sig,
        parts: Sequence[t.TExpr],
        span: Span,
        doc: str | None,
        owner: str | None = None,
        *,
        run_of: t.TPipeline | None = None,
    ) -> None:
        """A function running ``parts`` in sequence, straight-line; helpers it
        needs are named after ``owner`` (default: the function itself). ``run_of``: the function
        is that pipeline's own, which tells its run (:meth:`run_entry`)."""
        owner = owner if owner is not None else function
        scope = self.names.child()
        state, value = scope.fresh("state"), scope.fresh("value")
        body: list[cst.BaseStatement] = [c.docstring(doc)] if doc else []
        self._emit_parts(body, scope, parts, state, value, owner, last=True)
        if run_of is not None:  # the run context read in the entry's test (run_entry)
            at = 1 if doc else 0
            entry = self.run_entry(run_of, scope, state, value, scope.shared_as("run"))
            body = [*body[:at], *entry, *body[at:]]
        else:
            body = self.entered(body, scope)
        definition = c.async_def(
            function, [(state, self.state_type), (value, self.type_expr(sig.input))], self.outcome(sig), body
        )
        self.record(definition, span)
        self._place(definition, self.functions)

    def inline_chain(
        self,
        body: list[cst.BaseStatement],
        scope: NameAllocator,
        expr: t.TExpr,
        state: str,
        value: str,
        owner: str,
        *,
        last: bool,
    ) -> str:
        """Append the statements computing ``expr`` (a chain, or one part of one) from ``value``
        inside the function being written; return the name holding its output. With ``last``
        they end in a ``return`` of the result; failures always ``return`` their ``Err``."""
        return self._emit_parts(body, scope, _flatten(expr), state, value, owner, last=last)

    def _emit_parts(
        self,
        body: list[cst.BaseStatement],
        scope: NameAllocator,
        parts: Sequence[t.TExpr],
        state: str,
        value: str,
        owner: str,
        *,
        last: bool,
    ) -> str:
        runs = _chunks(parts)
        if len(runs) > 1:
            # every run a helper but the last, which stays here: one call fewer per chain
            parts = [*(self._chunk(owner, run) for run in runs[:-1]), *runs[-1]]
        current, fn_output = value, False
        for index, part in enumerate(parts):
            end = last and index == len(parts) - 1
            if isinstance(part, t.TRef) and part.kind is t.RefKind.FN:
                # `v = f(v)`: a fn's output overwrites the previous fn's when both are of one type
                # (declared `Fn[A, B]`, so mypy agrees): it is dead once this fn has read it, and a
                # chain of fns then costs what `value = f(value)` written by hand does — fresh
                # names make a frame of one local per fn (benchmarks/README.md, "fn chain")
                into = current if fn_output and parts[index - 1].sig.output == part.sig.output else None
                current, fn_output = self._fn_call(body, scope, part, state, current, end, into), True
            else:
                current, fn_output = self._chain_part(body, scope, part, state, current, end, owner), False
        return current

    def _chunk(self, owner: str, parts: Sequence[t.TExpr]) -> t.TExpr:
        """Emit a helper for a run of steps and return a reference to it."""
        errors: ErrorSet = frozenset().union(*(p.sig.errors for p in parts))
        sig = t.Sig(parts[0].sig.input, parts[-1].sig.output, errors, any(p.sig.stateful for p in parts))
        span = parts[0].span.cover(parts[-1].span)
        helper = self.names.fresh(f"_{owner.lstrip('_')}_steps")
        self.chain_function(helper, sig, parts, span, None)
        return t.TRef(helper, t.RefKind.PIPELINE, sig, span)

    def _chain_part(
        self,
        body: list[cst.BaseStatement],
        scope: NameAllocator,
        part: t.TExpr,
        state: str,
        value: str,
        last: bool,
        owner: str,
    ) -> str:
        """Append the statements for one part of a chain; return the name holding its output."""
        if isinstance(part, t.TIdentity):
            if last:
                body.append(c.return_(c.call(self.runtime("Ok"), c.name(value), c.name(state))))
            return value
        if isinstance(part, t.TRef):
            match part.kind:
                case t.RefKind.FN:
                    return self._fn_call(body, scope, part, state, value, last)
                case t.RefKind.STEP | t.RefKind.TOOL | t.RefKind.LLM | t.RefKind.ASK:
                    return self._step_call(body, scope, part, state, value, last)
                case t.RefKind.PIPELINE:
                    pass  # called through its function, as any other part below
                case _:
                    assert_never(part.kind)
        if last and isinstance(part, CONTROL_NODES):
            body.extend(self.control.body(part, state, value, scope, owner))
            return value
        if isinstance(part, t.TMatch):
            # mid-chain too: a dispatch costs no call (see match_inline); in a budget's body, an arm's
            # failures return through `spending.ending` as the body's own do (budget_body)
            return self.control.match_inline(body, part, state, value, scope, owner)
        # a pipeline, a chunk or a group: a call that already reports its own failures
        callee = self.function_of(part, owner)
        call = c.await_(c.call(callee, c.name(state), c.name(value)))
        if last:
            statement = c.return_(call)
            self.record(statement, part.span)
            body.append(statement)
            return value
        result = scope.fresh("r")
        statement = c.assign(result, call)
        self.record(statement, part.span)
        body.append(statement)
        body.append(c.if_(c.not_(self.is_ok(result)), [c.return_(c.name(result))]))
        return self._unpack(body, scope, result, state)

    def _step_call(
        self,
        body: list[cst.BaseStatement],
        scope: NameAllocator,
        part: t.TRef,
        state: str,
        value: str,
        last: bool,
    ) -> str:
        site = self.site(part.name, part.span)
        result = scope.fresh("r")
        attempt = self.effect_call(part, site, state, value, result, scope)
        errors = self.error_classes(part.sig.errors)
        guarded = self._guarded([attempt], scope, site, state, errors)
        body.append(self._noting(guarded, part, scope, state))
        stop = c.call(self.runtime("stop", COMPILED), c.name(result), site, errors)
        # the state the step received, for the Defect when it returned a non-Outcome
        stop = stop.with_changes(args=[*stop.args, c.keyword_arg("state", c.name(state))])
        failed = c.return_(stop)
        self.record(
            failed,
            part.span,
            f"{part.kind.word} `{part.name}` may fail with {render_errors(part.sig.errors)}; "
            "each of these must be among the errors the enclosing pipeline declares after `!`",
        )
        body.append(c.if_(c.not_(self.is_ok(result)), [failed]))
        if last:
            body.append(c.return_(c.name(result)))
            return value
        return self._unpack(body, scope, result, state)

    def step_attempt(
        self, part: t.TRef, state: str, value: str, result: str, scope: NameAllocator
    ) -> list[cst.BaseStatement]:
        """One call of a step or tool into ``result``, which holds an ``Ok`` or the ``Err`` to report
        (an exception turned into one by ``raised``, a returned ``Err`` given its site by ``stop``)::

            try:
                r = step(state, value)
            except Exception as exc:
                r = raised(exc, SITE, state, (E,))
            if not isinstance(r, Ok):
                r = stop(r, SITE, (E,), state=state)
        """
        site = self.site(part.name, part.span)
        attempt = self.effect_call(part, site, state, value, result, scope)
        errors = self.error_classes(part.sig.errors)
        exc = scope.shared("exc")
        converted = c.assign(result, c.call(self.runtime("raised", COMPILED), c.name(exc), site, c.name(state), errors))
        guarded = self._noting(c.try_except([attempt], self.builtin("Exception"), exc, [converted]), part, scope, state)
        stop = c.call(self.runtime("stop", COMPILED), c.name(result), site, errors)
        stop = stop.with_changes(args=[*stop.args, c.keyword_arg("state", c.name(state))])
        stopped = c.assign(result, stop)
        self.record(
            stopped,
            part.span,
            f"{part.kind.word} `{part.name}` may fail with {render_errors(part.sig.errors)}; "
            "each of these must be among the errors the enclosing pipeline declares after `!`",
        )
        return [guarded, c.if_(c.not_(self.is_ok(result)), [stopped])]

    def _fn_call(
        self,
        body: list[cst.BaseStatement],
        scope: NameAllocator,
        part: t.TRef,
        state: str,
        value: str,
        last: bool,
        into: str | None = None,
    ) -> str:
        """Append ``output = f(value)`` (``into``, else a fresh name) with an exception the fn
        raises returned as the Defect at its site. A pure fn is no effect (docs/language.md §14):
        it is called plainly, never through the effect seam, hooked or not::

            try:
                v = f(value)
            except Exception as exc:
                return raised(exc, SITE, state, ())
        """
        site = self.site(part.name, part.span)
        output = into if into is not None else scope.fresh("v")
        call = c.assign(output, c.call(c.name(part.name), c.name(value)))
        self.record(call, part.span)
        body.append(self._guarded([call], scope, site, state, c.tuple_([])))
        if last:
            body.append(c.return_(c.call(self.runtime("Ok"), c.name(output), c.name(state))))
        return output

    def effect_call(
        self, part: t.TRef, site: cst.Name, state: str, value: str, target: str, scope: NameAllocator
    ) -> cst.BaseStatement:
        """One call of a step, tool or model into ``target``: through the effect seam
        with its kind and site when a hook is attached to the run (``agentmonad.effects``;
        ``run`` is read once at the function's entry, see :meth:`entered`), else the plain call::

            if run is not None:
                r = step_effect(run, "step", SITE, step, state, value)
            else:
                r = step(state, value)
        """
        run = c.name(scope.shared("run"))
        function = c.name(part.name)
        seam: cst.BaseExpression
        match part.kind:
            case t.RefKind.FN:
                raise AssertionError("a fn is no effect: _fn_call calls it plainly")
            case t.RefKind.STEP | t.RefKind.TOOL | t.RefKind.LLM:
                plain: cst.BaseExpression = c.call(function, c.name(state), c.name(value))
                helper = "async_step_effect" if self._is_async(part) else "step_effect"
                kind = c.string(_EFFECT_KINDS[part.kind])
                seam = c.call(self.runtime(helper, COMPILED), run, kind, site, function, c.name(state), c.name(value))
                if self._is_async(part):
                    plain, seam = c.await_(plain), c.await_(seam)
            case t.RefKind.ASK:
                # the plain call only: asking is the "human" effect, which agentmonad.human.ask
                # sends through the seam itself (with no hook attached it is NoOneToAsk)
                direct = c.assign(target, c.await_(c.call(function, c.name(state), c.name(value))))
                self.record(direct, part.span)
                return direct
            case t.RefKind.PIPELINE:
                raise AssertionError("a pipeline is called through its function, not as an effect")
            case _:
                assert_never(part.kind)
        direct, through = c.assign(target, plain), c.assign(target, seam)
        self.record(direct, part.span)
        self.record(through, part.span)
        # the plain call last: with no hook it is the fall-through, one test and no jump more
        hooked = c.make(cst.Comparison, left=run, comparisons=[c.make(cst.ComparisonTarget, operator=c.make(cst.IsNot), comparator=c.name("None"))])
        return c.if_chain([(hooked, [through])], [direct])

    def entered(self, body: list[cst.BaseStatement], scope: NameAllocator) -> list[cst.BaseStatement]:
        """``body`` with ``run = hooked_run() if hooks_alive else None`` first (after a
        docstring) when it calls a step: the run context is read once per function, not per
        step, only while some hooked context exists in the process, and anew in each function
        because an ``each``/``par`` branch's context carries its element index."""
        run = scope.shared_as("run")
        if run is None:
            return body
        # the global test first: with no hook alive anywhere the entry reads no ContextVar
        alive = self.runtime("hooks_alive", COMPILED)
        read = c.assign(run, c.make(cst.IfExp, test=alive, body=c.call(self.runtime("hooked_run", COMPILED)), orelse=c.name("None")))
        at = 1 if body and isinstance(body[0], cst.SimpleStatementLine) and _is_docstring(body[0]) else 0
        return [*body[:at], read, *body[at:]]

    def _guarded(
        self,
        statements: list[cst.BaseStatement],
        scope: NameAllocator,
        site: cst.Name,
        state: str,
        errors: cst.Tuple,
    ) -> cst.Try:
        """``try: statements`` / ``except Exception as exc: return raised(exc, site, state, errors)``."""
        exc = scope.shared("exc")
        raised = c.call(self.runtime("raised", COMPILED), c.name(exc), site, c.name(state), errors)
        return c.try_except(statements, self.builtin("Exception"), exc, [c.return_(raised)])

    def _noting(self, guarded: cst.Try, part: t.TRef, scope: NameAllocator, state: str) -> cst.Try:
        """``guarded`` (the ``try`` around one step call) with, in timed code and for a step
        that awaits, the handler noting ``state`` on a cancellation that interrupts it."""
        if not (self.timed and self._is_async(part)):
            return guarded
        return guarded.with_changes(handlers=[*guarded.handlers, self.note_handler(scope, state)])

    def reaches_spawn(self, expr: t.TExpr) -> bool:
        """Whether running ``expr`` may run a ``spawn`` (see :func:`reaches_spawn`)."""
        return reaches_spawn(expr, self.spawn_users)

    def note_handler(self, scope: NameAllocator, state: str) -> cst.ExceptHandler:
        """``except CancelledError: note_reached(state); raise``: the state a timeout (or
        budget) around this await reports if it ends the run here, told to it through the
        run context (``agentmonad.control.note_reached``)."""
        note = c.call(self.runtime("note_reached", COMPILED), c.name(state))
        return cst.ExceptHandler(
            body=cst.IndentedBlock(body=[c.line(cst.Expr(note)), cst.SimpleStatementLine([cst.Raise()])]),
            type=self.runtime("CancelledError", "asyncio"),
        )

    def is_ok(self, result: str) -> cst.Call:
        """``isinstance(result, Ok)``."""
        return c.call(self.builtin("isinstance"), c.name(result), self.runtime("Ok"))

    def _unpack(self, body: list[cst.BaseStatement], scope: NameAllocator, result: str, state: str) -> str:
        output = scope.fresh("v")
        body.append(
            c.assign_pair(
                state, output, c.attr(c.name(result), "state"), c.attr(c.name(result), "value")
            )
        )
        return output

    def _is_async(self, part: t.TRef) -> bool:
        match part.kind:
            case t.RefKind.TOOL | t.RefKind.LLM | t.RefKind.ASK:
                return True
            case t.RefKind.STEP:
                return part.name in self.async_steps
            case t.RefKind.FN | t.RefKind.PIPELINE:
                return False
            case _:
                assert_never(part.kind)

    # ------------------------------------------------------------ groups

    def group_function(self, function: str, expr: t.TExpr, owner: str) -> None:
        """A helper implementing one ``par``/``each``/``catch``/``orelse``/``local``/``{}``;
        the helpers it needs in turn are named after ``owner``."""
        scope = self.names.child()
        state, value = scope.fresh("state"), scope.fresh("value")
        body: list[cst.BaseStatement]
        match expr:
            case t.TPar():
                body = self._par_body(expr, state, value, scope, owner)
            case t.TEach():
                body = self._each_body(expr, state, value, scope, owner)
            case t.TCatch():
                body = self._catch_body(expr, state, value, scope, owner)
            case t.TOrElse():
                body = self._orelse_body(expr, state, value, scope, owner)
            case t.TLocal() | t.TSubAgent():
                body = self._local_body(expr, state, value, scope, owner)
            case t.TIdentity():
                body = self._identity_body(expr, state, value, scope, owner)
            case t.TMatch() | t.TIf() | t.TLoop() | t.TRetry() | t.TTimeout():
                body = self.control.body(expr, state, value, scope, owner)
            case t.TBudget():
                body = self.control.budget_body(expr, state, value, scope, owner)
            case t.TSpawn():
                body = self._spawn_body(expr, state, value, scope, owner)
            case t.TRef() | t.TBind():
                raise AssertionError(f"{type(expr).__name__} is a chain, emitted by chain_function")
            case _:
                assert_never(expr)
        body = self.entered(body, scope)
        definition = c.async_def(
            function, [(state, self.state_type), (value, self.type_expr(expr.sig.input))], self.outcome(expr.sig), body
        )
        self.record(definition, expr.span)
        self._place(definition, self.functions)

    def _par_body(
        self, expr: t.TPar, state: str, value: str, scope: NameAllocator, owner: str
    ) -> list[cst.BaseStatement]:
        """``return await group(b1).also(b2)….run…(state, value, …)``: typed branch by branch, so
        mypy sees the tuple of outputs and the union of errors (no ``cast``).

        Each ``.also`` nests the expression one level deeper, and every tool that reads it
        (this module's printer, black, CPython's compiler, mypy) recurses on that depth. So a
        group wider than :data:`GROUP_LINK` branches is built statement by statement, at most
        that many branches to a statement (``branches = group(b1).also(b2)…``, ``branches_2 =
        branches.also(…)…``, …, ``return await branches_n.also(…)….run(…)``): the nesting
        stays bounded whatever the width, and smaller groups keep their one-statement form.
        """
        branches = [self.function_of(branch, owner) for branch in expr.branches]
        body: list[cst.BaseStatement] = []
        built: cst.BaseExpression = c.call(self.runtime("group", COMPILED), branches[0])
        for index, branch in enumerate(branches[1:], start=1):
            if index % GROUP_LINK == 0:
                partial = scope.fresh("branches")
                body.append(c.assign(partial, built))
                built = c.name(partial)
            built = c.call(c.attr(built, "also"), branch)
        site = self.site("par", expr.span)
        run: cst.BaseExpression
        match expr.merge:
            case "none":
                run = c.call(c.attr(built, "run"), c.name(state), c.name(value), site)
            case "declared" | "one_writer":
                merge = self.merge_function(expr.merge)
                run = c.call(c.attr(built, "run_merged"), c.name(state), c.name(value), merge, site)
            case "by_field":
                run = c.call(c.attr(built, "run_merging"), c.name(state), c.name(value), site)
            case _:
                assert_never(expr.merge)
        statement = c.return_(c.await_(run))
        body.append(statement)
        for built_statement in body:
            self.record(built_statement, expr.span)
        return body

    def _each_body(
        self, expr: t.TEach, state: str, value: str, scope: NameAllocator, owner: str
    ) -> list[cst.BaseStatement]:
        body = self.function_of(expr.body, owner)
        limit = c.integer(expr.limit) if expr.limit is not None else c.name("None")
        site = self.site("each", expr.span)
        args: list[cst.BaseExpression] = [c.name(state), c.name(value), body, limit]
        match expr.merge:
            case "none":
                run = c.call(self.runtime("each", COMPILED), *args, site)
            case "declared" | "one_writer":
                run = c.call(self.runtime("each_merged", COMPILED), *args, self.merge_function(expr.merge), site)
            case "by_field":
                run = c.call(self.runtime("each_merging", COMPILED), *args, site)
            case _:
                assert_never(expr.merge)
        statement = c.return_(c.await_(run))
        self.record(statement, expr.span)
        return [statement]

    def _catch_body(
        self, expr: t.TCatch, state: str, value: str, scope: NameAllocator, owner: str
    ) -> list[cst.BaseStatement]:
        """The body's result, returned as it is unless it failed with a caught error::

            result = await body(state, value)
            if isinstance(result, Ok):
                return result
            error = result.error
            if isinstance(error, (E1, E2)):
                return await handler(result.state, error)
            return Err(error, result.state, result.site)

        mypy narrows ``error`` to the caught types in the ``if`` and to the rest after it,
        so the errors left are exactly those the checker computed (no ``cast``).
        """
        body = self.function_of(expr.body, owner)
        handler = self.function_of(expr.handler, owner)
        result = scope.fresh("result")
        error = scope.fresh("error")
        first = c.assign(result, c.await_(c.call(body, c.name(state), c.name(value))))
        self.record(first, expr.body.span)
        passed = c.if_(self.is_ok(result), [c.return_(c.name(result))])
        unpack = c.assign(error, c.attr(c.name(result), "error"))
        caught = c.call(self.builtin("isinstance"), c.name(error), self.error_classes(frozenset(expr.errors)))
        handled = c.return_(c.await_(c.call(handler, c.attr(c.name(result), "state"), c.name(error))))
        self.record(handled, expr.handler.span)
        rest = c.return_(
            c.call(self.runtime("Err"), c.name(error), c.attr(c.name(result), "state"), c.attr(c.name(result), "site"))
        )
        self.record(rest, expr.span)
        return [first, passed, unpack, c.if_(caught, [handled]), rest]

    def _orelse_body(
        self, expr: t.TOrElse, state: str, value: str, scope: NameAllocator, owner: str
    ) -> list[cst.BaseStatement]:
        body = self.function_of(expr.body, owner)
        fallback = self.function_of(expr.fallback, owner)
        result = scope.fresh("result")
        first = c.assign(result, c.await_(c.call(body, c.name(state), c.name(value))))
        self.record(first, expr.body.span)
        retry = c.return_(c.await_(c.call(fallback, c.attr(c.name(result), "state"), c.name(value))))
        self.record(retry, expr.fallback.span)
        is_err = c.call(self.builtin("isinstance"), c.name(result), self.runtime("Err"))
        return [first, c.if_(is_err, [retry]), c.return_(c.name(result))]

    def _local_body(
        self, expr: t.TLocal | t.TSubAgent, state: str, value: str, scope: NameAllocator, owner: str
    ) -> list[cst.BaseStatement]:
        body = self.function_of(expr.body, owner)
        result = scope.fresh("result")
        made: list[cst.BaseStatement] = []
        match expr:
            case t.TLocal():
                start = state
            case t.TSubAgent():
                # a sub-agent (§11): its state is the adapter fn's value on this one, called as
                # any fn is (an exception is a Defect at the fn's site, with this state)
                start = self._fn_call(made, scope, expr.adapter, state, state, False)
            case _:
                assert_never(expr)
        first: cst.BaseStatement = c.assign(result, c.await_(c.call(body, c.name(start), c.name(value))))
        self.record(first, expr.span)
        if self.timed:
            # interrupted, a `local` gives back its start state like on any failure: it replaces
            # whatever its body noted (docs/language.md §6)
            first = cst.Try(body=cst.IndentedBlock(body=[first]), handlers=[self.note_handler(scope, state)])
        r = c.name(result)
        restored_ok = c.return_(c.call(self.runtime("Ok"), c.attr(r, "value"), c.name(state)))
        restored_err = c.return_(
            c.call(self.runtime("Err"), c.attr(r, "error"), c.name(state), c.attr(r, "site"))
        )
        return [*made, first, c.if_(self.is_ok(result), [restored_ok]), restored_err]

    def _spawn_body(
        self, expr: t.TSpawn, state: str, value: str, scope: NameAllocator, owner: str
    ) -> list[cst.BaseStatement]:
        """``return await TOOLBOX.spawn(state, value, planner, SITE)`` (§12): the runtime asks the
        planner helper for the plan, has it checked, and runs it."""
        planner = self.function_of(expr.planner, owner)
        spawn = c.attr(self.toolbox_constant(expr.toolbox), "spawn")
        call = c.call(spawn, c.name(state), c.name(value), planner, self.site("spawn", expr.span))
        statement = c.return_(c.await_(call))
        self.record(statement, expr.span)
        return [statement]

    def toolbox_constant(self, name: str) -> cst.Name:
        """The module constant holding toolbox ``name`` (defined after the pipelines, see :meth:`module`)."""
        constant = self._toolbox_constants.get(name)
        if constant is None:
            constant = self._toolbox_constants[name] = self.names.fresh(f"TOOLBOX_{name}")
        return c.name(constant)

    def toolbox_lines(self) -> list[cst.SimpleStatementLine]:
        """``TOOLBOX_t = Toolbox("t", spec, SPEC, __name__, {"p": p, …})`` for each toolbox a
        spawn uses, and the spec's text they share: plans are checked against it at run time."""
        if not self._toolbox_constants:
            return []
        text = self.names.fresh("SPEC")
        lines = [c.assign(text, c.string(self.program.source))]
        for toolbox in self.program.toolboxes:
            constant = self._toolbox_constants.get(toolbox.name)
            if constant is None:
                continue
            pipelines = cst.Dict(
                [
                    cst.DictElement(c.string(ref.name), c.name(ref.name))
                    for ref in toolbox.entries
                    if _planned(ref.kind)
                ]
            )
            made = c.call(
                self.runtime("Toolbox", "agentmonad.plans"),
                c.string(toolbox.name),
                c.string(self.spec_file),
                c.name(text),
                self.builtin("__name__"),
                pipelines,
            )
            typed = c.subscript(
                self.runtime("Toolbox", "agentmonad.plans"),
                [
                    self.state_type,
                    self.type_expr(toolbox.sig.input),
                    self.type_expr(toolbox.sig.output),
                    self.errors_expr(toolbox.sig.errors),
                ],
            )
            statement = c.annotated(constant, typed, made)
            self.record(statement, toolbox.span)
            lines.append(statement)
        return lines

    def _identity_body(
        self, expr: t.TIdentity, state: str, value: str, scope: NameAllocator, owner: str
    ) -> list[cst.BaseStatement]:
        return [c.return_(c.call(self.runtime("Ok"), c.name(value), c.name(state)))]

    # ------------------------------------------------------------ module

    def module(self, header: Sequence[str]) -> cst.Module:
        """The whole module: header, imports, sites, bindings, pipelines."""
        assert self.write is None, "an emitter that writes its statements builds no module"
        statements = cst.SimpleStatementLine | cst.BaseCompoundStatement
        body = [statement for statement in self.placed() if isinstance(statement, statements)]
        return cst.Module(body=body, header=header_comments(header))

    def placed(self) -> list[Placed]:
        """The module's statements in order (without its header comment): imports, sites,
        bindings, pipelines; with :attr:`write` set, every one of them written."""
        for pipeline in self.program.pipelines:
            self.pipeline(pipeline)
        partials = self.partial_classes()  # named before the llm bindings refer to them
        bindings = [*self.bindings(), *self.tool_bindings(), *self.llm_bindings(), *self.ask_bindings()]
        future = cst.ImportFrom(module=c.name("__future__"), names=[cst.ImportAlias(c.name("annotations"))])
        body: list[Placed] = [c.line(future)]
        toolboxes = self.toolbox_lines()  # placed after the functions (they name the pipelines)
        described = spec_info_lines(self)  # last: it names the pipelines and the types
        handles = handle_classes(self)  # before it: typed handles on the pipelines' durable runs
        if self.program.decls:  # a mypy finding in them is about the spec as a whole
            for handle in handles:
                self.record(handle, self.program.decls[0].span)
        # docs/language.md §7: say so at import when the spec beside the module, or a template file
        # its llm steps embed, has changed since (right after the imports, before the bindings
        # a changed spec may break)
        check_fresh = c.call(
            self.runtime("check_fresh", FRESHNESS), c.string(self.spec_file), c.string(self.program.source_sha256)
        )
        templates = template_hashes(self.program)
        if templates:  # `templates={"decide.j2": "<sha256>"}`, only where there are file templates
            hashes = cst.Dict([cst.DictElement(c.string(name), c.string(digest)) for name, digest in templates.items()])
            check_fresh = check_fresh.with_changes(args=[*check_fresh.args, c.keyword_arg("templates", hashes)])
        fresh = c.assign(self.names.fresh("FRESH"), check_fresh).with_changes(leading_lines=[cst.EmptyLine()])
        body.extend(self._import_lines())
        for spec_import in self.program.imports:
            if isinstance(spec_import, t.TFromImport):
                statement = c.import_from(spec_import.module, spec_import.names)
            else:
                statement = c.import_module(spec_import.module, spec_import.alias)
            self.record(statement, spec_import.span)
            body.append(statement)
        body.append(fresh)
        self._write_unwritten()
        top: list[Placed] = [*self.site_lines, *self.run_site_lines, *bindings]
        if top:  # one blank line between the imports and the constants (two after a class)
            blank = 2 if partials else 1
            if isinstance(top[0], cst.BaseStatement):
                first = top[0].with_changes(leading_lines=[cst.EmptyLine()] * blank)
                self.record(first, self.spans[id(top[0])])
                top[0] = first
            else:
                top[0] = top[0].after_blank_lines(blank)
        body.extend(partials)
        body.extend(top)
        body.extend(self.functions)
        if toolboxes:
            toolboxes[0] = toolboxes[0].with_changes(leading_lines=[cst.EmptyLine(), cst.EmptyLine()])
            body.extend(toolboxes)
        body.extend(handles)
        body.extend(described)
        if self.write is not None:  # the statements finished last (imports, bindings), in batches too
            for position, item in enumerate(body):
                if isinstance(item, cst.BaseStatement):
                    self._to_write(body, position, item)
            self._write_unwritten()
        return body

    def _import_lines(self) -> list[cst.SimpleStatementLine]:
        lines: list[cst.SimpleStatementLine] = []
        if self._builtins_alias is not None:
            lines.append(c.import_module("builtins", self._builtins_alias))
        modules = sorted({module for module, _ in self._imports}, key=lambda m: (m != "typing", m))
        for module in modules:
            names = sorted((attr, alias) for (mod, attr), alias in self._imports.items() if mod == module)
            lines.append(c.import_from(module, names))
        return lines


#: The effect kind (``agentmonad.context.EffectKind``) of a call, as the interpreter names it.
_EFFECT_KINDS = {t.RefKind.STEP: "step", t.RefKind.TOOL: "tool", t.RefKind.LLM: "model"}


def _chunks(parts: Sequence[t.TExpr]) -> list[Sequence[t.TExpr]]:
    """``parts`` cut into runs of at most :data:`CHUNK` steps, a ``fn`` counting :data:`FN_FIFTHS` fifths."""
    runs: list[Sequence[t.TExpr]] = []
    start, fifths = 0, 0
    for index, part in enumerate(parts):
        size = FN_FIFTHS if isinstance(part, t.TRef) and part.kind is t.RefKind.FN else 5
        if fifths + size > CHUNK * 5:
            runs.append(parts[start:index])
            start, fifths = index, 0
        fifths += size
    runs.append(parts[start:])
    return runs


def header_comments(header: Sequence[str]) -> list[cst.EmptyLine]:
    """The module's header comment lines (``# Generated by mcec …``)."""
    return [cst.EmptyLine(comment=cst.Comment(f"# {line}" if line else "#")) for line in header]


#: The fields statements are nested in: bodies, ``else``/``elif`` clauses, handlers, ``finally``.
_NESTING = ("body", "orelse", "handlers", "finalbody")


def _statements_in(statement: cst.BaseStatement) -> list[cst.CSTNode]:
    """``statement`` and every statement in it, however nested (every branch, handler and
    clause, the small statements of each line): what the emitter may have recorded in it."""
    found: list[cst.CSTNode] = []
    pending: list[cst.CSTNode] = [statement]
    while pending:
        node = pending.pop()
        found.append(node)
        if type(node) is cst.SimpleStatementLine:
            found.extend(node.body)  # small statements nest nothing
            continue
        for field in _NESTING:  # compound statements, blocks and clauses (no expression has these)
            inner = getattr(node, field, None)
            if type(inner) is list or type(inner) is tuple:
                pending.extend(inner)
            elif inner is not None:
                pending.append(inner)
    return found


def _is_docstring(statement: cst.SimpleStatementLine) -> bool:
    first = statement.body[0]
    return isinstance(first, cst.Expr) and isinstance(first.value, cst.SimpleString)


def _spec_names(program: t.Program) -> set[str]:
    """Every name the spec binds at module level (they are all reserved)."""
    names: set[str] = set()
    for decl in program.decls:
        match decl:
            case t.TFromImport():
                names.update(alias or name for name, alias in decl.names)
            case t.TModuleImport():
                names.add(decl.alias or decl.module.split(".")[0])
            case t.TStep() | t.TFn() | t.TServer() | t.TTool() | t.TModel() | t.TLlm() | t.TAsk() | t.TPipeline():
                names.add(decl.name)
            case t.TUsed() | t.TToolbox():
                pass  # bound by its import / no Python name: a toolbox is a constant named fresh
            case _:
                assert_never(decl)
    names.add("annotations")  # from __future__ import annotations binds it
    return names


def _tool_users(program: t.Program) -> set[str]:
    """The pipelines that call an MCP tool, directly or through other pipelines
    (``program.pipelines`` lists callees before callers). In a spec that
    declares a server, an async step counts too: it may call a tool chosen at
    run time (``agentmonad.mcp.call_tool``), which should share the run's session."""
    users: set[str] = set()
    async_steps = {s.name for s in program.steps if s.is_async} if program.servers else set()
    for pipeline in program.pipelines:
        refs = t.references(pipeline.body)
        if any(
            _reaches(r, users, async_steps, needs=t.RefKind.TOOL) for r in refs
        ):
            users.add(pipeline.name)
    return users


def _llm_users(program: t.Program) -> set[str]:
    """The pipelines that call an llm step, directly or through other pipelines: their
    bodies run inside ``llm_scope()`` (``program.pipelines`` lists callees before callers)."""
    users: set[str] = set()
    for pipeline in program.pipelines:
        if any(_reaches(r, users, set(), needs=t.RefKind.LLM) for r in t.references(pipeline.body)):
            users.add(pipeline.name)
    return users


def reaches_spawn(expr: t.TExpr, spawn_users: set[str]) -> bool:
    """Whether running ``expr`` may run a ``spawn``: one inside it, or in a pipeline it calls
    (``spawn_users``, from :func:`_spawn_users`). Only a retry around one tells its attempts
    how the last one failed (the planner's rejection, §12)."""
    return any(
        isinstance(node, t.TSpawn) or (isinstance(node, t.TRef) and node.kind is t.RefKind.PIPELINE and node.name in spawn_users)
        for node in _descendants(expr)
    )


def _spawn_users(program: t.Program) -> set[str]:
    """The pipelines that run a ``spawn``, directly or through other pipelines
    (``program.pipelines`` lists callees before callers)."""
    users: set[str] = set()
    for pipeline in program.pipelines:
        if reaches_spawn(pipeline.body, users):
            users.add(pipeline.name)
    return users


def _timed_pipelines(program: t.Program) -> set[str]:
    """The pipelines that may run inside a ``timeout`` or a ``budget``: those such a body
    calls, directly or through other pipelines (their code notes the state it reached)."""
    bodies = {pipeline.name: pipeline.body for pipeline in program.pipelines}
    pending: list[str] = []
    for pipeline in program.pipelines:
        for node in _descendants(pipeline.body):
            if isinstance(node, (t.TTimeout, t.TBudget)):
                pending.extend(r.name for r in t.references(node.body) if r.kind is t.RefKind.PIPELINE)
    timed: set[str] = set()
    while pending:
        name = pending.pop()
        if name in timed or name not in bodies:
            continue
        timed.add(name)
        pending.extend(r.name for r in t.references(bodies[name]) if r.kind is t.RefKind.PIPELINE)
    return timed


def _planned(kind: t.RefKind) -> bool:
    """Does a plan over a toolbox run an entry of this kind as a compiled callable (a pipeline, an
    ``llm`` step) rather than through the interpreter (a step, fn or tool, §12)?"""
    match kind:
        case t.RefKind.PIPELINE | t.RefKind.LLM:
            return True
        case t.RefKind.STEP | t.RefKind.FN | t.RefKind.TOOL | t.RefKind.ASK:
            return False
        case _:
            assert_never(kind)


def _reaches(ref: t.TRef, users: set[str], async_steps: set[str], *, needs: t.RefKind) -> bool:
    """Does a run of ``ref`` reach a reference of kind ``needs`` (a tool, an llm step): it is one, it
    is a pipeline among ``users`` (those that reach one), or an async step when the scope it opens
    serves steps too (``async_steps``)?"""
    match ref.kind:
        case t.RefKind.PIPELINE:
            return ref.name in users
        case t.RefKind.STEP:
            return ref.kind is needs or ref.name in async_steps
        case t.RefKind.TOOL | t.RefKind.LLM | t.RefKind.FN | t.RefKind.ASK:
            return ref.kind is needs
        case _:
            assert_never(ref.kind)


def _descendants(expr: t.TExpr) -> list[t.TExpr]:
    """``expr`` and every expression inside it (iterative: chains are long)."""
    found: list[t.TExpr] = []
    stack = [expr]
    while stack:
        node = stack.pop()
        found.append(node)
        stack.extend(t.children(node))
    return found


def _flatten(expr: t.TExpr) -> list[t.TExpr]:
    """The parts of a chain (a non-bind expression is a chain of one)."""
    if not isinstance(expr, t.TBind):
        return [expr]
    parts: list[t.TExpr] = []
    stack: list[t.TExpr] = [expr]
    while stack:  # iterative: a chain may be very long
        node = stack.pop()
        if isinstance(node, t.TBind):
            stack.extend(reversed(node.parts))
        else:
            parts.append(node)
    return parts


def _label(expr: t.TExpr) -> str:
    """The part of a helper's name that says what it computes."""
    match expr:
        case t.TRef():
            return expr.name
        case t.TPar():
            return "par"
        case t.TEach():
            return "each"
        case t.TCatch():
            return "catch"
        case t.TOrElse():
            return "orelse"
        case t.TLocal() | t.TSubAgent():
            return "local"
        case t.TIdentity(written=str(written)):
            return written
        case t.TBind() | t.TIdentity():
            return "steps"
        case t.TMatch():
            return "match"
        case t.TIf():
            return "if"
        case t.TLoop():
            return "loop"
        case t.TRetry():
            return "retry"
        case t.TTimeout():
            return "timeout"
        case t.TBudget():
            return "budget"
        case t.TSpawn():
            return "spawn"
        case _:
            assert_never(expr)


def _option_literal(value: t.OptionValue) -> cst.BaseExpression:
    """A model option's value as a Python literal (``0.2``, ``3``, ``"http://…"``)."""
    if isinstance(value, str):
        return c.string(value)
    if isinstance(value, bool):  # not produced by the checker; a bool is no option value
        raise TypeError("a model option is a str, an int or a float")
    if isinstance(value, int):
        return c.integer(value)
    return cst.Float(repr(value))
