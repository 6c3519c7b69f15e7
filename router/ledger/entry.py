"""One ledger row as the request path knows it: cheap to build, no formatting, no I/O."""

from __future__ import annotations

import os
import random
import weakref
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
    latency_ms: float = 0.0  #: the whole answer's time, from arrival to its last word
    model_ms: float | None = None  #: the model's own time within it: its calls, retries included (llm, shadow)
    outcome: str = "ok"
    session_id: str | None = None
    agreement: bool | None = None  #: shadow rows: did the LLM agree with the rule answer
    unknown_words: tuple[str, ...] = ()  #: llm rows: the words that sent the question there
    plain_lookup: bool | None = None  #: llm rows: answered with weather lookups only, one place, one day set
    lookup_date: str | None = None  #: plain lookups: the date the weather tools were called with (明天)
    overlay_version: int | None = None  #: the overlay version the question was read through (None: none)
    request_id: str | None = None  #: the row's id, as the answer carried it (None: the writer makes one)
    caller: str | None = None  #: whose request it was (serve: "key:" and the key's SHA-256 prefix), never a key
    reason_code: str | None = None  #: the rule that decided, as a stable code (Decision.reason_code)
    demo: bool = False  #: answered by a router on the demo provider: synthetic weather, left out of the reports


class RequestIds:
    """Makes request (and ledger row) ids: 12 hex digits of the milliseconds since 1970 when a request arrived,
    then 10 of 40 random bits, so ids sort by time and no two requests share one. The bits come from a
    generator of this object's own, seeded by the operating system and again in a forked child: not
    random's global one, which a program may seed (random.seed(42) would make ids repeat), nor a system
    call per request (secrets), three times the cost of the rest on the path of every answer."""

    def __init__(self) -> None:
        self._random = random.Random()
        mine = weakref.ref(self)
        os.register_at_fork(after_in_child=lambda: _reseed(mine))

    def new(self, arrived: float) -> str:
        milliseconds, bits = int(arrived * 1000), self._random.getrandbits(40)
        if 0 <= milliseconds < 1 << 48:  # every time this ledger writes: the hex of 11 bytes is the cheapest
            return (milliseconds << 40 | bits).to_bytes(11, "big").hex()
        return f"{max(milliseconds, 0):012x}{bits:010x}"


def _reseed(ids: weakref.ref[RequestIds]) -> None:
    made = ids()
    if made is not None:
        made._random = random.Random()
