"""`python -m tests.bench` runs a benchmark and prints its figures as the Markdown table the README holds.

The quick route run is seconds long, so its figure means nothing: only that the runner ran the script,
read its figures and laid them out in the table's columns, with a number where the figure is.
"""

from __future__ import annotations

import datetime as dt
import importlib.metadata
import re
import subprocess
import sys
from pathlib import Path

from support import subprocess_env

ROOT = Path(__file__).resolve().parents[1]
COLUMNS = ["figure", "value", "command", "date", "version", "machine"]


def cells(line: str) -> list[str]:
    """A Markdown table row's cells (a `\\|` inside a cell is not a border)."""
    return [cell.strip() for cell in re.split(r"(?<!\\)\|", line.strip())[1:-1]]


def test_the_runner_prints_one_table_of_what_it_measured():
    done = subprocess.run(
        [sys.executable, "-m", "tests.bench", "--only", "route", "--quick"],
        cwd=ROOT, capture_output=True, text=True, timeout=60, env=subprocess_env(),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert cells(lines[0]) == COLUMNS, done.stdout
    assert set(cells(lines[1])) == {"---"}, done.stdout
    rows = [dict(zip(COLUMNS, cells(line), strict=True)) for line in lines[2:]]
    assert len(rows) == 1, done.stdout
    row = rows[0]
    assert "route()" in row["figure"], row
    assert re.match(r"[+-]?\d+(\.\d+)? µs", row["value"]), row  # measured, not "not measured: …"
    assert row["command"].startswith("`python tests/bench/bench_route.py "), row
    assert row["date"] == dt.date.today().isoformat(), row
    assert row["version"] == importlib.metadata.version("hybrid-weather"), row
    assert re.match(r"\d+ × .+, Python \d+\.\d+", row["machine"]), row
