"""``SPEC_INFO = SpecInfo(...)``: the last statement of a generated module, what running it needs
that the compiler knew (:mod:`agentmonad.spec`): the spec's pipelines with their types, the types
of every effect site a durable run records, its asks, its ``each(limit=N)`` sites and the specs it
uses. Its effect sites are those :func:`mcec.durable.types.type_table` reads from the checked
program; ``tests/codegen/test_spec_info.py`` holds the two to agreement."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import libcst as cst

from mcec.check import typed as t
from mcec.codegen import cst as c
from mcec.span import Span

if TYPE_CHECKING:
    from mcec.codegen.emitter import Emitter

__all__ = ["spec_info_lines"]

SPEC_MODULE = "agentmonad.spec"
#: A descriptor of more entries than this is built over several statements of this many each,
#: so that no statement grows with the spec (a module is laid out a statement at a time).
CHUNK = 50


def spec_info_lines(emitter: Emitter) -> list[cst.SimpleStatementLine]:
    """The ``SPEC_INFO`` statement of ``emitter``'s module (its names imported through it)."""
    program = emitter.program

    def info(name: str) -> cst.Name:
        return emitter.runtime(name, SPEC_MODULE)

    def site(step: str, span: Span) -> cst.BaseExpression:
        constant = emitter.site_constants.get((step, span.line, span.column))
        if constant is not None:
            return c.name(constant)
        return c.call(emitter.runtime("Site"), c.string(step), c.string(emitter.spec_file), c.integer(span.line),
                      c.integer(span.column))

    def effect(name: str, span: Span | None, sig: t.Sig) -> cst.Call:
        where = site(name, span) if span is not None else c.name("None")
        return c.call(info("EffectSite"), c.string(name), where, emitter.type_expr(sig.output),
                      emitter.error_classes(sig.errors))

    pipelines = [
        c.call(info("PipelineInfo"), c.string(p.name), c.name(p.name), emitter.type_expr(p.sig.input),
               emitter.type_expr(p.sig.output), emitter.error_classes(p.sig.errors), site(p.name, p.span))
        for p in program.pipelines
    ]
    effects = [effect(name, span, sig) for name, span, sig in t.recorded_effects(program)]
    asks = [
        c.call(info("AskInfo"), c.string(ask.name), site(ask.name, ask.span), emitter.type_expr(ask.sig.input),
               emitter.type_expr(ask.sig.output))
        for ask in program.asks
    ]
    each = [
        c.call(info("EachInfo"), site("each", node.span), c.integer(node.limit), emitter.type_expr(node.body.sig.input))
        for node in t.limited_eaches(program)
        if node.limit is not None
    ]
    lines: list[cst.SimpleStatementLine] = []

    def chunked(name: str, items: Sequence[cst.BaseExpression]) -> cst.BaseExpression:
        """``(a, b, …)`` inline, or, past :data:`CHUNK` items, ``(*_NAME_1, *_NAME_2, …)`` over statements of its own."""
        if len(items) <= CHUNK:
            return c.tuple_(items)
        parts = []
        for start in range(0, len(items), CHUNK):
            part = emitter.names.fresh(f"_{name}_{start // CHUNK + 1}")
            lines.append(c.assign(part, c.tuple_(items[start:start + CHUNK])))
            parts.append(c.make(cst.StarredElement, value=c.name(part)))
        return c.make(cst.Tuple, elements=parts)

    made = c.call(
        info("SpecInfo"),
        c.string(emitter.spec_file),
        c.string(program.source_sha256),
        emitter.state_type,
        chunked("PIPELINES", pipelines),
    )
    keywords: list[tuple[str, Sequence[cst.BaseExpression]]] = [
        ("effects", effects),
        ("asks", asks),
        ("each", each),
        ("models", [c.string(m.name) for m in program.models]),
        ("uses", [c.string(module) for module in sorted({u.module for u in program.uses})]),
        ("fingerprint", [c.string(digest)] if (digest := _digest(program)) else []),
        ("streams", [site(ref.name, ref.span) for ref in t.stream_calls(program)]),
    ]
    made = made.with_changes(
        args=[*made.args, *(c.keyword_arg(k, v[0] if k == "fingerprint" else chunked(k.upper(), v))
                            for k, v in keywords if v)]
    )
    # `agentmonad.spec.spec_info` finds it by this name (a spec that declares `SPEC_INFO` itself
    # gets `SPEC_INFO_2`, and its module cannot be run without the compiler)
    lines.append(c.assign(emitter.names.fresh("SPEC_INFO"), made))
    blank = c.make(cst.EmptyLine)
    lines[0] = lines[0].with_changes(leading_lines=[blank, blank])
    if program.decls:  # a mypy finding in it is about the spec as a whole: its first declaration
        for line in lines:
            emitter.record(line, program.decls[0].span)
    return lines


def _digest(program: t.Program) -> str:
    """The digest of ``program``'s fingerprint (:func:`mcec.fingerprint.fingerprint`), "" when the
    classes it names cannot be imported here (the module then refuses to run durably, saying so)."""
    import sys
    from pathlib import Path

    from mcec.check.pyindex import package_root
    from mcec.fingerprint import fingerprint

    root = str(package_root(Path(program.path)))
    added = root not in sys.path
    if added:  # the spec's modules import from its package's root, as its generated module's imports do
        sys.path.insert(0, root)
    try:
        return fingerprint(program).digest
    except Exception:  # the user's modules failing to import here
        return ""
    finally:
        if added:
            sys.path.remove(root)
