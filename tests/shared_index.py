"""One :class:`~mcec.check.pyindex.PythonIndex` per place a spec is compiled from, for the tests that
compile hundreds of small specs in memory (the hypothesis laws, the differential and fault tests).

``compile_source`` makes a new index per call by default, which reads the toolbox modules again
with griffe every time: three quarters of each compile of a law's spec. The toolboxes do not change
while the suite runs, so one index per working directory, spec folder and ``sys.path`` answers the
same questions as a new one would.
"""

from __future__ import annotations

import os
from pathlib import Path

from mcec.check.pyindex import PythonIndex, import_paths

_INDICES: dict[tuple[Path, ...], PythonIndex] = {}


def shared_index(spec: str | Path) -> PythonIndex:
    """The index ``compile_source`` would make for ``spec`` (working directory, the spec's package
    root, ``sys.path``), made once per distinct search path."""
    paths = tuple(import_paths(os.getcwd(), spec))
    index = _INDICES.get(paths)
    if index is None:
        index = _INDICES[paths] = PythonIndex(list(paths))
    return index

