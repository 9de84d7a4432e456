"""``mcec console`` in a real browser (issue 46): Debian's chromium driven by Playwright, against the
real command (uvicorn) over a real SQLite run database, with runs of the support example
(examples/support/support.mce: a refund over 100 waits for a person's approval).

One console and one browser for the module; each test makes the runs it looks at. The screenshots
of the main pages are written to docs/console/ (README.md, "Console").
"""

from __future__ import annotations

import concurrent.futures
import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcec import durable
from tests.console.server import ROOT, SUPPORT, Console, console

from playwright import sync_api as playwright_sync  # noqa: E402  (the test extra brings it)

pytestmark = pytest.mark.slow

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
#: An ask `within 2` seconds (tests/durable/askbox/deadline.mce).
DEADLINE = ROOT / "tests" / "durable" / "askbox" / "deadline.mce"
#: An `each` whose element "wait" waits for a file (tests/console/holdbox/hold.mce).
HOLD = ROOT / "tests" / "console" / "holdbox" / "hold.mce"
#: An ask whose answer type has every kind of form field (tests/console/formbox/order.mce).
FORMS = ROOT / "tests" / "console" / "formbox" / "order.mce"
#: How long the page may take to show what the test waits for (the list refreshes every 2 s).
WAIT_MS = 30_000


def ticket(id_: str, amount: float, reason: str = "broken", customer: str = "bo") -> dict[str, Any]:
    return {"id": id_, "customer": customer, "amount": amount, "reason": reason}


class Place:
    """The module's run database and ledger, and a way to start runs in it (in a thread of this
    process: DBOS runs them with asyncio.run, which Playwright's own loop must not see)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.db = f"sqlite:///{folder / 'runs.sqlite'}"
        self.ledger = folder / "ledger.txt"
        self._pool = concurrent.futures.ThreadPoolExecutor(1)

    def run(self, pipeline: str, value: object, run_id: str, spec: Path = SUPPORT) -> dict[str, Any]:
        return self._pool.submit(durable.run, spec, pipeline, json.dumps(value), run_id=run_id, db=self.db).result(120)

    def start(self, pipeline: str, value: object, run_id: str, spec: Path) -> concurrent.futures.Future[Any]:
        """Start a run and return at once (its Outcome: the future's result)."""
        return self._pool.submit(durable.run, spec, pipeline, json.dumps(value), run_id=run_id, db=self.db)

    def call(self, function: Any, *args: Any, **kwargs: Any) -> Any:
        return self._pool.submit(function, *args, **kwargs).result(120)


@pytest.fixture(scope="module")
def place(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Place]:
    folder = tmp_path_factory.mktemp("console")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SUPPORT_LEDGER", str(folder / "ledger.txt"))
        yield Place(folder)


@pytest.fixture(scope="module")
def server(place: Place) -> Iterator[Console]:
    with console(place.db, place.folder, env={"SUPPORT_LEDGER": str(place.ledger)}) as running:
        yield running


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with playwright_sync.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@pytest.fixture
def page(browser: Any, screenshots: Path) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 860})
    opened = context.new_page()
    opened.set_default_timeout(WAIT_MS)
    dialogs: list[str] = []
    opened.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    opened.dialogs = dialogs
    opened.shots = screenshots / "console"  # docs/console under --update-golden
    yield opened
    context.close()


def shot(page: Any, name: str) -> None:
    page.shots.mkdir(parents=True, exist_ok=True)
    page.evaluate("window.scrollTo(0, 0)")
    page.screenshot(path=str(page.shots / f"{name}.png"), full_page=False)


def state_of(page: Any, row: Any) -> None:
    """Wait until the state panel shows the state after ``row``'s effect (fetched when it was clicked)."""
    playwright_sync.expect(page.locator("#state-of")).to_have_text("effect " + str(row.get_attribute("data-key")))


