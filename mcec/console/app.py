"""The console's web application (Starlette): its routes, over the public functions of
:mod:`mcec.durable` (and :mod:`mcec.durable.listing` for pages of a long list).

Pages are rendered on the server (Jinja2, every value escaped); ``static/console.js`` refreshes
the live parts and adds list items to forms. Every call into :mod:`mcec.durable` runs in a worker
thread, one at a time: resuming or answering a run runs it in this process (as ``mcec runs
answer`` does in its own), on DBOS, which is one per process.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar, final
from urllib.parse import urlencode

import jinja2
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware, RequestResponseEndpoint
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from mcec import durable
from mcec.console.auth import COOKIE, Guard
from mcec.console.forms import Field, FormError, answer_of, errors_by_field, form_of, list_indices, shown_value
from mcec.console.views import TERMINAL, pretty, spec_lines, time_left, timeline_rows
from mcec.durable import DurableError
from mcec.durable.listing import RUN_STATUSES, RunFilter, list_page, open_questions, state_after

__all__ = ["Console", "make_app"]

_HERE = Path(__file__).parent
_T = TypeVar("_T")

#: What a page may load and run: its own scripts and styles only, no inline script, no framing.
_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "frame-ancestors 'none'; form-action 'self'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "X-Frame-Options": "DENY",
}

#: Runs on a page of the list (``?limit=`` asks for another number, up to :data:`MAX_PAGE`).
PAGE = 50
MAX_PAGE = 500


@final
@dataclass(slots=True)
class Console:
    """What the application serves: the run database (``db``: a URL, None: the default), who
    gets in (``guard``), and the database as a page may name it (no secrets)."""

    db: str | None
    guard: Guard
    shown_db: str
    _lock: threading.Lock = field(default_factory=threading.Lock)

    async def call(self, function: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
        """``function(*args, **kwargs)`` in a worker thread, one call at a time (see the module)."""
        def locked() -> _T:
            with self._lock:
                return function(*args, **kwargs)

        return await run_in_threadpool(locked)


def make_app(console: Console) -> Starlette:
    """The console's application."""
    environment = jinja2.Environment(loader=jinja2.FileSystemLoader(_HERE / "templates"), autoescape=True,
                                     undefined=jinja2.StrictUndefined)
    environment.globals.update(pretty=pretty, list_indices=list_indices, shown_value=shown_value, RUN_STATUSES=RUN_STATUSES)
    templates = Jinja2Templates(env=environment)

    def page(request: Request, name: str, context: dict[str, Any], status: int = 200) -> Response:
        context = {"csrf": console.guard.csrf, "db": console.shown_db, "notice": None, "problem": None, "first": None,
                   **context}
        return templates.TemplateResponse(request, name, context, status_code=status)

    async def guarded(request: Request, call_next: RequestResponseEndpoint) -> Response:
        """The token (beyond loopback), then the page with the security headers, and how long the
        server took over it (``Server-Timing``: what benchmarks/console_bench.py reads)."""
        started = time.perf_counter()
        bearer = request.headers.get("authorization", "")
        query = request.query_params.get("token")
        if not console.guard.serves_host(request.headers.get("host")):
            response: Response = PlainTextResponse(
                "mcec console: this console serves 127.0.0.1 and localhost only (the request names another host)",
                status_code=403)
        elif not console.guard.admits(bearer.removeprefix("Bearer ") if bearer.startswith("Bearer ") else None, query,
                                    request.cookies.get(COOKIE)):
            response = PlainTextResponse(
                "mcec console: this console needs its token (open the link `mcec console` printed, with ?token=…)",
                status_code=401)
        else:
            response = await call_next(request)
            if query is not None and console.guard.token is not None and console.guard.admits(None, query, None):
                response.set_cookie(COOKIE, query, httponly=True, samesite="strict")
        response.headers.update(_HEADERS)
        response.headers["Server-Timing"] = f"app;dur={(time.perf_counter() - started) * 1000:.1f}"
        return response

    def refused(request: Request, form: FormData) -> str | None:
        csrf = form.get("csrf")
        return console.guard.may_change(csrf if isinstance(csrf, str) else None, request.headers.get("origin"),
                                        request.headers.get("referer"), request.headers.get("host"))

    async def home(request: Request) -> Response:
        return RedirectResponse("/runs", status_code=303)

    async def runs(request: Request) -> Response:
        params = request.query_params
        problems: list[str] = []
        where = RunFilter(
            status=params.get("status") or None, spec=params.get("spec") or None,
            pipeline=params.get("pipeline") or None,
            since=_epoch(params.get("since"), problems, "since"), until=_epoch(params.get("until"), problems, "until"),
        )
        offset = _number(params.get("offset"))
        limit = min(_number(params.get("limit")) or PAGE, MAX_PAGE)
        try:
            found = await console.call(list_page, db=console.db, where=where, offset=offset, limit=limit)
        except DurableError as exc:
            return page(request, "runs.html", {"page": None, "problem": str(exc), "query": params, "next": None,
                                                "partial": False}, status=400)
        kept = {k: v for k, v in params.items() if k in ("status", "spec", "pipeline", "since", "until", "limit") and v}
        after = f"/runs?{urlencode({**kept, 'offset': found.next_offset})}" if found.next_offset is not None else None
        first = f"/runs?{urlencode(kept)}" if offset else None
        name = "runs_rows.html" if params.get("partial") else "runs.html"
        return page(request, name, {"page": found, "problem": "; ".join(problems) or None, "query": params,
                                    "next": after, "first": first, "partial": bool(params.get("partial"))})

    async def run(request: Request, notice: str | None = None, problem: str | None = None, status: int = 200) -> Response:
        run_id = request.path_params["run_id"]
        try:
            shown, tree = await console.call(durable.show_tree, run_id, db=console.db)
            # a run that waits has open questions (one running may too: its answering process died)
            asks = shown["status"] in ("waiting", "running")
            questions = await console.call(durable.waiting, db=console.db, run_id=run_id) if asks else []
        except DurableError as exc:
            return page(request, "missing.html", {"problem": str(exc)}, status=404)
        rows = timeline_rows(tree)
        spec = str(shown.get("spec") or "")
        context = {
            "run": shown, "rows": rows, "questions": questions, "live": shown["status"] not in TERMINAL,
            "notice": notice or _answered(request), "problem": problem, "spec_name": Path(spec).name, "lines": spec_lines(spec),
            "time_left": time_left,
        }
        name = "run_live.html" if request.query_params.get("partial") else "run.html"
        return page(request, name, context, status=status)

    async def state(request: Request) -> Response:
        """The state after one effect (``?key=``), as JSON text: what a click on the effect shows."""
        run_id, key = request.path_params["run_id"], request.query_params.get("key", "")
        try:
            text = await console.call(state_after, run_id, key, db=console.db)
        except DurableError as exc:
            return PlainTextResponse(str(exc), status_code=404)
        return PlainTextResponse(text if text is not None else "(this effect records no state)")

    async def change(request: Request, action: str) -> Response:
        form = await request.form()
        why = refused(request, form)
        if why is not None:
            return PlainTextResponse(f"mcec console: {why}", status_code=403)
        run_id = request.path_params["run_id"]
        try:
            if action == "cancel":
                await console.call(durable.cancel, run_id, db=console.db)
                notice = f"cancelled run {run_id}"
            else:
                payload = await console.call(durable.resume, run_id, db=console.db)
                notice = f"resumed run {run_id}: " + _said(payload)
        except DurableError as exc:
            return await run(request, problem=f"mcec runs {action}: {exc}", status=409)
        return await run(request, notice=notice)

    async def cancel(request: Request) -> Response:
        return await change(request, "cancel")

    async def resume(request: Request) -> Response:
        return await change(request, "resume")

    async def questions(request: Request) -> Response:
        run_id = request.query_params.get("run") or None
        try:
            found = await console.call(open_questions, db=console.db, run_id=run_id)
        except DurableError as exc:
            return page(request, "missing.html", {"problem": str(exc)}, status=404)
        return page(request, "questions.html", {"questions": found, "run_id": run_id, "time_left": time_left})

    async def question(request: Request) -> Response:
        return await _question_page(request, None, {}, [])

    async def _question_page(request: Request, submitted: FormData | None, errors: dict[str, list[str]],
                             loose: list[str], status: int = 200) -> Response:
        run_id, name = request.path_params["run_id"], request.path_params["name"]
        index = _index(request.query_params.get("index"))
        try:
            found = await console.call(durable.waiting, db=console.db, run_id=run_id)
        except DurableError as exc:
            return page(request, "missing.html", {"problem": str(exc)}, status=404)
        chosen = [q for q in found if q["name"] == name and (index is None or list(q["index"]) == index)]
        if not chosen:
            return page(request, "missing.html", {"problem": f"run {run_id} has no open question {name}"
                                                  + (f" at index {index}" if index else "")}, status=404)
        asked = chosen[0]
        values = {k: submitted.getlist(k) for k in submitted.keys()} if submitted is not None else None
        return page(request, "question.html", {
            "q": asked, "form": form_of(asked["schema"]), "errors": errors, "loose": loose, "values": values,
            "time_left": time_left, "index_text": ",".join(map(str, asked["index"])),
        }, status=status)

    async def answer(request: Request) -> Response:
        form = await request.form()
        why = refused(request, form)
        if why is not None:
            return PlainTextResponse(f"mcec console: {why}", status_code=403)
        run_id, name = request.path_params["run_id"], request.path_params["name"]
        index = _index(request.query_params.get("index"))
        found = await console.call(durable.waiting, db=console.db, run_id=run_id)
        chosen = [q for q in found if q["name"] == name and (index is None or list(q["index"]) == index)]
        if not chosen:
            return await _question_page(request, form, {}, [f"run {run_id} has no open question {name} any more"], 409)
        fields: Field = form_of(chosen[0]["schema"])
        submitted = {k: [v for v in form.getlist(k) if isinstance(v, str)] for k in form.keys()}
        try:
            value = answer_of(fields, submitted)
        except FormError as exc:
            return await _question_page(request, form, {exc.name: [str(exc)]}, [], 422)
        try:
            payload = await console.call(durable.answer, run_id, name, json.dumps(value), index=index, db=console.db)
        except DurableError as exc:
            placed, loose = errors_by_field(fields, str(exc), name)
            return await _question_page(request, form, placed, loose, 422)
        return RedirectResponse(f"/runs/{_quoted(run_id)}?{urlencode({'answered': name + ': ' + _said(payload)})}",
                                status_code=303)

    async def spec(request: Request) -> Response:
        run_id = request.path_params["run_id"]
        try:
            shown, _ = await console.call(durable.show_tree, run_id, db=console.db)
            pictures = await console.call(_pictures, str(shown.get("spec") or ""))
        except DurableError as exc:
            return page(request, "missing.html", {"problem": str(exc)}, status=404)
        spec_path = str(shown.get("spec") or "")
        return page(request, "spec.html", {"run": shown, "pictures": pictures, "lines": spec_lines(spec_path),
                                           "spec_name": Path(spec_path).name})

    routes = [
        Route("/", home),
        Route("/runs", runs),
        Route("/runs/{run_id:path}/cancel", cancel, methods=["POST"]),
        Route("/runs/{run_id:path}/resume", resume, methods=["POST"]),
        Route("/runs/{run_id:path}/spec", spec),
        Route("/runs/{run_id:path}/state", state),
        Route("/runs/{run_id:path}", run),
        Route("/questions", questions),
        Route("/questions/{run_id:path}/{name}", question, methods=["GET"]),
        Route("/questions/{run_id:path}/{name}", answer, methods=["POST"]),
        Mount("/static", StaticFiles(directory=_HERE / "static"), name="static"),
    ]
    return Starlette(routes=routes, middleware=[Middleware(BaseHTTPMiddleware, dispatch=guarded)])


