"""The benchmarks that measure the project's targets, one script each, and `python -m tests.bench` to run them.

Each script, given --figures-json, prints its headline figures as a JSON list on its last line: the runner
reads that line and nothing else, so a script's own report can change without breaking the table.
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

FIGURES_FLAG = "--figures-json"


def command_line() -> str:
    """How this script was run, as a user would type it from the repository's root: the figure's command
    column must reproduce the figure, so it carries the arguments that were given, less the runner's flag."""
    script = Path(sys.argv[0]).resolve()
    try:
        shown = script.relative_to(Path(__file__).resolve().parents[2])
    except ValueError:  # a copy of the script run from elsewhere
        shown = script
    arguments = [argument for argument in sys.argv[1:] if argument != FIGURES_FLAG]
    return shlex.join(["python", str(shown), *arguments])


def print_figures(figures: list[tuple[str, str]]) -> None:
    """FIGURES, (what was measured, the value with its unit), as the JSON line the runner reads."""
    command = command_line()
    print(json.dumps([{"figure": f, "value": v, "command": command} for f, v in figures], ensure_ascii=False))
