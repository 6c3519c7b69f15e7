"""What stands before every route: the key check (every path but the few on the open list) and the
deadline for a request's body.

The check is here, around the whole app, so a route added to the table is guarded without a line of its
own; a handler that must answer anyone is named in OPEN_PATHS, where a reviewer sees it.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from starlette.datastructures import Headers
from starlette.requests import cookie_parser
from starlette.responses import HTMLResponse

from .access import COOKIE
from .errors import ApiError

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

    from .access import Access

#: Paths anyone may ask, keys or not: the health checks (/readyz says only ok or not ok per check to a
#: caller without a key) and the dashboard's login form, which is how a browser gets a key's cookie.
OPEN_PATHS = frozenset({"/healthz", "/readyz", "/login"})
#: The key of the lifespan state (app.Service.lifespan) that tells the server's connections their header
#: timeout in seconds (connection.py).
HEADER_TIMEOUT_STATE = "hybrid_weather.header_timeout_s"
#: Methods the dashboard's cookie opens: reading (the page and its reports), never a request that spends.
COOKIE_METHODS = frozenset({"GET", "HEAD"})


class Guard:
    """ASGI middleware: a request to a path not in OPEN_PATHS needs an accepted key (Bearer header, or the
    dashboard's cookie for a GET) and a token of its rate; else 401 or 429 as an OpenAI-style error, or
    the login form for a browser. `scope["state"]["caller"]` holds who asked (a key's hash prefix, the
    address when keys are off) or, on an open path, the accepted key's digest or None."""

    def __init__(self, app: ASGIApp, access: Access, login_page: Any) -> None:
        self.app = app
        self.access = access
        self.login_page = login_page

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        cookie = None
        if scope["method"] in COOKIE_METHODS and "cookie" in headers:
            cookie = cookie_parser(headers["cookie"]).get(COOKIE)
        state = scope.setdefault("state", {})
        client = scope["client"][0] if scope.get("client") else "-"
        if scope["path"] in OPEN_PATHS:
            state["caller"] = self.access.identify_open(headers.get("authorization"), cookie, client)
            await self.app(scope, receive, send)
            return
        try:
            state["caller"] = self.access.check(headers.get("authorization"), client, cookie)
        except ApiError as error:
            if error.status == 401 and scope["method"] in COOKIE_METHODS and "text/html" in headers.get("accept", ""):
                page = HTMLResponse(
                    self.login_page(root=scope.get("root_path", "")),
                    status_code=401,
                    headers={"cache-control": "no-store"},
                )
                await page(scope, receive, send)
            else:
                await error.response()(scope, receive, send)
            return
        await self.app(scope, receive, send)


class BodyDeadline:
    """ASGI middleware: a request's body must have arrived within SECONDS of its head, or the request is
    answered 408 and its connection closed. One deadline for the whole body, not one a piece: a client
    that sends a byte a second would pass any per-piece timeout."""

    def __init__(self, app: ASGIApp, seconds: float) -> None:
        self.app = app
        self.seconds = seconds

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        clock = _BodyClock(receive, self.seconds)
        try:
            await self.app(scope, clock.receive, send)
        finally:
            clock.stop()  # an app that answered without reading the whole body leaves no timer behind


class _BodyClock:
    """One request's receive(), held to its body's deadline by one timer: armed when the app first asks for
    the body, cancelled once the body is whole. Past the deadline the timer cancels the task waiting in
    receive(), which turns that cancellation into the 408. A body that came with its head (most do) costs
    the arming of a timer, not a task and a timer for every receive() as asyncio.wait_for would."""

    __slots__ = ("_deadline", "_expired", "_receive", "_seconds", "_timer", "_waiting", "_whole")

    def __init__(self, receive: Receive, seconds: float) -> None:
        self._receive = receive
        self._seconds = seconds
        self._deadline = asyncio.get_running_loop().time() + seconds  # from the head's arrival
        self._timer: asyncio.TimerHandle | None = None
        self._waiting: asyncio.Task[Any] | None = None
        self._expired = self._whole = False

    async def receive(self) -> Message:
        if self._whole:  # after the body, receive() waits for a disconnect (streamed answers): no deadline
            return await self._receive()
        if self._expired:
            raise self._timed_out()
        if self._timer is None:
            self._timer = asyncio.get_running_loop().call_at(self._deadline, self._expire)
        self._waiting = asyncio.current_task()
        try:
            message = await self._receive()
        except asyncio.CancelledError:
            if not self._cancelled_by_deadline():
                raise
            raise self._timed_out() from None
        finally:
            self._waiting = None
        if message["type"] != "http.request" or not message.get("more_body", False):
            self._whole = True
            self.stop()
        return message

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _cancelled_by_deadline(self) -> bool:
        """Whether the cancellation receive() got is the deadline's alone: one from elsewhere as well (Python
        >= 3.11 counts them) is passed on as it came."""
        if not self._expired:
            return False
        uncancel = getattr(self._waiting, "uncancel", None)
        return uncancel is None or uncancel() == 0

    def _expire(self) -> None:
        self._timer = None
        self._expired = True
        if self._waiting is not None:
            self._waiting.cancel()

    def _timed_out(self) -> ApiError:
        return ApiError(
            408,
            "invalid_request_error",
            f"the request's body did not arrive within {self._seconds:g} s",
            "body_timeout",
            {"connection": "close"},
        )
