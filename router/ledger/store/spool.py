"""Where rows go when the ledger cannot take them: a JSON Lines file, one stored row per line.

Rows are appended already formatted (masked, hashed), so a spool holds nothing the ledger would not.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import os
import secrets
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...settings import is_postgres
from .rows import COLUMNS, RowFormat, load_secret

if TYPE_CHECKING:
    from ..entry import LedgerEntry
    from .rows import Row

logger = logging.getLogger("hybrid_weather")


class Spool:
    """An append-only JSON Lines file of rows. Thread-safe."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.rows = 0  #: rows this process has spooled
        self._lock = threading.Lock()

    def append(self, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
        """Append ROWS; raises OSError when even the spool cannot be written.

        Many processes append to one spool and any of them may take() it: each append holds an exclusive
        lock on the file and checks that the file it locked is still the one at PATH (not one a take()
        renamed away meanwhile, whose rows are already read), so no line is interleaved or lost."""
        data = "".join(json.dumps(dict(zip(columns, row, strict=True)), ensure_ascii=False) + "\n" for row in rows)
        self._append(data.encode("utf-8"))
        self.rows += len(rows)

    def _append(self, data: bytes) -> None:
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            while True:
                fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX)
                    if _same_file(fd, self.path):
                        _write_all(fd, data)
                        os.fsync(fd)
                        return
                finally:
                    os.close(fd)  # and the lock with it

    def secret(self) -> bytes:
        """The hashing key of rows spooled before any ledger could be reached, kept beside the spool (one
        for every process that spools there); a fresh one when even that cannot be written (rows stay
        unlinkable even to each other)."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            return load_secret(self.path.with_name(self.path.name + ".key"))
        except OSError:
            return load_secret(None)

    def take(self) -> list[dict[str, Any]]:
        """Every row spooled so far (by any process), moved out of the file: the file is renamed under its
        lock, so rows appended meanwhile start a new one. A line that is not a whole row (a write cut
        short) is put back for the next time rather than lost."""
        taken = self.path.with_name(f"{self.path.name}.{os.getpid()}.{secrets.token_hex(4)}.replaying")
        with self._lock:
            try:
                fd = os.open(self.path, os.O_RDONLY)
            except FileNotFoundError:
                return []
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                if not _same_file(fd, self.path):
                    return []  # another process took it first
                os.rename(self.path, taken)
            finally:
                os.close(fd)
        rows, broken = [], []
        with taken.open(encoding="utf-8", errors="replace") as file:
            for line in file:
                try:
                    row = json.loads(line)
                except ValueError:
                    broken.append(line)
                    continue
                if isinstance(row, dict) and isinstance(row.get("id"), str):
                    rows.append(row)
        if broken:
            self._append("".join(line if line.endswith("\n") else line + "\n" for line in broken).encode("utf-8"))
        taken.unlink()
        return rows

    def holds_rows(self) -> bool:
        """Whether the file has anything in it (one stat, not a read)."""
        try:
            return self.path.stat().st_size > 0
        except OSError:
            return False

    def count(self) -> int:
        """Rows waiting in the file now (lines), 0 when there is none."""
        try:
            with self.path.open("rb") as file:
                return sum(1 for _ in file)
        except FileNotFoundError:
            return 0


class Spooler:
    """Where a Ledger's rows go when its database cannot take them now: formatted as the writer formats
    them, appended to the spool file, and written back by the writer once the database answers (`due`).
    `problem` keeps the first thing that went wrong writing rows, for the CLI to say once."""

    def __init__(
        self, spool: Spool, row_format: RowFormat, *, stray: Path | None = None, problem: str | None = None
    ) -> None:
        self.spool = spool
        # Its own, and the file rows went to while the ledger's folder could not be written: replayed alike.
        self.spools = (spool,) + ((Spool(stray),) if stray is not None and stray != spool.path else ())
        self.problem = problem
        self.due = True  #: rows may wait in a spool: looked for at start, and whenever the database is back
        self._format = row_format
        # The format is the writer's, but rows that overflow are formatted by the thread that records them:
        # whoever formats holds this (uncontended but for an overflow: one acquire a batch).
        self._formatting = threading.Lock()

    def rows(self, entries: list[LedgerEntry]) -> list[Row]:
        """The stored rows of ENTRIES, masked and hashed."""
        with self._formatting:
            return self._format.rows(entries)

    def use_secret(self, secret: bytes) -> None:
        """Hash with the database's key from now on (rows spooled before it was reached used a local one)."""
        with self._formatting:
            self._format.secret = secret

    def keep(self, entries: list[LedgerEntry], why: str) -> None:
        """ENTRIES spooled, for WHY (said once, as `problem`)."""
        if entries:
            self.keep_rows(self.rows(entries), why)

    def keep_rows(self, rows: Sequence[tuple[object, ...]], why: str) -> None:
        """ROWS, formatted already, spooled for WHY; logged as lost when even the spool cannot be written."""
        if not rows:
            return
        try:
            self.spool.append(COLUMNS, rows)
        except OSError as error:
            logger.error(
                "ledger: %s, and the spool %s cannot be written (%s): %d rows lost",
                why,
                self.spool.path,
                error,
                len(rows),
            )
            self.note(f"{why}; the spool {self.spool.path} cannot be written either: {len(rows)} rows lost")
            return
        self.due = True  # by the writer once the database answers, and by close() at the latest
        logger.warning("ledger: %s; %d rows kept in %s", why, len(rows), self.spool.path)
        self.note(f"{why}; rows kept in {self.spool.path}")

    def note(self, problem: str) -> None:
        """PROBLEM, if it is the first."""
        if self.problem is None:
            self.problem = problem

    def waiting(self) -> bool:
        """Whether rows wait in a spool (one stat a file, not a read)."""
        return any(spool.holds_rows() for spool in self.spools)

    def count(self) -> int:
        """Rows waiting in the spools."""
        return sum(spool.count() for spool in self.spools)

    def take(self) -> list[tuple[object, ...]]:
        """Every row spooled so far, by any process, moved out of the spools, as rows to write."""
        return [tuple(row.get(column) for column in COLUMNS) for spool in self.spools for row in spool.take()]


