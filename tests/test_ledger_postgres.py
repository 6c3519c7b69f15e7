"""The ledger in PostgreSQL (issue 13, part 2), against the real server this machine runs
(HYBRID_WEATHER_TEST_POSTGRES_URL, default postgresql://postgres@127.0.0.1:5432/test), each test in a
schema of its own, dropped after. No mocks: the writers are real processes, the faults real ones
(connections terminated by the server, a process killed, a server that is not there yet)."""

import contextlib
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time

import pytest

from hybrid_weather.agent.llm.models import ModelTable, Usage
from hybrid_weather.router.ledger import MIGRATIONS, Ledger, LedgerEntry

from fake_weather import free_port
from support import entries_of_every_kind, stored, subprocess_env

_ASKER = """
import sys, time
from hybrid_weather.router import HybridRouter
url, asks, pause_every = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
places = ["上海", "北京", "广州", "深圳", "成都"]
with HybridRouter(provider="demo", ledger=url) as router:
    router.parts.recorder.demo = False  # rows as a real provider's are written: the rollup counts each once
    for i in range(asks):
        router.ask(f"{places[i % 5]}{'今天' if i % 2 else '明天'}天气")
        if pause_every and i % pause_every == pause_every - 1:
            time.sleep(0.05)  # spread the run out, so faults land in the middle of it
    problem = router.ledger_problem
print(problem or "", flush=True)
"""


def askers(url, count=4, asks=5_000, pause_every=0):
    return [
        subprocess.Popen(
            [sys.executable, "-c", _ASKER, url, str(asks), str(pause_every)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=subprocess_env(),
        )
        for _ in range(count)
    ]


def finish(processes):
    problems = []
    for process in processes:
        out, err = process.communicate(timeout=180)
        assert process.returncode == 0, err
        problems.append(out.strip())
    return problems


def test_the_schema_is_created_on_first_use_with_the_same_migrations_in_postgres_types(pg_url):
    ledger = Ledger(pg_url)
    ledger.close()
    names = [row[0] for row in stored(pg_url, "SELECT name FROM _hybrid_weather_migrations ORDER BY name")]
    assert names == [m.__name__ for m in MIGRATIONS]
    types = dict(
        stored(
            pg_url,
            "SELECT column_name, data_type FROM information_schema.columns WHERE table_name = 'requests'"
            " AND table_schema = current_schema()",
        )
    )
    assert types["datetime_utc"] == "timestamp with time zone" and types["cost_usd"] == "double precision"
    assert types["places"] == "jsonb" and types["cache_hit"] == "boolean" and types["agreement"] == "boolean"
    again = Ledger(pg_url)  # a second process (or host) opening it finds it made: nothing applied twice
    again.close()
    assert stored(pg_url, "SELECT count(*) FROM _hybrid_weather_migrations")[0][0] == len(MIGRATIONS)


def test_entries_of_every_kind_in_one_batch_store_every_column(pg_url):
    # Rule rows omit the columns only LLM, failed or session requests fill; COPY takes them whole.
    entries, expected = entries_of_every_kind(time.time())
    ledger = Ledger(pg_url)
    for entry in entries:
        ledger.record(entry)
    ledger.close()
    import psycopg
    from psycopg.rows import dict_row

    with psycopg.connect(pg_url, row_factory=dict_row) as db:
        stored_rows = {row["query"]: row for row in db.execute("SELECT * FROM requests").fetchall()}

    def as_sqlite(value):  # booleans and jsonb as the SQLite ledger keeps them
        if isinstance(value, bool):
            return int(value)
        return json.dumps(value, ensure_ascii=False) if isinstance(value, list) else value

    assert sorted(stored_rows) == sorted(expected)
    for query, columns in expected.items():
        assert {name: as_sqlite(stored_rows[query][name]) for name in columns} == columns, query


def test_four_processes_of_5000_asks_store_exactly_20000_rows(pg_url):
    problems = finish(askers(pg_url))
    assert problems == ["", "", "", ""]
    assert stored(pg_url) == [(20_000, 20_000)]
    assert stored(pg_url, "SELECT sum(requests) FROM requests_hourly") == [(20_000,)]


def test_connections_killed_mid_run_lose_nothing_and_count_nothing_twice(pg_url, admin):
    import psycopg.conninfo

    processes = askers(pg_url, pause_every=250)
    name = psycopg.conninfo.conninfo_to_dict(pg_url)["application_name"]  # this test's, not another's
    killed = 0
    while any(p.poll() is None for p in processes):
        time.sleep(0.15)
        killed += sum(
            1
            for (done,) in admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s"
                " AND datname = current_database() AND pid <> pg_backend_pid()",
                (name,),
            )
            if done
        )
    problems = finish(processes)
    assert killed >= 3, "the fault was not exercised"
    assert any(problems), "no writer noticed a killed connection"
    # What the writers spooled while their connections died is replayed by the next process to open the
    # ledger (here `ledger status`; any ask would do), by id: nothing lost, nothing twice.
    status = json.loads(_cli("ledger", "status", "--json", HYBRID_WEATHER_LEDGER=pg_url))
    assert status["spooled"] == 0 and status["rows"] == 20_000
    assert stored(pg_url) == [(20_000, 20_000)]
    assert stored(pg_url, "SELECT sum(requests) FROM requests_hourly") == [(20_000,)]


