"""`hybrid-weather ledger migrate`: a SQLite ledger's rows copied into PostgreSQL, idempotently."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hybrid_weather.agent.errors import LedgerUnavailable

from ...settings import redact
from .rows import COLUMNS

#: Rows read and written per transaction.
CHUNK = 5_000
# query_sha256: the hash of rows from before m005, copied as it is.
_COPIED = (*COLUMNS, "query_sha256")
_JSON = {"places", "unknown_words", "invalid"}
#: What every ledger has held since its first schema: a table without them is no ledger of ours.
_FIRST_COLUMNS = frozenset({"id", "datetime_utc", "route", "outcome", "cost_usd"})


@dataclass(frozen=True, slots=True)
class Transfer:
    source: str
    target: str
    read: int  #: rows in the SQLite ledger
    copied: int  #: rows PostgreSQL did not hold yet
    same_key: bool  #: whether both ledgers hash queries with the same secret (repeats match across them)

    def to_json(self) -> dict[str, Any]:
        return {
            "from": self.source,
            "to": self.target,
            "read": self.read,
            "copied": self.copied,
            "already_there": self.read - self.copied,
            "same_hash_key": self.same_key,
        }

    def summary(self) -> str:
        """What `ledger migrate` says it did."""
        rows = "row" if self.read == 1 else "rows"
        said = f"Copied {self.copied:,} of {self.read:,} {rows} from {self.source} to {self.target}"
        if self.read > self.copied:
            said += f" ({self.read - self.copied:,} were already there)"
        said += "."
        if not self.same_key:
            said += (
                "\nNote: the two ledgers hash questions with different keys, so repeats are counted apart across them."
            )
        return said


def copy_to_postgres(source: Path, url: str) -> Transfer:
    """Every row of the SQLite ledger at SOURCE stored in the PostgreSQL ledger at URL (created if need be);
    rows it already holds (same id) are skipped, so running it twice copies nothing twice. A new
    PostgreSQL ledger takes the SQLite ledger's hashing secret, so repeats keep matching."""
    from .postgres_db import PostgresDatabase, migrate_postgres

    path = source.expanduser()
    if not path.is_file():
        raise LedgerUnavailable(f"there is no SQLite ledger at {path}; give its path with --from")
    try:
        lite = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        # Read as it is, not migrated (read-only): a ledger this version has not opened yet lacks the newest
        # columns, which the copies then take at their defaults, as rows stored before them did.
        held = {row[1] for row in lite.execute("PRAGMA table_info(requests)")}
    except sqlite3.Error as error:
        raise LedgerUnavailable(f"{path} is not a hybrid-weather ledger ({error})") from None
    if not _FIRST_COLUMNS.issubset(held):
        lite.close()
        raise LedgerUnavailable(f"{path} is not a hybrid-weather ledger (no requests table of ours)")
    copied_columns = tuple(column for column in _COPIED if column in held)
    target = PostgresDatabase(url)
    key_file = path.with_name(path.name + ".key")
    try:
        with target.connect() as db:
            migrate_postgres(db)
            if key_file.is_file():
                db.execute(
                    "INSERT INTO _hybrid_weather_settings VALUES ('hmac_secret', %s) ON CONFLICT DO NOTHING",
                    (key_file.read_text("ascii").strip(),),
                )
        secret = target.open()
        read = copied = 0
        with target.writer() as db:
            cursor = lite.execute(f"SELECT {', '.join(copied_columns)} FROM requests ORDER BY id")
            while rows := cursor.fetchmany(CHUNK):
                portable = [_portable(copied_columns, row) for row in rows]
                copied += target.write(db, portable, columns=copied_columns)
                read += len(rows)
    except target.unusable as error:
        raise LedgerUnavailable(f"the ledger at {target.location} cannot be used: {error}") from None
    finally:
        lite.close()
    same_key = key_file.is_file() and key_file.read_text("ascii").strip() == secret.hex()
    return Transfer(str(path), redact(url), read, copied, same_key)


def _portable(columns: tuple[str, ...], row: tuple[Any, ...]) -> tuple[Any, ...]:
    """ROW (of COLUMNS) as PostgreSQL takes it: no NUL in text, and JSON columns that are JSON."""
    values = []
    for column, value in zip(columns, row, strict=True):
        if isinstance(value, str):
            value = value.replace("\x00", "\ufffd")
            if column in _JSON:
                try:
                    json.loads(value)
                except ValueError:
                    value = json.dumps(value, ensure_ascii=False)
        values.append(value)
    return tuple(values)
