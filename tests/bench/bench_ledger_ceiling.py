"""How much of the file ledger's cost to ask() is each part's: what the design can reach at best.

    python tests/bench/bench_ledger_ceiling.py [--turns N] [--seconds S]

bench_ask.py measures the file ledger's asks/s as a share of the ledger-off rate (target >= 0.9x). This
runs the same warm rule-path asks, in turns (each kind going first in its turn), with the ledger off and
in four other ways, and prints each one's share of the ledger-off rate (median of the turns, and their
range):

- file: the real file ledger (what bench_ask.py measures);
- queued only: the real ledger whose writer takes each batch from the queue and drops it, neither
  formatting nor storing a row: what the request side and the hand-over to the writer cost;
- recorded only: each entry built by the Recorder and dropped at once: what the request side costs;
- three numbers only: in place of each entry, a tuple of its time, its latency and a number, dropped at
  once: the least any request side can cost, so that its difference to recorded only is what building an
  entry's stem key (entry.ShortEntry: eleven of its answer's and decision's fields) costs;
- off, SQLite beside: no ledger, while another process inserts rows into a SQLite file of its own without
  pause: what a second core busy with SQLite costs the asking thread when nothing is shared but the
  machine (the file ledger's writer keeps a second core busy for part of the time).

The parts are removed by replacing the ledger's own methods in this process only; nothing else changes.

Beside each share, where the time went, from the CPU clocks (medians of the turns): the asking thread's
CPU time an ask, the share of the wall time it was not running (waiting for the interpreter lock, or for
the VM), and the other threads' CPU time an ask (the writer's: the fake server is idle once the cache is
warm). A part that costs the asking thread CPU time without running on it (a second core's work on the
same memory) shows in the first; one it waits for, in the second.
"""

from __future__ import annotations

import argparse
import datetime as dt
import multiprocessing
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_ask import QUERIES, TODAY

from hybrid_weather.router.ledger.rows import Batch

from fake_weather import FakeWeather


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=7, help="turns of every ledger (default 7)")
    parser.add_argument("--seconds", type=float, default=1.0, help="seconds of each turn (default 1)")
    args = parser.parse_args()
    from hybrid_weather.router import HybridRouter, Settings

    today = TODAY
    server = FakeWeather(today).start()
    kinds = ("off", "file", "queued only", "recorded only", "three numbers only", "off, SQLite beside")
    try:
        with tempfile.TemporaryDirectory() as folder:
            routers = {
                kind: HybridRouter(provider="open-meteo", settings=Settings(open_meteo_url=server.url),
                                   cache_ttl=3600,
                                   ledger="off" if kind.startswith("off") else str(Path(folder) / f"{i}.db"))
                for i, kind in enumerate(kinds)
            }  # fmt: skip
            queued, recorded = routers["queued only"].parts.ledger, routers["recorded only"].parts.ledger
            assert queued is not None and recorded is not None
            # The formatter replaced, not its method patched: a class mypyc compiles (setup.py) has read-only methods.
            queued._format = _NoRows()  # type: ignore[assignment]
            recorded.record = _dropped  # type: ignore[method-assign]
            numbers_only = routers["three numbers only"].parts.recorder
            assert numbers_only is not None
            numbers_only.answered = _three_numbers  # type: ignore[method-assign]
            for router in routers.values():
                for query in QUERIES:
                    router.ask(query, today=today)  # every memo and the forecast cache warm
            turns: dict[str, list[tuple[float, float, float, float]]] = {kind: [] for kind in kinds}
            beside = multiprocessing.get_context("spawn")
            busy, stop = beside.Event(), beside.Event()
            neighbour = beside.Process(target=_insert_rows, args=(str(Path(folder) / "beside.db"), busy, stop))
            neighbour.start()
            try:
                for turn in range(args.turns):
                    for kind in kinds[turn % len(kinds) :] + kinds[: turn % len(kinds)]:  # each goes first in turn
                        if kind == kinds[-1]:
                            busy.set()
                            time.sleep(0.05)  # under way before the clock starts
                        turns[kind].append(_turn(routers[kind], args.seconds, today))
                        busy.clear()
            finally:
                stop.set()
                busy.set()
                neighbour.join()
            for router in routers.values():
                router.close()
    finally:
        server.stop()
    report(turns, args.seconds)


