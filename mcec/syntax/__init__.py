"""The syntax phase: `.mce` text to the untyped tree of :mod:`mcec.syntax.tree`.

- :mod:`mcec.syntax.tree` — the nodes (frozen dataclasses, each with a span);
- :mod:`mcec.syntax.parser` — :func:`parse` (Lark, the only module that imports it);
- :mod:`mcec.syntax.errors` — syntax errors in words (MCE001, MCE016);
- :mod:`mcec.syntax.grammar` — the grammar file and the word lists read off it;
- :mod:`mcec.syntax.incremental` — re-parsing only what an edit touched.

The node classes are re-exported here, so phases write ``syntax.Ref`` or ``s.Bind``.
"""

from mcec.syntax import tree
from mcec.syntax.parser import MAX_DEPTH, MAX_SYNTAX_ERRORS, ParseResult, PlanParse, parse, parse_plan
from mcec.syntax.tree import *  # noqa: F403 (the nodes are this package's API; tree.__all__ lists them)

__all__ = ["MAX_DEPTH", "MAX_SYNTAX_ERRORS", "ParseResult", "PlanParse", "parse", "parse_plan"]
__all__ += tree.__all__
