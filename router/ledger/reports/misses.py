"""What the router missed: LLM answers that were plain lookups, grouped by the words it did not know,
and rule answers that shadow runs judged as disagreeing with the LLM. What to teach the router next."""

from __future__ import annotations

import datetime as dt
from typing import Any

from hybrid_weather.rules import MAX_QUESTION_CHARS

from ..store.rollup import (
    EXAMPLES,
    FEEDBACK_FIRST,
    MISSED,
    caller_params,
    demo_rows,
    dialect_of,
    iso,
    moment,
    not_demo,
    of_caller,
    query,
    rows_of,
    split_window,
)
from .savings import demo_line

# Shadow disagreements listed at the most.
_DISAGREEMENTS = 20
# Characters of a question or word the terminal view prints (the JSON keeps MAX_QUESTION_CHARS of each):
# one row per line, whatever a row holds.
_SHOWN_CHARS = 60


def misses_report(
    db: Any, days: int, *, now: dt.datetime | None = None, caller: str | None = None, include_demo: bool = False
) -> dict[str, Any]:
    """The `misses --json` object, aggregated in SQL over a sqlite3 or psycopg connection to the ledger:
    whole hours from the misses rollup (m007), the window's partial first hour from the rows themselves
    with the same expressions, so the figures are those of the rows. CALLER: only that caller's requests
    (all read from the rows: the rollup keeps no caller); shadow runs are nobody's, so none are listed. A
    demo provider's rows only with INCLUDE_DEMO (read from the rows: the rollup counts none)."""
    now = now or dt.datetime.now(dt.timezone.utc)
    since = now - dt.timedelta(days=days)
    dialect = dialect_of(db)
    hour, edge = split_window(db, since, caller, include_demo)
    window = (hour, *edge)
    missed, words_of = MISSED.format(r="r"), dialect.words.format(r="r")
    source, rows = rows_of(dialect, caller, include_demo)
    raw = f"FROM {source}, {words_of} WHERE {missed} AND {rows}"
    # SUM() of no cost is NULL (COALESCE'd to 0 by the report, ordered apart): `priced` keeps that so.
    cost = "coalesce(CASE WHEN sum(p) > 0 THEN sum(c) END, 0)"
    lookups, spent = query(
        db,
        f"SELECT coalesce(sum(n), 0), {cost} FROM ("
        "SELECT requests AS n, priced AS p, cost_usd AS c FROM lookups_hourly WHERE hour >= ?"
        " UNION ALL SELECT count(*), count(r.cost_usd), coalesce(sum(r.cost_usd), 0.0)"
        f" FROM {source} WHERE {missed} AND {rows}) AS t",
        window,
    )[0]
    examples: dict[Any, list[str]] = {}
    for word, text in query(
        db,
        "SELECT word, query FROM (SELECT word, query,"
        " row_number() OVER (PARTITION BY word ORDER BY max(last_id) DESC) AS n FROM ("
        "SELECT word, query, last_id FROM misses_examples WHERE hour >= ?"
        f" UNION ALL SELECT w.value, r.query, max(r.id) {raw} AND r.query IS NOT NULL GROUP BY w.value, r.query"
        f") AS t GROUP BY word, query) AS ranked WHERE n <= {EXAMPLES} ORDER BY word, n",
        window,
    ):
        examples.setdefault(word, []).append(_cut(text, MAX_QUESTION_CHARS))
    words = [
        {
            "word": _cut(word, MAX_QUESTION_CHARS),
            "count": int(count),
            "cost_usd": round(word_cost, 8),
            "examples": examples.get(word, []),
        }
        for word, count, word_cost in query(
            db,
            f"SELECT word, sum(n), {cost} FROM ("
            "SELECT word, requests AS n, priced AS p, cost_usd AS c FROM misses_hourly WHERE hour >= ?"
            f" UNION ALL SELECT w.value, count(*), count(r.cost_usd), coalesce(sum(r.cost_usd), 0.0) {raw}"
            " GROUP BY w.value) AS t GROUP BY word ORDER BY sum(n) DESC, CASE WHEN sum(p) > 0 THEN sum(c) END DESC,"
            " word",
            window,
        )
    ]
    disagreements = [
        {
            "datetime_utc": iso(when),
            "query": None if text is None else _cut(text, MAX_QUESTION_CHARS),
            "reason": None if reason is None else _cut(reason, MAX_QUESTION_CHARS),
        }
        for when, text, reason in query(
            db,
            "SELECT r.datetime_utc, r.query, r.reason FROM requests AS r WHERE r.route = 'shadow'"
            f" AND r.agreement IS FALSE AND r.datetime_utc >= ?{not_demo(db, include_demo)} ORDER BY r.id DESC LIMIT ?",
            (moment(db, since), _DISAGREEMENTS),
        )
        if caller is None
    ]
    return {
        "days": days,
        "marked_wrong": marked_wrong(db, since, caller=caller, include_demo=include_demo),
        "plain_lookups": int(lookups),
        "cost_usd": round(spent, 8),
        "words": words,
        "shadow_disagreements": disagreements,
        "demo_rows": demo_rows(db, since, caller),  # as savings says it: counted only with include_demo
        "include_demo": include_demo,
    }


def marked_wrong(
    db: Any,
    since: dt.datetime,
    limit: int = _DISAGREEMENTS,
    *,
    caller: str | None = None,
    include_demo: bool = False,
) -> list[dict[str, Any]]:
    """The rule and clarify answers users marked wrong (feedback) in the window, the last marked first: the
    first thing to look at, as each is a wrong answer somebody saw. CALLER: only answers to that caller; a
    demo provider's only with INCLUDE_DEMO."""
    return [
        {
            "request_id": request_id,
            "datetime_utc": iso(when),
            "route": route,
            "query": None if text is None else _cut(text, MAX_QUESTION_CHARS),
            "reason": None if reason is None else _cut(reason, MAX_QUESTION_CHARS),
            "comment": comment,
        }
        for request_id, when, route, text, reason, comment in query(
            db,
            f"SELECT r.id, r.datetime_utc, r.route, r.query, r.reason, f.comment {FEEDBACK_FIRST}"
            " AND f.verdict = 'wrong' AND r.route IN ('rule', 'clarify') AND r.datetime_utc >= ?"
            f"{not_demo(db, include_demo)}{of_caller(caller)} ORDER BY f.datetime_utc DESC LIMIT ?",
            (moment(db, since), *caller_params(caller), limit),
        )
    ]


def render_misses(report: dict[str, Any]) -> str:
    """The terminal view: what the LLM answered that the rules could have, by word, and shadow verdicts."""
    lines: list[str] = []
    if report["marked_wrong"]:
        lines.append(f"Rule answers users marked wrong ({len(report['marked_wrong'])}), the last first:")
        for item in report["marked_wrong"]:
            said = f" — {_shown(item['comment'])}" if item["comment"] else ""
            question = _shown(item["query"]) if item["query"] else "(query not kept)"
            lines.append(f"  {item['datetime_utc'][:19]}  {item['request_id']}  {question}{said}")
        lines.append("")
    lines.append(
        f"Last {report['days']} days: {_requests(report['plain_lookups'])} went to the LLM but were plain lookups "
        f"(${report['cost_usd']:.6f})."
    )
    if line := demo_line(report):
        lines.append(line)
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
