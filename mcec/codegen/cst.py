"""Small constructors for the libcst nodes the emitter uses.

libcst's node classes are precise but verbose; these helpers keep the emitter
readable. Every identifier passed here is either a checked spec name or a name
from :class:`~mcec.codegen.names.NameAllocator`; string literals are built with
:func:`string`, which escapes everything, so no spec text reaches the output
unquoted.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence
from typing import Any, TypeVar

import libcst as cst

from mcec.codegen.layout import black_string

_Node = TypeVar("_Node", bound=cst.CSTNode)

@functools.cache
def _shared_defaults(kind: type[cst.CSTNode]) -> dict[str, Any]:
    """The fields of ``kind`` whose default libcst builds anew for each node (``SimpleWhitespace.field("")``:
    whitespace, newlines, brackets), each built once here. Nodes are immutable and mcec reads no
    position metadata (the one thing that tells equal whitespace apart by identity), so one
    instance serves every node: a generated module of 10,000 declarations made a million
    ``SimpleWhitespace`` alone, a sixth of compile's peak memory (issue 48)."""
    return {
        field.name: field.default_factory()
        for field in dataclasses.fields(kind)  # every libcst node is a dataclass
        if field.default_factory is not dataclasses.MISSING
    }


def make(kind: type[_Node], **fields: Any) -> _Node:
    """``kind(**fields)`` with the defaults it would build per node shared (:func:`_shared_defaults`)."""
    return kind(**(_shared_defaults(kind) | fields))


@functools.lru_cache(maxsize=4096)
def name(identifier: str) -> cst.Name:
    """A bare identifier. Nodes are immutable, so one node per identifier is
    shared by every use: building libcst nodes (with their validation) is the
    main cost of generating long pipelines."""
    return cst.Name(identifier)


def dotted(path: str) -> cst.Name | cst.Attribute:
    """``a.b.c`` as nested attribute accesses (each part a checked identifier)."""
    parts = path.split(".")
    node: cst.Name | cst.Attribute = name(parts[0])
    for part in parts[1:]:
        node = make(cst.Attribute, value=node, attr=name(part))
    return node


def string(text: str) -> cst.SimpleString:
    """A string literal for ``text``: ``ascii()`` escapes quotes, controls and
    every non-ASCII character (bidi overrides included), quoted as black would."""
    return cst.SimpleString(black_string(text))


def integer(value: int) -> cst.Integer | cst.UnaryOperation:
    """An integer literal (a negative one is ``-`` before its digits: libcst's Integer has no sign)."""
    if value < 0:
        return cst.UnaryOperation(operator=cst.Minus(), expression=cst.Integer(str(-value)))
    return cst.Integer(str(value))


@functools.lru_cache(maxsize=4096)
def _positional(value: cst.Name) -> cst.Arg:
    # nodes hash by identity, and shared names make shared arguments possible
    return make(cst.Arg, value=value)


def call(func: cst.BaseExpression, *args: cst.BaseExpression) -> cst.Call:
    """``func(arg, …)``."""
    # Only a name's argument is shared: any other expression is a new node each time, and its
    # argument, remembered, kept its tree alive long after the statement was written (65,536 of
    # them were; issue 48)
    return make(cst.Call, func=func, args=[_positional(a) if type(a) is cst.Name else make(cst.Arg, value=a) for a in args])


#: ``=`` with no space around it, as black writes a keyword argument.
_TIGHT = cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace(""))
#: A blank line (nodes are immutable: one serves every place).
_EMPTY_LINE = make(cst.EmptyLine)


def keyword_arg(keyword: str, value: cst.BaseExpression) -> cst.Arg:
    """``keyword=value`` (no spaces around ``=``, as black writes it)."""
    return make(cst.Arg, value=value, keyword=name(keyword), equal=_TIGHT)


def attr(value: cst.BaseExpression, attribute: str) -> cst.Attribute:
    """``value.attribute``."""
    return make(cst.Attribute, value=value, attr=name(attribute))


def subscript(value: cst.BaseExpression, items: Sequence[cst.BaseExpression]) -> cst.Subscript:
    """``value[a, b, …]``."""
    return make(
        cst.Subscript, value=value, slice=[make(cst.SubscriptElement, slice=make(cst.Index, value=item)) for item in items]
    )


def tuple_(items: Sequence[cst.BaseExpression]) -> cst.Tuple:
    """``(a, b, …)`` (a one-element tuple gets its trailing comma)."""
    elements = [make(cst.Element, value=item) for item in items]
    if len(elements) == 1:
        elements = [make(cst.Element, value=items[0], comma=make(cst.Comma))]
    return make(cst.Tuple, elements=elements)


def bitor(items: Sequence[cst.BaseExpression]) -> cst.BaseExpression:
    """``a | b | …`` (a single item is returned as itself)."""
    result = items[0]
    for item in items[1:]:
        result = cst.BinaryOperation(left=result, operator=cst.BitOr(), right=item)
    return result


def await_(value: cst.BaseExpression) -> cst.Await:
    """``await value``."""
    return make(cst.Await, expression=value)


def line(statement: cst.BaseSmallStatement) -> cst.SimpleStatementLine:
    """One small statement on its own line."""
    return make(cst.SimpleStatementLine, body=[statement])


def assign(target: str, value: cst.BaseExpression) -> cst.SimpleStatementLine:
    """``target = value``."""
    return line(make(cst.Assign, targets=[make(cst.AssignTarget, target=name(target))], value=value))


