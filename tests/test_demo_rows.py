"""Demo rows (issue 53): the rows of a router on the demo provider (synthetic weather) are marked, and
`savings`, `misses` and the dashboard leave them out unless asked (`--include-demo`, `include_demo=1`),
saying how many they left out — on SQLite and PostgreSQL, and on a ledger written before the mark existed."""

from __future__ import annotations

import datetime as dt
import json
import sqlite3
import subprocess
import sys
import time

import psycopg
import pytest
from starlette.testclient import TestClient

from hybrid_weather.router import HybridRouter, Settings
from hybrid_weather.router.ledger import MIGRATIONS, Ledger, LedgerEntry, migrate, misses_report, savings_report
from hybrid_weather.router.ledger.store import postgres_db
from hybrid_weather.router.serve import create_app

from support import subprocess_env


def real_and_demo(ledger: Ledger, now: float) -> None:
    """Two real requests (a rule answer and an LLM plain lookup of the word 出游) and, written by a router on
    the demo provider, a rule answer and a plain lookup of the word 遛狗 an hour later, marked wrong."""
    ledger.record(LedgerEntry(started_at=now - 7200, route="rule", query="北京今天天气", places=("北京市",)))
    ledger.record(
        LedgerEntry(started_at=now - 7100, route="llm", query="出游北京", model="gpt-4o-mini", cost_usd=0.001,
                    unknown_words=("出游",), plain_lookup=True)
    )  # fmt: skip
    ledger.record(
        LedgerEntry(started_at=now - 3600, route="rule", query="上海今天天气", places=("上海市",), demo=True,
                    request_id="0193a1b2c3d4e5f6a7b8c9")
    )  # fmt: skip
    ledger.record(
        LedgerEntry(started_at=now - 3500, route="llm", query="遛狗上海", model="gpt-4o-mini", cost_usd=0.002,
                    unknown_words=("遛狗",), plain_lookup=True, demo=True)
    )  # fmt: skip
    ledger.close()


def held_to_the_mark(savings, misses, *, included: bool) -> None:
    """The reports of real_and_demo's ledger, with its demo rows INCLUDED or left out."""
    assert savings["demo_rows"] == misses["demo_rows"] == 2
    assert savings["include_demo"] is misses["include_demo"] is included
    if included:
        assert savings["requests"] == 4 and savings["by_route"] == {"rule": 2, "clarify": 0, "llm": 2}
        assert savings["actual_cost_usd"] == pytest.approx(0.003)
        assert misses["plain_lookups"] == 2 and [w["word"] for w in misses["words"]] == ["遛狗", "出游"]
        assert [m["query"] for m in misses["marked_wrong"]] == ["上海今天天气"]
        assert savings["feedback"]["rule_marked_wrong"] == 1
    else:
        assert savings["requests"] == 2 and savings["by_route"] == {"rule": 1, "clarify": 0, "llm": 1}
        assert savings["actual_cost_usd"] == pytest.approx(0.001)
        assert misses["plain_lookups"] == 1 and [w["word"] for w in misses["words"]] == ["出游"]
        assert misses["marked_wrong"] == [] and savings["feedback"]["rule_marked_wrong"] == 0


def mark_wrong(location: str) -> None:
    router = HybridRouter(settings=Settings(provider="demo"), ledger=location)
    assert router.feedback("0193a1b2c3d4e5f6a7b8c9", "wrong")
    router.close()


@pytest.fixture(params=["sqlite", "postgres"])
def ledger_location(request, tmp_path):
    """A ledger holding real_and_demo's rows, one answer of them marked wrong, in SQLite or PostgreSQL."""
    location = str(tmp_path / "ledger.db") if request.param == "sqlite" else request.getfixturevalue("pg_url")
    real_and_demo(Ledger(location), time.time())
    mark_wrong(location)
    return location


def connect(location: str):
    if location.startswith("postgresql"):
        return psycopg.connect(location, autocommit=True)
    return sqlite3.connect(location, isolation_level=None)


def test_the_reports_leave_demo_rows_out_and_count_them_back_when_asked(ledger_location):
    db = connect(ledger_location)
    for included in (False, True):
        savings = savings_report(db, 30, include_demo=included)
        misses = misses_report(db, 30, include_demo=included)
        held_to_the_mark(savings, misses, included=included)
    db.close()


def test_the_cli_says_what_it_left_out_and_counts_it_with_include_demo(ledger_location):
    def run(*args: str) -> str:
        done = subprocess.run([sys.executable, "-m", "hybrid_weather.router", *args], capture_output=True, text=True,
                              env=subprocess_env(HYBRID_WEATHER_LEDGER=ledger_location), timeout=60)  # fmt: skip
        assert done.returncode == 0, done.stderr
        return done.stdout

    for included, flag in ((False, ()), (True, ("--include-demo",))):
        held_to_the_mark(
            json.loads(run("savings", "--json", *flag)), json.loads(run("misses", "--json", *flag)), included=included
        )
    left_out = "2 requests answered from synthetic demo weather left out (--include-demo counts them)"
    assert left_out in run("savings") and left_out in run("misses")
    assert "2 requests answered from synthetic demo weather are included" in run("savings", "--include-demo")


