"""What users said of answers: one verdict a request (the last one given), kept beside the ledger's rows.

A verdict may come before its row is stored: `serve --workers 2` answers on one worker, its row waits in
that worker's queue (or the spool, while the database is away) and the verdict reaches the other. Such a
verdict, on an id made in the last PENDING_FEEDBACK_S, waits in `pending_feedback`, and the row's insert
applies it (a trigger, migration m010), in whichever process writes the row; one whose row has not landed
within PENDING_FEEDBACK_S of the verdict is dropped. A verdict given with a CALLER (a key) applies only to
that caller's rows: another's row, stored or pending, is as unknown as an id nobody was given.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import re
import sqlite3
import time
from collections.abc import Iterator
from typing import Any, Literal

from hybrid_weather.rules.privacy import mask_personal_data

from .rollup import execute, moment, query

VERDICTS = ("wrong", "right")
#: A comment past this is cut: a verdict's reason, not a document.
MAX_COMMENT_CHARS = 1_000
#: What a request id looks like (entry.RequestIds); anything else is no id of ours, refused before a query.
REQUEST_ID = re.compile(r"[0-9a-f]{22}")
#: Seconds a verdict waits for its row, and how old (by its id) a request may be for its verdict to wait: a
#: row is queued for 0.1 s, but spooled for as long as the database is away.
PENDING_FEEDBACK_S = 600.0
#: Seconds an id's time may be ahead of this clock (another host's) and still be one we could have made.
_CLOCK_SKEW_S = 60.0

Outcome = Literal["kept", "pending", "unknown"]


def record_feedback(db: Any, request_id: str, verdict: str, comment: str | None, caller: str | None = None) -> Outcome:
    """VERDICT (and COMMENT, masked) on the request REQUEST_ID, replacing an earlier one: "kept"; "pending"
    when its row may still be on its way (it is applied when the row lands); "unknown" when the ledger holds
    no such request, or none of CALLER's (None: any caller's)."""
    said = mask_personal_data(comment[:MAX_COMMENT_CHARS]) if comment else None
    now = time.time()
    given = (request_id, caller or "", verdict, said, moment(db, dt.datetime.fromtimestamp(now, dt.timezone.utc)))
    if _settle(db, request_id, [given]):
        return "kept"
    arrived = int(request_id[:12], 16) / 1000
    if not now - PENDING_FEEDBACK_S <= arrived <= now + _CLOCK_SKEW_S:
        return "unknown"
    execute(db, "DELETE FROM pending_feedback WHERE expires <= ?", (now,))
    execute(
        db,
        "INSERT INTO pending_feedback (request_id, caller, verdict, comment, datetime_utc, expires)"
        " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (request_id, caller) DO UPDATE SET verdict = excluded.verdict,"
        " comment = excluded.comment, datetime_utc = excluded.datetime_utc, expires = excluded.expires",
        (*given, now + PENDING_FEEDBACK_S),
    )
    # The row may have landed between the first look and the insert, its trigger finding nothing: look again
    # once no insert whose trigger ran before this verdict was committed is still uncommitted.
    with _pending_lock(db):
        found = query(db, "SELECT caller FROM requests WHERE id = ?", (request_id,))
        if not found:
            return "pending"
        pending = query(
            db,
            "SELECT request_id, caller, verdict, comment, datetime_utc FROM pending_feedback WHERE request_id = ?"
            " ORDER BY datetime_utc",
            (request_id,),
        )
        _settle(db, request_id, [tuple(row) for row in pending])
        execute(db, "DELETE FROM pending_feedback WHERE request_id = ?", (request_id,))
    # Stored now, by this or by the row's trigger, when the row is the caller's.
    return "kept" if (caller or "") in ("", found[0][0]) else "unknown"


def _settle(db: Any, request_id: str, verdicts: list[tuple[Any, ...]]) -> bool:
    """VERDICTS (request id, caller, verdict, comment, when; the last one given last) stored on REQUEST_ID's
    row, those of its caller or of '' (any caller's); whether the row is stored and the last one was."""
    found = query(db, "SELECT caller FROM requests WHERE id = ?", (request_id,))
    if not found:
        return False
    kept = False
    for _, caller, verdict, said, when in verdicts:
        kept = caller in ("", found[0][0])
        if kept:
            execute(
                db,
                "INSERT INTO feedback (request_id, verdict, comment, datetime_utc) VALUES (?, ?, ?, ?) ON CONFLICT "
                "(request_id) DO UPDATE SET verdict = excluded.verdict, comment = excluded.comment, "
                "datetime_utc = excluded.datetime_utc",
                (request_id, verdict, said, when),
            )
    return kept


@contextlib.contextmanager
def _pending_lock(db: Any) -> Iterator[None]:
    """One transaction that no insert of rows runs beside: SQLite's write lock; in PostgreSQL the lock every
    insert's pending-feedback trigger holds shared (postgres_db.PENDING_LOCK), so an insert that looked for
    pending verdicts before this one's was committed has committed its rows by now."""
    if isinstance(db, sqlite3.Connection):
        db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")
        return
    from .postgres_db import PENDING_LOCK

    with db.transaction():
        db.execute("SELECT pg_advisory_xact_lock(%s)", (PENDING_LOCK,))
        yield
