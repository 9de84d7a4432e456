"""``mcec run --model NAME=VALUE``: one option read into a model's settings or a backend.

Its own module, above both :mod:`agentmonad.llm.config` and
:mod:`agentmonad.testing` (whose scripted backends an option can name): in
``config`` it had to import ``testing``, which imports ``config`` — an import circle.
"""

from __future__ import annotations

from ..testing import backend_from_option
from .config import Entry, ModelSettings

__all__ = ["parse_model_option"]


def parse_model_option(text: str) -> tuple[str, Entry]:
    """``NAME=VALUE`` (``mcec run --model``) as a :class:`LLMConfig` entry.

    ``VALUE`` is one of:

    - ``test``: a ``TestModel`` (valid answers made up from the output's schema, no network);
    - ``script:PATH``: a ``ScriptedModel`` replaying the replies in the JSON file
      ``PATH`` (see ``agentmonad.testing.replies_from_json``);
    - ``py:MODULE:ATTR``: the backend ``MODULE.ATTR`` (a backend class is made with
      no arguments; a function of the request becomes a ``FunctionModel``);
    - ``MODEL_ID`` or ``MODEL_ID@BASE_URL``: the real endpoint with that model id.

    ``NAME`` may be ``*`` (every model).

    >>> parse_model_option("fast=gpt-4o@http://127.0.0.1:8000/v1")
    ('fast', ModelSettings(model_id='gpt-4o', base_url='http://127.0.0.1:8000/v1', api_key=None, api_key_env=None, temperature=None, max_tokens=None, max_repairs=None, timeout=None, max_retries=None, system=None, params={}))
    """
    name, sep, value = text.partition("=")
    name, value = name.strip(), value.strip()
    if not sep or not name or not value:
        raise ValueError(f"expected NAME=VALUE (e.g. fast=test or fast=gpt-4o-mini), not {text!r}")
    if value == "test" or value.startswith(("script:", "py:")):
        return name, backend_from_option(value)
    model_id, at, base_url = value.partition("@")
    if at and not base_url:
        raise ValueError(f"expected MODEL_ID@BASE_URL, not {value!r}")
    return name, ModelSettings(model_id=model_id or None, base_url=base_url or None)