_COMMITTER = """
import sys, time
from hybrid_weather.router.ledger import Ledger, LedgerEntry
ledger = Ledger(sys.argv[1])
sent = 0
while True:
    for _ in range(500):
        ledger.record(LedgerEntry(started_at=time.time(), route="rule", query="上海今天天气"))
    sent += 500
    ledger.flush()  # acknowledged: committed (or spooled)
    print(sent, flush=True)
"""


def test_a_process_killed_after_a_commit_loses_nothing_that_was_committed(pg_url):
    writer = subprocess.Popen([sys.executable, "-c", _COMMITTER, pg_url], stdout=subprocess.PIPE, text=True,
                              env=subprocess_env())  # fmt: skip
    acknowledged = 0
    while acknowledged < 3_000:
        acknowledged = int(writer.stdout.readline())
    os.kill(writer.pid, signal.SIGKILL)
    writer.wait()
    count, distinct = stored(pg_url)[0]
    assert count == distinct >= acknowledged


class _Proxy:
    """A TCP relay on 127.0.0.1:PORT to PostgreSQL: the server 'coming back' on an address a ledger was
    already told to use."""

    def __init__(self, port, target=("127.0.0.1", 5432)):
        self.listener = socket.create_server(("127.0.0.1", port))
        self.target = target
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(self.target)
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(source, sink):
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for end in (source, sink):
                with contextlib.suppress(OSError):
                    end.shutdown(socket.SHUT_RDWR)

    def close(self):
        self.listener.close()


def test_a_server_away_at_start_gets_the_spooled_rows_once_it_is_back(pg_url, tmp_path):
    from urllib.parse import urlsplit

    port = free_port()
    url = pg_url.replace(f"{urlsplit(pg_url).hostname}:{urlsplit(pg_url).port}", f"127.0.0.1:{port}")
    ledger = Ledger(url, spool=tmp_path / "spool.jsonl")
    assert "could not be reached" in ledger.problem
    for i in range(10):
        ledger.record(LedgerEntry(started_at=time.time(), route="rule", query=f"q{i}"))
    ledger.flush()
    assert ledger.spool.count() == 10
    assert stored(pg_url, "SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()") == [(0,)]
    proxy = _Proxy(port)
    try:
        time.sleep(1.1)  # the writer's pause after a failure
        ledger.record(LedgerEntry(started_at=time.time(), route="rule", query="back"))
        ledger.flush()
        ledger.close()
    finally:
        proxy.close()
    assert stored(pg_url) == [(11, 11)] and ledger.spool.count() == 0


