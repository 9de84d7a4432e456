"""Sources and composition for examples/briefing/briefing.mce.

The sources are async and sleep briefly to stand in for network calls; a
request names the sources that should be "down", so the failure paths are
deterministic and testable offline.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field, replace
from typing import Annotated

from agentmonad import Append, Ok, Outcome, Sum


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


class SourceDown(Exception):
    """A source could not be reached."""

    def __init__(self, source: str) -> None:
        super().__init__(f"{source} is unavailable")
        self.source = source


def _fetched(state: BriefingState, source: str) -> BriefingState:
    return replace(state, log=(*state.log, f"fetched {source}"), fetches=state.fetches + 1)


async def fetch_news(state: BriefingState, request: Request) -> Outcome[BriefingState, SourceDown, News]:
    """Headlines for the request's city."""
    await asyncio.sleep(0.01)
    if "news" in request.down:
        raise SourceDown("news")
    return Ok(News((f"{request.city} opens a new library", "Local team wins")), _fetched(state, "news"))


async def fetch_weather(
    state: BriefingState, request: Request
) -> Outcome[BriefingState, SourceDown, Weather]:
    """Today's weather for the city."""
    await asyncio.sleep(0.02)
    if "weather" in request.down:
        raise SourceDown("weather")
    return Ok(Weather(f"Sunny in {request.city}, 21°C"), _fetched(state, "weather"))


async def fetch_stocks(state: BriefingState, request: Request) -> Outcome[BriefingState, SourceDown, Stocks]:
    """Quotes for the request's tickers."""
    await asyncio.sleep(0.005)
    if "stocks" in request.down:
        raise SourceDown("stocks")
    quotes = tuple(f"{ticker} {100 + len(ticker)}.00" for ticker in request.tickers)
    return Ok(Stocks(quotes), _fetched(state, "stocks"))


def no_news(error: SourceDown) -> News:
    """Placeholder news when the source is down."""
    return News(("(news unavailable)",))


def no_weather(error: SourceDown) -> Weather:
    """Placeholder weather when the source is down."""
    return Weather("(weather unavailable)")


def no_stocks(error: SourceDown) -> Stocks:
    """Placeholder quotes when the source is down."""
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
