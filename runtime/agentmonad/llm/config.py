"""Models and the run's configuration of them.

A spec's ``model fast = openai "gpt-4o-mini"`` becomes a :class:`Model`: the
spec's name, the model id, and the options the declaration sets. Where the
endpoint and the key come from is decided when the model is first used in a
run, in this order (first found wins):

1. the run's configuration (:class:`LLMConfig`, installed with
   :func:`llm_config` or ``llm_scope(config)``): ``models[name]``, then
   ``models["*"]``, then ``defaults`` — each a :class:`ModelSettings` whose
   ``None`` fields keep what is below;
2. the declaration (:class:`Model`);
3. the environment: ``OPENAI_BASE_URL`` (else OpenAI's own endpoint) and the
   variable named by ``api_key_env`` (default ``OPENAI_API_KEY``);
   ``MCEC_LLM_TIMEOUT`` for the per-request time-out (default 120 s).

With no key anywhere, a model on a custom endpoint (a ``base_url``, e.g. a
local vLLM or Ollama server) sends a placeholder key; a model on OpenAI's own
endpoint is ``LLMUnavailable(kind=MISCONFIGURED)``.

A configuration entry can also be a :class:`~agentmonad.llm.Backend` (a scripted
model of ``agentmonad.testing``): it then answers in place of the endpoint for
that model (``"*"``: for every model). Keys are held in :class:`Secret`, whose
``repr`` and ``str`` never show the key.
"""

from __future__ import annotations

import base64
import hmac
import math
import os
import urllib.parse
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import Token
from dataclasses import dataclass, field, fields, replace
from typing import Any

from ..context import RunContext, current_run_context, reset_run_context, set_run_context
from .wire import Backend

__all__ = [
    "Secret",
    "Model",
    "ModelSettings",
    "LLMConfig",
    "llm_config",
    "current_config",
    "DEFAULT_TIMEOUT",
    "DEFAULT_MAX_REPAIRS",
    "DEFAULT_MAX_RETRIES",
    "TIMEOUT_ENV",
    "BASE_URL_ENV",
    "API_KEY_ENV",
]

#: Seconds one request may take (per attempt of the client), unless configured otherwise.
DEFAULT_TIMEOUT = 120.0
#: How many times a reply that does not validate is sent back to the model.
DEFAULT_MAX_REPAIRS = 2
#: How many times the client itself retries a connection error, time-out, 429 or 5xx.
DEFAULT_MAX_RETRIES = 2
#: Environment variable overriding :data:`DEFAULT_TIMEOUT` (seconds, > 0).
TIMEOUT_ENV = "MCEC_LLM_TIMEOUT"
#: The environment's endpoint (as the OpenAI SDK reads it).
BASE_URL_ENV = "OPENAI_BASE_URL"
#: The environment variable holding the key, unless a model names another.
API_KEY_ENV = "OPENAI_API_KEY"
#: Sent as the key to a custom endpoint when none is configured (local servers ignore it).
PLACEHOLDER_KEY = "not-needed"


class Secret:
    """An API key: ``repr``/``str`` show ``***``; :meth:`reveal` gives the key.

    >>> key = Secret("sk-123")
    >>> key, str(key), key.reveal()
    (Secret('***'), '***', 'sk-123')
    """

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        if not isinstance(value, str):
            raise TypeError("a Secret holds a str")
        self._value = value

    def reveal(self) -> str:
        """The key itself (only the client should call this)."""
        return self._value

    def __repr__(self) -> str:
        return "Secret('***')"

    def __str__(self) -> str:
        return "***"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Secret):
            return NotImplemented
        return hmac.compare_digest(self._value.encode(), other._value.encode())

    def __hash__(self) -> int:
        return hash((Secret, self._value))


