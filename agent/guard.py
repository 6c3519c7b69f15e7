"""A transport that holds other people's servers to a deadline and a size, for every HTTP client here.

A read timeout restarts with every byte, so a server that drips its body outlives any timeout; and a
small gzip body can inflate to gigabytes. GuardedTransport wraps an httpx2 transport:
- the whole exchange ends by the deadline the caller set with `deadline()`: a watchdog closes the
  connection when it passes, whatever the server is doing (the caller sees a ReadTimeout);
- the body is decompressed here, as it is read, and reading stops past `max_bytes` of decoded data
  (the caller sees a BodyTooLarge transport error);
- a redirect to another scheme or host is refused (RedirectRefused), and no redirect is followed.
The weather client and the OpenAI SDK's client both sit on it.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import threading
import time
import zlib
from collections.abc import Iterator
from typing import Any

import httpx2

#: Decoded bytes a weather reply may have (Open-Meteo's biggest, 16 days of hours, is ~100 kB).
WEATHER_MAX_BYTES = 2 * 1024 * 1024
#: Decoded bytes an LLM reply may have.
LLM_MAX_BYTES = 4 * 1024 * 1024
_CHUNK = 64 * 1024
_DEADLINE: contextvars.ContextVar[float | None] = contextvars.ContextVar("hybrid_weather_deadline", default=None)


class BodyTooLarge(httpx2.TransportError):
    """The reply's decoded body passed the size cap."""


class RedirectRefused(httpx2.TransportError):
    """The server redirected the request; hybrid-weather follows none (another host could be anyone)."""


class NotJSON(ValueError):
    """A body that is not JSON hybrid-weather can read; the message says how, never what it held."""


def read_json(content: bytes) -> Any:
    """CONTENT parsed as JSON, or NotJSON: not JSON at all, or nested too deep for the parser."""
    try:
        return json.loads(content)
    except RecursionError:  # [[[[…]]]] 100,000 deep
        raise NotJSON("JSON nested too deep to read") from None
    except ValueError:
        raise NotJSON(f"a body that is not JSON ({len(content)} bytes)") from None


@contextlib.contextmanager
def deadline(at: float) -> Iterator[None]:
    """Requests made inside end by AT (time.monotonic()), body included."""
    token = _DEADLINE.set(at)
    try:
        yield
    finally:
        _DEADLINE.reset(token)


class GuardedTransport(httpx2.BaseTransport):
    """Wraps INNER with the deadline, the size cap and the redirect rule above."""

    def __init__(self, inner: httpx2.BaseTransport | None = None, *, max_bytes: int, label: str) -> None:
        self._inner = inner or httpx2.HTTPTransport()
        self.max_bytes = max_bytes
        self.label = label

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        at = _DEADLINE.get()
        response = self._inner.handle_request(request)
        if 300 <= response.status_code < 400 and "location" in response.headers:
            response.close()
            target = httpx2.URL(request.url).join(response.headers["location"])
            where = (
                "another host" if (target.scheme, target.host) != (request.url.scheme, request.url.host) else "itself"
            )
            raise RedirectRefused(
                f"{self.label} redirected to {where} ({target.scheme}://{target.host}): its server is misconfigured "
                "or not the service it should be; hybrid-weather follows no redirects",
                request=request,
            )
        encoding = response.headers.get("content-encoding", "identity").lower()
        headers = [(k, v) for k, v in response.headers.raw if k.lower() not in (b"content-encoding", b"content-length")]
        stream = _GuardedStream(response.stream, encoding, at, self.max_bytes, self.label, request)
        return httpx2.Response(response.status_code, headers=headers, stream=stream, extensions=response.extensions,
                               request=request)  # fmt: skip

    def close(self) -> None:
        self._inner.close()


class _GuardedStream(httpx2.SyncByteStream):
    def __init__(self, inner: Any, encoding: str, at: float | None, max_bytes: int, label: str,
                 request: httpx2.Request) -> None:  # fmt: skip
        self._inner, self._at, self._max, self._label, self._request = inner, at, max_bytes, label, request
        self._decoder = _decoder(encoding)
        self._expired = threading.Event()
        self._watchdog: threading.Timer | None = None
        if at is not None:
            self._watchdog = threading.Timer(max(0.0, at - time.monotonic()), self._expire)
            self._watchdog.daemon = True
            self._watchdog.start()

    def _expire(self) -> None:
        self._expired.set()
        with contextlib.suppress(Exception):
            self._inner.close()  # unblocks the read that is waiting on the server

    def __iter__(self) -> Iterator[bytes]:
        size = 0
        try:
            for chunk in self._inner:
                self._check_time()
                data = self._decoder.decompress(chunk, self._max - size + 1) if self._decoder else chunk
                size += len(data)
                if size > self._max or (self._decoder and self._decoder.unconsumed_tail):
                    raise BodyTooLarge(f"{self._label} sent more than {self._max // 1024} kB", request=self._request)
                if data:
                    yield data
        except (BodyTooLarge, httpx2.TimeoutException):
            raise
        except Exception as error:
            if self._expired.is_set():
                raise httpx2.ReadTimeout(
                    f"{self._label} did not finish within the deadline", request=self._request
                ) from None
            if isinstance(error, zlib.error):
                raise httpx2.DecodingError(f"{self._label} sent a body that does not decompress: {error}",
                                           request=self._request) from None  # fmt: skip
            raise
        self._check_time()

    def _check_time(self) -> None:
        if self._expired.is_set() or (self._at is not None and time.monotonic() > self._at):
            raise httpx2.ReadTimeout(f"{self._label} did not finish within the deadline", request=self._request)

    def close(self) -> None:
        if self._watchdog is not None:
            self._watchdog.cancel()
        self._inner.close()


def _decoder(encoding: str) -> Any:
    if encoding in ("gzip", "x-gzip"):
        return zlib.decompressobj(16 + zlib.MAX_WBITS)
    if encoding == "deflate":
        return zlib.decompressobj()
    return None
