"""One ledger row as the request path knows it: cheap to build, no formatting, no I/O."""

from __future__ import annotations

import secrets
from typing import NamedTuple

from hybrid_weather.agent.llm.models import Usage


class LedgerEntry(NamedTuple):
    """One request, as cheap to make as a tuple; the writer thread derives the rest (id, time, masking,
    baseline: rows.RowFormat)."""

    started_at: float  #: time.time() when the request arrived
    route: str  #: rule, clarify, llm, or shadow
    query: str
    reason: str = ""
    aspect: str | None = None
    places: tuple[str, ...] = ()
    days: int = 0
    provider: str | None = None
    cache_hit: bool | None = None
    stale: bool | None = None
    model: str | None = None
    usage: Usage | None = None
    llm_attempts: int | None = None
    llm_loops: int | None = None
    tool_calls: int | None = None
    tool_failures: int | None = None
    cost_usd: float | None = 0.0
    latency_ms: float = 0.0
    outcome: str = "ok"
    session_id: str | None = None
    agreement: bool | None = None  #: shadow rows: did the LLM agree with the rule answer
    unknown_words: tuple[str, ...] = ()  #: llm rows: the words that sent the question there
    plain_lookup: bool | None = None  #: llm rows: answered with weather lookups only, one place, one day set
    lookup_date: str | None = None  #: plain lookups: the date the weather tools were called with (明天)
    overlay_version: int | None = None  #: the overlay version the question was read through (None: none)
    request_id: str | None = None  #: the row's id, as the answer carried it (None: the writer makes one)


def new_request_id(arrived: float) -> str:
    """A request's (and its ledger row's) id: 12 hex digits of the milliseconds since 1970 when it ARRIVED,
    then 10 of 40 random bits from the operating system, so ids sort by time and no two processes, forked
    or seeded alike, make the same one."""
    return f"{max(int(arrived * 1000), 0):012x}{secrets.randbits(40):010x}"