def _check_options(
    where: str,
    *,
    temperature: float | None,
    max_tokens: int | None,
    max_repairs: int | None,
    timeout: float | None,
    max_retries: int | None,
) -> None:
    if temperature is not None and not (isinstance(temperature, (int, float)) and math.isfinite(temperature)):
        raise ValueError(f"{where}: temperature must be a finite number, not {temperature!r}")
    for label, count, least in (("max_tokens", max_tokens, 1), ("max_repairs", max_repairs, 0), ("max_retries", max_retries, 0)):
        if count is not None and (type(count) is not int or count < least):
            raise ValueError(f"{where}: {label} must be an int ≥ {least}, not {count!r}")
    if timeout is not None and not (isinstance(timeout, (int, float)) and timeout > 0 and math.isfinite(timeout)):
        raise ValueError(f"{where}: timeout must be a positive number of seconds, not {timeout!r}")


@dataclass(frozen=True)
class Model:
    """``model NAME = openai "MODEL_ID"`` with the declaration's options.

    ``base_url`` (default: ``$OPENAI_BASE_URL``, else OpenAI's endpoint),
    ``api_key_env``: the environment variable holding the key (default
    ``OPENAI_API_KEY``; a spec never holds a key itself), ``temperature``,
    ``max_tokens``, ``max_repairs`` (replies that do not validate are sent back
    this many times, default 2), ``timeout`` (seconds per request; default
    ``$MCEC_LLM_TIMEOUT``, else 120), ``max_retries`` (the client's own retries
    of connection errors, time-outs, 429 and 5xx; default 2), ``system`` (a
    system message sent before the prompt), ``params`` (any other body field:
    ``seed``, ``top_p``, …).

    >>> Model("fast", "gpt-4o-mini", temperature=0.0)
    Model(name='fast', model_id='gpt-4o-mini', base_url=None, api_key_env=None, temperature=0.0, max_tokens=None, max_repairs=2, timeout=None, max_retries=None, system=None, params={})
    """

    name: str
    model_id: str
    base_url: str | None = None
    api_key_env: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    max_repairs: int = DEFAULT_MAX_REPAIRS
    timeout: float | None = None
    max_retries: int | None = None
    system: str | None = None
    params: Mapping[str, Any] = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        _check_options(
            f"model {self.name}",
            temperature=self.temperature,
            max_tokens=self.max_tokens,
            max_repairs=self.max_repairs,
            timeout=self.timeout,
            max_retries=self.max_retries,
        )
        object.__setattr__(self, "params", dict(self.params))


@dataclass(frozen=True)
class ModelSettings:
    """Run-time overrides of a model's settings; ``None`` keeps the declaration's.

    ``api_key`` (a ``str`` is wrapped in :class:`Secret`) is the one setting a
    declaration cannot have. ``params`` are added to the declaration's.
    """

    model_id: str | None = None
    base_url: str | None = None
    api_key: Secret | None = None
    api_key_env: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    max_repairs: int | None = None
    timeout: float | None = None
    max_retries: int | None = None
    system: str | None = None
    params: Mapping[str, Any] = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        key: object = self.api_key
        if isinstance(key, str):
            object.__setattr__(self, "api_key", Secret(key))
        elif key is not None and not isinstance(key, Secret):
            raise TypeError("ModelSettings.api_key must be a str or a Secret")
        _check_options(
            "model settings",
            temperature=self.temperature,
            max_tokens=self.max_tokens,
            max_repairs=self.max_repairs,
            timeout=self.timeout,
            max_retries=self.max_retries,
        )
        object.__setattr__(self, "params", dict(self.params))

    def over(self, below: ModelSettings) -> ModelSettings:
        """These settings laid over ``below``: each field set here wins."""
        changes: dict[str, Any] = {}
        for f in fields(self):
            if f.name == "params":
                changes["params"] = {**below.params, **self.params}
            elif getattr(self, f.name) is not None:
                changes[f.name] = getattr(self, f.name)
        return replace(below, **changes)


Entry = ModelSettings | Backend


