"""A/B against a named commit: the two installs, the ratios of their figures over rounds, and CPU instructions.

`python -m tests.bench --against REF` measures two regular installs (wheels, the rule path compiled, as a
user has it): A, the commit REF, and B, the working tree as it is (HEAD and any uncommitted change). Each is
built once into a venv in the temporary folder, kept for the next run: A under REF's commit, B under HEAD's
commit plus a hash of what differs from it (a clean tree is its HEAD's commit, the same folder as A's would
be). The same benchmark scripts (this tree's) run on both, alternating A and B run by run for several rounds,
so the machine's drift falls on each alike; each figure's ratio B/A is printed with its range over the
rounds. And callgrind counts the CPU instructions of fixed workloads (bench_instructions.py, and a cold
`hybrid-weather route "上海今天天气"`) on each install, which the machine's load does not move.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
VALGRIND = "valgrind"
#: Questions and asks per counted workload: enough that the per-unit figure is stable to a few in 10,000.
COUNT = 800


def _git(*arguments: str, text: bool = True) -> subprocess.CompletedProcess:  # type: ignore[type-arg]
    return subprocess.run(["git", *arguments], cwd=ROOT, capture_output=True, text=text, check=True)


def install_of(revision: str) -> str:
    """The Python of a venv holding REVISION installed as a user would (a wheel, the rule path compiled, with
    the extras the benchmarks use), made on first use: the same scripts then measure the two installs."""
    commit = _git("rev-parse", revision).stdout.strip()
    return _installed(commit[:12], lambda source: _unpack(_git("archive", commit, text=False).stdout, source))


def install_of_worktree() -> str:
    """The Python of a venv holding the working tree as it is, installed as install_of installs a commit:
    keyed by HEAD's commit and, where the tree differs from it, a hash of the difference (the diff and the
    untracked files), so an edit is a new install and a clean tree reuses its commit's."""
    head = _git("rev-parse", "HEAD").stdout.strip()[:12]
    files = [name for name in _git("ls-files", "-z", "--cached", "--others", "--exclude-standard").stdout.split("\0")
             if name and (ROOT / name).is_file()]  # fmt: skip
    untracked = _git("ls-files", "-z", "--others", "--exclude-standard").stdout.split("\0")
    digest = hashlib.sha256(_git("diff", "HEAD", "--binary", text=False).stdout)
    for name in sorted(filter(None, untracked)):
        digest.update(name.encode() + b"\0" + (ROOT / name).read_bytes())
    changed = _git("status", "--porcelain", "--untracked-files=normal").stdout.strip()
    key = f"{head}-{digest.hexdigest()[:12]}" if changed else head

    def copy(source: Path) -> None:
        for name in files:
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, source / name)

    return _installed(key, copy)


def _unpack(archive: bytes, source: Path) -> None:
    subprocess.run(["tar", "-x", "-C", str(source)], input=archive, check=True)


def _installed(key: str, fill: Callable[[Path], None]) -> str:
    home = Path(tempfile.gettempdir()) / f"hybrid-weather-bench-{key}"
    python = home / "venv" / "bin" / "python"
    if not python.exists():
        print(f"installing {key} in {home} (minutes: the rule path is compiled)", file=sys.stderr, flush=True)
        source = home / "source"
        shutil.rmtree(source, ignore_errors=True)  # an install cut short left it half filled
        source.mkdir(parents=True)
        fill(source)
        subprocess.run([sys.executable, "-m", "venv", str(home / "venv")], check=True)
        with (home / "install.log").open("w") as log:  # setup.py says there why the rule path was not compiled
            done = subprocess.run([str(python), "-m", "pip", "install", "--verbose", f"{source}[dev]"],
                                  stdout=log, stderr=subprocess.STDOUT)  # fmt: skip
        if done.returncode != 0:
            shutil.rmtree(home / "venv")  # not kept: the next run must not measure a half-made install
            raise SystemExit(f"installing {key} failed: see {home / 'install.log'}")
    if not compiled(python):
        # A type error mypyc refuses makes setup.py install the rule path as Python, several times slower:
        # measured so, every ratio would be the compiler's, not the change's.
        print(f"{key}: the rule path is NOT compiled (why: {home / 'install.log'}, 'could not be compiled')",
              file=sys.stderr, flush=True)  # fmt: skip
    return str(python)


def compiled(python: Path) -> bool:
    """Whether PYTHON's install runs the rule path compiled by mypyc (its reader is an extension module)."""
    found = subprocess.run([str(python), "-c", "from hybrid_weather.rules import reader; print(reader.__file__)"],
                           capture_output=True, text=True, check=True)  # fmt: skip
    return found.stdout.strip().endswith((".so", ".pyd"))


# -- ratios over rounds -----------------------------------------------------------------------------------


def first_number(value: str) -> float | None:
    found = re.search(r"[-+]?\d[\d,]*(?:\.\d+)?", value)
    return float(found.group(0).replace(",", "")) if found else None


def spread(values: list[float], unit: str = "") -> str:
    """VALUES as their median and their range over the rounds, e.g. `1.04× (0.98–1.10)`."""
    if not values:
        return "–"
    middle = statistics.median(values)
    if len(values) == 1:
        return f"{middle:.2f}{unit}"
    return f"{middle:.2f}{unit} ({min(values):.2f}–{max(values):.2f})"


