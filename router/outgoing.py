"""The one boundary free text crosses to leave the process: ledger columns, trace attributes, log lines and error
bodies all pass a request's text through Outgoing, which masks it with the one masker (rules/privacy.py) and,
when the ledger keeps no words of questions (HYBRID_WEATHER_LEDGER_QUERIES=hash), keeps of a reason only the
router's own labels. A new exporter takes its text from here, so no column or attribute is masked by a rule
of its own (the ledger masked `reason`, the spans did not: a phone number in a context clause reached them)."""

from __future__ import annotations

import functools
import logging

from hybrid_weather.rules.privacy import mask_personal_data

from .understand.decision import reason_labels

#: What a ledger stores of a question: the question masked, or only its keyed hash (docs/ledger.md, "Privacy").
QUERY_STORAGE = ("masked", "hash")
#: How many distinct texts a boundary keeps masked: questions, reasons and place lists repeat all day.
_MEMO_SIZE = 4096


class Outgoing:
    """Masks what leaves the process for one router (or ledger) configured with STORE_QUERIES."""

    def __init__(self, store_queries: str = "masked") -> None:
        if store_queries not in QUERY_STORAGE:
            raise ValueError(f"store_queries must be one of {QUERY_STORAGE}")
        #: Whether nothing of a question's words may leave: its reason then keeps only the router's labels.
        self.hashed = store_queries == "hash"
        # functools' cache is in C: a repeated text costs a look-up, not the masker's scans.
        self.text = functools.lru_cache(maxsize=_MEMO_SIZE)(mask_personal_data)
        self.reason = functools.lru_cache(maxsize=_MEMO_SIZE)(self._reason)

    def _reason(self, reason: str) -> str:
        return self.text(reason_labels(reason) if self.hashed else reason)


class MaskedRecords(logging.Filter):
    """A log record's message and traceback with personal data masked: an error's text may quote a request."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        masked = mask_personal_data(message)
        if masked != message:
            record.msg, record.args = masked, None
        if record.exc_info and not record.exc_text:
            # The handler prints exc_text when it is set: the traceback's messages, masked as the line is.
            record.exc_text = mask_personal_data(logging.Formatter().formatException(record.exc_info))
        return True


def mask_logs(logger: logging.Logger) -> None:
    """Pass every record LOGGER makes through MaskedRecords (once, however often a router is built)."""
    if not any(isinstance(each, MaskedRecords) for each in logger.filters):
        logger.addFilter(MaskedRecords())
