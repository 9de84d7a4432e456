"""Writing files safely: generated modules, the build state, formatted specs.

Promises (DEVELOPERS.md, "Nothing is lost"):

* a write is atomic: the text goes to a temporary file in the target folder,
  is flushed to disk, and replaces the target with ``os.replace`` — a crash or
  ``kill -9`` leaves either the old file or the new one, never half of one;
* mcec overwrites only files it generated itself (their first line starts with
  :data:`~mcec.codegen.HEADER_PREFIX`); a user's own file at the target path is
  left untouched and reported;
* temporaries have one exact name form, ``.NAME.mcec-PID-XXXXXXXX.tmp`` (PID the
  writing process, X hex digits), unique per write, so two processes writing
  the same target never share one. A write removes only its own temporary,
  and, before it starts, leftovers of earlier writes of the same target that
  are provably stale: of that exact form, and written by a process that no
  longer exists. A user's file that merely looks similar
  (``.name_mce.py.notes.tmp``) is never touched;
* rewriting a user's file (``mcec fmt``) writes through to the real file: a
  symbolic link is followed and the file it points to is replaced (the link
  stays a link), keeping the file's permissions. A file with several hard
  links cannot be both replaced atomically and kept shared (a replacement is a
  new inode, which only the replaced name would see), so it is rewritten in
  place: every link sees the new text, at the price of atomicity. The old text
  is first saved beside it as ``.NAME.mcec-PID-XXXXXXXX.orig`` and removed once
  the new text is on disk, so a crash mid-write leaves the original there.
"""

from __future__ import annotations

import ast
import errno
import os
import re
import secrets
import stat
from pathlib import Path
from typing import TYPE_CHECKING

from mcec.codegen import HEADER_PREFIX, module_name_for

if TYPE_CHECKING:
    from agentmonad.freshness import Staleness

__all__ = [
    "OutputError",
    "is_generated",
    "is_stale_temporary",
    "output_path",
    "recorded_inputs",
    "recorded_sha256",
    "remove_stale_temporaries",
    "replace_atomically",
    "rewrite_file",
    "stale_module_beside",
    "temporary_name",
    "write_module",
]


class OutputError(Exception):
    """The generated module could not be written; the message says why and what to do."""


def output_path(spec: Path, out_dir: Path | None) -> Path:
    """``name.mce`` → ``name_mce.py`` beside the spec, or in ``out_dir``."""
    folder = out_dir if out_dir is not None else spec.parent
    return folder / f"{module_name_for(spec.name)}.py"


def is_generated(path: Path) -> bool:
    """True when ``path`` holds a module that mcec generated (judged by its header)."""
    try:
        with path.open("r", encoding="utf-8", errors="replace") as handle:
            return handle.readline().startswith(HEADER_PREFIX)
    except OSError:
        return False


_HEADER_HASH = re.compile(r"\(sha256 (?P<digest>[0-9a-f]{64})\)")


def recorded_sha256(path: Path) -> str | None:
    """The spec hash the header of the generated module at ``path`` records
    (``None``: no such file, or not a module mcec generated)."""
    try:
        with path.open("r", encoding="utf-8", errors="replace") as handle:
            first = handle.readline()
    except OSError:
        return None
    match = _HEADER_HASH.search(first) if first.startswith(HEADER_PREFIX) else None
    return match["digest"] if match is not None else None


def recorded_inputs(path: Path) -> tuple[str, str, dict[str, str]] | None:
    """What the generated module at ``path`` checks at import: the spec's file name, its
    sha256 and the template files with theirs — the literal arguments of its
    ``check_fresh(…)`` call (``None``: no such file, or not a module mcec generated).

    A module of an mcec that did not record its inputs that way gives the spec its
    name comes from (``x_mce.py`` → ``x.mce``) with the hash its header records, and
    no templates."""
    recorded = recorded_sha256(path)
    if recorded is None:
        return None
    try:
        tree = ast.parse(path.read_bytes())
    except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
        tree = ast.Module(body=[], type_ignores=[])
    found = _check_fresh_arguments(tree)
    if found is not None:
        return found
    return path.name.removesuffix(".py").removesuffix("_mce") + ".mce", recorded, {}


def _check_fresh_arguments(tree: ast.Module) -> tuple[str, str, dict[str, str]] | None:
    """The literal arguments of the module's top-level call of ``agentmonad.freshness.check_fresh``."""
    names = {
        alias.asname or alias.name
        for statement in tree.body
        if isinstance(statement, ast.ImportFrom) and statement.module == "agentmonad.freshness"
        for alias in statement.names
        if alias.name == "check_fresh"
    }
    for statement in tree.body:
        call = statement.value if isinstance(statement, ast.Assign) else None
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id in names):
            continue
        try:
            spec_name, sha256 = (ast.literal_eval(arg) for arg in call.args[:2])
            templates = {k.arg: ast.literal_eval(k.value) for k in call.keywords}.get("templates", {})
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            return None  # not a call mcec wrote: nothing recorded there
        if isinstance(spec_name, str) and isinstance(sha256, str) and isinstance(templates, dict):
            return spec_name, sha256, {str(k): str(v) for k, v in templates.items()}
    return None