def ratio_table(rounds: list[dict[str, list[dict[str, str]]]], revision: str,
                counted: dict[str, dict[str, float]]) -> str:  # fmt: skip
    """Each figure B measured: its value on A and on B in every round, B/A per round (the first number of
    each value; a figure one side lacks in a round, or that is no number, gives that round no ratio) as
    their median and range, and beside it the instruction ratio of the same work where one was counted."""
    lines = [f"| figure | A: {revision} | B: this tree | B/A timed, median (range over {len(rounds)} rounds) "
             "| B/A instructions |", "|---|---|---|---|---|"]  # fmt: skip
    names = list(dict.fromkeys(row["figure"] for measured in rounds for row in measured["B"]))
    for name in names:
        values = {side: [_value_of(measured[side], name) for measured in rounds] for side in ("A", "B")}
        ratios = [b / a for a, b in zip(_numbers(values["A"]), _numbers(values["B"]), strict=True)
                  if a is not None and b is not None and a != 0]  # fmt: skip
        shown = {side: " / ".join(v or "not measured" for v in values[side]) for side in values}
        instructions = counted_ratio(name, counted.get("A", {}), counted.get("B", {}))
        lines.append(f"| {_cell(name)} | {_cell(shown['A'])} | {_cell(shown['B'])} | {spread(ratios, '×')} "
                     f"| {instructions} |")  # fmt: skip
    return "\n".join(lines)


def _value_of(rows: list[dict[str, str]], figure: str) -> str | None:
    return next((row["value"] for row in rows if row["figure"] == figure), None)


def _numbers(values: list[str | None]) -> list[float | None]:
    return [None if value is None else first_number(value) for value in values]


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


# -- instructions -----------------------------------------------------------------------------------------


def instructions(command: list[str], counted_part: bool) -> int:
    """The CPU instructions callgrind counts running COMMAND: of the part bench_instructions.py switches
    callgrind's instrumentation on for where COUNTED_PART, else of the whole process (a cold start)."""
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "callgrind.out"
        switched = ["--instr-atstart=no"] if counted_part else []
        subprocess.run([VALGRIND, "--tool=callgrind", f"--callgrind-out-file={out}", *switched, *command],
                       cwd=ROOT, capture_output=True, check=True)  # fmt: skip
        found = re.search(r"^totals:\s*(\d+)", out.read_text(), re.MULTILINE)
        if found is None:
            raise RuntimeError(f"callgrind's output for {command} has no total")
        return int(found.group(1))


#: The instruction figures, by the name the tables give them.
COUNTED = {
    "route": "`route()` of a new question, per question",
    "route÷jieba": "`route()` ÷ bare `jieba.lcut()` of the same questions",
    "ask": "warm `ask()`, ledger off, per answer",
    "ledger": "the file ledger's cost per row (`ask()` with it − without)",
    "cold": 'cold `hybrid-weather route "上海今天天气"`, in all',
}
#: Which instruction figure stands beside a timed one: the timed figure's name starts with the key.
TIMED_AS = {
    "`route()` of a new question": "route",
    "warm `ask()`, 1 thread, ledger off": "ask",
    "the ledger's cost to one `ask()`": "ledger",
    "cold `hybrid-weather route": "cold",
}


def counted_figures(python: str) -> dict[str, float]:
    """PYTHON's install's instruction figures (COUNTED), each from one run under callgrind."""
    script = str(HERE / "bench_instructions.py")
    each = {name: instructions([python, script, name, "--count", str(COUNT)], True) / COUNT
            for name in ("route", "jieba", "ask", "ask-ledger")}  # fmt: skip
    cli = str(Path(python).with_name("hybrid-weather"))
    return {
        "route": each["route"],
        "route÷jieba": each["route"] / each["jieba"],
        "ask": each["ask"],
        "ledger": each["ask-ledger"] - each["ask"],
        "cold": instructions([python, cli, "route", "上海今天天气"], False),
    }


def counted_ratio(figure: str, a: dict[str, float], b: dict[str, float]) -> str:
    """B/A of the instruction figure that stands beside the timed FIGURE, or – where none does."""
    key = next((key for prefix, key in TIMED_AS.items() if figure.startswith(prefix)), None)
    return f"{b[key] / a[key]:.3f}×" if key is not None and key in a and key in b and a[key] else "–"


def instruction_table(a: dict[str, float], b: dict[str, float], revision: str) -> str:
    lines = [f"| CPU instructions (callgrind) | A: {revision} | B: this tree | B/A |", "|---|---|---|---|"]
    for key, name in COUNTED.items():
        ratio = f"{b[key] / a[key]:.3f}×" if a.get(key) and key in b else "–"
        lines.append(f"| {_cell(name)} | {_count(a.get(key))} | {_count(b.get(key))} | {ratio} |")
    return "\n".join(lines)


def _count(value: float | None) -> str:
    if value is None:
        return "not measured"
    return f"{value:.3f}" if value < 100 else f"{value:,.0f}"