@dataclass(frozen=True)
class LLMConfig:
    """A run's configuration of its models (see the module docstring).

    ``models`` maps a spec's model name (or ``"*"``, every model) to
    :class:`ModelSettings`, or to a backend that answers in its place (those
    entries are kept in ``backends``, so a model can have both: a scripted
    backend and, say, its ``max_repairs``); ``defaults`` applies to every
    model, below ``models``. A backend for the name beats one for ``"*"``.

    >>> config = LLMConfig(models={"fast": ModelSettings(base_url="http://127.0.0.1:8000/v1", api_key="k")})
    >>> config.models["fast"].api_key
    Secret('***')
    """

    defaults: ModelSettings = field(default_factory=ModelSettings)
    models: Mapping[str, Entry] = field(default_factory=dict, hash=False)
    backends: Mapping[str, Backend] = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        settings: dict[str, ModelSettings] = {}
        backends: dict[str, Backend] = dict(self.backends)
        for name, entry in self.models.items():
            if isinstance(entry, ModelSettings):
                settings[name] = entry
            elif isinstance(entry, Backend) and not isinstance(entry, type):
                backends[name] = entry
            else:
                raise TypeError(f"LLMConfig.models[{name!r}] must be ModelSettings or a backend, not {type(entry).__name__}")
        for name, backend in backends.items():
            if isinstance(backend, type) or not isinstance(backend, Backend):
                raise TypeError(f"LLMConfig.backends[{name!r}] must be a backend (with an async complete(request))")
        object.__setattr__(self, "models", settings)
        object.__setattr__(self, "backends", backends)

    def over(self, below: LLMConfig) -> LLMConfig:
        """This configuration laid over ``below`` (an outer one): its entries win."""
        models: dict[str, Entry] = dict(below.models)
        for name, entry in self.models.items():
            under = models.get(name)
            assert isinstance(entry, ModelSettings)
            models[name] = entry.over(under) if isinstance(under, ModelSettings) else entry
        return LLMConfig(self.defaults.over(below.defaults), models, {**below.backends, **self.backends})

    def settings_for(self, name: str) -> tuple[ModelSettings, Backend | None]:
        """The settings laid over model ``name``'s declaration, and the backend that replaces it, if any."""
        settings = self.defaults
        for key in ("*", name):
            entry = self.models.get(key)
            if isinstance(entry, ModelSettings):
                settings = entry.over(settings)
        backend = self.backends.get(name) or self.backends.get("*")
        return settings, backend


_EMPTY = LLMConfig()


def current_config() -> LLMConfig:
    """The configuration in force here (an empty one if none was installed): kept in the
    run context (:mod:`agentmonad.context`) under the class ``LLMConfig``."""
    return current_run_context().part(LLMConfig) or _EMPTY


def set_config(config: LLMConfig) -> Token[RunContext]:
    """Install ``config`` laid over the one in force, until ``reset_run_context(token)``."""
    context = current_run_context()
    return set_run_context(context.with_part(LLMConfig, config.over(context.part(LLMConfig) or _EMPTY)))


@contextmanager
def llm_config(config: LLMConfig) -> Iterator[LLMConfig]:
    """Install ``config`` for the code inside (laid over any outer one); yields the result.

    Kept in the run context, a ``ContextVar``: ``asyncio.run`` and the tasks of ``par``
    branches started inside see it, so it may wrap a synchronous ``asyncio.run(pipeline(…))``.
    """
    token = set_config(config)
    try:
        yield current_config()
    finally:
        reset_run_context(token)


