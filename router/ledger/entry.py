"""One ledger row as the request path knows it: cheap to build, no formatting, no I/O."""

from __future__ import annotations

from typing import NamedTuple

from hybrid_weather.agent.llm.models import Usage


class LedgerEntry(NamedTuple):
    """One request; the writer thread derives the rest (id, timestamps, masking, baseline).

    A tuple, not a dataclass: Recorder.answered, on the path of every request, builds it positionally in
    C (tuple.__new__) rather than through a keyword constructor in Python."""

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


#: What a rule or clarify answer's row is kept by (rows.RowFormat keeps one stem a key): its LedgerEntry's
#: route, query, reason, aspect, places, days, provider, cache_hit, stale, cost_usd and outcome, in that order.
StemKey = tuple[str, str, str, str | None, tuple[str, ...], int, str | None, bool | None, bool | None, float | None,
                str]  # fmt: skip
#: A rule or clarify answer's entry as Recorder.answered makes it: (started_at, latency_ms, its StemKey). A
#: plain tuple: on the path of every answered request it costs far less than a LedgerEntry (whose 23 fields
#: go through tuple.__new__), and the writer finds the row's stem by the key alone. Recorder makes one only
#: of values of exact types (a str query; the rest typed by Answer and Decision), so no two keys that
#: compare equal stand for rows stored differently (1 and 1.0, True and 1).
ShortEntry = tuple[float, float, StemKey]
#: What a Ledger takes.
Entry = LedgerEntry | ShortEntry


def full_entry(entry: Entry) -> LedgerEntry:
    """ENTRY as a LedgerEntry."""
    if isinstance(entry, LedgerEntry):
        return entry
    started, latency, (route, query, reason, aspect, places, days, provider, cache_hit, stale, cost, outcome) = entry
    return LedgerEntry(started, route, query, reason, aspect, places, days, provider, cache_hit, stale,
                       cost_usd=cost, latency_ms=latency, outcome=outcome)  # fmt: skip
