"""Who may call the service and how often: API keys (Authorization: Bearer), the dashboard's cookie, and
per-key token buckets.

Keys are compared by their SHA-256, so a file of hashed keys works as well as plain ones and no key is
kept in the clear longer than reading the setting. A browser cannot send a Bearer header, so a key given
to the login form becomes a cookie that holds an expiry signed with the key's SHA-256 (never the key): any
worker of any host with the same keys can check it, and dropping the key from the setting ends it.
Buckets live in Redis when the fleet shares one
(HYBRID_WEATHER_CACHE_URL: a limit holds across workers and hosts), in the process otherwise; a Redis
that is down falls back to the process's own buckets.
"""

from __future__ import annotations

import hashlib
import hmac
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from hybrid_weather.agent.errors import ConfigurationError

from .errors import ApiError

if TYPE_CHECKING:
    from hybrid_weather.agent.weather.shared_cache import SharedCache

#: Buckets the process keeps at the most (one per key or client address); the least recently used go.
MAX_BUCKETS = 10_000
#: The dashboard's cookie, and how long one lasts (a working day: a lost laptop's cookie does not last).
COOKIE = "hybrid_weather_dashboard"
COOKIE_MAX_AGE_S = 12 * 3600
_COOKIE_PURPOSE = b"hybrid-weather dashboard until "


def hashed(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def caller_of(digest: str) -> str:
    """Who a key is in limits, logs and the ledger: a prefix of its SHA-256 hex DIGEST, never the key."""
    return f"key:{digest[:16]}"


def load_keys(plain: str | None, file: str | None) -> frozenset[str]:
    """SHA-256 hex of every accepted key: PLAIN is comma-separated keys (HYBRID_WEATHER_API_KEYS), FILE
    holds one SHA-256 hex per line (HYBRID_WEATHER_API_KEYS_FILE; # starts a comment)."""
    keys = {hashed(k.strip()) for k in (plain or "").split(",") if k.strip()}
    if file:
        try:
            lines = Path(file).expanduser().read_text("utf-8").splitlines()
        except OSError as error:
            raise ConfigurationError(f"HYBRID_WEATHER_API_KEYS_FILE={file!r} cannot be read ({error})") from None
        for number, line in enumerate(lines, 1):
            digest = line.split("#", 1)[0].strip().lower()
            if not digest:
                continue
            if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
                raise ConfigurationError(
                    f"HYBRID_WEATHER_API_KEYS_FILE line {number} is not a SHA-256 hex digest; make one with: "
                    "printf %s KEY | sha256sum"
                )
            keys.add(digest)
    return frozenset(keys)


@dataclass(frozen=True, slots=True)
class Rate:
    """A token bucket: PER_S tokens a second, up to BURST at once."""

    per_s: float
    burst: float

    @classmethod
    def parse(cls, text: str | None) -> Rate | None:
        """'20/s', '600/min' (up to that many at once, refilled evenly over the window), or 'off'/None: the
        grammar of the fleet's upstream budget, with one window."""
        from hybrid_weather.agent.weather.shared_cache import parse_limit

        windows = parse_limit(text or "off", "HYBRID_WEATHER_RATE_LIMIT")
        if not windows:
            return None
        if len(windows) > 1:
            raise ConfigurationError(f"HYBRID_WEATHER_RATE_LIMIT={text!r} names several windows; give one, e.g. 20/s")
        count, seconds = windows[0]
        return cls(per_s=count / seconds, burst=float(count))


class Access:
    """Checks one request's key and spends one token of its bucket; raises ApiError (401, 429)."""

    def __init__(self, keys: frozenset[str], rate: Rate | None, shared: SharedCache | None = None) -> None:
        self.keys = keys
        self.rate = rate
        self._shared = shared
        self._buckets: dict[str, tuple[float, float]] = {}  # caller → (tokens, when), oldest first
        self._lock = threading.Lock()

    def identify(self, authorization: str | None, cookie: str | None = None) -> str | None:
        """The SHA-256 of the key AUTHORIZATION (a Bearer header) or COOKIE (the dashboard's) carries, when
        it is an accepted one; else None (and always None when keys are off)."""
        scheme, _, token = (authorization or "").partition(" ")
        if scheme.lower() == "bearer" and token.strip():
            digest = hashed(token.strip())
            if any(hmac.compare_digest(digest, key) for key in self.keys):
                return digest
        return self._cookie_key(cookie) if cookie else None

    def check(self, authorization: str | None, client: str, cookie: str | None = None) -> str:
        """The caller's identity for limits and logs: its key's hash prefix, or its address when keys are
        off. Raises ApiError 401 for a missing or unknown key, 429 past the rate."""
        caller = f"addr:{client}"
        if self.keys:
            digest = self.identify(authorization, cookie)
            if digest is None:
                raise ApiError(401, "authentication_error", "a valid API key is required: send "
                               "'Authorization: Bearer KEY' (keys come from HYBRID_WEATHER_API_KEYS)",
                               "invalid_api_key", {"www-authenticate": "Bearer"})  # fmt: skip
            caller = caller_of(digest)
        if self.rate is not None:
            wait = self._spend(caller, self.rate)
            if wait > 0:
                raise ApiError(429, "rate_limit_error", f"rate limit reached ({self.rate.per_s:g} requests/s); "
                               f"retry in {wait:.1f} s", "rate_limit_exceeded",
                               {"retry-after": str(max(1, round(wait + 0.499)))})  # fmt: skip
        return caller

    def cookie_for(self, key: str, now: float | None = None) -> str | None:
        """The dashboard cookie's value for KEY, good for COOKIE_MAX_AGE_S; None when KEY is not accepted."""
        digest = hashed(key.strip())
        if not key.strip() or not any(hmac.compare_digest(digest, known) for known in self.keys):
            return None
        until = int(now if now is not None else time.time()) + COOKIE_MAX_AGE_S
        return f"{until}.{_signature(digest, until)}"

    def _cookie_key(self, cookie: str) -> str | None:
        """The accepted key whose signature COOKIE carries, if it has not expired."""
        until_text, _, signature = cookie.partition(".")
        if not until_text.isdigit() or len(until_text) > 12:
            return None
        until = int(until_text)
        if not time.time() < until <= time.time() + COOKIE_MAX_AGE_S:
            return None
        found = None
        for key in self.keys:  # every key, so the time taken does not say which one matched
            if hmac.compare_digest(signature, _signature(key, until)):
                found = key
        return found

    def _spend(self, caller: str, rate: Rate) -> float:
        if self._shared is not None and not self._shared.down:
            wait = self._shared.take_token(f"rate:{caller}", rate.per_s, rate.burst)
            if wait is not None:
                return wait
        return self._spend_here(caller, rate)

    def _spend_here(self, caller: str, rate: Rate) -> float:
        now = time.monotonic()
        with self._lock:
            tokens, when = self._buckets.pop(caller, (rate.burst, now))
            tokens = min(rate.burst, tokens + (now - when) * rate.per_s)
            wait = 0.0 if tokens >= 1 else (1 - tokens) / rate.per_s
            self._buckets[caller] = (tokens - 1 if wait == 0 else tokens, now)
            if len(self._buckets) > MAX_BUCKETS:
                del self._buckets[next(iter(self._buckets))]
            return wait


def _signature(digest: str, until: int) -> str:
    """The cookie's signature of UNTIL, keyed by the key's SHA-256 hex DIGEST."""
    return hmac.new(bytes.fromhex(digest), _COOKIE_PURPOSE + str(until).encode(), hashlib.sha256).hexdigest()