def test_a_waiting_run_shows_live_is_answered_through_its_form_and_finishes_in_the_page(
        place: Place, server: Console, browser: Any, page: Any) -> None:
    page.goto(server.url + "/runs")
    assert page.locator('tr[data-run="refund"]').count() == 0
    waiting = place.run("day", [ticket("T1", 40, customer="ana", reason="late"), ticket("T2", 250)], "refund")
    assert waiting["status"] == "waiting"
    # the list shows it without a reload (it refreshes itself)
    row = page.locator('tr[data-run="refund"]')
    row.wait_for()
    assert row.locator(".badge").inner_text() == "waiting"

    watcher = browser.new_page()  # the run's page, left open: it shows the run finish
    watcher.goto(server.url + "/runs/refund")
    assert watcher.locator("#run-status").inner_text() == "waiting"

    row.get_by_role("link", name="answer").click()
    page.wait_for_url("**/questions?run=refund")
    assert page.locator(".question .prompt").inner_text() == "Refund 250.0 to bo (broken)? Ticket T2."
    page.locator(".question").get_by_role("link", name="Answer").click()
    page.wait_for_url("**/questions/refund/approve?index=1,1")
    form = page.locator("form.answer")
    # the page itself refuses an answer with no decision (a yes/no choice the person must make)
    form.get_by_role("button", name="Answer").click()
    assert page.url.endswith("/questions/refund/approve?index=1,1")
    assert page.locator("select[name='answer.approve']").evaluate("e => e.validity.valueMissing")
    # sent anyway (a page that did not check it), the server checks as `runs answer` does: the field says why
    page.locator("form.answer").evaluate("f => { f.noValidate = true; }")
    form.get_by_role("button", name="Answer").click()
    error = page.locator('[data-field="answer.approve"] ul.errors')
    error.wait_for()
    assert error.inner_text() == "Field required"
    shot(page, "question")
    assert place.ledger.read_text(encoding="utf-8").splitlines() == ["T1 paid 40.00 to ana"]

    page.select_option("select[name='answer.approve']", "true")
    page.fill("input[name='answer.note']", "photo ok")
    page.locator("form.answer").get_by_role("button", name="Answer").click()
    page.wait_for_url("**/runs/refund?answered=*")
    assert page.locator(".notice").inner_text() == "answered approve: finished"
    assert page.locator("#run-status").inner_text() == "finished"
    assert json.loads(page.locator("pre.outcome-json").inner_text())["value"] == ["T1: refunded 40.00",
                                                                                   "T2: refunded 250.00"]
    assert place.ledger.read_text(encoding="utf-8").splitlines() == ["T1 paid 40.00 to ana", "T2 paid 250.00 to bo"]
    # the page left open saw it finish, with no reload
    watcher.locator("#run-status", has_text="finished").wait_for()
    watcher.close()

    # its timeline: every effect under its element; the approve answer among them, then settle
    names = page.locator("table.timeline tr.row td.effect").all_inner_texts()
    assert any(n.startswith("[1] approve") for n in names), names
    settle = page.locator("table.timeline tr.row", has_text="settle").last
    settle.click()
    assert page.locator("ol.source li.highlight").get_attribute("id") == "L19"
    state_of(page, settle)
    assert json.loads(page.locator("#state").inner_text()) == {"log": ["T2: refunded 250.00"]}  # its element's
    shot(page, "run")
    assert page.dialogs == []


def test_an_effect_clicked_shows_the_state_after_it_and_its_line(place: Place, server: Console, page: Any) -> None:
    place.run("day", [ticket("S1", 20, customer="cy"), ticket("S2", 30, customer="di")], "small")
    page.goto(server.url + "/runs/small")
    rows = page.locator("table.timeline tr.row.has-state")
    assert rows.count() == 2  # each ticket's `settle` (triage and auto are fns: nothing to record)
    assert page.locator("ol.source li.highlight").count() == 0
    second = rows.nth(1)
    assert second.locator("td.effect").inner_text().startswith("[1] settle")
    second.click()
    assert page.locator("tr.row.selected").get_attribute("data-key") == second.get_attribute("data-key")
    assert page.locator("ol.source li.highlight").get_attribute("id") == "L19"  # `match { Small => auto >>= settle…`
    assert "settle" in page.locator("ol.source li.highlight").inner_text()
    state_of(page, second)
    assert json.loads(page.locator("#state").inner_text()) == {"log": ["S2: refunded 30.00"]}  # its element's own
    rows.nth(0).click()
    state_of(page, rows.nth(0))
    assert json.loads(page.locator("#state").inner_text()) == {"log": ["S1: refunded 20.00"]}


