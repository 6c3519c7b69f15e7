"""`misses` read from its hourly rollup (m007, issue 36 item 19) gives what the query over the raw rows
gave, on SQLite and on PostgreSQL: the same figures, words in the same order, the same examples and
verdicts — for rows stored after the migration (kept by the trigger) and before it (back-filled)."""

import contextlib
import datetime as dt
import sqlite3
import time

import pytest

from hybrid_weather.router.ledger import Ledger, LedgerEntry, misses_report
from hybrid_weather.router.ledger.reports.misses import marked_wrong
from hybrid_weather.router.ledger.store.rollup import dialect_of, iso, moment, query

from support import stored


def raw_misses(db, days, now):
    """The report as it was computed before the rollup: every row of the window, with its words."""
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
            row[0]
            for row in query(
                db,
                f"SELECT r.query FROM requests AS r, {words_of}"
                " WHERE r.route = 'llm' AND r.plain_lookup IS TRUE AND r.datetime_utc >= ? AND w.value = ?"
                " AND r.query IS NOT NULL GROUP BY r.query ORDER BY max(r.id) DESC LIMIT 3",
                (since, word),
            )
        ]
        words.append({"word": word, "count": count, "cost_usd": round(word_cost, 8), "examples": examples})
    disagreements = [
        {"datetime_utc": iso(when), "query": text, "reason": reason}
        for when, text, reason in query(
            db,
            "SELECT datetime_utc, query, reason FROM requests"
            " WHERE route = 'shadow' AND agreement IS FALSE AND datetime_utc >= ? ORDER BY id DESC LIMIT 20",
            (since,),
        )
    ]
    # Read from the rows themselves in both: not what the rollup is compared on.
    marked = marked_wrong(db, now - dt.timedelta(days=days))
    # No row of this traffic is a demo provider's (m014): none is left out.
    return {"days": days, "marked_wrong": marked, "plain_lookups": lookups, "cost_usd": round(cost, 8),
            "words": words, "shadow_disagreements": disagreements, "demo_rows": 0,
            "include_demo": False}  # fmt: skip


WORDS = ("遛狗", "出游", "钓鱼", "晒被子", "洗车", "email:***", "跑步")


def traffic(now):
    """Plain lookups over nine days, hours and minutes apart: several questions per word and hour, words
    repeated within a row, rows with no cost, no words, no query; LLM answers that were no plain lookup;
    shadow verdicts; rule answers. Costs are binary fractions, so every sum is exact in any order: two
    words whose costs differ only past the 15th digit (a sum of the same doubles in another order) were
    ordered by that noise before, and may be ordered the other way now."""
    entries = []
    for i in range(900):
        at = now - i * 887.3  # ~15 minutes apart: several rows an hour, the window's edge inside an hour
        words = tuple(WORDS[(i + k) % len(WORDS)] for k in range(i % 3))
        if i % 11 == 0:
            words = words + words[:1]  # a word twice in one row counts twice, as the raw query counted it
        kind = i % 6
        if kind < 4:
            entries.append(LedgerEntry(
                started_at=at, route="llm", query=f"{WORDS[i % 5]}问题{i % 13}", model="gpt-4o-mini",
                cost_usd=None if i % 9 == 0 else (1 + i % 4) / 2**14, unknown_words=words, plain_lookup=kind < 3,
            ))  # fmt: skip
        elif kind == 4:
            entries.append(LedgerEntry(started_at=at, route="shadow", query=f"上海{i}", cost_usd=0.0002,
                                       agreement=bool(i % 4)))  # fmt: skip
        else:
            entries.append(LedgerEntry(started_at=at, route="rule", query=f"北京{i}", places=("北京市",)))
    return entries


def fill(location, entries, **options):
    ledger = Ledger(location, model="gpt-4o-mini", **options)
    for entry in entries:
        ledger.record(entry)
    ledger.close()


def assert_same_as_raw(db, now):
    for days in (1, 3, 7, 30):
        for shift in (0, 1_000, 1_799.5):  # windows starting on, and inside, an hour
            at = now + dt.timedelta(seconds=shift)
            report = misses_report(db, days, now=at)
            assert report == raw_misses(db, days, at), (days, shift)
    assert report["plain_lookups"] > 400 and len(report["words"]) == len(WORDS)
    assert all(len(w["examples"]) == 3 for w in report["words"]) and report["shadow_disagreements"]


