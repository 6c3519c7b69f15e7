"""What the file ledger costs ask() in instructions, counted by callgrind: the same on every run, whatever the VM.

    python tests/bench/bench_ledger_instructions.py [--asks N]

bench_ask.py times the file ledger's asks/s against the ledger-off rate (target >= 0.9x), but on a shared
VM that ratio moves by ±0.1 from one run to the next. This counts instead. Warm rule-path asks of
bench_ask.py's questions run under `valgrind --tool=callgrind --separate-threads=yes`, twice for each
ledger (after the same warm-up, 0 and N asks, full 512-row batches), and the difference is divided by N:

- the asking thread's instructions per ask, ledger off and with the file ledger (the request side:
  Recorder, the hand-over to the writer);
- the writer thread's per row, split into what SQLite runs in sqlite3_step (sqlite3 lets go of the
  interpreter lock around it, so on a second core it costs the asking thread nothing) and the rest, held
  under the lock (formatting, binding, the hand-over): every such instruction is one the asking thread
  waits for;
- the lock arithmetic: off / (file + writer under the lock), the rate the file ledger allows at best.

Needs valgrind (Debian's package); PYTHONHASHSEED=0 in the counted runs, since a random seed moves the
count by ~1 %.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

#: Asks before the counted ones: every memo, the forecast cache and the statement cache warm.
WARM_ASKS = 2_048


def _child(kind: str, asks: int) -> None:
    """The counted program: WARM_ASKS asks, a flush, then ASKS more and a flush."""
    from bench_ask import QUERIES, TODAY

    from hybrid_weather.router import HybridRouter, Settings

    from fake_weather import FakeWeather

    server = FakeWeather(TODAY).start()
    with tempfile.TemporaryDirectory() as folder:
        ledger = "off" if kind == "off" else str(Path(folder) / "ledger.db")
        # Under callgrind a question takes ~50 times as long: a deadline that holds at full speed would not.
        settings = Settings(open_meteo_url=server.url)
        router = HybridRouter(provider="open-meteo", settings=settings, cache_ttl=3600, deadline=300, ledger=ledger)
        if router.parts.ledger is not None:
            # Full batches, as at full speed: under callgrind the 0.1 s commit interval is a few asks.
            router.parts.ledger.commit_interval = 600  # type: ignore[union-attr]
        for count in (WARM_ASKS, asks):
            for i in range(count):
                router.ask(QUERIES[i % len(QUERIES)], today=TODAY)
            if router.parts.ledger is not None:
                router.parts.ledger.flush()
        router.close()
    server.stop()


def _counted(kind: str, asks: int, folder: Path) -> list[Path]:
    """The per-thread callgrind files of one run of the child, main thread first."""
    out = folder / f"{kind}.{asks}"
    command = [
        "valgrind", "--tool=callgrind", "--separate-threads=yes", f"--callgrind-out-file={out}",
        sys.executable, __file__, "--child", kind, str(asks),
    ]  # fmt: skip
    subprocess.run(command, check=True, env={**os.environ, "PYTHONHASHSEED": "0"}, capture_output=True)
    return sorted(folder.glob(f"{kind}.{asks}-*"))


def _total(path: Path) -> int:
    with path.open() as file:
        for line in file:
            if line.startswith("summary:"):
                return int(line.split()[1])
    raise ValueError(f"{path} has no summary line")


def _in_sqlite_step(path: Path) -> int:
    """The instructions of PATH's thread spent inside sqlite3_step, its calls included."""
    shown = subprocess.run(["callgrind_annotate", "--inclusive=yes", str(path)], capture_output=True, text=True)
    for line in shown.stdout.splitlines():
        if re.search(r":sqlite3_step\b", line):
            return int(line.split()[0].replace(",", ""))
    return 0


def _writer(files: list[Path]) -> Path | None:
    """The ledger writer's file: the busiest thread but the main one (the fake server's threads are idle)."""
    others = files[1:]
    return max(others, key=_total) if others else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--asks", type=int, default=5_120, help="counted asks (default 5,120: ten full batches)")
    parser.add_argument("--child", nargs=2, metavar=("KIND", "ASKS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args.child[0], int(args.child[1]))
        return
    if shutil.which("valgrind") is None or shutil.which("callgrind_annotate") is None:
        sys.exit("this benchmark counts with valgrind's callgrind: apt-get install valgrind")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        runs = [(kind, asks) for kind in ("off", "file") for asks in (0, args.asks)]
        with ThreadPoolExecutor(max_workers=2) as pool:  # callgrind runs one thread at a time: two runs at once
            files = dict(zip(runs, pool.map(lambda run: _counted(*run, folder), runs), strict=True))

        def per_ask(kind: str, pick) -> float:  # type: ignore[no-untyped-def]
            before, after = pick(files[(kind, 0)]), pick(files[(kind, args.asks)])
            return (after - before) / args.asks

        asking_off = per_ask("off", lambda f: _total(f[0]))
        asking_file = per_ask("file", lambda f: _total(f[0]))
        writer_all = per_ask("file", lambda f: _total(w) if (w := _writer(f)) else 0)
        writer_sqlite = per_ask("file", lambda f: _in_sqlite_step(w) if (w := _writer(f)) else 0)
    held = writer_all - writer_sqlite
    python = sys.version.split()[0]
    print(f"instructions per warm rule-path ask ({args.asks:,} counted, callgrind, PYTHONHASHSEED=0, Python {python})")
    print(f"  asking thread, ledger off:   {asking_off:9,.0f}")
    print(f"  asking thread, file ledger:  {asking_file:9,.0f}  (+{asking_file - asking_off:,.0f}: the request side)")
    print(f"  ledger writer, per row:      {writer_all:9,.0f}  ({writer_sqlite:,.0f} in sqlite3_step, outside the "
          f"interpreter lock; {held:,.0f} under it)")  # fmt: skip
    best = asking_off / (asking_file + held)
    print(f"  the file ledger's rate at best, by the lock: {best:.2f}x of ledger off (target >= 0.9x: "
          f"{'met' if best >= 0.9 else 'MISSED'})")  # fmt: skip


if __name__ == "__main__":
    main()
