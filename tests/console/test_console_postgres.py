"""``mcec console`` over a run database on a real PostgreSQL server (tests/pgserver.py): the same
pages, and an answer given through the form's POST resumes the run there (issue 46)."""

from __future__ import annotations

import http.client
import json
import re
import urllib.parse
import urllib.request
import uuid
from pathlib import Path

import pytest

from mcec import durable
from pgserver import postgres_url  # noqa: F401  (the fixture: a real PostgreSQL server the tests start)
from tests.console.server import SUPPORT, console

pytestmark = pytest.mark.slow


def get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=60) as response:
        return str(response.read().decode())


def test_the_console_lists_and_answers_a_run_on_postgres(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, postgres_url: str) -> None:  # noqa: F811  (the fixture)
    ledger = tmp_path / "ledger.txt"
    monkeypatch.setenv("SUPPORT_LEDGER", str(ledger))
    run_id = f"pg-{uuid.uuid4().hex[:8]}"  # the server is the session's: other tests' runs may be there too
    ticket = {"id": "G1", "customer": "eve", "amount": 400, "reason": "lost"}
    assert durable.run(SUPPORT, "handle", json.dumps(ticket), run_id=run_id, db=postgres_url)["status"] == "waiting"
    # a password in the URL (the test server trusts local connections: it is not checked) never reaches a page
    scheme, rest = postgres_url.split("://", 1)
    user, host_part = rest.split("@", 1)
    with_password = f"{scheme}://{user}:hunter2-not-shown@{host_part}"
    with console(with_password, tmp_path, env={"SUPPORT_LEDGER": str(ledger)}) as running:
        listed = get(running.url + "/runs?status=waiting&pipeline=handle")
        assert f'data-run="{run_id}"' in listed
        assert f"postgresql://{user}@{host_part}" in listed and "hunter2" not in listed
        form = get(f"{running.url}/questions/{run_id}/approve?index=1")
        assert "hunter2" not in form
        assert "Refund 400.0 to eve (lost)? Ticket G1." in form
        found = re.search(r'name="csrf" value="([^"]+)"', form)
        assert found is not None
        host = running.url.removeprefix("http://")
        connection = http.client.HTTPConnection(host, timeout=60)
        body = urllib.parse.urlencode({"csrf": found.group(1), "answer.approve": "true", "answer.note": "ok"})
        connection.request("POST", f"/questions/{run_id}/approve?index=1", body, {
            "Content-Type": "application/x-www-form-urlencoded", "Origin": running.url})
        response = connection.getresponse()
        assert response.status == 303, response.read()
        assert response.getheader("location") == f"/runs/{run_id}?answered=approve%3A+finished"
        connection.close()
        page = get(f"{running.url}/runs/{run_id}")
        assert '<span class="badge finished" id="run-status">finished</span>' in page
        assert "hunter2" not in page + get(f"{running.url}/runs/{run_id}/spec") + get(f"{running.url}/questions")
    assert ledger.read_text(encoding="utf-8").splitlines() == ["G1 paid 400.00 to eve"]
    assert durable.result(run_id, db=postgres_url, wait=False)["value"] == "G1: refunded 400.00"  # type: ignore[index]
