"""Sources and composition for examples/briefing/briefing.mce.

The sources are async and sleep briefly to stand in for network calls; a
request names the sources that should be "down", so the failure paths are
deterministic and testable offline.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field, replace
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from agentmonad import Append, Err, Ok, Outcome, Sum, Timeout


@dataclass(frozen=True)
class BriefingState:
    """What happened while briefing: one log line per source, and a fetch count."""

    log: Annotated[tuple[str, ...], Append] = ()
    fetches: Annotated[int, Sum] = 0


@dataclass(frozen=True)
class Request:
    """Whom to brief, where, and (for demos and tests) which sources are down."""

    city: str
    tickers: tuple[str, ...] = ("ACME",)
    down: tuple[str, ...] = field(default=())
    #: Sources whose first attempt fails (``resilient_briefing`` retries them).
    flaky: tuple[str, ...] = field(default=())
    #: Sources that take 5 s to answer (``resilient_briefing`` gives each 0.5 s).
    slow: tuple[str, ...] = field(default=())


@dataclass(frozen=True)
class News:
    headlines: tuple[str, ...]


@dataclass(frozen=True)
class Weather:
    summary: str


@dataclass(frozen=True)
class Stocks:
    quotes: tuple[str, ...]


@dataclass(frozen=True)
class Briefing:
    """The finished briefing; ``degraded`` lists the sources that were unavailable."""

    text: str
    degraded: tuple[str, ...]


class Summary(BaseModel):
    """What ``stream llm summarize`` makes of a briefing: the model's structured output, validated.

    Its JSON schema is the response format the model is asked for.
    """

    model_config = ConfigDict(frozen=True)

    #: One line for the day.
    headline: str = Field(min_length=1, max_length=120)
    #: One point per section of the briefing, in its order.
    points: list[str] = Field(min_length=1, max_length=5)
    #: The sources that were unavailable (the briefing's ``degraded``).
    missing: list[str] = []


class SourceDown(Exception):
    """A source could not be reached."""

    def __init__(self, source: str) -> None:
        super().__init__(f"{source} is unavailable")
        self.source = source


def _fetched(state: BriefingState, source: str) -> BriefingState:
    return replace(state, log=(*state.log, f"fetched {source}"), fetches=state.fetches + 1)


async def _trouble(state: BriefingState, request: Request, source: str) -> Err[BriefingState, SourceDown] | None:
    """What the demo request asks of ``source``: down, slow (5 s), or flaky (the first attempt
    fails, noting it in the log, so the next attempt — which gets that state — succeeds)."""
    if source in request.down:
        raise SourceDown(source)
    if source in request.slow:
        await asyncio.sleep(5)
    failed = f"{source} failed once"
    if source in request.flaky and failed not in state.log:
        return Err(SourceDown(source), replace(state, log=(*state.log, failed)))
    return None


async def fetch_news(state: BriefingState, request: Request) -> Outcome[BriefingState, SourceDown, News]:
    """Headlines for the request's city."""
    await asyncio.sleep(0.01)
    trouble = await _trouble(state, request, "news")
    if trouble is not None:
        return trouble
    return Ok(News((f"{request.city} opens a new library", "Local team wins")), _fetched(state, "news"))


async def fetch_weather(
    state: BriefingState, request: Request
) -> Outcome[BriefingState, SourceDown, Weather]:
    """Today's weather for the city."""
    await asyncio.sleep(0.02)
    trouble = await _trouble(state, request, "weather")
    if trouble is not None:
        return trouble
    return Ok(Weather(f"Sunny in {request.city}, 21°C"), _fetched(state, "weather"))


async def fetch_stocks(state: BriefingState, request: Request) -> Outcome[BriefingState, SourceDown, Stocks]:
    """Quotes for the request's tickers."""
    await asyncio.sleep(0.005)
    trouble = await _trouble(state, request, "stocks")
    if trouble is not None:
        return trouble
    quotes = tuple(f"{ticker} {100 + len(ticker)}.00" for ticker in request.tickers)
    return Ok(Stocks(quotes), _fetched(state, "stocks"))


def no_news(error: SourceDown | Timeout) -> News:
    """Placeholder news when the source is down (or too slow)."""
    return News(("(news unavailable)",))


def no_weather(error: SourceDown | Timeout) -> Weather:
    """Placeholder weather when the source is down (or too slow)."""
    return Weather("(weather unavailable)")


def no_stocks(error: SourceDown | Timeout) -> Stocks:
    """Placeholder quotes when the source is down (or too slow)."""
    return Stocks(("(stocks unavailable)",))


def compose(parts: tuple[News, Weather, Stocks]) -> Briefing:
    """Put the sections together, noting which ones are placeholders."""
    news, weather, stocks = parts
    degraded = tuple(
        name
        for name, missing in (
            ("news", news.headlines == ("(news unavailable)",)),
            ("weather", weather.summary == "(weather unavailable)"),
            ("stocks", stocks.quotes == ("(stocks unavailable)",)),
        )
        if missing
    )
    text = "\n".join(
        ["News: " + "; ".join(news.headlines), "Weather: " + weather.summary, "Markets: " + ", ".join(stocks.quotes)]
    )
    return Briefing(text, degraded)
