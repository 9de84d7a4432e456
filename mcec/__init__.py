"""mcec, the Monadic Context Engineering compiler: `.mce` specs to typed Python.

The whole pipeline is three functions over a :class:`~mcec.span.SourceFile`
(no file I/O; that is :mod:`mcec.cli`'s)::

    >>> from mcec import SourceFile, check_source, compile_source, parse
    >>> source = SourceFile("hello.mce", "pipeline echo : str -> str {}\\n")
    >>> parse(source).ok
    True
    >>> check_source(source).diagnostics
    ()
    >>> "async def echo(" in compile_source(source).generated.code
    True

- :func:`parse` — text to the syntax tree (:mod:`mcec.syntax`);
- :func:`check_source` — parse and check: diagnostics and the typed program (:mod:`mcec.check`);
- :func:`compile_source` — and generate the Python module (:mod:`mcec.codegen`).

They are imported on first use, so ``import mcec`` stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mcec.version import __version__

__all__ = ["CompileResult", "ParseResult", "SourceFile", "__version__", "check_source", "compile_source", "parse"]

if TYPE_CHECKING:
    from mcec.compiler import CompileResult, check_source, compile_source
    from mcec.span import SourceFile
    from mcec.syntax import ParseResult, parse

_HOMES = {
    "CompileResult": "mcec.compiler",
    "check_source": "mcec.compiler",
    "compile_source": "mcec.compiler",
    "SourceFile": "mcec.span",
    "ParseResult": "mcec.syntax",
    "parse": "mcec.syntax",
}


def __getattr__(name: str) -> Any:
    """The facade's names, imported from their phase when first asked for."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'mcec' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(home), name)
