"""The ledger's shortcuts for rule rows store exactly what the full path stores.

A rule answer's row is formatted from its question's kept stem (rows.RowFormat) and bound to SQLite as its
time, latency, id tail and the number of a stem kept in the writer connection's temp table, from which
SQLite makes the row (sqlite_db). Each is compared here with the path it shortens: rows made in full in
Python, and rows inserted column by column.
"""

from __future__ import annotations

import math
import sqlite3
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hybrid_weather.agent.llm.models import ModelTable
from hybrid_weather.router.ledger import LedgerEntry, rows
from hybrid_weather.router.ledger.entry import full_entry
from hybrid_weather.router.ledger.rows import ANSWER_WIDTH, COLUMNS, Batch, RowFormat
from hybrid_weather.router.ledger.sqlite_db import SQLiteDatabase

from conftest import rows_of_every_width

STARTED = 1_764_600_000.123456


def row_format(store_queries: str = "masked") -> RowFormat:
    return RowFormat(models=ModelTable(), model="gpt-4o-mini", store_queries=store_queries, secret=b"k" * 32)


def rule(query: str = "上海今天天气", **fields: object) -> LedgerEntry:
    values = {"started_at": STARTED, "route": "rule", "query": query, "reason": "rule: 上海 今天 weather",
              "aspect": "weather", "places": ("上海市",), "days": 1, "provider": "open-meteo", "cache_hit": True,
              "stale": False, "latency_ms": 0.0421, **fields}  # fmt: skip
    return LedgerEntry(**values)  # type: ignore[arg-type]


# Entries whose rows the kept stems must make as the full path does: the fields a stem is kept by, each
# changed alone, and the values that must not share a stem with one that compares equal.
ENTRIES = [
    rule(),
    rule("魔都明天会下雨吗", aspect="rain", days=2),
    rule(cache_hit=False),
    rule(stale=True),
    rule(cache_hit=None, stale=True),
    rule(route="clarify", provider=None, reason="no place", places=()),
    rule(places=("北京市", "上海市"), reason="rule: compare"),
    rule(outcome="empty", reason="empty"),
    rule(cost_usd=0.25),
    rule(latency_ms=-1.0),
    rule(latency_ms=float("nan")),
    rule(latency_ms=float("inf")),
    rule(started_at=float("nan")),  # made in full: its id and time are not a stem's
    rule(started_at=1_764_600_000),  # an int time: made in full
    rule(days=True),  # compares equal to 1, stored otherwise: made in full
    rule(cost_usd=float("nan")),  # invalid: the row is not short
    rule("电话13812345678明天天气"),  # masked before it is stored, and hashed
    rule("a\x00b"),  # repaired: the row is not short
    rule(places=["上海市"]),  # a list cannot be a key: made in full
    rule(session_id="s-1"),
    rule(unknown_words=("遛狗",)),
]


def as_stored(row: tuple[object, ...]) -> list[str]:
    """ROW but its id (random), each value with its type: True and 1, 1 and 1.0 are stored differently, and a
    NaN is equal to itself here."""
    return [f"{type(value).__name__} {value!r}" for value in row[1:]]


@pytest.mark.parametrize("store_queries", ["masked", "hash"])
def test_a_kept_stem_makes_the_row_the_full_path_makes(store_queries):
    made = row_format(store_queries)
    for asking in range(3):  # the first asking keeps the stem, the next ones use it
        rows = made.rows(ENTRIES)
        full = [made._full_row(entry, 0) for entry in ENTRIES]
        for entry, row, expected in zip(ENTRIES, rows, full, strict=True):
            assert as_stored(row) == as_stored(expected), (asking, entry)
            assert len(row[0]) == 22 and row[0][:12] == expected[0][:12], entry  # time-sorted, random tail
    # Each row has an id of its own, the kept ones too.
    assert len({row[0] for row in made.rows(ENTRIES * 10)}) == len(ENTRIES) * 10