def test_serve_and_the_dashboard_leave_demo_rows_out_unless_asked(ledger_location):
    router = HybridRouter(settings=Settings(provider="demo"), ledger=ledger_location)
    with TestClient(create_app(router)) as client:
        for included, parameter in ((False, ""), (False, "&include_demo=0"), (True, "&include_demo=1")):
            savings = client.get(f"/v1/savings?days=30{parameter}").json()
            misses = client.get(f"/v1/misses?days=30{parameter}").json()
            held_to_the_mark(savings, misses, included=included)
            page = client.get(f"/?days=30{parameter}").text
            assert f'<b id="requests">{4 if included else 2}</b>' in page
            assert '<p id="demo" data-value="2">2 requests answered from synthetic demo weather' in page
            assert ("are included" if included else "are left out") in page
        refused = client.get("/v1/savings?include_demo=maybe")
        assert refused.status_code == 422 and refused.json()["error"]["code"] == "invalid_include_demo"
    router.close()


def test_a_router_on_the_demo_provider_marks_its_rows_and_another_does_not(tmp_path, weather_server):
    path = tmp_path / "ledger.db"
    with HybridRouter(provider="demo", ledger=str(path)) as router:
        router.ask("上海今天天气")
        router.ask("今天天气")  # a clarification (no place) in a demo session is the trial's traffic too
    settings = Settings(provider="open-meteo", open_meteo_url=weather_server.url)
    with HybridRouter(settings=settings, ledger=str(path)) as router:
        router.ask("上海今天天气", today=dt.date(2026, 11, 29))
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT route, provider, demo FROM requests ORDER BY id").fetchall() == [
            ("rule", "demo", 1),
            ("clarify", None, 1),
            ("rule", "open-meteo", 0),
        ]


#: The migrations of a ledger of the previous schema: all but the demo mark's.
PREVIOUS = [m.__name__ for m in MIGRATIONS].index("m014_demo")


def test_a_sqlite_ledger_of_the_previous_schema_migrates_in_place(tmp_path):
    # Rows stored before m014 are no demo rows, whatever answered them (the mark did not exist); rows after
    # it are counted by the rollups as before, and a demo row is left out of them.
    path = tmp_path / "ledger.db"
    db = sqlite3.connect(path, isolation_level=None)
    migrate(db, MIGRATIONS[:PREVIOUS])
    before = (dt.datetime.now(dt.timezone.utc) - dt.timedelta(hours=3)).isoformat(timespec="microseconds")
    db.execute(
        "INSERT INTO requests (id, datetime_utc, route, outcome, cost_usd, baseline_cost_usd, provider, query)"
        " VALUES ('0001', ?, 'rule', 'ok', 0.0, 0.0001, 'demo', '上海今天天气')",
        (before,),
    )
    db.close()
    real_and_demo(Ledger(path), time.time())
    db = sqlite3.connect(path, isolation_level=None)
    assert [row[0] for row in db.execute("SELECT name FROM _hybrid_weather_migrations")][-1] == MIGRATIONS[-1].__name__
    held_after_the_upgrade(db)
    db.close()


def test_a_postgresql_ledger_of_the_previous_schema_migrates_in_place(pg_url, monkeypatch):
    with psycopg.connect(pg_url, autocommit=True) as db:
        monkeypatch.setattr(postgres_db, "POSTGRES_MIGRATIONS", postgres_db.POSTGRES_MIGRATIONS[:PREVIOUS])
        postgres_db.migrate_postgres(db)
        monkeypatch.undo()
        db.execute(
            "INSERT INTO requests (id, datetime_utc, route, outcome, cost_usd, baseline_cost_usd, provider, query)"
            " VALUES ('0001', now() - interval '3 hours', 'rule', 'ok', 0.0, 0.0001, 'demo', '上海今天天气')"
        )
    real_and_demo(Ledger(pg_url), time.time())
    with psycopg.connect(pg_url, autocommit=True) as db:
        assert db.execute("SELECT max(name) FROM _hybrid_weather_migrations").fetchone()[0] == MIGRATIONS[-1].__name__
        held_after_the_upgrade(db)


def held_after_the_upgrade(db) -> None:
    """The reports of a ledger that held one row (a demo provider's, unmarked) before it gained the mark, and
    real_and_demo's rows after."""
    savings, misses = savings_report(db, 30), misses_report(db, 30)
    assert savings["requests"] == 3 and savings["demo_rows"] == 2 and misses["plain_lookups"] == 1
    assert savings_report(db, 30, include_demo=True)["requests"] == 5
    assert db.execute("SELECT sum(requests) FROM requests_hourly").fetchone()[0] == 3  # no demo row in it
