"""HTTP for the weather providers: timeouts, retries with full jitter, a deadline and a circuit breaker.

Retried: timeouts, refused or failed connections, 429 and 5xx. Not retried: other 4xx (the request is
wrong and will stay wrong) and bodies that are not JSON (a provider that sends garbage sends it again).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from ..errors import (
    CircuitOpen,
    ConfigurationError,
    MalformedResponse,
    UpstreamConnectError,
    UpstreamHTTPError,
    UpstreamRejected,
    UpstreamTimeout,
    WeatherUnavailable,
)
from ..retry import WEATHER_RETRY, RetryPolicy

logger = logging.getLogger("hybrid_weather")

DEFAULT_CONNECT_TIMEOUT = 2.0
DEFAULT_READ_TIMEOUT = 4.0
DEFAULT_FAILURE_THRESHOLD = 3  # failed requests in a row that open the circuit
DEFAULT_COOL_DOWN = 30.0  # seconds the circuit stays open before one probe is let through
_RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})


class CircuitBreaker:
    """Closed → open after N failed requests in a row → half-open after a cool-down (one probe) → closed."""

    def __init__(
        self,
        name: str,
        *,
        failure_threshold: int = DEFAULT_FAILURE_THRESHOLD,
        cool_down: float = DEFAULT_COOL_DOWN,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.name = name
        self.failure_threshold = failure_threshold
        self.cool_down = cool_down
        self._clock = clock
        self._lock = threading.Lock()
        self._failures = 0
        self._opened_at: float | None = None
        self._probing = False

    @property
    def state(self) -> str:
        with self._lock:
            if self._opened_at is None:
                return "closed"
            return "half-open" if self._clock() - self._opened_at >= self.cool_down else "open"

    def before_request(self) -> None:
        """Raise CircuitOpen unless a request may go out now."""
        with self._lock:
            if self._opened_at is None:
                return
            waited = self._clock() - self._opened_at
            if waited >= self.cool_down and not self._probing:
                self._probing = True  # exactly one probe; everyone else keeps failing fast
                return
            retry_in = max(0.0, self.cool_down - waited)
            raise CircuitOpen(
                f"{self.name} failed {self.failure_threshold} times in a row; not asking it again for "
                f"{retry_in:.0f} s (use --provider demo for offline demo data)",
                provider=self.name,
            )

    def record_success(self) -> None:
        with self._lock:
            self._failures = 0
            self._opened_at = None
            self._probing = False

    def record_failure(self) -> None:
        with self._lock:
            self._failures += 1
            if self._probing or self._failures >= self.failure_threshold:
                self._opened_at = self._clock()
            self._probing = False


class ResilientClient:
    """One pooled httpx2 client for one provider, with retries, a deadline per call and a breaker."""

    def __init__(
        self,
        provider: str,
        *,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        read_timeout: float = DEFAULT_READ_TIMEOUT,
        max_attempts: int = WEATHER_RETRY.max_attempts,
        backoff_base: float = WEATHER_RETRY.backoff_base,
        backoff_cap: float = WEATHER_RETRY.backoff_cap,
        breaker: CircuitBreaker | None = None,
    ) -> None:
        import httpx2  # deferred: costly at import, and route() never needs it

        self.provider = provider
        self.connect_timeout = connect_timeout
        self.read_timeout = read_timeout
        self.retry = RetryPolicy(max_attempts, backoff_base, backoff_cap)
        self.breaker = breaker or CircuitBreaker(provider)
        from .. import guard  # with httpx2: only when the first request is made

        self._httpx, self._guard = httpx2, guard
        self._client = httpx2.Client(
            headers={"User-Agent": "hybrid-weather", "Accept-Encoding": "gzip, deflate"},
            transport=guard.GuardedTransport(max_bytes=guard.WEATHER_MAX_BYTES, label=provider),
        )

    def close(self) -> None:
        self._client.close()

    def get_json(self, url: str, params: dict[str, Any], *, deadline: float) -> Any:
        """GET URL and return its JSON body, or raise a WeatherUnavailable subclass by DEADLINE (monotonic)."""
        if deadline <= time.monotonic():
            # The time went in a local queue before the request was sent: no fault of the provider's,
            # so the breaker hears nothing (self-inflicted timeouts must not open it for everyone).
            raise UpstreamTimeout(
                f"{self.provider}: the deadline passed before the request could be sent", provider=self.provider
            )
        self.breaker.before_request()
        try:
            body = self._with_retries(url, params, deadline)
        except MalformedResponse:
            self.breaker.record_failure()
            raise
        except WeatherUnavailable as error:
            if not isinstance(error, UpstreamHTTPError) or error.status_code in _RETRY_STATUSES:
                self.breaker.record_failure()  # a 4xx is our request's fault, not the provider's health
            raise
        self.breaker.record_success()
        return body

    # Above ruff's complexity bound on purpose: each fault of an attempt (status, timeout, body, circuit) in one retry
    # loop.
    def _with_retries(self, url: str, params: dict[str, Any], deadline: float) -> Any:  # noqa: C901
        httpx, guard = self._httpx, self._guard
        attempt = 0
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise UpstreamTimeout(f"{self.provider} did not answer within the deadline", provider=self.provider)
            timeout = httpx.Timeout(min(self.read_timeout, remaining), connect=min(self.connect_timeout, remaining))
            attempt += 1
            error: WeatherUnavailable
            try:
                with guard.deadline(deadline):  # the whole exchange, body included, ends by the deadline
                    response = self._client.get(url, params=params, timeout=timeout)
            except (guard.BodyTooLarge, httpx.DecodingError) as exc:
                raise MalformedResponse(str(exc), provider=self.provider) from None
            except guard.RedirectRefused as exc:
                raise UpstreamRejected(str(exc), provider=self.provider) from None
            except httpx.ConnectTimeout:  # no connection was made: offline, or the host unreachable
                error = UpstreamConnectError(
                    f"cannot reach {self.provider} (connect timed out)", provider=self.provider
                )
            except httpx.TimeoutException:
                error = UpstreamTimeout(f"{self.provider} timed out", provider=self.provider)
            except (httpx.UnsupportedProtocol, httpx.InvalidURL) as exc:
                raise ConfigurationError(f"{url!r} is not a usable http(s) URL for {self.provider}: {exc}") from None
            except httpx.HTTPError as exc:  # refused, reset, truncated, bad redirect: all transport faults
                error = UpstreamConnectError(
                    f"cannot reach {self.provider} ({type(exc).__name__}: {exc})", provider=self.provider
                )
            else:
                if response.status_code == 200:
                    try:
                        return guard.read_json(response.content)
                    except guard.NotJSON as exc:
                        raise MalformedResponse(f"{self.provider} sent {exc}", provider=self.provider) from None
                error = UpstreamHTTPError(
                    f"{self.provider} answered HTTP {response.status_code}{_reason(response.content)}",
                    provider=self.provider,
                    status_code=response.status_code,
                )
                if response.status_code not in _RETRY_STATUSES:
                    raise error
            logger.info("%s attempt %d failed: %s", self.provider, attempt, error)
            if attempt >= self.retry.max_attempts:
                raise error
            pause = self.retry.pause(attempt)
            if time.monotonic() + pause >= deadline:
                raise error
            time.sleep(pause)


def _reason(content: bytes) -> str:
    # Open-Meteo explains its errors as {"error": true, "reason": "..."}; pass the reason on.
    try:
        body = json.loads(content)
    except ValueError:
        return ""
    reason = body.get("reason") if isinstance(body, dict) else None
    return f": {reason}" if isinstance(reason, str) else ""