def _traffic(now):
    """A day of varied requests: rule, clarify, LLM (priced and not), shadow runs, failures, empty ones."""
    models, entries = ModelTable(), []
    for i in range(400):
        at = now - 3 * 86400 + i * 613.7  # across hours and days, inside a 30-day window
        kind = i % 8
        if kind < 4:
            entries.append(LedgerEntry(started_at=at, route="rule", query=f"上海{i}", places=("上海市",) * (1 + i % 3),
                                       latency_ms=0.05 + i % 7, aspect="weather", provider="demo"))  # fmt: skip
        elif kind == 4:
            entries.append(LedgerEntry(started_at=at, route="clarify", query="明天呢", latency_ms=0.02))
        elif kind == 5:
            usage = Usage(800 + i, 100, 60)
            entries.append(LedgerEntry(
                started_at=at, route="llm", query=f"北京适合出游吗{i}", model="gpt-4o-mini", usage=usage,
                cost_usd=models.cost("gpt-4o-mini", usage), latency_ms=900.0 + i, model_ms=400.0 + i,
                llm_loops=1 + i % 3, tool_calls=2, tool_failures=i % 2, places=("北京市",), unknown_words=("出游",),
                plain_lookup=bool(i % 2),
            ))  # fmt: skip
        elif kind == 6:
            entries.append(LedgerEntry(started_at=at, route="shadow", query=f"上海{i}", cost_usd=0.00021,
                                       agreement=bool(i % 3), places=("上海市",)))  # fmt: skip
        else:
            entries.append(LedgerEntry(started_at=at, route="llm", query="q", outcome="LLMUnavailable", cost_usd=None))
    entries.append(LedgerEntry(started_at=now - 40 * 86400, route="rule", query="too old"))
    return entries


def _cli(*args, **env):
    result = subprocess.run([sys.executable, "-m", "hybrid_weather.router", *args], capture_output=True, text=True,
                            env=subprocess_env(**env), timeout=60)  # fmt: skip
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_savings_and_misses_are_the_same_on_sqlite_and_postgres(pg_url, tmp_path):
    lite = str(tmp_path / "ledger.db")
    entries = _traffic(time.time())
    for location in (lite, pg_url):
        ledger = Ledger(location, model="gpt-4o-mini")
        for entry in entries:
            ledger.record(entry)
        ledger.close()
    for command in (["savings", "--json"], ["savings", "--json", "--by", "model"], ["misses", "--json"]):
        on_sqlite = json.loads(_cli(*command, HYBRID_WEATHER_LEDGER=lite, HYBRID_WEATHER_MODEL="gpt-4o-mini"))
        on_postgres = json.loads(_cli(*command, HYBRID_WEATHER_LEDGER=pg_url, HYBRID_WEATHER_MODEL="gpt-4o-mini"))
        if command[0] == "misses":  # the same questions, in the same order, whichever database keeps them
            assert on_sqlite["plain_lookups"] == 50 and on_sqlite["words"][0]["word"] == "出游"
        else:
            assert on_sqlite["requests"] == 400 - 50  # shadow runs are not requests; the old row is out of the window
            # The model's own time, kept apart from the answer's: 400 + i ms of 900 + i (i = 5, 13, … 397; p50 i = 205).
            model_p50, answer_p50 = on_sqlite["model_ms"]["llm"]["p50"], on_sqlite["latency_ms"]["llm"]["p50"]
            assert 605 <= model_p50 <= 605 * 1.05 and 1105 <= answer_p50 <= 1105 * 1.05
            assert set(on_sqlite["model_ms"]) == {"llm"}  # no model time where no model was called
        assert on_sqlite == on_postgres


def test_ledger_migrate_copies_a_ledger_this_version_has_not_opened_yet(pg_url, tmp_path):
    # The source is read as it is (read-only): a ledger of an older schema lacks the newest columns
    # (reason_code, demo), which its copies take at their defaults, not a "no such column" error.
    from hybrid_weather.router.ledger import migrate

    lite = tmp_path / "old.db"
    db = sqlite3.connect(lite, isolation_level=None)
    migrate(db, MIGRATIONS[: [m.__name__ for m in MIGRATIONS].index("m012_reason_code")])
    db.execute(
        "INSERT INTO requests (id, datetime_utc, route, outcome, cost_usd, baseline_cost_usd, provider, query)"
        " VALUES ('0001', ?, 'rule', 'ok', 0.0, 0.0001, 'open-meteo', '上海今天天气')",
        (time.strftime("%Y-%m-%dT%H:%M:%S.000000+00:00", time.gmtime()),),
    )
    db.close()
    copied = json.loads(_cli("ledger", "migrate", "--to", pg_url, "--from", str(lite), "--json"))
    assert copied["read"] == copied["copied"] == 1
    assert stored(pg_url, "SELECT id, route, reason_code, demo IS TRUE FROM requests") == [
        ("0001", "rule", None, False)
    ]


