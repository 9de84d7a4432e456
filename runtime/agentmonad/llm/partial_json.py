"""The growing JSON text of a streamed answer, read incrementally (docs/language.md §14).

:class:`JsonPrefix` is fed the pieces of an answer as they arrive and says, after each
piece, what the whole text so far reads as — the same value
``pydantic_core.from_json(text, allow_partial=mode)`` gives for the whole text (both
``"trailing-strings"`` and ``True``), with the same leading whitespace and Markdown fence
skipped as :class:`~agentmonad.llm.partial.PartialReader` always did — while reading each
character once: parsing the whole text again on every piece made a streamed answer cost
time and memory quadratic in its size (issue 47).

How it stays equal to ``from_json`` without re-implementing its grammar: it tracks only the
structure (the open objects and arrays, the key an object's next value goes under, where a
token begins and ends) and hands every token's text to ``from_json`` once — a finished
number or literal whole, a string in pieces cut where no escape is half-written (and never
between the two halves of a surrogate pair), so that decoding the pieces one by one gives
what decoding the string whole gives. The unfinished token at the end (a number, a
literal, the last few characters of a string) is read by ``from_json(…, allow_partial=mode)``
on its own short text. Finished values are kept as built, so a snapshot copies only the
open containers (references, not their contents).

Every call to ``from_json`` goes through this module's ``from_json`` name: the tests count
the characters handed to it.
"""

from __future__ import annotations

import re
from enum import Enum, auto
from typing import Literal

from pydantic_core import from_json

__all__ = ["JsonPrefix", "Mode"]

#: What ``from_json``'s ``allow_partial`` is given: keep an unfinished string, or drop it.
Mode = Literal["trailing-strings", True]

