"""What the ``SPEC_INFO`` descriptor a generated module ends with may hold (docs/language.md §7):
the shape tests accept it only when it is made of the descriptor's own classes, names, literals
and type expressions, so no text of a spec can reach the module as code through it."""

from __future__ import annotations

import ast
import re

#: The classes the descriptor calls (agentmonad.spec) and the Site constants it may spell inline.
DESCRIPTOR_CALLS = frozenset({"SpecInfo", "PipelineInfo", "EffectSite", "AskInfo", "EachInfo", "Site"})
#: Nodes a descriptor is made of: calls of those, names, literals, tuples (starred parts), and
#: type expressions (``list[int]``, ``A | B``, ``Literal["x"]``, ``m.Class``).
_NODES = (ast.Call, ast.Name, ast.Attribute, ast.Constant, ast.Tuple, ast.Starred, ast.Subscript, ast.BinOp,
          ast.BitOr, ast.Load, ast.keyword)


def is_descriptor(statement: ast.stmt) -> bool:
    """``SPEC_INFO = SpecInfo(…)`` or one of its parts, ``_EFFECTS_2 = (…)``, of the allowed nodes only."""
    if not (isinstance(statement, ast.Assign) and len(statement.targets) == 1
            and isinstance(statement.targets[0], ast.Name)
            and re.fullmatch(r"SPEC_INFO|_[A-Z]+_\d+", statement.targets[0].id)):
        return False
    for node in ast.walk(statement.value):
        if not isinstance(node, _NODES):
            return False
        if isinstance(node, ast.BinOp) and not isinstance(node.op, ast.BitOr):
            return False
        if isinstance(node, ast.Call) and not (isinstance(node.func, ast.Name) and node.func.id in DESCRIPTOR_CALLS):
            return False
    return True


#: The classes a typed handles' class calls (agentmonad.handles, docs/language.md §13).
HANDLE_CALLS = frozenset({"Ask", "Entry"})


def is_handle_class(statement: ast.stmt) -> bool:
    """A typed handles' class (``class Asks:``, ``class Runs:``, or one of their parts
    ``_Runs_2``, §13): a docstring, then attributes ``name: T = Ask("name")`` or
    ``name: T = Entry(__name__, "name", Asks())`` of the descriptor's nodes only — no text of a
    spec reaches it as code."""
    if not (isinstance(statement, ast.ClassDef) and re.fullmatch(r"_?(Asks|Runs)(_\d+)?", statement.name)
            and not statement.decorator_list and not statement.keywords
            and all(isinstance(b, ast.Name) and re.fullmatch(r"_(Asks|Runs)(_\d+)*", b.id) for b in statement.bases)):
        return False
    body = list(statement.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    for field in body:
        if not (isinstance(field, ast.AnnAssign) and isinstance(field.target, ast.Name) and field.value is not None):
            return False
        call = field.value
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id in HANDLE_CALLS):
            return False
        for node in [*ast.walk(field.annotation), *ast.walk(call)]:
            if not isinstance(node, _NODES):
                return False
            if isinstance(node, ast.BinOp) and not isinstance(node.op, ast.BitOr):
                return False
            if isinstance(node, ast.Call) and not (isinstance(node.func, ast.Name) and not node.args and not node.keywords
                                                   and re.fullmatch(r"Asks(_\d+)?", node.func.id)) and node is not call:
                return False
    return True
