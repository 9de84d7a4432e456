"""The built-in errors of LLM steps: ``LLMFailed``, ``LLMUnavailable``, ``BudgetExceeded``.

They follow the pattern of ``ToolFailed``/``ToolUnavailable`` (``agentmonad.errors``):
equality and hashing by type and fields, pickling, and messages built when read,
never raising, bounded however large the model's reply was. A ``kind`` says
which case it is, for code that treats them differently (retry a rate limit,
not a rejected API key).

Every ``LLMFailed`` and ``LLMUnavailable`` an LLM step returns has passed
through :func:`sealed`, the one place where text leaves the model client:
the key and the endpoint's credentials are replaced by ``***`` in every text
field, and only then is each field cut to its length.

``PromptError`` is not an error of the failure track: a template that does not
render (a variable the input lacks, a sandbox violation) is a bug in the spec,
so it escapes the step and becomes a ``Defect``.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import Any, assert_never

from .._show import bounded_list, safe_str, short_repr, truncate
from ..errors import BudgetExceeded as BudgetExceeded  # defined in the core: `budget` is a core construct
from ..errors import _ValueError

__all__ = [
    "LLMFailed",
    "LLMFailedKind",
    "LLMUnavailable",
    "LLMUnavailableKind",
    "BudgetExceeded",
    "PromptError",
    "redact",
    "sealed",
]

#: How many characters of a reason or a raw reply a message shows.
_TEXT_LIMIT = 600
#: How many characters :func:`sealed` keeps of a reason, a raw reply, one validation error.
REASON_LIMIT = 1000
RAW_LIMIT = 4000
ERROR_LIMIT = 500
#: What a secret is replaced with.
MASK = "***"


class LLMFailedKind(enum.Enum):
    """Why the model's answer was no good: ``LLMFailed.kind``.

    >>> LLMFailedKind.REFUSED
    LLMFailedKind.REFUSED
    """

    #: The answer did not validate as the step's output type, also after the
    #: repair attempts (each failed validation was sent back to the model).
    INVALID_OUTPUT = "invalid_output"
    #: The model refused (an OpenAI ``refusal``, or a ``content_filter`` stop).
    REFUSED = "refused"
    #: Not given: an ``LLMFailed`` made by user code.
    UNSPECIFIED = "unspecified"

    def __repr__(self) -> str:
        return f"{type(self).__name__}.{self.name}"


class LLMUnavailableKind(enum.Enum):
    """Why no answer came: ``LLMUnavailable.kind``.

    >>> LLMUnavailableKind.RATE_LIMITED
    LLMUnavailableKind.RATE_LIMITED
    """

    #: The endpoint could not be reached, or the connection broke.
    CONNECTION_FAILED = "connection_failed"
    #: No answer within the model's time-out.
    TIMEOUT = "timeout"
    #: HTTP 429, also after the client's own retries.
    RATE_LIMITED = "rate_limited"
    #: HTTP 5xx, also after the client's own retries.
    SERVER_ERROR = "server_error"
    #: Another HTTP error status (400, 401, 403, 404, …): the endpoint rejected
    #: the request (a bad key, an unknown model id, a parameter it does not take).
    REJECTED = "rejected"
    #: The endpoint answered something that is not a chat completion.
    INVALID_RESPONSE = "invalid_response"
    #: The run cannot call the model: no API key, no ``openai`` package, a bad setting.
    MISCONFIGURED = "misconfigured"
    #: Not given: an ``LLMUnavailable`` made by user code.
    UNSPECIFIED = "unspecified"

    def __repr__(self) -> str:
        return f"{type(self).__name__}.{self.name}"


class LLMFailed(_ValueError):
    """The model answered, but not with a valid value of the step's output type.

    ``model`` and ``step`` are the spec's names, ``reason`` says what went
    wrong, ``raw`` is the model's last reply as it came (text, or
    ``Name {"arguments": …}`` for a function call), ``errors`` the validation
    errors of that reply (one line each), ``kind`` an ``LLMFailedKind``.

    >>> e = LLMFailed("fast", "classify", "the answer is not one of 'a', 'b'", raw="c",
    ...               errors=("<root>: Input should be 'a' or 'b'",), kind=LLMFailedKind.INVALID_OUTPUT)
    >>> str(e)
    "classify (model fast) failed: the answer is not one of 'a', 'b'"
    >>> e.raw, e.errors
    ('c', ("<root>: Input should be 'a' or 'b'",))
    """

    _fields = ("model", "step", "reason", "raw", "errors", "kind")

    def __init__(
        self,
        model: str,
        step: str,
        reason: str,
        raw: str = "",
        errors: Sequence[str] = (),
        kind: LLMFailedKind = LLMFailedKind.UNSPECIFIED,
    ) -> None:
        self.model = model
        self.step = step
        self.reason = reason
        self.raw = raw
        self.errors: tuple[str, ...] = tuple(errors)
        self.kind = kind
        super().__init__(model, step, reason, raw, self.errors, kind)

    def __str__(self) -> str:
        return f"{safe_str(self.step)} (model {safe_str(self.model)}) failed: {truncate(safe_str(self.reason), _TEXT_LIMIT)}"

    def _field_repr(self, name: str) -> str:
        if name == "errors":
            return bounded_list(self.errors)
        return short_repr(getattr(self, name), _TEXT_LIMIT)


class LLMUnavailable(_ValueError):
    """The model could not be reached, or kept failing (docs/language.md §10).

    ``kind`` (an ``LLMUnavailableKind``) says what happened, ``reason`` says it
    in words, ``status`` is the HTTP status of the last answer (``None`` when
    there was none). All take part in equality.

    >>> e = LLMUnavailable("fast", "decide", "HTTP 429: slow down", LLMUnavailableKind.RATE_LIMITED, 429)
    >>> str(e)
    'decide (model fast) unavailable: HTTP 429: slow down'
    >>> e
    LLMUnavailable(model='fast', step='decide', reason='HTTP 429: slow down', kind=LLMUnavailableKind.RATE_LIMITED, status=429)
    """

    _fields = ("model", "step", "reason", "kind", "status")

    def __init__(
        self,
        model: str,
        step: str,
        reason: str,
        kind: LLMUnavailableKind = LLMUnavailableKind.UNSPECIFIED,
        status: int | None = None,
    ) -> None:
        self.model = model
        self.step = step
        self.reason = reason
        self.kind = kind
        self.status = status
        super().__init__(model, step, reason, kind, status)

    def __str__(self) -> str:
        return (
            f"{safe_str(self.step)} (model {safe_str(self.model)}) unavailable: "
            f"{truncate(safe_str(self.reason), _TEXT_LIMIT)}"
        )

    def _field_repr(self, name: str) -> str:
        return short_repr(getattr(self, name), _TEXT_LIMIT)


def redact(text: str, secrets: Sequence[str]) -> str:
    """``text`` with every one of ``secrets`` replaced by ``***``, the longest first (so a secret
    that contains another is masked whole).

    >>> redact("key sk-12345 for alice:pw-9876@host", ["sk-12345", "alice:pw-9876", "pw-9876"])
    'key *** for ***@host'
    """
    for secret in sorted(secrets, key=len, reverse=True):
        if secret:
            text = text.replace(secret, MASK)
    return text


def _clean(text: object, secrets: Sequence[str], limit: int) -> str:
    # Redact, then cut: a cut first could keep the start of a secret that crossed it.
    return truncate(redact(safe_str(text), secrets), limit)


def sealed(error: LLMFailed | LLMUnavailable, secrets: Sequence[str]) -> LLMFailed | LLMUnavailable:
    """``error`` as it may leave the model client: every text field with ``secrets`` redacted,
    then cut to its length. LLM steps return only sealed errors.

    >>> sealed(LLMUnavailable("m", "s", "HTTP 401: bad key sk-12345", LLMUnavailableKind.REJECTED, 401), ["sk-12345"])
    LLMUnavailable(model='m', step='s', reason='HTTP 401: bad key ***', kind=LLMUnavailableKind.REJECTED, status=401)
    """
    match error:
        case LLMFailed():
            return LLMFailed(
                _clean(error.model, secrets, REASON_LIMIT),
                _clean(error.step, secrets, REASON_LIMIT),
                _clean(error.reason, secrets, REASON_LIMIT),
                _clean(error.raw, secrets, RAW_LIMIT),
                tuple(_clean(line, secrets, ERROR_LIMIT) for line in error.errors),
                error.kind,
            )
        case LLMUnavailable():
            return LLMUnavailable(
                _clean(error.model, secrets, REASON_LIMIT),
                _clean(error.step, secrets, REASON_LIMIT),
                _clean(error.reason, secrets, REASON_LIMIT),
                error.kind,
                error.status,
            )
        case _:
            assert_never(error)


class PromptError(Exception):
    """A prompt template that cannot be compiled or rendered: a bug, not an error.

    ``template`` names the template (its file, or ``<step>``), ``line`` is the
    1-based line in it (``None`` when unknown), ``message`` what went wrong.
    Escaping an LLM step, it becomes a ``Defect`` with this as its cause.

    >>> str(PromptError("decide.j2", 3, "'subject' is undefined"))
    "prompt decide.j2, line 3: 'subject' is undefined"
    """

    def __init__(self, template: str, line: int | None, message: str) -> None:
        self.template = template
        self.line = line
        self.message = message
        super().__init__(template, line, message)

    def __str__(self) -> str:
        where = f", line {self.line}" if self.line is not None else ""
        return f"prompt {safe_str(self.template)}{where}: {truncate(safe_str(self.message), _TEXT_LIMIT)}"

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.template, self.line, self.message))
