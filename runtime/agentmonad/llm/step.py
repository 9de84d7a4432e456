"""The LLM step: render, call, parse, repair (docs/language.md §10).

``llm n : A -> B = m "TEMPLATE"`` becomes
``n = llm_step(m, "TEMPLATE", B, name="n")``, an async step
``(state, value) -> Outcome[S, LLMFailed | LLMUnavailable, B]`` that sees the
state read-only (the template may read it) and returns it unchanged.

Every error a step returns leaves through :func:`~agentmonad.llm.errors.sealed`:
whatever the endpoint or the model put in it, the key and the endpoint's
credentials are masked before any field is cut or shown.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeAlias, TypeVar, assert_never

from ..outcome import Err, Ok
from .config import Misconfigured, Model, Resolved, current_config
from .errors import LLMFailed, LLMFailedKind, LLMUnavailable, LLMUnavailableKind, sealed
from .output import Invalid, Shape, output_shape
from .prompt import Prompt
from .scope import current_scope, llm_scope
from ..usage import budget_checkpoint, record_usage
from .wire import Backend, LLMReply, LLMRequest, reply_problem

__all__ = ["LLMStep", "llm_step"]

_S = TypeVar("_S")
_A = TypeVar("_A")
_B = TypeVar("_B")

LLMStep: TypeAlias = Callable[[_S, _A], Awaitable[Ok[_S, _B] | Err[_S, LLMFailed | LLMUnavailable]]]
"""The type of an LLM step: ``AsyncStep[S, A, B, LLMFailed | LLMUnavailable]``."""

def _repair(reply: LLMReply, bad: Invalid, shape: Shape) -> list[dict[str, Any]]:
    """The messages that send a reply that did not validate back to the model."""
    text = "\n".join(
        [f"Your answer is not valid: {bad.summary}.", *(f"- {e}" for e in bad.errors), f"Answer again with a valid {shape.description}."]
    )
    if not reply.tool_calls:
        return [{"role": "assistant", "content": reply.content or ""}, {"role": "user", "content": text}]
    calls = [
        {"id": call.id or f"call_{n}", "type": "function", "function": {"name": call.name, "arguments": call.arguments}}
        for n, call in enumerate(reply.tool_calls)
    ]
    answers = [
        {"role": "tool", "tool_call_id": c["id"], "content": text if n == 0 else "Not used: call one function."}
        for n, c in enumerate(calls)
    ]
    return [{"role": "assistant", "content": reply.content, "tool_calls": calls}, *answers]


@dataclass(frozen=True, slots=True)
class _Answer:
    """A reply parsed as the step's output type."""

    value: Any


async def _call(model: Model, name: str, shape: Shape, prompt: str, state: _S) -> Ok[_S, Any] | Err[_S, LLMFailed | LLMUnavailable]:
    scope = current_scope()
    if scope is None:
        # Outside any run: a scope for this one call, so its client is closed.
        async with llm_scope():
            return await _call(model, name, shape, prompt, state)
    try:
        settings, backend = scope.backend(model, current_config())
    except Misconfigured as exc:
        return Err(sealed(LLMUnavailable(model.name, name, str(exc), LLMUnavailableKind.MISCONFIGURED), exc.secrets), state)
    outcome = await _attempts(model, name, shape, prompt, settings, backend)
    match outcome:
        case LLMFailed() | LLMUnavailable():
            # The one way out of the model client for text: the key and the endpoint's
            # credentials are masked in every field, then each field is cut.
            return Err(sealed(outcome, settings.secrets), state)
        case _Answer(value=value):
            return Ok(value, state)
        case _:
            assert_never(outcome)


async def _attempts(
    model: Model, name: str, shape: Shape, prompt: str, settings: Resolved, backend: Backend
) -> _Answer | LLMFailed | LLMUnavailable:
    """Ask, and ask again with the validation errors while the answer is invalid (``max_repairs``)."""
    messages: list[dict[str, Any]] = []
    if settings.system:
        messages.append({"role": "system", "content": settings.system})
    messages.append({"role": "user", "content": prompt})
    attempts = 1 + settings.max_repairs
    reply = LLMReply()
    bad = Invalid("no answer")
    await budget_checkpoint()
    for attempt in range(1, attempts + 1):
        request = LLMRequest(
            model.name, settings.model_id, name, tuple(messages), shape.tools, shape.tool_choice,
            shape.response_format, settings.params, attempt,
        )
        try:
            reply = await backend.complete(request)
        except LLMUnavailable as exc:
            return exc
        problem = reply_problem(reply)
        if problem is not None:  # a scripted backend's reply; the endpoint's was read strictly already
            return LLMUnavailable(model.name, name, f"the model's reply is not valid: {problem}", LLMUnavailableKind.INVALID_RESPONSE)
        record_usage(model.name, reply.prompt_tokens, reply.completion_tokens, model_id=settings.model_id)
        await budget_checkpoint()
        if reply.refusal or reply.finish_reason == "content_filter":
            said = f": {reply.refusal}" if reply.refusal else " (content filter)"
            return LLMFailed(model.name, name, f"the model refused{said}", reply.raw, (), LLMFailedKind.REFUSED)
        try:
            return _Answer(shape.parse(reply))
        except Invalid as exc:
            bad = exc
            if reply.finish_reason == "length":
                bad = Invalid(f"{exc.summary} (the answer was cut off at the token limit)", exc.errors)
        if attempt < attempts:
            messages.extend(_repair(reply, bad, shape))
    tries = f"{attempts} attempts" if attempts > 1 else "1 attempt"
    reason = f"{bad.summary} (after {tries}): {'; '.join(bad.errors)}"
    return LLMFailed(model.name, name, reason, reply.raw, bad.errors, LLMFailedKind.INVALID_OUTPUT)


def llm_step(
    model: Model, template: str, output: object, *, name: str, template_name: str | None = None
) -> LLMStep[_S, _A, _B]:
    """The async step of ``llm name : A -> B = model TEMPLATE``.

    ``template`` is the template's text (Jinja2, see :mod:`agentmonad.llm.prompt`),
    ``output`` the type B (``str``, a class, a union, a ``Literal``, …; see
    :mod:`agentmonad.llm.output`), ``name`` the step's name in the spec,
    ``template_name`` how messages name the template (its file; default
    ``<name>``). Raises ``PromptError`` for a template that does not compile
    and ``TypeError`` for an output type that is not supported — both found
    by the checker first (MCE023, MCE024).

    The step renders the template with the input's fields and ``state``
    (a ``PromptError`` escaping it becomes a ``Defect``), sends the prompt to
    the model's backend in the current ``llm_scope`` (outside any scope, in a
    scope of its own), adds each reply's tokens to the run's usage, and
    parses the reply as B; a reply that does not validate is sent back with
    the errors up to the model's ``max_repairs`` times. Failures are values:
    ``Err(LLMFailed)`` (still invalid, or refused), ``Err(LLMUnavailable)``
    (no answer). The state comes back unchanged.
    """
    prompt = Prompt(template, template_name or f"<{name}>")
    shape = output_shape(output)

    async def step(state: _S, value: _A) -> Ok[_S, _B] | Err[_S, LLMFailed | LLMUnavailable]:
        return await _call(model, name, shape, prompt.render(value, state), state)

    step.__name__ = step.__qualname__ = f"llm_{name}"
    step.__doc__ = f"LLM step {name} (model {model.name}, {model.model_id!r}) -> {shape.description}."
    return step
