"""What teach and learn read from the ledger, and how they read a question through a candidate overlay."""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hybrid_weather.rules import CHINA_TZ, find_dates, normalize

from ..ledger.store.rollup import iso, moment, query
from ..understand.overlay import Overlay, read_through

if TYPE_CHECKING:
    from ..facade import HybridRouter
    from ..understand import Decision


@dataclass(frozen=True, slots=True)
class LlmQuestion:
    """A question the LLM answered, as the ledger keeps it (masked), with how many times it was asked."""

    query: str
    today: dt.date  #: the day in China it was asked: what its date words meant
    places: tuple[str, ...]  #: what the model looked up (canonical names)
    lookup_date: str | None  #: a plain lookup's date argument; None: not a plain lookup
    unknown_words: tuple[str, ...]  #: the words that sent it to the LLM
    requests: int
    cost_usd: float

    @property
    def plain(self) -> bool:
        return self.lookup_date is not None and len(self.places) == 1


def llm_questions(router: HybridRouter, days: int) -> list[LlmQuestion]:
    """The distinct questions the LLM answered in the last DAYS days, from the router's ledger."""
    ledger = router.ledger
    if ledger is None:
        return []
    since = dt.datetime.now(dt.timezone.utc) - dt.timedelta(days=days)
    return ledger.report(lambda db: _read(db, since))


def _read(db: Any, since: dt.datetime) -> list[LlmQuestion]:
    rows = query(
        db,
        "SELECT query, datetime_utc, places, lookup_date, unknown_words, coalesce(cost_usd, 0) FROM requests "
        "WHERE route = 'llm' AND outcome = 'ok' AND query IS NOT NULL AND datetime_utc >= ?",
        (moment(db, since),),
    )
    merged: dict[tuple[Any, ...], list[Any]] = {}
    days: dict[str, dt.date] = {}  # the day in China of each hour a row was asked in: its date words' day
    for question, asked, places, lookup_date, words, cost in rows:
        hour = iso(asked)[:13]
        today = days.get(hour)
        if today is None:
            today = days[hour] = dt.datetime.fromisoformat(f"{hour}:00:00+00:00").astimezone(CHINA_TZ).date()
        key = (question, today, _names(places), lookup_date, _names(words))
        kept = merged.setdefault(key, [0, 0.0])
        kept[0] += 1
        kept[1] += float(cost)
    return [
        LlmQuestion(question, today, places, lookup_date, words, requests, cost)
        for (question, today, places, lookup_date, words), (requests, cost) in merged.items()
    ]


def _names(value: Any) -> tuple[str, ...]:
    """A JSON list column (text in SQLite, jsonb in PostgreSQL) as a tuple of strings."""
    if value is None:
        return ()
    try:
        items = json.loads(value) if isinstance(value, str) else value
    except ValueError:
        return ()
    return tuple(str(item) for item in items) if isinstance(items, list) else ()


def looked_up_dates(lookup_date: str, today: dt.date) -> list[dt.date]:
    """The days a weather tool's date argument means on TODAY: an ISO date, or date words (明天, 周六)."""
    try:
        return [dt.date.fromisoformat(lookup_date)]
    except ValueError:
        pass
    days = sorted({day for span in find_dates(normalize(lookup_date), today) for day in span.dates})
    return days or ([today] if lookup_date in ("", "今天") else [])


def decide(router: HybridRouter, overlay: Overlay | None, query: str, today: dt.date) -> Decision:
    """QUERY read through OVERLAY as a new question (no conversation) on TODAY."""
    parser = router.parts.parser
    return read_through(overlay, query, lambda text: parser.parse(text, today, None, None, None))


def reads_as_looked_up(decision: Decision, question: LlmQuestion) -> bool:
    """Whether DECISION is a rule answer about the place and days the model looked up for QUESTION."""
    if decision.route != "rule" or question.lookup_date is None:
        return False
    return list(decision.cities) == list(question.places) and list(decision.dates) == looked_up_dates(
        question.lookup_date, question.today
    )