def test_ledger_migrate_copies_a_sqlite_ledger_once(pg_url, tmp_path):
    lite = tmp_path / "ledger.db"
    ledger = Ledger(lite, model="gpt-4o-mini")
    for entry in _traffic(time.time()):
        ledger.record(entry)
    ledger.close()
    first = json.loads(_cli("ledger", "migrate", "--to", pg_url, "--from", str(lite), "--json"))
    assert first["read"] == first["copied"] == 401 and first["same_hash_key"] is True
    again = json.loads(_cli("ledger", "migrate", "--to", pg_url, "--from", str(lite), "--json"))
    assert again["copied"] == 0 and again["already_there"] == 401
    columns = "id, route, query, query_hmac, cost_usd, latency_ms, outcome"
    with sqlite3.connect(lite) as db:
        expected = db.execute(f"SELECT {columns} FROM requests ORDER BY id").fetchall()
    assert stored(pg_url, f"SELECT {columns} FROM requests ORDER BY id") == expected
    assert stored(pg_url, "SELECT sum(requests) FROM requests_hourly") == [(401,)]
    for command in (["savings", "--json"], ["misses", "--json"]):
        assert json.loads(_cli(*command, HYBRID_WEATHER_LEDGER=str(lite))) == json.loads(
            _cli(*command, HYBRID_WEATHER_LEDGER=pg_url)
        )
    # New rows are hashed with the migrated ledger's key: a repeated question matches its old self.
    ledger = Ledger(pg_url)
    ledger.record(LedgerEntry(started_at=time.time(), route="rule", query="上海0"))
    ledger.close()
    hashes = stored(pg_url, "SELECT count(DISTINCT query_hmac), count(*) FROM requests WHERE query = '上海0'")
    assert hashes == [(1, 2)]


def test_rows_past_the_kept_days_are_deleted_and_their_sums_kept(pg_url):
    now = time.time()
    ledger = Ledger(pg_url, keep_days=None)
    for i in range(30):
        ledger.record(LedgerEntry(started_at=now - i * 86400, route="rule", query=f"q{i}", places=("上海市",)))
    ledger.close()
    pruning = Ledger(pg_url, keep_days=10)
    pruning.flush()
    pruning.close()
    assert stored(pg_url, "SELECT count(*) FROM requests") == [(10,)]  # days 0 to 9
    assert stored(pg_url, "SELECT sum(requests) FROM requests_hourly") == [(30,)]
    status = json.loads(_cli("savings", "--json", HYBRID_WEATHER_LEDGER=pg_url))
    assert status["requests"] == 30


def test_readyz_follows_the_database(pg_url, tmp_path):
    from starlette.testclient import TestClient

    from hybrid_weather.router import HybridRouter, Settings
    from hybrid_weather.router.serve import create_app

    router = HybridRouter(settings=Settings(provider="demo"), ledger=pg_url)
    with TestClient(create_app(router)) as client:
        ready = client.get("/readyz").json()
        assert ready["status"] == "ready" and ready["checks"]["ledger"]["ok"] is True
    router.close()
    gone = pg_url.replace("5432", str(free_port()))  # a database that is not there
    away = HybridRouter(settings=Settings(provider="demo"), ledger=gone)
    with TestClient(create_app(away)) as client:
        not_ready = client.get("/readyz")
    assert not_ready.status_code == 503 and not_ready.json()["checks"]["ledger"]["ok"] is False
    away.close()


def test_a_call_the_watchdog_cut_ends_in_the_servers_error_not_a_key_error(pg_url):
    # The watchdog forgets a call it cut; the call's own ending forgot it again, and its KeyError replaced
    # the connection's error: "ledger writer: <object object at …>" at start-up under load.
    import psycopg

    from hybrid_weather.router.ledger.store.postgres_db import _Watchdog

    watchdog = _Watchdog()
    with psycopg.connect(pg_url) as db, pytest.raises(psycopg.OperationalError), watchdog.guard(db, 0.05):
        db.execute("SELECT pg_sleep(30)")  # cut long before it ends
