"""How much of the file ledger's cost to ask() is each part's: what the design can reach at best.

    python tests/bench/bench_ledger_ceiling.py [--turns N] [--seconds S]

bench_ask.py measures the file ledger's asks/s as a share of the ledger-off rate (target >= 0.9x). This
runs the same warm rule-path asks, in turns, with four ledgers, and prints each one's share of the
ledger-off rate (median of the turns, and their range):

- file: the real file ledger (what bench_ask.py measures);
- queued only: the real ledger whose writer takes each batch from the queue and drops it, neither
  formatting nor storing a row: what the request side and the hand-over to the writer cost;
- recorded only: each entry built by the Recorder and dropped at once: what the request side costs.

The parts are removed by replacing the ledger's own methods in this process only; nothing else changes.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_ask import TODAY, rates_in_turns

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
    kinds = ("off", "file", "queued only", "recorded only")
    try:
        with tempfile.TemporaryDirectory() as folder:
            routers = {
                kind: HybridRouter(provider="open-meteo", settings=Settings(open_meteo_url=server.url),
                                   cache_ttl=3600, ledger="off" if kind == "off" else str(Path(folder) / f"{i}.db"))
                for i, kind in enumerate(kinds)
            }  # fmt: skip
            queued, recorded = routers["queued only"].parts.ledger, routers["recorded only"].parts.ledger
            assert queued is not None and recorded is not None
            # The formatter replaced, not its method patched: a class mypyc compiles (setup.py) has read-only methods.
            queued._format = _NoRows()  # type: ignore[assignment]
            recorded.record = lambda entry: None  # type: ignore[method-assign]
            rates = rates_in_turns(routers, args.seconds, args.turns, today)
            for router in routers.values():
                router.close()
    finally:
        server.stop()
    off = rates["off"]
    print(f"warm rule-path asks in turns of {args.seconds:g} s, {args.turns} turns; ledger off: "
          f"{statistics.median(off):,.0f} asks/s (median)")  # fmt: skip
    for kind in kinds[1:]:
        shares = sorted(rate / base for rate, base in zip(rates[kind], off, strict=True))
        print(f"  {kind:14} {statistics.median(shares):.2f}x of ledger off ({shares[0]:.2f}-{shares[-1]:.2f}x)")


class _NoRows:
    """A ledger's row formatter that makes no rows: its writer takes each batch and stores nothing."""

    secret = b""

    def batch(self, entries: object) -> Batch:
        return Batch.of([])


if __name__ == "__main__":
    main()
