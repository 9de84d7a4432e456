"""The fast constructors of spans and syntax nodes, shared by both parsers.

``NAME(text, source, start, end)`` builds the same :class:`mcec.syntax.Name`
as ``Name(text, source, start, end)``, without the frozen dataclass's slow
``__init__`` (see :mod:`mcec.fastinit` for how, and why that halves the cost
of an object). The parsers call these for every node they build; rare nodes
(imports, state and error declarations, servers, tools) use their classes, and
the descent parser builds the commonest names and references in place from
``NAME_BUILDER`` and ``REF_BUILDER`` (the same objects, without a call).

A node takes its position as its last three arguments, ``source, start,
end``, not as a :class:`Span` (see :mod:`mcec.syntax`): the parsers pass the
offsets they already have, and no span object is built for a node unless
someone reads ``node.span``. ``SPAN`` remains for the few positions that are
``Span`` fields (``Each.limit_span``, ``ServerDecl.command_span``).

:func:`fast_constructor` is importable from here too (it lives in
:mod:`mcec.fastinit`, which imports nothing from the compiler, so that
:mod:`mcec.span` and :mod:`mcec.syntax` can use it).
"""

from __future__ import annotations

from typing import Final

from mcec import syntax as s
from mcec.fastinit import builder_class, fast_constructor
from mcec.span import make_span

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
    "NAME_BUILDER",
    "OR_ELSE",
    "PAR",
    "PIPELINE_DECL",
    "QUAL",
    "REF",
    "REF_BUILDER",
    "SPAN",
    "STATEMENT",
    "STEP_DECL",
    "TYPE_APPLY",
    "TYPE_UNION",
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

#: The builder classes of ``NAME`` and ``REF``: names and references are two in five
#: nodes, and the descent parser builds them in place, without the call to the
#: constructor (see :func:`mcec.fastinit.builder_class`; 1,700 instructions a line).
NAME_BUILDER: Final = builder_class(NAME)
REF_BUILDER: Final = builder_class(REF)