_JSON_SPACE = " \t\n\r"
#: The characters of a number or literal (``true``, ``NaN``, ``-Infinity``, ``1.5e-3``); any other ends it.
_TOKEN_CHARS = frozenset("0123456789+-.abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
_TOKEN_END = re.compile(r"[^0-9A-Za-z+\-.]")
#: Characters inside a string that need a look: its end, or an escape.
_STRING_STOP = re.compile(r'["\\]')
_HIGH_SURROGATE = re.compile(r"u[dD][89abAB][0-9a-fA-F]{2}")
#: How long the undecoded text of a string may grow inside one piece before it is decoded.
_DECODE_AT = 4096


class _State(Enum):
    HEAD = auto()  # before the JSON: leading whitespace, perhaps a Markdown fence
    FENCE = auto()  # inside the fence's first line
    VALUE = auto()  # a value is expected (the root, an array element, an object member's)
    KEY = auto()  # an object's key (or its end) is expected
    COLON = auto()  # the ':' after a key
    AFTER = auto()  # a value ended: ',' or the container's end is expected
    STRING = auto()  # inside a value string
    KEY_STRING = auto()  # inside a key
    TOKEN = auto()  # inside a number or literal
    DONE = auto()  # the root object ended: what follows is not read (as from_json)
    NOTHING = auto()  # the text is not (and can never become) a JSON object, or it is malformed


class _Frame:
    """An open object or array: what has been read of it, and (an object's) pending key."""

    __slots__ = ("container", "key", "comma")

    def __init__(self, container: dict[str, object] | list[object]) -> None:
        self.container = container
        self.key: str | None = None
        #: a ',' was read and no value since (a closing bracket now is a trailing comma)
        self.comma = False


class JsonPrefix:
    """A JSON object's text, fed in pieces; :meth:`read` gives what the text so far reads as.

    ``work`` counts the characters handed to ``from_json`` (each piece of text about once)."""

    __slots__ = ("_state", "_stack", "_head", "_raw", "_decoded", "_safe", "_escape", "_root", "work")

    def __init__(self) -> None:
        self._state = _State.HEAD
        self._stack: list[_Frame] = []
        self._head = ""  # the first characters of the text, until it is known whether they open a fence
        #: the current token's text not decoded yet (a string's from its last cut, a number's whole)
        self._raw = ""
        #: a string's decoded pieces, and how much of ``_raw`` may be decoded now
        self._decoded: list[str] = []
        self._safe = 0
        self._escape: int | None = None  # where in ``_raw`` an escape not yet whole began
        self._root: dict[str, object] | None = None
        self.work = 0

    # ------------------------------------------------------------------ reading

    def feed(self, chunk: str) -> None:
        """Read ``chunk``, the next piece of the text."""
        if not chunk.isascii():
            try:
                chunk.encode()
            except UnicodeEncodeError:  # a lone surrogate: from_json takes no such text, anywhere in it
                self._state = _State.NOTHING
                return
        at, size = 0, len(chunk)
        while at < size:
            state = self._state
            if state is _State.STRING or state is _State.KEY_STRING:
                at = self._string(chunk, at)
            elif state is _State.TOKEN:
                found = _TOKEN_END.search(chunk, at)
                end = found.start() if found is not None else size
                self._raw += chunk[at:end]
                at = end
                if found is not None:
                    self._end_token()
            elif state is _State.DONE or state is _State.NOTHING:
                return
            elif state is _State.HEAD:
                at = self._skip_head(chunk, at)
            elif state is _State.FENCE:
                newline = chunk.find("\n", at)
                if newline < 0:
                    return
                self._state, at = _State.VALUE, newline + 1
            else:
                char = chunk[at]
                at += 1
                if char not in _JSON_SPACE:
                    self._structure(char)
        if self._state is _State.STRING or self._state is _State.KEY_STRING:
            self._decode()

    def _skip_head(self, chunk: str, at: int) -> int:
        """Python's ``lstrip``, then a Markdown fence (three backquotes) whose line is skipped."""
        if not self._head:
            rest = chunk[at:].lstrip()
            if not rest:
                return len(chunk)
            at = len(chunk) - len(rest)
        taken = chunk[at : at + 3 - len(self._head)]
        self._head += taken
        at += len(taken)
        if self._head == "```":
            self._state = _State.FENCE
        elif not "```".startswith(self._head):  # not a fence: the JSON starts at the first character kept
            self._state, replay, self._head = _State.VALUE, self._head, ""
            self.feed(replay)
        return at  # "`" or "``": not known yet (and nothing reads as JSON so far)

    def _structure(self, char: str) -> None:
        """One character outside strings and tokens."""
        state, frame = self._state, self._stack[-1] if self._stack else None
        if state is _State.VALUE:
            if frame is None and char != "{":
                self._state = _State.NOTHING  # not an object (or not JSON): it never reads as one
            elif char == "{":
                self._open({})
                self._state = _State.KEY
            elif char == "[":
                self._open([])
                self._state = _State.VALUE
            elif char == "]" and frame is not None and isinstance(frame.container, list) and not frame.comma:
                self._close()
            elif char == '"':
                self._start_string(_State.STRING)
            elif char in ",]}:":
                self._state = _State.NOTHING
            elif char in _TOKEN_CHARS:
                self._state, self._raw = _State.TOKEN, char
            else:
                self._state = _State.NOTHING
        elif state is _State.KEY:
            assert frame is not None
            if char == '"':
                self._start_string(_State.KEY_STRING)
            elif char == "}" and not frame.comma:
                self._close()
            else:
                self._state = _State.NOTHING
        elif state is _State.COLON:
            self._state = _State.VALUE if char == ":" else _State.NOTHING
        elif state is _State.AFTER:
            assert frame is not None
            is_object = isinstance(frame.container, dict)
            if char == ",":
                frame.comma = True
                self._state = _State.KEY if is_object else _State.VALUE
            elif char == ("}" if is_object else "]"):
                self._close()
            else:
                # from_json, reading partial JSON, ends a container where neither ',' nor its
                # end follows a value; the container around it then looks at the same character.
                self._close()
                if self._state is _State.AFTER:
                    self._structure(char)

    def _open(self, container: dict[str, object] | list[object]) -> None:
        self._stack.append(_Frame(container))

    def _close(self) -> None:
        frame = self._stack.pop()
        self._finished(frame.container)

    def _finished(self, value: object) -> None:
        """A value is whole: it goes into the open container (or is the root)."""
        if not self._stack:
            assert isinstance(value, dict)
            self._root, self._state = value, _State.DONE  # what follows is not read, as by from_json
            return
        frame = self._stack[-1]
        if isinstance(frame.container, dict):
            assert frame.key is not None
            frame.container[frame.key] = value
            frame.key = None
        else:
            frame.container.append(value)
        frame.comma = False
        self._state = _State.AFTER

    def _end_token(self) -> None:
        """A number or literal ended (the character after it is read as structure next)."""
        token, self._raw = self._raw, ""
        try:
            value = self._parse("[" + token + "]")
        except ValueError:  # not a whole number or literal: perhaps one with more after it
            try:
                value = self._parse("[" + token, True)
            except ValueError:
                value = []
            if not value:  # a half-written one ("tr", "1.", "-"), then something else: malformed
                self._state = _State.NOTHING
                return
            # "1x", "truex": the value, then a character that ends every container (see AFTER)
            self._finished(value[0] if isinstance(value, list) else value)
            while self._state is _State.AFTER:
                self._close()
            return
        assert isinstance(value, list)
        self._finished(value[0])

    # ------------------------------------------------------------------ strings

    def _start_string(self, state: _State) -> None:
        self._state, self._raw, self._decoded, self._safe, self._escape = state, "", [], 0, None

    def _string(self, chunk: str, at: int) -> int:
        """Read a string's characters from ``at``; where reading stopped."""
        size = len(chunk)
        while at < size:
            if self._escape is not None:  # an escape: "\\" and one character, or "\\u" and four
                if len(self._raw) - self._escape == 1:
                    self._raw += chunk[at]
                    at += 1
                    whole = self._raw[-1] != "u"
                else:
                    take = chunk[at : at + 6 - (len(self._raw) - self._escape)]
                    self._raw += take
                    at += len(take)
                    whole = len(self._raw) - self._escape == 6
                if whole:
                    escape, self._escape = self._raw[-5:], None
                    if not _HIGH_SURROGATE.fullmatch(escape):  # a high surrogate waits for its other half
                        self._safe = len(self._raw)
                continue
            found = _STRING_STOP.search(chunk, at)
            end = found.start() if found is not None else size
            if end > at:
                self._raw += chunk[at:end]
                self._safe = len(self._raw)
                at = end
                if self._safe > _DECODE_AT:  # a long piece with escapes in it: keep ``_raw`` short
                    self._decode()
                    if self._state is _State.NOTHING:
                        return size
            if found is None:
                return at
            at += 1
            if found.group() == "\\":
                self._escape = len(self._raw)
                self._raw += "\\"
            else:
                self._end_string()
                return at
        return at

    def _decode(self) -> None:
        """Decode the string's text up to its last safe cut (the rest is an escape not yet whole)."""
        if self._safe:
            piece, self._raw = self._raw[: self._safe], self._raw[self._safe :]
            if self._escape is not None:
                self._escape -= self._safe
            self._safe = 0
            try:
                self._decoded.append(self._parse('"' + piece + '"'))  # type: ignore[arg-type]
            except ValueError:
                self._state = _State.NOTHING

    def _end_string(self) -> None:
        try:
            rest = self._parse('"' + self._raw + '"')
        except ValueError:
            self._state = _State.NOTHING
            return
        text = "".join(self._decoded) + str(rest)
        self._raw, self._decoded, self._safe = "", [], 0
        if self._state is _State.KEY_STRING:
            self._stack[-1].key = text
            self._state = _State.COLON
        else:
            self._finished(text)

    def _parse(self, text: str, partial: Mode | bool = False) -> object:
        """``from_json`` of ``text``; a ValueError also for text it cannot take (a lone surrogate)."""
        self.work += len(text)
        try:
            return from_json(text, allow_partial=partial)
        except TypeError as error:  # a str that is not UTF-8: not JSON
            raise ValueError(str(error)) from None

    # ------------------------------------------------------------------ what it reads as

    def read(self, mode: Mode) -> object:
        """What the text so far reads as (``from_json(text, allow_partial=mode)``): a dict, or
        None when it is not an object (yet), or malformed. Open containers are copied; the
        values they hold are shared with earlier reads and never change."""
        if self._state is _State.DONE:
            return self._root
        if not self._stack or self._state is _State.NOTHING:
            return None
        pending: list[object] = []
        if self._state is _State.STRING or self._state is _State.KEY_STRING:  # a key is read, not shown
            try:
                tail = self._parse('"' + self._raw, "trailing-strings")
            except ValueError:
                return None
            if mode == "trailing-strings" and self._state is _State.STRING:
                pending.append(self._string_so_far(tail))
        elif self._state is _State.TOKEN:
            try:
                read = self._parse("[" + self._raw, True)
            except ValueError:
                return None
            assert isinstance(read, list)
            pending.extend(read)
        value: object = None
        for frame in reversed(self._stack):
            copy: dict[str, object] | list[object]
            if isinstance(frame.container, dict):
                copy = dict(frame.container)
                if pending:
                    assert frame.key is not None  # a value (or an open container) is under its key
                    copy[frame.key] = pending[0]
            else:
                copy = [*frame.container, *pending]
            pending, value = [copy], copy
        return value

    def _string_so_far(self, tail: object) -> str:
        """The decoded pieces of the open string (joined once: later reads join only what came
        since) and ``tail``, what its last characters read as."""
        if len(self._decoded) > 1:
            self._decoded = ["".join(self._decoded)]
        return (self._decoded[0] if self._decoded else "") + str(tail)
