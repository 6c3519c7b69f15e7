"""The console script `hybrid-weather`: the CLI, in a process that pauses the garbage collector.

A one-shot run builds its tables once and exits: nothing it allocates is garbage before the end, and
collecting while the tables are built would be a sizeable share of a cold run. `chat` turns it back on.
SIGTERM exits through the same path as an error, so the ledger is flushed.

At the end the process flushes its output, runs its exit handlers (the ledger's close among them) and
leaves with os._exit: tearing down the interpreter's modules and the tables one object at a time bought
nothing and cost a tenth of a cold run.
"""

from __future__ import annotations

import atexit
import gc
import os
import signal
import sys
from types import FrameType


def main() -> None:
    gc.disable()
    # SIGTERM (docker stop, systemd, Kubernetes) ends the run as Ctrl-C would: the router is closed on the
    # way out, so the ledger is flushed instead of lost.
    signal.signal(signal.SIGTERM, _exit_on_signal)
    from .cli import cli  # after gc.disable(): the imports allocate as much as the tables

    try:
        cli()
        code = 0
    except SystemExit as exit_:  # click ends every run this way
        code = _exit_code(exit_.code)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe (| head): the output went as far as it could
            code = code or 1
    atexit._run_exitfuncs()  # what the interpreter would run on the way out, before os._exit skips the rest
    os._exit(code)


def _exit_code(code: object) -> int:
    """A SystemExit's code as the process's, as the interpreter turns it: None 0, an int itself, else 1
    (after printing it, as Python does)."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def _exit_on_signal(number: int, frame: FrameType | None) -> None:
    sys.exit(128 + number)