def report(turns: dict[str, list[tuple[float, float, float, float]]], seconds: float) -> dict[str, float]:
    """Print each kind of TURNS (_turn's figures, "off" among them) as its share of the ledger-off rate and
    where the time went; returns the shares (medians of the turns)."""
    off = [rate for rate, *_ in turns["off"]]
    print(f"warm rule-path asks in turns of {seconds:g} s, {len(off)} turns; ledger off: "
          f"{statistics.median(off):,.0f} asks/s (median)")  # fmt: skip
    width = max(map(len, turns))
    print(f"  {'':{width}} {'share of ledger off':24} asking thread: CPU an ask, not running; other threads: "
          "CPU an ask")  # fmt: skip
    medians = {}
    for kind, figures in turns.items():
        shares = sorted(rate / base for (rate, *_), base in zip(figures, off, strict=True))
        cpu, idle, other = (statistics.median(values) for values in list(zip(*figures, strict=True))[1:])
        medians[kind] = statistics.median(shares)
        share = f"{medians[kind]:.2f}x ({shares[0]:.2f}-{shares[-1]:.2f}x)"
        print(f"  {kind:{width}} {share:24} {cpu:5.1f} µs, {idle:5.1%}; {other:5.1f} µs")
    return medians


_ROWS_BESIDE = """
    WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 512)
    INSERT INTO rows SELECT printf('%022x', ? + i), strftime('%Y-%m-%dT%H:%M:%f', 'now'), i / 7.0, i % 9 FROM n
"""


def _insert_rows(path: str, busy: Any, stop: Any) -> None:
    """Another process's SQLite work: 512-row transactions into PATH, without pause while BUSY is set."""
    import sqlite3

    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("CREATE TABLE rows (id TEXT PRIMARY KEY, at TEXT, latency REAL, stem INTEGER)")
    count = 0
    while not stop.is_set():
        busy.wait()
        db.execute(_ROWS_BESIDE, (count,))  # made in SQL: this process runs SQLite, not Python
        count += 512
        if count % 65_536 == 0:
            db.execute("DELETE FROM rows")
    db.close()


def _turn(router: Any, seconds: float, today: dt.date) -> tuple[float, float, float, float]:
    """One turn of asks in this thread: (asks/s, this thread's CPU µs an ask, the share of the wall time it
    was not running, the other threads' CPU µs an ask)."""
    ask, asks = router.ask, 0
    process, thread, started = time.process_time(), time.thread_time(), time.perf_counter()
    while time.perf_counter() - started < seconds:
        ask(QUERIES[asks % len(QUERIES)], today=today)
        asks += 1
    wall, thread = time.perf_counter() - started, time.thread_time() - thread
    process = time.process_time() - process
    if router.parts.ledger is not None:
        router.parts.ledger.flush()  # its backlog is written before the next turn, not during it
    return asks / wall, thread / asks * 1e6, 1 - thread / wall, (process - thread) / asks * 1e6


def _three_numbers(query: str, answer: Any, arrived: float, session_id: str | None = None) -> None:
    """A Recorder.answered that makes the least an entry can be, and drops it."""
    _dropped((arrived, answer.latency_ms, 0))


def _dropped(entry: object) -> None:
    """A ledger's record() that keeps nothing."""


class _NoRows:
    """A ledger's row formatter that makes no rows: its writer takes each batch and stores nothing."""

    secret = b""

    def batch(self, entries: object) -> Batch:
        return Batch.of([])


if __name__ == "__main__":
    main()