def sqlite_db(path):
    return sqlite3.connect(path)


def unmigrate(db, statements):
    """DB as it was before m007: its tables, trigger and index gone, and the migration not recorded."""
    for statement in statements:
        db.execute(statement)
    db.execute("DELETE FROM _hybrid_weather_migrations WHERE name = 'm007_misses_rollup'")


_UNDO_SQLITE = ("DROP TRIGGER requests_misses", "DROP TABLE lookups_hourly", "DROP TABLE misses_hourly",
                "DROP TABLE misses_examples", "DROP INDEX requests_disagreements")  # fmt: skip
_UNDO_POSTGRES = ("DROP TRIGGER requests_misses ON requests", "DROP FUNCTION requests_misses()",
                  "DROP TABLE lookups_hourly", "DROP TABLE misses_hourly", "DROP TABLE misses_examples",
                  "DROP INDEX requests_disagreements")  # fmt: skip


@pytest.mark.parametrize("queries", ["masked", "hash"])
def test_misses_from_the_rollup_is_the_raw_report_on_sqlite(tmp_path, queries):
    now = dt.datetime.now(dt.timezone.utc)
    path = tmp_path / "ledger.db"
    fill(path, traffic(now.timestamp()), store_queries=queries)
    with sqlite_db(path) as db:
        if queries == "hash":  # neither questions nor their words are kept: the same counts
            report = misses_report(db, 30, now=now)
            assert report == raw_misses(db, 30, now) and report["plain_lookups"] > 400 and report["words"] == []
            return
        assert_same_as_raw(db, now)


def test_the_migration_rolls_up_a_sqlite_ledger_that_was_there_before_it(tmp_path):
    now = dt.datetime.now(dt.timezone.utc)
    path = tmp_path / "ledger.db"
    entries = traffic(now.timestamp())
    fill(path, entries[:500])
    with sqlite3.connect(path, isolation_level=None) as db:
        unmigrate(db, _UNDO_SQLITE)
        fill(path, [])  # the next process to open it migrates it: the rows before, back-filled
        fill(path, entries[500:])  # and the rows after, by the trigger
        assert_same_as_raw(db, now)


def test_misses_from_the_rollup_is_the_raw_report_on_postgres(pg_url):
    import psycopg

    now = dt.datetime.now(dt.timezone.utc)
    entries = traffic(now.timestamp())
    fill(pg_url, entries[:500])
    with psycopg.connect(pg_url, autocommit=True) as db:
        unmigrate(db, _UNDO_POSTGRES)
    fill(pg_url, entries[500:])  # migrated by this one: back-filled, then kept by the trigger
    with psycopg.connect(pg_url, autocommit=True) as db:
        db.execute("SET TIME ZONE 'UTC'")
        assert_same_as_raw(db, now)
    assert stored(pg_url, "SELECT count(*) FROM _hybrid_weather_migrations WHERE name = 'm007_misses_rollup'") == [(1,)]


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_pruned_rows_leave_their_counts_but_not_their_questions(tmp_path, request, backend):
    location = str(tmp_path / "ledger.db") if backend == "sqlite" else request.getfixturevalue("pg_url")
    now = time.time()
    fill(location, [LedgerEntry(started_at=now - days * 86400, route="llm", query=f"遛狗吗{days}", cost_usd=0.001,
                                unknown_words=("遛狗",), plain_lookup=True) for days in (1, 20)])  # fmt: skip
    pruning = Ledger(location, keep_days=10)
    pruning.flush()
    pruning.close()
    connect = sqlite3.connect if backend == "sqlite" else _postgres
    with contextlib.closing(connect(location)) as db:
        assert query(db, "SELECT count(*) FROM requests") == [(1,)]
        report = misses_report(db, 30)
    # Counted still, as `savings` counts pruned rows; the question itself is gone with its row.
    assert report["plain_lookups"] == 2 and report["words"][0]["count"] == 2
    assert report["words"][0]["examples"] == ["遛狗吗1"]


def _postgres(url):
    import psycopg

    db = psycopg.connect(url, autocommit=True)
    db.execute("SET TIME ZONE 'UTC'")
    return db
