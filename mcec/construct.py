"""The fast constructors of spans and syntax nodes, shared by both parsers.

``NAME(text, source, start, end)`` builds the same :class:`mcec.syntax.Name`
as ``Name(text, source, start, end)``, without the frozen dataclass's slow
``__init__`` (see :mod:`mcec.fastinit` for how, and why that halves the cost
of an object). The parsers call these for every node they build; rare nodes
(imports, state and error declarations, servers, tools) use their classes.

A node takes its position as its last three arguments, ``source, start,
end``, not as a :class:`Span` (see :mod:`mcec.syntax`): the parsers pass the
offsets they already have, and no span object is built for a node unless
someone reads ``node.span``. ``SPAN`` remains for the few positions that are
``Span`` fields (keywords, ``Each.limit_span``, ``ServerDecl.command_span``).

:func:`fast_constructor` is importable from here too (it lives in
:mod:`mcec.fastinit`, which imports nothing from the compiler, so that
:mod:`mcec.span` and :mod:`mcec.syntax` can use it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from mcec import syntax as s
from mcec.fastinit import builder_of, fast_constructor
from mcec.span import SourceFile, make_span

__all__ = [
    "BIND",
    "BLOCK",
    "CATCH",
    "COMMENT",
    "EACH",
    "ERROR_LIST",
    "FN_DECL",
    "LOCAL",
    "NAME",
    "OR_ELSE",
    "PAR",
    "PIPELINE_DECL",
    "QUAL",
    "REF",
    "SPAN",
    "STATEMENT",
    "STEP_DECL",
    "TYPE_APPLY",
    "TYPE_UNION",
    "ONE_NAME_QUAL",
    "fast_constructor",
]

SPAN: Final = make_span
NAME: Final = fast_constructor(s.Name)
QUAL: Final = fast_constructor(s.QualName)
TYPE_APPLY: Final = fast_constructor(s.TypeApply)
TYPE_UNION: Final = fast_constructor(s.TypeUnion)
ERROR_LIST: Final = fast_constructor(s.ErrorList)
REF: Final = fast_constructor(s.Ref)
BIND: Final = fast_constructor(s.Bind)
PAR: Final = fast_constructor(s.Par)
EACH: Final = fast_constructor(s.Each)
LOCAL: Final = fast_constructor(s.Local)
CATCH: Final = fast_constructor(s.Catch)
OR_ELSE: Final = fast_constructor(s.OrElse)
STATEMENT: Final = fast_constructor(s.Statement)
BLOCK: Final = fast_constructor(s.Block)
STEP_DECL: Final = fast_constructor(s.StepDecl)
FN_DECL: Final = fast_constructor(s.FnDecl)
PIPELINE_DECL: Final = fast_constructor(s.PipelineDecl)
COMMENT: Final = fast_constructor(s.Comment)


def _one_name_qual_maker() -> Callable[[str, SourceFile, int, int], s.QualName]:
    """The builder of the commonest little tree: a name of one part, such as the type ``A``.

    ``QualName((Name(A),))`` is two nodes at the same position. Building them
    in one function saves the Python call of the second. Only when both
    classes take the fast path; else the same tree from the general
    constructors.
    """
    name_builder, qual_builder = map(builder_of, (NAME, QUAL))
    if None in (name_builder, qual_builder):  # pragma: no cover - see fastinit

        def plain_qual(text: str, source: SourceFile, start: int, end: int) -> s.QualName:
            return QUAL((NAME(text, source, start, end),), source, start, end)

        return plain_qual
    name_class, qual_class = s.Name, s.QualName

    def one_name_qual(text: str, source: SourceFile, start: int, end: int) -> s.QualName:
        name: Any = name_builder()
        name.text = text
        name.source = source
        name.start = start
        name.end = end
        name.__class__ = name_class
        qual: Any = qual_builder()
        qual.parts = (name,)
        qual.source = source
        qual.start = start
        qual.end = end
        qual.__class__ = qual_class
        return qual  # type: ignore[no-any-return]

    return one_name_qual


#: ``ONE_NAME_QUAL(text, source, start, end)``: the name ``QualName((Name(text, …),), …)``.
ONE_NAME_QUAL = _one_name_qual_maker()
