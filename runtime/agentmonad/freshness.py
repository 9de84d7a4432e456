"""Is a generated module older than its spec? (LANGUAGE.md §7)

Every generated module calls :func:`check_fresh` once, at import, right after
its imports (before the bindings a changed spec may break), with the spec's
file name and the sha256 of the spec text it was generated from (the hash its
header records). When a file of
that name sits beside the module and its bytes now hash differently, the module
is *stale*: it would run old code. :func:`check_fresh` then issues a
:class:`StaleModuleWarning` that names both files and the command that
regenerates the module.

A warning, not an exception: importing still works, so a deployment that
ships an edited spec beside an older module does not break at import, while a
developer sees the warning (Python shows it once by default, pytest lists it).
Make it an error with the warnings machinery where that is wanted::

    warnings.simplefilter("error", agentmonad.freshness.StaleModuleWarning)  # in code
    # pytest (pyproject.toml): filterwarnings = ["error::agentmonad.freshness.StaleModuleWarning"]
    # command line: python -W error::UserWarning (its base class; Python's -W
    # cannot name a class outside the standard library)

When there is nothing to compare — no spec beside the module (compiled with
``-o DIR``, installed without its spec), or a module run from memory
(``mcec run``, whose ``__file__`` is not a file) — nothing is said.
"""

from __future__ import annotations

import hashlib
import os
import sys
import warnings

__all__ = ["StaleModuleWarning", "check_fresh", "stale_spec"]


class StaleModuleWarning(UserWarning):
    """A generated module was imported whose spec has changed since it was generated."""

    def __init__(self, module_file: str, spec_file: str) -> None:
        self.module_file = module_file
        self.spec_file = spec_file
        super().__init__(
            f"{module_file} is stale: {spec_file} changed after the module was generated from it, "
            f"so the module runs the old pipelines; run `mcec compile {spec_file}` to regenerate it"
        )


def stale_spec(module_file: str | None, spec_name: str, sha256: str) -> str | None:
    """The spec beside ``module_file`` when its text no longer hashes to ``sha256``.

    ``None`` when the module is fresh or there is nothing to compare (no spec of
    that name beside it, ``module_file`` not a file path, the spec unreadable).

    >>> stale_spec(None, "research.mce", "0" * 64) is None
    True
    >>> stale_spec("<mcec research_mce>", "research.mce", "0" * 64) is None
    True
    """
    if module_file is None or not os.path.isfile(module_file):
        return None
    spec = os.path.join(os.path.dirname(module_file), spec_name)
    try:
        with open(spec, "rb") as handle:
            digest = hashlib.sha256(handle.read()).hexdigest()
    except OSError:
        return None
    return spec if digest != sha256 else None


def check_fresh(spec_name: str, sha256: str, module_file: str | None = None) -> bool:
    """False, after a :class:`StaleModuleWarning`, when the calling module is older
    than its spec (see the module docstring); True otherwise.

    Generated modules call it at import as ``FRESH = check_fresh("name.mce",
    "<sha256>")``; ``module_file`` defaults to the caller's ``__file__``.

    >>> check_fresh("research.mce", "0" * 64)  # a doctest has no module file: nothing to compare
    True
    """
    if module_file is None:
        caller = sys._getframe(1).f_globals.get("__file__")
        module_file = caller if isinstance(caller, str) else None
    spec = stale_spec(module_file, spec_name, sha256)
    if spec is None:
        return True
    assert module_file is not None
    warnings.warn(StaleModuleWarning(module_file, spec), stacklevel=2)
    return False
