"""The benchmarks in tests/bench still run: each of the quick ones, briefly, as a user would run it.

A benchmark stands in for parts of the ledger to take them apart (bench_ledger_ceiling.py's writer that
stores nothing); when those parts change, the stand-in must change with them, or the benchmark measures a
writer that fails every batch. These runs are too short for their figures to mean anything: only that the
script runs to its end, prints every figure, and no ledger writer failed on the way.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent / "bench"
sys.path.insert(0, str(BENCH))

from bench_ledger_native import CANNOT_BUILD  # noqa: E402  (the exit status where its C stand-in cannot be built)


@pytest.mark.parametrize(
    "script, arguments, figures",
    [
        (
            "bench_ledger_ceiling.py",
            ["--turns", "1", "--seconds", "0.05"],
            ["file ", "queued only ", "recorded only ", "three numbers only "],
        ),
        ("bench_ledger.py", ["--asks", "300"], ["rows/s committed", "added by the ledger"]),
        ("bench_ledger_timeline.py", ["--seconds", "0.3"], ["a batch: ", "asks stalled", "waits for room"]),
        ("bench_misses.py", ["--rows", "3000", "--runs", "1", "--raw"], ["misses_report()", "over the raw rows"]),
        (
            "bench_ledger_native.py",
            ["--turns", "1", "--seconds", "0.05"],
            ["file ", "native ", "numbers kept ", "0 refused", "native, share of ledger off"],
        ),
    ],
)
def test_a_benchmark_runs_to_its_end_and_prints_its_figures(script, arguments, figures):
    done = subprocess.run(
        [sys.executable, str(BENCH / script), *arguments], capture_output=True, text=True, timeout=120
    )
    said = done.stdout + done.stderr
    if script == "bench_ledger_native.py" and done.returncode == CANNOT_BUILD:
        pytest.skip(f"{script} cannot build its C stand-in here: {done.stderr.strip()}")
    assert done.returncode == 0, said
    assert "ledger writer" not in said, said  # a writer that failed logs it and carries on: the figures lie
    for figure in figures:
        assert figure in done.stdout, said