def test_a_batch_of_known_questions_makes_the_rows_each_entry_alone_makes():
    # A batch of ShortEntries whose stems are all numbered is made in a few passes in C (rows._all_short), any
    # other batch entry by entry: both make every row as the full path does, and as each other.
    made = row_format()
    short = [e for e in map(rows._short_entry, ENTRIES) if type(e) is tuple]
    made.rows(short)  # numbers their stems
    numbers = made._stem_numbers
    known = [e for e in short if numbers[e[2]] is not None and math.isfinite(e[0] + e[1]) and e[1] >= 0]
    assert len(known) >= 10
    assert rows._all_short(known, numbers, 5) == [
        value for i, e in enumerate(known) for value in (e[0], e[1], 5 + i, numbers[e[2]])
    ]
    not_short = next(e for e in short if numbers[e[2]] is None)  # its row is made in full every time
    new = rows._short_entry(rule("杭州明天天气"))  # a question not seen before: its stem is made first
    odd = [(STARTED, float("nan"), known[0][2]), (-1.0, 0.0421, known[0][2]), (STARTED, -1.0, known[0][2]),
           (1e12, 0.0421, known[0][2]), not_short, new, rule()]  # fmt: skip
    for entry in odd:  # each sends its batch entry by entry
        assert rows._all_short([*known, entry], numbers, 0) is None, entry
    for batch in (known, known[::-1], *([*known, entry] for entry in odd), [*odd, *known]):
        expected = [made._full_row(full_entry(e), 0) for e in batch]
        got = made.rows(batch)
        for row, want in zip(got, expected, strict=True):
            assert as_stored(row) == as_stored(want)
        tails = [int(row[0][12:], 16) for row in got]
        assert tails == list(range(tails[0], tails[0] + len(batch)))


def test_a_new_secret_is_not_answered_from_stems_hashed_under_the_old_one():
    made = row_format()
    before = made.row(rule())
    made.secret = b"j" * 32
    after = made.row(rule())
    hmac_at = COLUMNS.index("query_hmac")
    assert before[hmac_at] != after[hmac_at] == made._full_row(rule(), 0)[hmac_at]


def stored(db: sqlite3.Connection) -> list[tuple[object, ...]]:
    """Every stored value with its SQLite type, by id."""
    columns = ", ".join(f"{c}, typeof({c})" for c in COLUMNS)
    return db.execute(f"SELECT {columns} FROM requests ORDER BY id").fetchall()


def opened(path) -> tuple[SQLiteDatabase, sqlite3.Connection]:
    database = SQLiteDatabase(str(path))
    database.open()
    return database, database.writer()


def test_rows_bound_through_stems_store_what_rows_bound_column_by_column(tmp_path):
    entries, _ = rows_of_every_width(time.time())
    made = row_format()
    batches = [made.batch(entries + ENTRIES) for _ in range(3)] + [made.batch(ENTRIES[:1])]
    assert batches[0].short and any(len(row) > ANSWER_WIDTH for row in batches[0].full)
    stemmed, stemmed_db = opened(tmp_path / "stemmed.db")
    plain, plain_db = opened(tmp_path / "plain.db")
    for batch in batches:
        assert stemmed.write(stemmed_db, batch) == len(batch)
        # A replay's path: each row made in full in Python, as it is.
        assert plain.write(plain_db, Batch.of(batch.rows()), once=True) == len(batch)
    assert stored(stemmed_db) == stored(plain_db)
    assert len(stored(plain_db)) == sum(map(len, batches))
    stemmed.close()
    plain.close()


def test_more_stems_than_a_connection_keeps_and_a_new_connection_store_every_row(tmp_path, monkeypatch):
    from hybrid_weather.router.ledger import rows

    monkeypatch.setattr(rows, "_MEMO_SIZE", 8)
    made = row_format()
    database, db = opened(tmp_path / "l.db")
    questions = [rule(f"问题{i}") for i in range(30)]
    assert database.write(db, made.batch(questions[:5])) == 5
    assert database.write(db, made.batch(questions[5:])) == 25  # more than it keeps, in one write: all of them
    assert database.write(db, made.batch(questions[:5])) == 5  # stems it let go of, made again
    db.close()
    again = database.writer()  # a writer that reconnects has an empty temp table
    assert database.write(again, made.batch(questions)) == 30
    queries = [row[0] for row in again.execute("SELECT query FROM requests")]
    assert sorted(queries) == sorted([q.query for q in questions[:5]] * 3 + [q.query for q in questions[5:]] * 2)
    database.close()


