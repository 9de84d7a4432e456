"""The typed handles of a generated module (docs/language.md §13 "Typed handles",
:mod:`agentmonad.handles`): a class of its asks, one attribute per ``ask`` typed with its
question and answer types, and a class of its pipelines, one :class:`~agentmonad.handles.Entry`
per pipeline typed with its input and output types::

    class Asks:
        approve: Ask[Ticket, Approval] = Ask("approve")

    class Runs:
        handle: Entry[Ticket, str, Asks] = Entry(__name__, "handle", Asks())

so that ``mypy --strict`` checks a program that starts runs and answers their questions. The
class names are fresh in the module (``Asks_2`` when the spec binds ``Asks``); the attribute names
are the spec's own, inside the classes, so they collide with nothing."""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from mcec.codegen import cst as c

if TYPE_CHECKING:
    from mcec.codegen.emitter import Emitter

__all__ = ["handle_classes"]

HANDLES_MODULE = "agentmonad.handles"
#: A class of more attributes than this is built over several classes of this many each.
CHUNK = 50


def handle_classes(emitter: Emitter) -> list[cst.ClassDef]:
    """The ``Asks`` and ``Runs`` classes of ``emitter``'s module (their runtime names imported);
    none for a spec without pipelines."""
    program = emitter.program
    if not program.pipelines:  # nothing to run
        return []
    asks_class = emitter.names.fresh("Asks")
    runs_class = emitter.names.fresh("Runs")
    entry = emitter.runtime("Entry", HANDLES_MODULE)
    spec = emitter.spec_file
    asks_body: list[cst.BaseStatement] = [
        c.docstring(f"The asks of {spec}, typed (docs/language.md, section 13).")
    ]
    for declared in program.asks:
        ask = emitter.runtime("Ask", HANDLES_MODULE)
        annotation = c.subscript(ask, [emitter.type_expr(declared.sig.input), emitter.type_expr(declared.sig.output)])
        asks_body.append(c.annotated(declared.name, annotation, c.call(ask, c.string(declared.name))))
    runs_body: list[cst.BaseStatement] = [
        c.docstring(f"The pipelines of {spec}, run durably through typed handles (docs/language.md, section 13).")
    ]
    for pipeline in program.pipelines:
        annotation = c.subscript(entry, [emitter.type_expr(pipeline.sig.input), emitter.type_expr(pipeline.sig.output),
                                         c.name(asks_class)])
        made = c.call(entry, c.name("__name__"), c.string(pipeline.name), c.call(c.name(asks_class)))
        runs_body.append(c.annotated(pipeline.name, annotation, made))
    return [*_classes(emitter, asks_class, asks_body), *_classes(emitter, runs_class, runs_body)]


def _classes(emitter: Emitter, name: str, body: list[cst.BaseStatement]) -> list[cst.ClassDef]:
    """``class name:`` with ``body`` (a docstring, then attributes); past :data:`CHUNK` attributes,
    ``class name(_name_1, _name_2, …)`` over classes of :data:`CHUNK` each, so that no statement
    grows with the spec (a module is laid out a statement at a time)."""
    doc, attributes = body[0], body[1:]
    if len(attributes) <= CHUNK:
        return [_class(name, [doc, *_spaced(attributes)], [])]
    parts = [_class(emitter.names.fresh(f"_{name}_{start // CHUNK + 1}"), attributes[start:start + CHUNK], [])
             for start in range(0, len(attributes), CHUNK)]
    return [*parts, _class(name, [doc], [c.name(part.name.value) for part in parts])]


def _spaced(attributes: list[cst.BaseStatement]) -> list[cst.BaseStatement]:
    """``attributes`` with a blank line before the first (after the docstring)."""
    if not attributes:
        return []
    return [attributes[0].with_changes(leading_lines=[cst.EmptyLine()]), *attributes[1:]]


def _class(name: str, body: list[cst.BaseStatement], bases: list[cst.Name]) -> cst.ClassDef:
    """``class name(bases):`` (no base but its parts: its attributes are the spec's names) with two
    blank lines before it."""
    return cst.ClassDef(name=cst.Name(name), body=cst.IndentedBlock(body=body), bases=[cst.Arg(b) for b in bases],
                        leading_lines=[cst.EmptyLine(), cst.EmptyLine()])