def _same_file(fd: int, path: Path) -> bool:
    try:
        return os.fstat(fd).st_ino == os.stat(path).st_ino
    except FileNotFoundError:
        return False


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def spool_path(ledger: str, home: Path | None = None) -> Path:
    """Beside a SQLite ledger file when its folder can be written, else its stray_spool() (a folder not made
    yet included: nothing is made here); for a PostgreSQL ledger, one file per database in HOME (the data folder),
    else in the temporary folder. Each ledger has its own: a spool's rows are replayed into the ledger
    they were meant for, never into another."""
    if is_postgres(ledger):
        digest = hashlib.sha256(ledger.encode("utf-8")).hexdigest()[:12]
        return (home or _temporary_folder()) / f"hybrid-weather-{os.getuid()}-postgresql-{digest}.spool.jsonl"
    if ledger == ":memory:":
        return _temporary_folder() / f"hybrid-weather-{os.getuid()}-memory.spool.jsonl"
    beside = Path(ledger).expanduser()
    folder = beside.parent
    if folder.is_dir() and os.access(folder, os.W_OK) and not beside.is_dir():
        return beside.with_name(beside.name + ".spool.jsonl")
    return _stray(ledger)


def stray_spool(ledger: str) -> Path | None:
    """Where rows of the SQLite ledger at LEDGER wait when its folder cannot hold them, which that ledger
    replays once it can be written; None for a PostgreSQL or in-memory ledger (no folder of its own)."""
    return None if is_postgres(ledger) or ledger == ":memory:" else _stray(ledger)


def _stray(ledger: str) -> Path:
    """A file in the temporary folder named after the SQLite ledger's path."""
    where = str(Path(ledger).expanduser().absolute())
    digest = hashlib.sha256(where.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    return _temporary_folder() / f"hybrid-weather-{os.getuid()}-sqlite-{digest}.spool.jsonl"


def unclaimed_spool() -> Path:
    """The one spool every SQLite ledger that could not write its folder shared in earlier versions: which
    ledger its rows were for cannot be told, so none replays them (`ledger status` names the file)."""
    return _temporary_folder() / f"hybrid-weather-{os.getuid()}-ledger.spool.jsonl"


def _temporary_folder() -> Path:
    """The temporary folder as tempfile.gettempdir() finds it on Unix ($TMPDIR, $TEMP, $TMP, else /tmp),
    without tempfile's import: every SQLite ledger's writer looks for its stray spool as it starts, on the
    path of a one-shot CLI answer. A folder that cannot be written fails the spool's write, which says so."""
    for name in ("TMPDIR", "TEMP", "TMP"):
        if folder := os.environ.get(name):
            return Path(folder)
    return Path("/tmp")
