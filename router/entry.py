"""The console script `hybrid-weather`: the CLI, in a process that pauses the garbage collector.

A one-shot run builds its tables once and exits: nothing it allocates is garbage before the end, and
collecting while the tables are built cost about a fifth of a cold run. `chat` turns it back on.
"""

from __future__ import annotations

import gc


def main() -> None:
    gc.disable()
    from .cli import cli  # after gc.disable(): the imports allocate as much as the tables

    cli()