def test_a_refused_batch_leaves_no_stem_the_next_batch_could_miss(tmp_path):
    made = row_format()
    database, db = opened(tmp_path / "l.db")
    first = made.batch([rule("北京今天天气")])
    assert database.write(db, first) == 1
    # A mixed batch is one transaction: its second statement fails on the first row's id, stored already,
    # and the rollback takes the first statement's rows with it. The stems it added must still be there.
    two = made.batch([rule("广州今天天气"), rule("深圳今天天气")])
    doubled = Batch(two.short, [first.rows()[0] + (None,) * 13], [2], two.stems)
    with pytest.raises(sqlite3.IntegrityError):
        database.write(db, doubled)
    assert database.write(db, made.batch([rule("广州今天天气"), rule("深圳今天天气")])) == 2
    queries = sorted(row[0] for row in db.execute("SELECT query FROM requests"))
    assert queries == sorted(["北京今天天气", "广州今天天气", "深圳今天天气"])
    database.close()


def test_a_stem_missing_from_the_table_fails_the_write_instead_of_dropping_its_rows(tmp_path):
    made = row_format()
    database, db = opened(tmp_path / "l.db")
    assert database.write(db, made.batch([rule("杭州今天天气")])) == 1
    db.execute("DELETE FROM temp.ledger_stems")  # behind the writer's back: what a lost stem would be
    with pytest.raises(sqlite3.DatabaseError, match="found no stem"):
        database.write(db, made.batch([rule("杭州今天天气")]))
    assert database.write(db, made.batch([rule("杭州今天天气")])) == 1  # the next write fills the table again
    assert db.execute("SELECT count(*) FROM requests").fetchone()[0] == 2
    database.close()


# Times SQLite must write as datetime does: any float, and the fractions whose microseconds are a tie
# (x.5: half to even), carry into the next second (.9999995 and up) or sit on either side of a tie.
TIMES = st.floats(min_value=0, max_value=4.2e9) | st.builds(
    lambda second, tail: second + tail,
    st.integers(0, 4_200_000_000),
    st.sampled_from([0.0, 0.5, 0.4999995, 0.5000005, 0.9999995, 0.9999999, 0.0000005, 0.0078125, 0.9999999999]),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(TIMES, st.floats(min_value=0, max_value=1e7)), min_size=1, max_size=40))
def test_sqlite_makes_a_short_rows_id_time_and_latency_as_python_does(tmp_path_factory, times):
    # The id (milliseconds truncated, then the tail), the time (microseconds rounded half to even, with
    # their carry) and the latency: what SQLite makes of the four numbers against what Batch.rows makes.
    made = row_format()
    batch = made.batch([rule(started_at=started, latency_ms=latency) for started, latency in times])
    assert len(batch.short) == 4 * len(times)
    folder = tmp_path_factory.mktemp("times")
    stemmed, stemmed_db = opened(folder / "stemmed.db")
    plain, plain_db = opened(folder / "plain.db")
    assert stemmed.write(stemmed_db, batch) == len(times)
    assert plain.write(plain_db, Batch.of(batch.rows()), once=True) == len(times)
    assert stored(stemmed_db) == stored(plain_db)
    stemmed.close()
    plain.close()


def test_ids_of_one_batch_count_up_from_a_random_start():
    made = row_format()
    ids = [row[0] for row in made.rows([rule(started_at=STARTED)] * 600)]
    tails = [int(row_id[12:], 16) for row_id in ids]
    assert tails == list(range(tails[0], tails[0] + 600))
    assert {row_id[:12] for row_id in ids} == {f"{int(STARTED * 1000):012x}"}
    assert int(made.rows([rule()])[0][0][12:], 16) != tails[0]  # another batch, another start
