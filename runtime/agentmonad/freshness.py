"""Is a generated module older than its inputs? (docs/language.md §7)

A generated module has two kinds of input: its spec, and the template files
its llm steps name (``llm n : A -> B = m file "decide.j2"``), whose text is
embedded in the module when it is generated. Every generated module calls
:func:`check_fresh` once, at import, right after its imports (before the
bindings a changed spec may break), with the spec's file name and the sha256 of
the spec text it was generated from (the hash its header records) and, when it
has file templates, ``templates={"decide.j2": "<sha256>"}``: each template's
path as the spec writes it (relative to the spec's folder) and the sha256 of
the text that was embedded. When a spec of that name sits beside the module and
its bytes now hash differently, or one of those templates, found relative to
that folder, now hashes differently or is gone, the module is *stale*: it would
run old code or an old prompt. :func:`check_fresh` then issues a
:class:`StaleModuleWarning` that names the module, what changed and the command
that regenerates the module.

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
(``mcec run``, whose ``__file__`` is not a file) — nothing is said, and no
template is read either: templates are found from the spec's folder, and only a
spec beside the module says that the module's folder is it. So an import reads
nothing but the spec and its template files, and only when the spec is there.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
import sys
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

__all__ = ["StaleModuleWarning", "Staleness", "check_fresh", "file_sha256", "stale_inputs", "stale_spec"]

#: What became of a template file since the module was generated.
TemplateChange = Literal["changed", "deleted", "unreadable"]


@dataclass(frozen=True, slots=True)
class Staleness:
    """Why a generated module is stale: its spec changed, or templates did (paths as found)."""

    module_file: str
    spec_file: str
    spec_changed: bool
    templates: tuple[tuple[str, TemplateChange], ...] = ()

    def reason(self, quote: str = "") -> str:
        """What changed, as a clause: ``x.mce changed``, ``its template t.j2 was deleted``, …
        (each path between two ``quote``)."""
        clauses = [f"{quote}{self.spec_file}{quote} changed"] if self.spec_changed else []
        for change in ("changed", "deleted", "unreadable"):
            paths = [path for path, how in self.templates if how == change]
            if paths:
                one = len(paths) == 1
                verb = {
                    "changed": "changed",
                    "deleted": "was deleted" if one else "were deleted",
                    "unreadable": "can no longer be read",
                }[change]
                shown = ", ".join(f"{quote}{path}{quote}" for path in paths)
                clauses.append(f"its template{'' if one else 's'} {shown} {verb}")
        return " and ".join(clauses)

    def runs(self) -> str:
        """What the stale module runs: the old pipelines, or the old prompt(s)."""
        if self.spec_changed:
            return "the old pipelines"
        return "the old prompt" if len(self.templates) == 1 else "the old prompts"

    def help(self) -> str:
        """The command that regenerates the module (and, for a template that is gone, what first)."""
        regenerate = f"run `mcec compile {self.spec_file}` to regenerate it"
        if any(how != "changed" for _, how in self.templates):
            return f"restore the template or change the spec, then {regenerate}"
        return regenerate


class StaleModuleWarning(UserWarning):
    """A generated module was imported whose spec or template files changed since it was generated."""

    def __init__(self, module_file: str, spec_file: str, staleness: Staleness | None = None) -> None:
        self.module_file = module_file
        self.spec_file = spec_file
        self.staleness = staleness if staleness is not None else Staleness(module_file, spec_file, True)
        #: the template files that changed or are gone (paths as found beside the module)
        self.template_files = tuple(path for path, _ in self.staleness.templates)
        super().__init__(
            f"{module_file} is stale: {self.staleness.reason()} after the module was generated, "
            f"so the module runs {self.staleness.runs()}; {self.staleness.help()}"
        )


def file_sha256(path: str) -> str:
    """The sha256 of the regular file at ``path``; ``OSError`` when there is none
    (``FileNotFoundError`` when nothing is there).

    Opened without blocking and judged by the open file, not the path (a FIFO
    put in a template's place would otherwise hang the import); read in chunks."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", path)
        with os.fdopen(fd, "rb", closefd=False) as handle:
            return hashlib.file_digest(handle, "sha256").hexdigest()
    finally:
        os.close(fd)


def _template_change(path: str, sha256: str) -> TemplateChange | None:
    """What became of the template file at ``path`` if it no longer hashes to ``sha256``."""
    try:
        found = file_sha256(path)
    except FileNotFoundError:
        return "deleted"
    except OSError:
        return "unreadable"
    return None if found == sha256 else "changed"


def stale_inputs(
    module_file: str | None, spec_name: str, sha256: str, templates: Mapping[str, str] | None = None
) -> Staleness | None:
    """Why the module at ``module_file`` is stale, or ``None`` when it is fresh or
    there is nothing to compare (no spec of that name beside it, ``module_file``
    not a file path, the spec unreadable).

    ``templates`` maps each template file as the spec names it (relative to the
    spec's folder, which is the module's) to the sha256 of the text embedded.

    >>> stale_inputs(None, "research.mce", "0" * 64, {"decide.j2": "0" * 64}) is None
    True
    """
    if module_file is None or not os.path.isfile(module_file):
        return None
    folder = os.path.dirname(module_file)
    spec = os.path.join(folder, spec_name)
    try:
        spec_changed = file_sha256(spec) != sha256
    except OSError:
        return None
    changes: list[tuple[str, TemplateChange]] = []
    for name, expected in sorted((templates or {}).items()):
        path = os.path.join(folder, name)  # as the checker resolves `file "NAME"`: from the spec's folder
        change = _template_change(path, expected)
        if change is not None:
            changes.append((path, change))
    if not spec_changed and not changes:
        return None
    return Staleness(module_file, spec, spec_changed, tuple(changes))


def stale_spec(module_file: str | None, spec_name: str, sha256: str) -> str | None:
    """The spec beside ``module_file`` when its text no longer hashes to ``sha256``.

    ``None`` when the module is fresh or there is nothing to compare (no spec of
    that name beside it, ``module_file`` not a file path, the spec unreadable).

    >>> stale_spec(None, "research.mce", "0" * 64) is None
    True
    >>> stale_spec("<mcec research_mce>", "research.mce", "0" * 64) is None
    True
    """
    found = stale_inputs(module_file, spec_name, sha256)
    return found.spec_file if found is not None else None


def check_fresh(
    spec_name: str, sha256: str, module_file: str | None = None, *, templates: Mapping[str, str] | None = None
) -> bool:
    """False, after a :class:`StaleModuleWarning`, when the calling module is older
    than its spec or one of its template files (see the module docstring); True otherwise.

    Generated modules call it at import as ``FRESH = check_fresh("name.mce",
    "<sha256>")``, or with ``templates={"t.j2": "<sha256>"}`` when their llm
    steps read template files; ``module_file`` defaults to the caller's ``__file__``.

    >>> check_fresh("research.mce", "0" * 64)  # a doctest has no module file: nothing to compare
    True
    """
    if module_file is None:
        caller = sys._getframe(1).f_globals.get("__file__")
        module_file = caller if isinstance(caller, str) else None
    found = stale_inputs(module_file, spec_name, sha256, templates)
    if found is None:
        return True
    assert module_file is not None
    warnings.warn(StaleModuleWarning(module_file, found.spec_file, found), stacklevel=2)
    return False
