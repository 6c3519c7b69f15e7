"""What users said of answers: one verdict a request (the last one given), kept beside the ledger's rows."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from hybrid_weather.rules.privacy import mask_personal_data

from .rollup import execute, moment, query

VERDICTS = ("wrong", "right")
#: A comment past this is cut: a verdict's reason, not a document.
MAX_COMMENT_CHARS = 1_000
#: What a request id looks like (entry.RequestIds); anything else is no id of ours, refused before a query.
REQUEST_ID = re.compile(r"[0-9a-f]{22}")


def record_feedback(db: Any, request_id: str, verdict: str, comment: str | None) -> bool:
    """VERDICT (and COMMENT, masked) on the request REQUEST_ID, replacing an earlier one; False when the
    ledger holds no such request."""
    if not query(db, "SELECT 1 FROM requests WHERE id = ?", (request_id,)):
        return False
    said = mask_personal_data(comment[:MAX_COMMENT_CHARS]) if comment else None
    execute(
        db,
        "INSERT INTO feedback (request_id, verdict, comment, datetime_utc) VALUES (?, ?, ?, ?) ON CONFLICT "
        "(request_id) DO UPDATE SET verdict = excluded.verdict, comment = excluded.comment, "
        "datetime_utc = excluded.datetime_utc",
        (request_id, verdict, said, moment(db, dt.datetime.now(dt.timezone.utc))),
    )
    return True
