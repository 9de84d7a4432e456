"""``python tests/without_compiler.py ARGS…``: the runtime's command line (``python -m agentmonad
ARGS…``) in a process where the compiler's packages cannot be imported — ``mcec``, ``lark``,
``libcst``, ``black``, ``mypy`` and ``griffe`` raise ImportError — as on a production machine with
``agentmonad`` alone installed. Exits 86 if one of them was imported anyway."""

from __future__ import annotations

import importlib.abc
import sys
from collections.abc import Sequence
from types import ModuleType

#: What the build machine has and a production machine does not.
BLOCKED = ("mcec", "lark", "libcst", "black", "mypy", "griffe")


class _Blocker(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None) -> None:
        if fullname.split(".")[0] in BLOCKED:
            raise ImportError(f"{fullname} is not installed here (tests/without_compiler.py)")
        return None


def main() -> int:
    sys.meta_path.insert(0, _Blocker())
    sys.path[:] = [p for p in sys.path if p != sys.path[0]] if sys.path and sys.path[0].endswith("tests") else sys.path
    from agentmonad.cli import main as agentmonad

    status = agentmonad(sys.argv[1:])
    loaded = sorted(name for name in sys.modules if name.split(".")[0] in BLOCKED)
    if loaded:
        print(f"imported without the compiler: {loaded}", file=sys.stderr)
        return 86
    return status


if __name__ == "__main__":
    sys.exit(main())
