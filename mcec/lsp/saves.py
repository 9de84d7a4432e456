"""The full check a save starts (``mcec check``: mypy on the generated module), one at a time per spec.

A save asks for the full check of the text saved. While one runs for the spec, a newer
save cancels it — its mypy process is killed (:class:`mcec.codegen.mypy_check.Cancel`)
and nothing it found is kept — and the newest text saved is checked once it has stopped.
So a burst of saves runs at most one mypy at a time for the spec, the checks of the texts
saved in between stop early, and the findings shown are those of the last text saved.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from mcec.codegen.mypy_check import Cancel, Cancelled
from mcec.diagnostics import Diagnostic

__all__ = ["Findings", "SaveChecks"]

#: What a full check adds to ``mcec check --fast`` for one text (mypy's MCE100 findings).
Findings = tuple[Diagnostic, ...]


class SaveChecks:
    """One spec's full checks: ``run(text, cancel)`` in a worker thread, at most one at a time;
    ``done(text, findings)`` on the event loop after each that was not cancelled; ``failed(exc)``
    when one raised (a bug: the server reports it and goes on)."""

    def __init__(
        self,
        run: Callable[[str, Cancel], Findings],
        done: Callable[[str, Findings], None],
        failed: Callable[[Exception], None],
    ) -> None:
        self._run = run
        self._done = done
        self._failed = failed
        #: The text saved last and not yet being checked (None: nothing waits).
        self._wanted: str | None = None
        #: The handle of the check running now (None: none runs).
        self._cancel: Cancel | None = None
        self._task: asyncio.Task[None] | None = None

    def request(self, text: str) -> None:
        """Check ``text`` (the text just saved); the check of an earlier text, if one runs, is cancelled."""
        self._wanted = text
        if self._cancel is not None:
            self._cancel.cancel()
        if self._task is None or self._task.done():
            self._task = asyncio.ensure_future(self._checks())

    def stop(self) -> None:
        """Cancel the running check and drop the waiting one (the spec was closed)."""
        self._wanted = None
        if self._cancel is not None:
            self._cancel.cancel()

    async def _checks(self) -> None:
        """Check the wanted text until none waits; one worker thread (so one mypy) at a time."""
        loop = asyncio.get_running_loop()
        while self._wanted is not None:
            text, self._wanted = self._wanted, None
            cancel = self._cancel = Cancel()
            try:
                found = await loop.run_in_executor(None, self._run, text, cancel)
            except Cancelled:
                continue  # a newer save cancelled it: its text waits in _wanted (none after a close)
            except Exception as exc:  # code generation or mypy failing is a bug, not the server's end
                self._failed(exc)
                continue
            finally:
                self._cancel = None
            self._done(text, found)
