"""Benchmark the ledger: rows/s under load, and what it adds to each ask().

    python tests/bench/bench_ledger.py [--asks N] [--figures-json]

1. rows/s: 8 threads record entries as fast as they can into a file ledger; the clock stops when
   close() has committed the last row.
2. added latency: warm rule-path ask() (demo provider, so no network) with the ledger off, then with a
   file ledger on, interleaved in rounds; prints p50 and p99 of each and the difference.

With --figures-json, the last line is the headline figure as JSON, for `python -m tests.bench`.
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.bench import FIGURES_FLAG, print_figures

QUERIES = ["上海今天天气", "魔都明天会下雨吗", "北京和上海明天哪个冷", "北京明天多少度", "明天会下雨吗"]


def rows_per_second(folder: Path, per_thread: int) -> tuple[float, int]:
    from hybrid_weather.router.ledger import Ledger, LedgerEntry

    path = folder / "load.db"
    ledger = Ledger(path)
    started = time.perf_counter()

    def work() -> None:
        for i in range(per_thread):
            ledger.record(
                LedgerEntry(
                    started_at=time.time(),
                    route="rule",
                    query=QUERIES[i % len(QUERIES)],
                    places=("上海市",),
                    days=1,
                    provider="demo",
                    latency_ms=0.05,
                )
            )

    threads = [threading.Thread(target=work) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    ledger.close()
    elapsed = time.perf_counter() - started
    with sqlite3.connect(path) as db:
        rows = db.execute("SELECT count(*) FROM requests").fetchone()[0]
    return rows / elapsed, rows


def ask_latency(router, rounds: int) -> list[int]:
    clock = time.perf_counter_ns
    samples = []
    for i in range(rounds):
        query = QUERIES[i % len(QUERIES)]
        before = clock()
        router.ask(query)
        samples.append(clock() - before)
    return samples


def pct(samples: list[int], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))] / 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--asks", type=int, default=20_000, help="asks per configuration (default 20000)")
    parser.add_argument(FIGURES_FLAG, action="store_true", help="end with the headline figure as a JSON line")
    args = parser.parse_args()
    from hybrid_weather.router import HybridRouter

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        rate, rows = rows_per_second(folder, 25_000)
        print(f"ledger under load: {rows:,} rows from 8 threads, {rate:,.0f} rows/s committed (file, WAL)")

        off = HybridRouter(provider="demo", ledger="off")
        on = HybridRouter(provider="demo", ledger=str(folder / "ask.db"))
        for router in (off, on):
            ask_latency(router, 2_000)  # warm: parser built, cache filled
        samples_off, samples_on = [], []
        for _ in range(10):  # interleaved, so drift in machine load hits both alike
            samples_off += ask_latency(off, args.asks // 10)
            samples_on += ask_latency(on, args.asks // 10)
        on.close()
        off.close()
        p50_off, p50_on = pct(samples_off, 0.5), pct(samples_on, 0.5)
        print(f"ask() ledger off: p50 {p50_off:.1f} µs, p99 {pct(samples_off, 0.99):.1f} µs")
        print(f"ask() ledger on:  p50 {p50_on:.1f} µs, p99 {pct(samples_on, 0.99):.1f} µs")
        added = p50_on - p50_off
        print(
            f"added by the ledger: {added:+.1f} µs at p50 "
            f"({len(samples_on):,} asks each, Python {sys.version.split()[0]}; "
            f"target <= 5 µs: {'met' if added <= 5 else 'MISSED'})"
        )
    if args.figures_json:
        print_figures([("the ledger's cost to one `ask()`, p50 (target ≤ +5 µs)", f"{added:+.1f} µs")])


if __name__ == "__main__":
    main()