def test_the_spec_page_draws_the_pipelines_each_node_linked_to_its_line(place: Place, server: Console,
                                                                          page: Any) -> None:
    place.run("handle", ticket("S2", 10, customer="di"), "for-spec")
    page.goto(server.url + "/runs/for-spec")
    page.get_by_role("link", name="support.mce").click()
    page.wait_for_url("**/runs/for-spec/spec")
    assert page.locator("figure.pipeline figcaption").all_inner_texts()[0].startswith("pipeline handle : Ticket -> str")
    approve = page.locator("svg a.node.ask", has_text="approve")
    assert approve.get_attribute("href") == "#L19"  # drawn from its use in the pipeline
    triage = page.locator("svg a.node.step, svg a.node.fn", has_text="triage").first
    triage.click()
    page.wait_for_url("**/runs/for-spec/spec#L18")
    assert page.locator("ol.source li.highlight").get_attribute("id") == "L18"
    assert "triage;" in page.locator("ol.source li.highlight").inner_text()
    shot(page, "spec")


def test_a_run_is_cancelled_and_resumed_from_its_page_with_the_commands_rules(place: Place, server: Console,
                                                                              page: Any) -> None:
    assert place.run("handle", ticket("C1", 500), "to-cancel")["status"] == "waiting"
    page.goto(server.url + "/runs/to-cancel")
    page.get_by_role("button", name="Cancel").click()
    page.locator(".notice").wait_for()
    assert page.locator(".notice").inner_text() == "cancelled run to-cancel"
    assert page.locator("#run-status").inner_text() == "cancelled"
    assert place.call(durable.list_runs, db=place.db)[-1].status in ("cancelled", "waiting", "finished")
    page.get_by_role("button", name="Resume").click()
    page.locator(".notice").wait_for()
    assert page.locator(".notice").inner_text() == "resumed run to-cancel: waiting for an answer again"
    assert page.locator("#run-status").inner_text() == "waiting"

    place.run("handle", ticket("C2", 5), "ended")
    page.goto(server.url + "/runs/ended")
    page.get_by_role("button", name="Cancel").click()
    page.locator(".problem").wait_for()
    assert page.locator(".problem").inner_text() == (
        "mcec runs cancel: run ended has already ended (finished): there is nothing to cancel")


def test_a_recorded_script_is_shown_as_text_and_never_runs(place: Place, server: Console, page: Any) -> None:
    payload = '<script>window.__xss = 1</script><img src=x onerror="window.__xss = 2">'
    assert place.run("handle", ticket("X1", 999, reason=payload), "xss")["status"] == "waiting"
    for path in ("/runs/xss", "/questions", "/questions/xss/approve?index=1", "/runs"):
        page.goto(server.url + path)
        page.wait_for_load_state("load")
        assert page.evaluate("window.__xss") is None, path
        assert page.locator("script").count() == 1, path  # the console's own, no other
    page.goto(server.url + "/questions/xss/approve?index=1")
    assert payload in page.locator("p.prompt").inner_text()
    page.goto(server.url + "/runs/xss")
    assert json.loads(page.locator("pre.input").inner_text())["reason"] == payload
    assert page.dialogs == []


def test_the_list_filters_by_status_spec_and_pipeline_and_pages(place: Place, server: Console, page: Any) -> None:
    for n in range(3):
        place.run("handle", ticket(f"P{n}", 1), f"paged-{n}")
    page.goto(server.url + "/runs?pipeline=handle&status=finished&limit=2")
    shown = page.locator("table.runs tbody tr[data-run]").evaluate_all("rows => rows.map(r => r.dataset.run)")
    assert shown == ["paged-2", "paged-1"]  # newest first
    page.get_by_role("link", name="next 2 →").click()
    more = page.locator("table.runs tbody tr[data-run]").evaluate_all("rows => rows.map(r => r.dataset.run)")
    assert more[0] == "paged-0" and "paged-2" not in more
    page.goto(server.url + "/runs?status=waiting")
    statuses = set(page.locator("table.runs .badge").all_inner_texts())
    assert statuses == {"waiting"}
    page.goto(server.url + "/runs?spec=no-such-spec")
    assert page.locator("table.runs td.empty").inner_text() == "no runs match"
    page.goto(server.url + "/runs?pipeline=handle&since=2000-01-01T00:00&limit=2")
    assert page.locator("table.runs tbody tr[data-run]").count() == 2
    page.goto(server.url + "/runs?pipeline=handle&until=2000-01-01T00:00")
    assert page.locator("table.runs td.empty").inner_text() == "no runs match"
    page.goto(server.url + "/runs?since=yesterday")
    assert page.locator(".problem").inner_text() == "since: not a time ('yesterday'); give YYYY-MM-DDTHH:MM"