class Misconfigured(Exception):
    """Internal: the run cannot call a model (becomes ``LLMUnavailable(MISCONFIGURED)``).

    ``secrets``: what the message may quote that no user may see (the step masks them).
    """

    def __init__(self, message: str, secrets: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.secrets = secrets


@dataclass(frozen=True)
class Resolved:
    """A model's effective settings for one run (the endpoint's too, read from the environment)."""

    name: str
    model_id: str
    base_url: str | None
    api_key: Secret | None
    timeout: float
    max_retries: int
    max_repairs: int
    system: str | None
    params: Mapping[str, Any] = field(hash=False)

    def endpoint(self) -> tuple[str | None, Secret | None, float, int]:
        """What a client is made for: two models with the same endpoint still get a client each."""
        return (self.base_url, self.api_key, self.timeout, self.max_retries)

    @property
    def secrets(self) -> tuple[str, ...]:
        """What no message may show (see :func:`secrets_of`)."""
        return secrets_of(self.api_key, self.base_url)


#: A secret shorter than this is not masked: it would shred every text, and guards nothing.
_SHORTEST_SECRET = 4


def secrets_of(key: Secret | None, base_url: str | None) -> tuple[str, ...]:
    """What no message may show: the key (unless it is the placeholder sent to a keyless
    endpoint), and the user info of the endpoint's URL (``user:password@``) as written, decoded,
    and as the HTTP Basic credentials a client makes of it, and the password alone.

    >>> secrets_of(Secret("sk-12345"), "http://bob:pa%20ss@host/v1")
    ('sk-12345', 'bob:pa%20ss', 'bob:pa ss', 'pa%20ss', 'pa ss', 'Ym9iOnBhIHNz')
    """
    found: list[str] = []
    if key is not None and key.reveal() != PLACEHOLDER_KEY:
        found.append(key.reveal())
    userinfo = _userinfo(base_url)
    if userinfo:
        user, _, password = userinfo.partition(":")
        plain_user, plain_password = urllib.parse.unquote(user), urllib.parse.unquote(password)
        basic = base64.b64encode(f"{plain_user}:{plain_password}".encode()).decode("ascii")
        found += [userinfo, f"{plain_user}:{plain_password}" if password else plain_user, password, plain_password, basic]
    unique = dict.fromkeys(s for s in found if len(s) >= _SHORTEST_SECRET)
    return tuple(unique)


def _userinfo(url: str | None) -> str:
    """The ``user:password`` of ``url`` as written (``""`` when it has none). Read by hand, not
    with ``urllib``: a URL too malformed for it may still reach a message."""
    if not url:
        return ""
    rest = url.partition("://")[2] or url
    for end in "/?#":
        rest = rest.partition(end)[0]
    userinfo, at, _ = rest.rpartition("@")
    return userinfo if at else ""


def _env_timeout() -> float:
    raw = os.environ.get(TIMEOUT_ENV)
    if raw is None or not raw.strip():
        return DEFAULT_TIMEOUT
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not (value > 0 and math.isfinite(value)):
        raise Misconfigured(f"${TIMEOUT_ENV} must be a positive number of seconds, not {raw!r}")
    return value


def resolve(model: Model, settings: ModelSettings, *, need_endpoint: bool = True) -> Resolved:
    """``model`` with ``settings`` laid over it and the environment below (see the module docstring).

    ``need_endpoint=False`` (a backend replaces the endpoint) skips the key
    and URL, so a scripted run needs no environment.
    """
    declared = ModelSettings(
        model_id=model.model_id,
        base_url=model.base_url,
        api_key_env=model.api_key_env,
        temperature=model.temperature,
        max_tokens=model.max_tokens,
        max_repairs=model.max_repairs,
        timeout=model.timeout,
        max_retries=model.max_retries,
        system=model.system,
        params=model.params,
    )
    s = settings.over(declared)
    params: dict[str, Any] = dict(s.params)
    if s.temperature is not None:
        params["temperature"] = s.temperature
    if s.max_tokens is not None:
        params["max_tokens"] = s.max_tokens
    base_url: str | None = None
    key: Secret | None = None
    if need_endpoint:
        base_url = s.base_url or os.environ.get(BASE_URL_ENV) or None
        key = s.api_key
        if key is None:
            env_name = s.api_key_env or API_KEY_ENV
            found = os.environ.get(env_name)
            if found:
                key = Secret(found)
            elif base_url is None:
                raise Misconfigured(
                    f"no API key: set ${env_name} or configure the model's key or base URL "
                    "(LLMConfig / ModelSettings)"
                )
            else:
                key = Secret(PLACEHOLDER_KEY)
    return Resolved(
        name=model.name,
        model_id=s.model_id or model.model_id,
        base_url=base_url,
        api_key=key,
        timeout=s.timeout if s.timeout is not None else _env_timeout(),
        max_retries=s.max_retries if s.max_retries is not None else DEFAULT_MAX_RETRIES,
        max_repairs=s.max_repairs if s.max_repairs is not None else DEFAULT_MAX_REPAIRS,
        system=s.system,
        params=params,
    )
