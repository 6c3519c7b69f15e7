"""uvicorn's HTTP protocol with a deadline for a request's head.

uvicorn times out an idle kept-alive connection, but not a client that opens one and sends its request
line and headers a byte at a time (slow loris): each byte restarts nothing and the connection is held for
good. Here a connection gets the app's header timeout (Settings.header_timeout, handed over in the
lifespan's state) from its first byte — or from its opening, for one that sends nothing — until its
head is whole; past it the client gets a 408 and the connection is closed. The body's deadline is an ASGI
matter (guard.BodyDeadline).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from ..settings import DEFAULT_HEADER_TIMEOUT
from .guard import HEADER_TIMEOUT_STATE

logger = logging.getLogger("hybrid_weather")

_TIMED_OUT = b"HTTP/1.1 408 Request Timeout\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"


class HeadDeadlineProtocol(HttpToolsProtocol):
    """HttpToolsProtocol (uvicorn's default where httptools is installed, as `serve`'s extra ensures) that
    closes a connection whose request head is not whole within the header timeout.

    One timer a connection, not one a request: a head's start is noted (a clock read), and the timer, when
    it fires, looks at the head then on its way. One that began after the timer was set is given its own
    full time (the timer is set again for it); none on its way leaves the timer unset until the next head
    begins. A kept-alive connection asking without pause sets a timer once every header timeout."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._head_deadline: asyncio.TimerHandle | None = None
        self._head_since: float | None = None  # when the head on its way began (loop time); None: none is

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._head_began()  # a connection that never sends a byte is held to the deadline too

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._head_began()  # the next request on a kept-alive connection

    def on_headers_complete(self) -> None:
        self._head_since = None
        super().on_headers_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        self._head_since = None
        if self._head_deadline is not None:
            self._head_deadline.cancel()
            self._head_deadline = None
        super().connection_lost(exc)

    def _head_began(self) -> None:
        self._head_since = self.loop.time()
        if self._head_deadline is None:
            self._watch(self._head_since)

    def _watch(self, since: float) -> None:
        seconds = float(self.app_state.get(HEADER_TIMEOUT_STATE, DEFAULT_HEADER_TIMEOUT))
        self._head_deadline = self.loop.call_at(since + seconds, self._look, seconds)

    def _look(self, seconds: float) -> None:
        self._head_deadline = None
        since = self._head_since
        if since is None:  # no head on its way: the next one sets the timer
            return
        if self.loop.time() - since < seconds:  # a head that began after this timer was set: its own time
            self._watch(since)
            return
        self._head_timed_out(seconds)

    def _head_timed_out(self, seconds: float) -> None:
        if self.transport.is_closing():
            return
        logger.warning("closed a connection from %s: its request head took over %g s", self._peer(), seconds)
        if self.cycle is None or self.cycle.response_complete:  # no answer of ours is on its way
            self.transport.write(_TIMED_OUT)
        self.transport.close()

    def _peer(self) -> str:
        return self.client[0] if self.client else "-"