def _post(url: str, fields: dict[str, str], headers: dict[str, str]) -> tuple[int, str]:
    request = urllib.request.Request(url, data=urllib.parse.urlencode(fields).encode(), headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def test_a_change_needs_the_consoles_csrf_token_and_origin(place: Place, server: Console, page: Any) -> None:
    assert place.run("handle", ticket("F1", 300), "forged")["status"] == "waiting"
    page.goto(server.url + "/runs/forged")
    csrf = page.locator("input[name=csrf]").first.get_attribute("value")
    host = server.url.removeprefix("http://")
    target = server.url + "/runs/forged/cancel"
    assert _post(target, {"csrf": "guess"}, {"Origin": server.url})[0] == 403
    assert _post(target, {}, {"Origin": server.url})[0] == 403
    status, body = _post(target, {"csrf": csrf}, {"Origin": "http://evil.example"})
    assert (status, body) == (403, "mcec console: the request comes from another origin (evil.example): refused")
    assert _post(target, {"csrf": csrf}, {})[0] == 403  # no Origin, no Referer
    assert _post(server.url + "/questions/forged/approve?index=1", {"csrf": csrf, "answer.approve": "true"},
                 {"Origin": "http://evil.example"})[0] == 403
    assert place.call(durable.waiting, db=place.db, run_id="forged")  # still waiting: nothing was changed
    # a site whose name points at 127.0.0.1 (DNS rebinding) is its own origin: its Host is refused
    rebound = {"Origin": "http://rebound.example:80", "Host": "rebound.example:80"}
    assert _post(target, {"csrf": csrf}, rebound) == (
        403, "mcec console: this console serves 127.0.0.1 and localhost only (the request names another host)")
    status, _ = _post(target, {"csrf": csrf}, {"Origin": server.url, "Host": host})
    assert status == 200


def test_beyond_loopback_every_request_needs_the_token(place: Place, browser: Any) -> None:
    with console(place.db, place.folder, "--host", "0.0.0.0", env={"MCEC_CONSOLE_TOKEN": "s3cret-token"}) as guarded:
        context = browser.new_context()
        page = context.new_page()
        assert page.goto(guarded.url + "/runs").status == 401
        assert page.goto(guarded.url + "/runs?token=wrong").status == 401
        assert page.goto(guarded.url + "/runs?token=s3cret-token").status == 200
        assert page.goto(guarded.url + "/runs").status == 200  # the cookie the link left
        assert "s3cret-token" not in page.content()
        request = urllib.request.Request(guarded.url + "/runs", headers={"Authorization": "Bearer s3cret-token"})
        with urllib.request.urlopen(request, timeout=60) as response:
            assert response.status == 200
        context.close()


def test_a_deadline_shows_the_time_left_and_an_expired_question_takes_no_answer(
        place: Place, server: Console, page: Any) -> None:
    assert place.run("settle", "A-1:120", "late", spec=DEADLINE)["status"] == "waiting"
    page.goto(server.url + "/questions/late/approve?index=0")
    assert page.locator(".prompt").inner_text() == "Refund 120.0 for A-1?"
    left = page.locator(".deadline .left").inner_text()
    assert left.endswith(" s left") or left == "expired", left
    csrf = page.locator("input[name=csrf]").get_attribute("value")
    page.locator(".deadline.expired").wait_for()  # the page counts down; once past, a reload has no form
    page.reload()
    assert page.locator(".deadline.expired").inner_text().startswith("expired at ")
    assert page.locator("form.answer").count() == 0
    status, body = _post(server.url + "/questions/late/approve?index=0", {"csrf": str(csrf), "answer.ok": "true"},
                         {"Origin": server.url})
    assert status == 422
    assert "the question approve of run late expired at " in body and "the answer is refused" in body
    page.goto(server.url + "/questions")
    assert "expired at " in page.locator('.question[data-run="late"] .deadline').inner_text()


def test_a_form_made_from_a_rich_answer_type_answers_the_run(place: Place, server: Console, page: Any) -> None:
    assert place.run("take", {"id": "O-1"}, "forms", spec=FORMS)["status"] == "waiting"
    page.goto(server.url + "/questions/forms/decide")
    assert page.locator(".prompt").inner_text() == "Order O-1: what do we ship?"
    assert page.locator("select[name='answer.size'] option").all_inner_texts() == ["(choose)", "S", "M", "L"]
    assert page.locator("input[type=checkbox][name='answer.gift']").count() == 1
    assert page.locator("textarea.json[name='answer.extra']").count() == 1  # a dict: the JSON editor
    page.select_option("select[name='answer.size']", label="M")
    page.check("input[name='answer.gift']")
    add = page.locator("fieldset.list[data-list='answer.lines'] > button.add")
    add.click()
    add.click()
    page.fill("input[name='answer.lines.0.sku']", "A-7")
    page.fill("input[name='answer.lines.0.quantity']", "2")
    page.fill("input[name='answer.lines.1.sku']", "B-9")
    page.fill("input[name='answer.lines.1.quantity']", "0")
    page.fill("textarea[name='answer.extra']", "{not json")
    submit = page.locator("form.answer > button[type=submit]")
    submit.click()  # the page refuses it: a quantity under its minimum, a JSON editor's text that is not JSON
    assert page.url.endswith("/questions/forms/decide")
    assert page.locator("input[name='answer.lines.1.quantity']").evaluate("e => e.validity.rangeUnderflow")
    page.fill("textarea[name='answer.extra']", '{"fragile": 1}')
    page.locator("form.answer").evaluate("f => { f.noValidate = true; }")
    submit.click()  # sent anyway: the answer type refuses it, at the item's field
    error = page.locator('[data-field="answer.lines.1.quantity"] ul.errors')
    error.wait_for()
    assert error.inner_text() == "Input should be greater than or equal to 1"
    # what was typed is still there, both items included
    assert page.locator("input[name='answer.lines.0.sku']").input_value() == "A-7"
    assert page.locator("input[name='answer.lines.1.sku']").input_value() == "B-9"
    assert page.locator("select[name='answer.size']").input_value() == '"M"'
    assert page.locator("input[name='answer.gift']").is_checked()
    page.fill("input[name='answer.lines.1.quantity']", "3")
    page.locator("form.answer").get_by_role("button", name="Answer").click()
    page.wait_for_url("**/runs/forms?answered=*")
    assert page.locator("#run-status").inner_text() == "finished"
    assert json.loads(page.locator("pre.outcome-json").inner_text())["value"] == {
        "size": "M", "gift": True, "lines": [{"sku": "A-7", "quantity": 2}, {"sku": "B-9", "quantity": 3}],
        "extra": {"fragile": 1}, "note": None,
    }


def test_a_running_runs_each_progress_shows_as_it_goes(place: Place, server: Console, page: Any, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    flag = tmp_path / "go"
    monkeypatch.setenv("CONSOLE_HOLD", str(flag))
    running = place.start("all", ["a", "b", "wait", "c"], "progress", spec=HOLD)
    try:
        page.goto(server.url + "/runs?pipeline=all")
        page.locator('tr[data-run="progress"]').wait_for()  # the list shows it as soon as it exists
        page.goto(server.url + "/runs/progress")
        group = page.locator("table.timeline tr.row.group")
        group.locator("small", has_text="2/2 done").wait_for()  # a and b; "wait" holds the each (limit 1)
        assert page.locator("#run-status").inner_text() == "running"
        assert group.locator("progress").get_attribute("value") == "2"
    finally:
        flag.touch()
    assert running.result(120)["value"] == ["a done", "b done", "wait done", "c done"]
    # the page, not reloaded, follows it to the end
    page.locator("#run-status", has_text="finished").wait_for()
    assert group.locator("small").inner_text() == "4/4 done"
    assert group.locator("progress").get_attribute("value") == "4"

def test_the_list_shows_every_run_of_the_module_newest_first(place: Place, server: Console, page: Any) -> None:
    """(Last: the picture of the list, with the runs the tests above made.)"""
    every = [r.run_id for r in place.call(durable.list_runs, db=place.db)]
    page.goto(server.url + "/runs")
    shown = page.locator("table.runs tbody tr[data-run]").evaluate_all("rows => rows.map(r => r.dataset.run)")
    assert shown == every[::-1]
    assert {"finished", "waiting", "cancelled"} <= set(page.locator("table.runs .badge").all_inner_texts())
    shot(page, "runs")
