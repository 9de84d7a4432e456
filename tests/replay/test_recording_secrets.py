"""A recording holds no secret (docs/language.md §17): run against the key-echoing model server of
the llm tests (tests/llm_server.py: an ``Echo`` reply quotes the request's ``Authorization``
header back as the model's answer), with the key in the environment and the endpoint's URL
carrying ``user:password@``, ``mcec run --record`` writes a file with neither the key, nor the
password, nor the Basic credentials a client makes of them, nor any URL's user info; the value
that quoted the key is recorded masked, and the recording still replays to its own Outcome."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from llm_server import Echo, LLMServer, Recorded, llm_server  # noqa: F401  (the fixture)

from agentmonad.testing import text

KEY = "sk-live-4Rt8Wq2Zx6Vb9Nm3Kp7Hd5Jf"
USER, PASSWORD = "carol", "pw-Yh3Lk8Qz1Tm5"

SPEC = '''\
model fast = openai "test-model" (api_key_env="RECORD_TEST_KEY", max_repairs=0, max_retries=0)

llm say : str -> str = fast "Say {{ value }}"

pipeline talk : str -> str ! LLMFailed | LLMUnavailable = say;
'''


def authorization(record: Recorded) -> str:
    return record.headers.get("authorization", "")


def leaks(secret: str, shown: str) -> list[str]:
    """The prefixes of ``secret`` (6 characters or more) that ``shown`` contains."""
    return [secret[:n] for n in range(6, len(secret) + 1) if secret[:n] in shown]


@pytest.mark.parametrize("credentials", ["key", "url"])
def test_a_recording_holds_no_key_and_no_url_credentials(llm_server: LLMServer, tmp_path: Path, credentials: str) -> None:
    """``key``: the client sends the key (``Bearer``); ``url``: the endpoint's URL has user info, so
    the client sends those (``Basic``): the model quotes what it got either way."""
    (tmp_path / "talk.mce").write_text(SPEC)
    llm_server.script(Echo(lambda r: text(f"my key is {authorization(r)} and my endpoint is {r.headers.get('host')}")))
    base = llm_server.url.replace("://", f"://{USER}:{PASSWORD}@") if credentials == "url" else llm_server.url
    recording = tmp_path / "talk.mcerun.json"
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("OPENAI")}, "RECORD_TEST_KEY": KEY}
    value = json.dumps(f"fetch https://{USER}:{PASSWORD}@example.org/data please")
    done = subprocess.run(
        [sys.executable, "-m", "mcec", "run", "talk.mce", "talk", "--input", value,
         "--model", f"fast=test-model@{base}", "--record", str(recording)],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    sent = authorization(llm_server.requests[0]).split()[1]  # the key, or the URL's credentials, went where they belong
    basic = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
    assert sent == (KEY if credentials == "key" else basic)
    assert sent in json.loads(done.stdout)["value"]  # and came back: the run itself got what the model said

    written = recording.read_text()
    for secret in (KEY, PASSWORD, basic):
        assert not leaks(secret, written), (secret, written)
    assert f"{USER}:" not in written
    data = json.loads(written)
    scheme = "Bearer" if credentials == "key" else "Basic"
    assert data["outcome"]["ok"] == f"my key is {scheme} *** and my endpoint is 127.0.0.1:{llm_server.port}"
    assert data["input"] == "fetch https://***@example.org/data please"
    shown_base = llm_server.url.replace("://", "://***@") if credentials == "url" else llm_server.url
    assert data["models"] == [f"fast=test-model@{shown_base}"]

    # the masked recording replays to its own Outcome, offline: no key, no endpoint
    offline = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI") and k != "RECORD_TEST_KEY"}
    replayed = subprocess.run([sys.executable, "-m", "mcec", "replay", str(recording)], cwd=tmp_path,
                              capture_output=True, text=True, timeout=120, env=offline)
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert json.loads(replayed.stdout)["outcome"] == data["outcome"]
    assert len(llm_server.requests) == 1  # the replay asked the model nothing
