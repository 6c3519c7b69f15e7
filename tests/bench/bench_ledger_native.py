"""What a ledger writer outside the interpreter would let ask() reach: the decision the file ledger's last bar waits on.

    python tests/bench/bench_ledger_native.py [--turns N] [--seconds S]

bench_ask.py's file ledger stays under its bar (>= 0.9x of the ledger-off rate); bench_ledger_ceiling.py
shows the Python writer's part in that: its turns with the interpreter lock and the objects it frees for
the asking thread. This times a stand-in for the other design before anyone builds it: native_writer.c,
compiled here (a C compiler, Python's headers and SQLite's: gcc, python3-dev, libsqlite3-dev), takes each
rule answer's row as three numbers into a C ring and binds them to SQLite from a thread of its own, with the
writer's real short-row INSERT (router/ledger/sqlite_db.py) against a stem table made beforehand. The same
warm rule-path asks run in turns:

- off: no ledger;
- file: the real file ledger;
- native: the real Recorder, its entries' stem numbers looked up by the asking thread, handed to the
  stand-in (no retries, no spool, no flush: it is not a ledger, only what one would cost the asking thread);
- numbers kept: the same look-up and three numbers appended to an array that no thread reads, the least
  any design that hands over numbers costs the asking thread.

It prints each one's share of the ledger-off rate (median of the turns, and their range), where the time
went as bench_ledger_ceiling.py does, and that every row the stand-in was handed reached the table.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import sqlite3
import subprocess
import sys
import sysconfig
import tempfile
from array import array
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_ask import QUERIES, TODAY
from bench_ledger_ceiling import _turn, report

from hybrid_weather.router.ledger import sqlite_db

from fake_weather import FakeWeather

SOURCE = Path(__file__).resolve().parent / "native_writer.c"
#: Warm-up rounds before the numbers are read: a question's first ask misses the cache, so its stem differs.
WARM_ROUNDS = 3
#: The stand-in's stem table, in the benchmark's own database beside the ledger's requests table.
STEMS = "bench_stems"
#: The exit status when native_writer.c cannot be built here (tests/test_bench_scripts.py skips on it).
CANNOT_BUILD = 3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=9, help="turns of every kind (default 9)")
    parser.add_argument("--seconds", type=float, default=1.0, help="seconds of each turn (default 1)")
    args = parser.parse_args()
    from hybrid_weather.router import HybridRouter, Settings

    with tempfile.TemporaryDirectory() as folder:
        native = _compiled(Path(folder))
        server = FakeWeather(TODAY).start()
        kinds = ("off", "file", "native", "numbers kept")
        try:
            paths = {kind: str(Path(folder) / f"{i}.db") for i, kind in enumerate(kinds)}
            routers = {
                kind: HybridRouter(provider="open-meteo", settings=Settings(open_meteo_url=server.url), cache_ttl=3600,
                                   ledger="off" if kind == "off" else paths[kind])
                for kind in kinds
            }  # fmt: skip
            for router in routers.values():
                for _ in range(WARM_ROUNDS):
                    for query in QUERIES:
                        router.ask(query, today=TODAY)
            numbers = _stem_table(routers["native"], paths["native"])
            warm = _count(paths["native"])
            batch = routers["native"].parts.ledger.batch_size
            writer = native.Writer(paths["native"], _insert(batch), _insert(1), batch, 2 * batch)
            _hand_over(routers["native"], writer.push, numbers)
            _hand_over(routers["numbers kept"], _Kept(3 * batch).push, numbers)
            turns: dict[str, list[tuple[float, float, float, float]]] = {kind: [] for kind in kinds}
            for turn in range(args.turns):
                for kind in kinds[turn % len(kinds) :] + kinds[: turn % len(kinds)]:  # each goes first in turn
                    turns[kind].append(_turn(routers[kind], args.seconds, TODAY))
            pushed, written, refused = writer.close()
            stored = _count(paths["native"]) - warm
            for router in routers.values():
                router.close()
        finally:
            server.stop()
    shares = report(turns, args.seconds)
    print(f"  the stand-in: {pushed:,} rows handed over, {written:,} written, {refused:,} refused; "
          f"{stored:,} rows in its table beyond the warm-up's")  # fmt: skip
    print(f"  native, share of ledger off: {shares['native']:.2f}x (target >= 0.9x: "
          f"{'met' if shares['native'] >= 0.9 else 'MISSED'}); the file ledger's: {shares['file']:.2f}x")  # fmt: skip
    if refused or written != pushed or stored != written:
        sys.exit("the stand-in lost rows: its figure is not a writer's")


def _compiled(folder: Path) -> Any:
    """native_writer.c built in FOLDER and imported; exits saying what to install where it cannot be built."""
    target = folder / f"native_writer{sysconfig.get_config_var('EXT_SUFFIX')}"
    compiler = (sysconfig.get_config_var("CC") or "cc").split()
    command = [*compiler, "-O2", "-shared", "-fPIC", f"-I{sysconfig.get_paths()['include']}", str(SOURCE),
               "-lsqlite3", "-lpthread", "-o", str(target)]  # fmt: skip
    try:
        subprocess.run(command, check=True, capture_output=True, text=True)
    except (OSError, subprocess.CalledProcessError) as error:
        said = getattr(error, "stderr", "") or error
        print(f"could not build {SOURCE.name} ({said}); it needs a C compiler, Python's headers and SQLite's "
              "(Debian: apt-get install gcc python3-dev libsqlite3-dev)", file=sys.stderr)  # fmt: skip
        sys.exit(CANNOT_BUILD)
    spec = importlib.util.spec_from_file_location("native_writer", target)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _stem_table(router: Any, path: str) -> dict[Any, int]:
    """The stem numbers the ledger's formatter gave ROUTER's warm questions, and their stems in a table of
    PATH's that the stand-in's INSERT joins (the real writer keeps them in a TEMP table of its connection)."""
    ledger = router.parts.ledger
    ledger.flush()
    numbers = {key: number for key, number in ledger._format._stem_numbers.items() if number is not None}
    columns = sqlite_db._STEM_COLUMNS
    with contextlib.closing(sqlite3.connect(path)) as db, db:  # closed, after its transaction is committed
        db.execute(f"CREATE TABLE {STEMS} (stem INTEGER PRIMARY KEY, {', '.join(columns)})")
        db.executemany(f"INSERT INTO {STEMS} VALUES ({', '.join('?' * (len(columns) + 1))})",
                       [(number, *stem) for number, stem in enumerate(ledger._format._stems)])  # fmt: skip
    return numbers


def _insert(rows: int) -> str:
    """The real writer's short-row INSERT of ROWS rows, joining the benchmark's stem table."""
    return sqlite_db._insert_short(rows, False).replace("temp.ledger_stems", STEMS)


def _hand_over(router: Any, push: Any, numbers: dict[Any, int]) -> None:
    """ROUTER's Recorder hands each entry to PUSH as (time, latency, stem number)."""
    number = numbers.__getitem__  # every warm question's stem is numbered: a KeyError would say otherwise

    def record(entry: Any) -> None:
        started, latency, key = entry
        push(started, latency, number(key))

    router.parts.recorder._record = record


class _Kept:
    """Rows as numbers in an array that no thread reads, emptied when it holds SIZE numbers."""

    def __init__(self, size: int) -> None:
        self.numbers, self.size = array("d"), size

    def push(self, started: float, latency: float, stem: int) -> None:
        numbers = self.numbers
        numbers.extend((started, latency, stem))
        if len(numbers) >= self.size:
            del numbers[:]


def _count(path: str) -> int:
    """The rows in PATH's requests table."""
    with contextlib.closing(sqlite3.connect(path)) as db:
        return int(db.execute("SELECT count(*) FROM requests").fetchone()[0])


if __name__ == "__main__":
    main()