def assign_pair(
    first: str, second: str, first_value: cst.BaseExpression, second_value: cst.BaseExpression
) -> cst.SimpleStatementLine:
    """``first, second = first_value, second_value``."""
    target = cst.Tuple(
        elements=[cst.Element(name(first)), cst.Element(name(second))], lpar=[], rpar=[]
    )
    value = cst.Tuple(elements=[cst.Element(first_value), cst.Element(second_value)], lpar=[], rpar=[])
    return line(make(cst.Assign, targets=[make(cst.AssignTarget, target=target)], value=value))


def annotated(target: str, annotation: cst.BaseExpression, value: cst.BaseExpression) -> cst.SimpleStatementLine:
    """``target: annotation = value``."""
    return line(
        make(cst.AnnAssign, target=cst.Name(target), annotation=make(cst.Annotation, annotation=annotation), value=value)
    )


def return_(value: cst.BaseExpression) -> cst.SimpleStatementLine:
    """``return value``."""
    return line(make(cst.Return, value=value))


def raise_(value: cst.BaseExpression) -> cst.SimpleStatementLine:
    """``raise value``."""
    return line(cst.Raise(exc=value))


def if_(test: cst.BaseExpression, body: Sequence[cst.BaseStatement]) -> cst.If:
    """``if test:`` with a body and no else."""
    return make(cst.If, test=test, body=block(body))


def block(body: Sequence[cst.BaseStatement]) -> cst.IndentedBlock:
    """An indented block of ``body``."""
    return make(cst.IndentedBlock, body=list(body))


def not_(value: cst.BaseExpression) -> cst.UnaryOperation:
    """``not value``."""
    return make(cst.UnaryOperation, operator=make(cst.Not), expression=value)


def and_(left: cst.BaseExpression, right: cst.BaseExpression) -> cst.BooleanOperation:
    """``left and right``."""
    return cst.BooleanOperation(left=left, operator=cst.And(), right=right)


def or_(items: Sequence[cst.BaseExpression]) -> cst.BaseExpression:
    """``a or b or …`` (one item: itself)."""
    result = items[0]
    for item in items[1:]:
        result = make(cst.BooleanOperation, left=result, operator=make(cst.Or), right=item)
    return result


def if_chain(
    branches: Sequence[tuple[cst.BaseExpression, Sequence[cst.BaseStatement]]],
    otherwise: Sequence[cst.BaseStatement] | None,
) -> cst.If:
    """``if t1: b1`` / ``elif t2: b2`` … / ``else: otherwise`` (no ``else`` when it is None)."""
    orelse: cst.If | cst.Else | None = make(cst.Else, body=block(otherwise)) if otherwise else None
    for test, body in reversed(branches):
        orelse = make(cst.If, test=test, body=block(body), orelse=orelse)
    assert isinstance(orelse, cst.If), "an if chain needs at least one test"
    return orelse


def try_except(
    body: Sequence[cst.BaseStatement], exc_type: cst.BaseExpression, exc_name: str,
    handler: Sequence[cst.BaseStatement],
) -> cst.Try:
    """``try: body`` / ``except exc_type as exc_name: handler``."""
    return make(
        cst.Try,
        body=block(body),
        handlers=[make(cst.ExceptHandler, body=block(handler), type=exc_type, name=make(cst.AsName, name=name(exc_name)))],
    )


def docstring(text: str) -> cst.SimpleStatementLine:
    """A docstring statement."""
    return line(cst.Expr(value=string(text)))


def async_def(
    function_name: str,
    params: Sequence[tuple[str, cst.BaseExpression]],
    returns: cst.BaseExpression,
    body: Sequence[cst.BaseStatement],
) -> cst.FunctionDef:
    """``async def function_name(p: T, …) -> returns:`` with two blank lines before it."""
    return make(
        cst.FunctionDef,
        name=cst.Name(function_name),
        params=make(cst.Parameters, params=[make(cst.Param, name=cst.Name(p), annotation=make(cst.Annotation, annotation=t)) for p, t in params]),
        body=block(body),
        returns=make(cst.Annotation, annotation=returns),
        asynchronous=make(cst.Asynchronous),
        leading_lines=[_EMPTY_LINE, _EMPTY_LINE],
    )


def class_def(class_name: str, base: cst.BaseExpression, body: Sequence[cst.BaseStatement]) -> cst.ClassDef:
    """``class class_name(base):`` with two blank lines before it."""
    return cst.ClassDef(
        name=cst.Name(class_name),
        bases=[cst.Arg(value=base)],
        body=cst.IndentedBlock(body=list(body)),
        leading_lines=[cst.EmptyLine(), cst.EmptyLine()],
    )


def import_from(module: str, names: Sequence[tuple[str, str | None]]) -> cst.SimpleStatementLine:
    """``from module import a, b as c``."""
    aliases = [
        cst.ImportAlias(
            name=cst.Name(n), asname=cst.AsName(name=cst.Name(a)) if a is not None and a != n else None
        )
        for n, a in names
    ]
    return line(cst.ImportFrom(module=dotted(module), names=aliases))


def import_module(module: str, alias: str | None) -> cst.SimpleStatementLine:
    """``import module`` or ``import module as alias``."""
    return line(
        cst.Import(
            names=[
                cst.ImportAlias(
                    name=dotted(module),
                    asname=cst.AsName(name=cst.Name(alias)) if alias and alias != module else None,
                )
            ]
        )
    )
