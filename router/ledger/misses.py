"""What the router missed: LLM answers that were plain lookups, grouped by the words it did not know,
and rule answers that shadow runs judged as disagreeing with the LLM. What to teach the router next."""

from __future__ import annotations

import datetime as dt
from typing import Any

from hybrid_weather.rules import MAX_QUESTION_CHARS

from .rollup import dialect_of, iso, moment, query

# Example questions shown per word.
_EXAMPLES = 3
# Shadow disagreements listed at the most.
_DISAGREEMENTS = 20
# Characters of a question or word the terminal view prints (the JSON keeps MAX_QUESTION_CHARS of each):
# one row per line, whatever a row holds.
_SHOWN_CHARS = 60


def misses_report(db: Any, days: int, *, now: dt.datetime | None = None) -> dict[str, Any]:
    """The `misses --json` object, aggregated in SQL over a sqlite3 or psycopg connection to the ledger."""
    now = now or dt.datetime.now(dt.timezone.utc)
    since = moment(db, now - dt.timedelta(days=days))
    words_of = dialect_of(db).words.format(r="r")
    lookups, cost = query(
        db,
        "SELECT COUNT(*), COALESCE(SUM(cost_usd), 0) FROM requests"
        " WHERE route = 'llm' AND plain_lookup IS TRUE AND datetime_utc >= ?",
        (since,),
    )[0]
    words = []
    for word, count, word_cost in query(
        db,
        f"SELECT w.value, COUNT(*), COALESCE(SUM(r.cost_usd), 0) FROM requests AS r, {words_of}"
        " WHERE r.route = 'llm' AND r.plain_lookup IS TRUE AND r.datetime_utc >= ?"
        " GROUP BY w.value ORDER BY COUNT(*) DESC, SUM(r.cost_usd) DESC, w.value",
        (since,),
    ):
        examples = [
            _cut(row[0], MAX_QUESTION_CHARS)
            for row in query(
                db,
                f"SELECT r.query FROM requests AS r, {words_of}"
                " WHERE r.route = 'llm' AND r.plain_lookup IS TRUE AND r.datetime_utc >= ? AND w.value = ?"
                " AND r.query IS NOT NULL GROUP BY r.query ORDER BY max(r.id) DESC LIMIT ?",
                (since, word, _EXAMPLES),
            )
        ]
        words.append(
            {
                "word": _cut(word, MAX_QUESTION_CHARS),
                "count": count,
                "cost_usd": round(word_cost, 8),
                "examples": examples,
            }
        )
    disagreements = [
        {
            "datetime_utc": iso(when),
            "query": None if text is None else _cut(text, MAX_QUESTION_CHARS),
            "reason": None if reason is None else _cut(reason, MAX_QUESTION_CHARS),
        }
        for when, text, reason in query(
            db,
            "SELECT datetime_utc, query, reason FROM requests"
            " WHERE route = 'shadow' AND agreement IS FALSE AND datetime_utc >= ? ORDER BY id DESC LIMIT ?",
            (since, _DISAGREEMENTS),
        )
    ]
    return {
        "days": days,
        "plain_lookups": lookups,
        "cost_usd": round(cost, 8),
        "words": words,
        "shadow_disagreements": disagreements,
    }


def render_misses(report: dict[str, Any]) -> str:
    """The terminal view: what the LLM answered that the rules could have, by word, and shadow verdicts."""
    lines = [
        f"Last {report['days']} days: {_requests(report['plain_lookups'])} went to the LLM but were plain lookups "
        f"(${report['cost_usd']:.6f})."
    ]
    if report["words"]:
        shown = {w["word"]: _shown(w["word"]) for w in report["words"]}
        width = max(len(word) for word in shown.values()) * 2
        lines.append("")
        lines.append(f"{'word':<{width}}  requests        cost  examples")
        for item in report["words"]:
            word = shown[item["word"]]
            examples = " | ".join(_shown(example) for example in item["examples"])
            lines.append(f"{word:<{width - len(word)}}  {item['count']:>8}  ${item['cost_usd']:.6f}  {examples}")
    disagreements = report["shadow_disagreements"]
    lines.append("")
    if disagreements:
        lines.append(f"Rule answers the LLM disagreed with in shadow runs ({len(disagreements)}):")
        lines.extend(
            f"  {d['datetime_utc'][:19]}  {_shown(d['query']) if d['query'] else '(query not kept)'}"
            for d in disagreements
        )
    else:
        lines.append("No rule answer was judged wrong by a shadow run.")
    return "\n".join(lines)


def _cut(text: str, limit: int) -> str:
    """TEXT in at most LIMIT characters, … in place of the rest: a stored question can hold anything."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _shown(text: str) -> str:
    """TEXT as the terminal view prints it: on one line, cut to _SHOWN_CHARS, beside the other rows."""
    return _cut(" ".join(text.split()), _SHOWN_CHARS)


def _requests(count: int) -> str:
    return f"{count} request" if count == 1 else f"{count} requests"
