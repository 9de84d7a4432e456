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