def _pictures(spec: str) -> list[Any]:
    """The pictures of the spec's pipelines (:mod:`mcec.console.picture`), checked as `mcec graph` checks it."""
    from mcec.cli.common import load_source
    from mcec.compiler import check_source
    from mcec.console.picture import laid_out
    from mcec.tools.graph import build_graph

    source, problem = load_source(Path(spec))
    if problem is not None or source is None:
        raise DurableError(problem.message if problem is not None else f"cannot read {spec}")
    result = check_source(source)
    if result.program is None:
        raise DurableError(f"{spec} does not check (run `mcec check {spec}`)")
    return list(laid_out(build_graph(result.program)))


def _answered(request: Request) -> str | None:
    """What the answer a form just gave did (the page it redirected to says it)."""
    said = request.query_params.get("answered")
    return f"answered {said}" if said else None


def _said(payload: dict[str, Any]) -> str:
    """A run's Outcome in a few words."""
    if payload.get("status") == "waiting":
        return "waiting for an answer again"
    if payload.get("status") == "cancelled":
        return "cancelled"
    return "finished" if payload.get("ok") else "failed"


def _quoted(run_id: str) -> str:
    from urllib.parse import quote

    return quote(run_id, safe="")


def _index(text: str | None) -> list[int] | None:
    if not text:
        return None
    try:
        return [int(part) for part in text.split(",")]
    except ValueError:
        return None


def _number(text: str | None) -> int:
    try:
        return max(int(text or 0), 0)
    except ValueError:
        return 0


def _epoch(text: str | None, problems: list[str], name: str) -> float | None:
    """A time the page's filter gives (``2026-12-06T08:00``, local time) as epoch seconds."""
    if not text:
        return None
    try:
        return datetime.fromisoformat(text).timestamp()
    except ValueError:
        problems.append(f"{name}: not a time ({text!r}); give YYYY-MM-DDTHH:MM")
        return None

