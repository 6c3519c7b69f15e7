"""HybridRouter: the one long-lived object a program keeps."""

from __future__ import annotations

import datetime as dt
import threading

from ._decision import Decision
from ._parser import QueryParser

_CHINA_TIME = dt.timezone(dt.timedelta(hours=8))  # Asia/Shanghai has no daylight saving time


def today_in_china() -> dt.date:
    return dt.datetime.now(_CHINA_TIME).date()


class HybridRouter:
    """Routes questions and answers the simple ones. Thread-safe; build one and share it."""

    def __init__(self) -> None:
        self._parser: QueryParser | None = None
        self._parser_lock = threading.Lock()

    @property
    def parser(self) -> QueryParser:
        # Built on first use, not in __init__, so constructing a router costs nothing until it routes.
        if self._parser is None:
            with self._parser_lock:
                if self._parser is None:
                    self._parser = QueryParser()
        return self._parser

    def route(self, text: str, *, today: dt.date | None = None, session: object | None = None) -> Decision:
        """Decide what to do with TEXT: no I/O, never raises for any str."""
        return self.parser.parse(text if isinstance(text, str) else str(text), today or today_in_china())