def stale_module_beside(spec: Path) -> Staleness | None:
    """Why the generated module beside ``spec`` (``name_mce.py``) is stale, or ``None``.

    Judged exactly as the module judges itself at import (``agentmonad.freshness``,
    docs/language.md §7): from the inputs its ``check_fresh`` call records — the
    spec's text and the template files its llm steps embed — against the files
    beside it now."""
    from agentmonad.freshness import stale_inputs

    module = output_path(spec, None)
    recorded = recorded_inputs(module)
    if recorded is None:
        return None
    spec_name, sha256, templates = recorded
    return stale_inputs(str(module), spec_name, sha256, templates)


# ---------------------------------------------------------------- temporaries


def temporary_name(target_name: str, pid: int | None = None, tag: str | None = None) -> str:
    """The name of a temporary for ``target_name``: ``.NAME.mcec-PID-XXXXXXXX.tmp``."""
    return f".{target_name}.mcec-{os.getpid() if pid is None else pid}-{tag or secrets.token_hex(4)}.tmp"


def _temporary_pattern(target_name: str) -> re.Pattern[str]:
    return re.compile(rf"\.{re.escape(target_name)}\.mcec-(?P<pid>[1-9][0-9]{{0,9}})-[0-9a-f]{{8}}\.tmp")


def _process_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True  # another user's live process (or a pid we cannot judge): not ours to remove
    return True


def is_stale_temporary(name: str, target_name: str) -> bool:
    """True when ``name`` is a temporary of ``target_name`` left by a process that is gone."""
    match = _temporary_pattern(target_name).fullmatch(name)
    if match is None:
        return False
    pid = int(match["pid"])
    return pid != os.getpid() and not _process_exists(pid)


def remove_stale_temporaries(target: Path) -> None:
    """Delete the temporaries that killed earlier writes of ``target`` left behind
    (only provably stale ones: see the module docstring)."""
    try:
        names = os.listdir(target.parent)
    except OSError:
        return
    for name in names:
        if is_stale_temporary(name, target.name):
            try:
                os.unlink(target.parent / name)
            except OSError:
                pass  # gone already, or not ours to fight over


def _create_temporary(folder: Path, target_name: str, suffix: str = ".tmp") -> tuple[int, Path]:
    for _ in range(100):
        path = folder / (temporary_name(target_name).removesuffix(".tmp") + suffix)
        try:
            return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), path
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free temporary name", str(folder))


def replace_atomically(target: Path, text: str, mode: int = 0o644, owner: tuple[int, int] | None = None) -> None:
    """Write ``text`` to a fresh temporary beside ``target``, flush it to disk and
    move it over ``target`` (``os.replace``); on any failure the temporary is
    removed and ``target`` is as it was. ``owner`` (uid, gid) is kept when the
    process may set it. Raises ``OSError``."""
    fd, temporary = _create_temporary(target.parent, target.name)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        if owner is not None:
            try:
                os.chown(temporary, *owner)
            except OSError:
                pass  # not permitted: the file becomes ours, as with any editor's save
        os.chmod(temporary, mode)
        os.replace(temporary, target)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise


def rewrite_file(path: Path, text: str) -> Path:
    """Give the file at ``path`` the new contents ``text``, writing through links
    (see the module docstring); returns the real file written. Raises ``OSError``."""
    real = Path(os.path.realpath(path))
    info = os.stat(real)
    if not stat.S_ISREG(info.st_mode):
        raise IsADirectoryError(errno.EISDIR, "not a regular file", str(path))
    if info.st_nlink > 1:
        _rewrite_in_place(real, text)
    else:
        replace_atomically(real, text, stat.S_IMODE(info.st_mode), (info.st_uid, info.st_gid))
    return real


def _rewrite_in_place(real: Path, text: str) -> None:
    """Overwrite a hard-linked file's contents in place, keeping a backup until it is on disk."""
    data = text.encode("utf-8")
    with open(real, "r+b") as handle:
        original = handle.read()
        fd, backup = _create_temporary(real.parent, real.name, ".orig")
        try:
            with os.fdopen(fd, "wb") as saved:
                saved.write(original)
                saved.flush()
                os.fsync(saved.fileno())
        except BaseException:
            os.unlink(backup)
            raise
        handle.seek(0)
        handle.write(data)
        handle.truncate()
        handle.flush()
        os.fsync(handle.fileno())
    os.unlink(backup)


# ---------------------------------------------------------------- generated modules


def write_module(target: Path, code: str) -> bool:
    """Atomically write ``code`` to ``target``; return False when it was already identical.

    Raises :class:`OutputError` when ``target`` is not a file mcec generated,
    is a symlink or a folder, or the folder is not writable.
    """
    if target.is_symlink():
        raise OutputError(f"{target} is a symbolic link; mcec does not write through links")
    if target.exists():
        if target.is_dir():
            raise OutputError(f"{target} is a folder")
        if not is_generated(target):
            raise OutputError(
                f"{target} exists and was not generated by mcec; refusing to overwrite it"
            )
        try:
            if target.read_text(encoding="utf-8") == code:
                return False
        except (OSError, UnicodeDecodeError):
            pass
    folder = target.parent
    if not folder.is_dir():
        raise OutputError(f"output folder {folder} does not exist")
    remove_stale_temporaries(target)
    try:
        replace_atomically(target, code, 0o644)
    except OSError as exc:
        raise OutputError(f"cannot write {target}: {exc.strerror or exc}") from exc
    return True
