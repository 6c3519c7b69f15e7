"""Where the asking thread waits for the file ledger's writer, batch by batch.

    python tests/bench/bench_ledger_timeline.py [--seconds S]

bench_ask.py times the file ledger's share of the ledger-off rate, bench_ledger_ceiling.py splits it by
part; this one follows the writer's cycle in time. Warm rule-path asks run in this thread for S seconds
with the file ledger while the writer's steps are timed (its take from the queue, the formatting of a
batch, the write) and so is every ask that took more than GAP_US longer than usual (a wait: for the
interpreter lock the writer holds, or for room in a full queue). It prints, for each batch, the medians of:

- the rows of a batch, how long the writer took to format it and to write it (SQLite runs most of the
  write with the interpreter lock let go);
- how many of the asking thread's asks stalled in that batch's cycle, and the time they took beyond a
  usual ask, in all;
- how often record() had to wait for room in the queue (the writer fell behind the asking thread).

The writer's own methods are wrapped in this process only, by timing calls; nothing else changes.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_ask import QUERIES, TODAY

from fake_weather import FakeWeather

#: An ask this much slower than the median of a warm ask counts as a wait (µs).
GAP_US = 100.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=2.0, help="seconds of asks (default 2)")
    args = parser.parse_args()
    from hybrid_weather.router import HybridRouter, Settings
    from hybrid_weather.router.ledger import handoff, store

    steps: list[tuple[str, float, float]] = []  # (step, start, end), perf_counter seconds
    _timed(handoff.Handoff, "take", steps)
    _timed(handoff.Handoff, "_wait_for_room", steps)
    _timed(store.Ledger, "_commit", steps)
    server = FakeWeather(TODAY).start()
    try:
        with tempfile.TemporaryDirectory() as folder:
            router = HybridRouter(provider="open-meteo", settings=Settings(open_meteo_url=server.url),
                                  cache_ttl=3600, ledger=str(Path(folder) / "ledger.db"))  # fmt: skip
            for query in QUERIES * 20:
                router.ask(query, today=TODAY)  # every memo, the forecast cache and the statement cache warm
            ledger = router.parts.ledger
            assert ledger is not None
            ledger.flush()
            rows: list[int] = []
            commit = ledger._commit
            ledger._commit = lambda db, batch: (rows.append(len(batch)), commit(db, batch))[1]  # type: ignore[method-assign]
            steps.clear()
            asks, took = _asks(router, args.seconds)
            router.close()
    finally:
        server.stop()
    usual = statistics.median(end - start for start, end in took)
    asks_ended = took[-1][1]
    elapsed = asks_ended - took[0][0]
    stalls = [(start, end) for start, end in took if (end - start) - usual > GAP_US / 1e6]
    # Not the batch close() writes after the asks: no ask waits for it.
    commits = [(start, end) for name, start, end in steps if name == "_commit" and start < asks_ended]
    room = [end - start for name, start, end in steps if name == "_wait_for_room"]
    print(f"warm rule-path asks with the file ledger for {args.seconds:g} s: {asks / elapsed:,.0f} asks/s, "
          f"{len(commits)} batches, a warm ask {usual * 1e6:.1f} µs at the median")  # fmt: skip
    if not commits:
        print("  no batch was written while the asks ran")
        return
    per_batch = _stalls_per_batch(commits, stalls, usual)
    print(f"  a batch: {statistics.median(rows):,.0f} rows, written in "
          f"{statistics.median(end - start for start, end in commits) * 1e3:.1f} ms (format and SQLite)")  # fmt: skip
    print(f"  the asking thread, a batch: {statistics.median(len(s) for s in per_batch):.0f} asks stalled, "
          f"{statistics.median(sum(s) for s in per_batch) * 1e3:.2f} ms in all "
          f"({sum(map(sum, per_batch)) / elapsed:.1%} of the time)")  # fmt: skip
    print(f"  waits for room in the queue: {len(room)}, {sum(room) * 1e3:.1f} ms in all")


def _timed(owner: type, name: str, steps: list[tuple[str, float, float]]) -> None:
    method: Callable[..., Any] = getattr(owner, name)

    def timed(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return method(*args, **kwargs)
        finally:
            steps.append((name, start, time.perf_counter()))

    setattr(owner, name, timed)


def _asks(router: Any, seconds: float) -> tuple[int, list[tuple[float, float]]]:
    """Asks for SECONDS; each one's (start, end)."""
    ask, clock, took = router.ask, time.perf_counter, []
    started = before = clock()
    while before - started < seconds:
        ask(QUERIES[len(took) % len(QUERIES)], today=TODAY)
        after = clock()
        took.append((before, after))
        before = after
    return len(took), took


def _stalls_per_batch(
    commits: list[tuple[float, float]], stalls: list[tuple[float, float]], usual: float
) -> list[list[float]]:
    """The stalled asks' seconds beyond USUAL, by the writer cycle they fell in (one batch's start to the next's)."""
    starts = [start for start, _ in commits] + [float("inf")]
    cycles: list[list[float]] = [[] for _ in commits]
    cycle = 0
    for start, end in stalls:
        while cycle + 1 < len(commits) and start >= starts[cycle + 1]:
            cycle += 1
        cycles[cycle].append(end - start - usual)
    return cycles


if __name__ == "__main__":
    main()
