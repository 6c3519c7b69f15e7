"""The console script `hybrid-weather`: the CLI, in a process that pauses the garbage collector.

A one-shot run builds its tables once and exits: nothing it allocates is garbage before the end, and
collecting while the tables are built cost about a fifth of a cold run. `chat` turns it back on.
SIGTERM exits through the same path as an error, so the ledger is flushed.
"""

from __future__ import annotations

import gc
import signal
import sys
from types import FrameType


def main() -> None:
    gc.disable()
    # SIGTERM (docker stop, systemd, Kubernetes) ends the run as Ctrl-C would: the router is closed on the
    # way out, so the ledger is flushed instead of lost.
    signal.signal(signal.SIGTERM, _exit_on_signal)
    from .cli import cli  # after gc.disable(): the imports allocate as much as the tables

    cli()


def _exit_on_signal(number: int, frame: FrameType | None) -> None:
    sys.exit(128 + number)
