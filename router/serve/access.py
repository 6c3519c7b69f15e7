"""Who may call the service and how often: API keys (Authorization: Bearer), the dashboard's cookie,
failed authentications, and per-key token buckets.

Keys are compared by their SHA-256, so a file of hashed keys works as well as plain ones and no key is
kept in the clear longer than reading the setting. A browser cannot send a Bearer header, so a key given
to the login form becomes a cookie that holds an expiry and an HMAC of it and the key's SHA-256 under the
server's secret (HYBRID_WEATHER_COOKIE_SECRET, else a file made at first start in $HYBRID_WEATHER_HOME,
mode 0600): the key file alone cannot forge one, every worker and host with the same secret can check it,
and dropping the key from the setting ends it.

Failed authentications (a key, a cookie or a login that is not accepted) are counted per client address
and per the presented key's first PREFIX_CHARS characters, in fixed windows. An address past
FAILURES_PER_ADDRESS is refused (429, retry-after) before its key is looked at, so a guess it makes then
says nothing, right or wrong. Once keys beginning alike have failed FAILURES_PER_PREFIX times from any
addresses, an address that has failed itself is refused presenting that prefix too (an attacker spread
over many addresses gets one guess from each), while an address with no failure of its own is checked as
usual: an attacker cannot lock the owner of a key out by failing with its prefix.

Buckets and failures live in Redis when the fleet shares one (HYBRID_WEATHER_CACHE_URL: a limit holds
across workers and hosts), in the process otherwise; a Redis that is down falls back to the process's own.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
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
_COOKIE_PURPOSE = b"hybrid-weather dashboard cookie: "
#: The server's cookie secret, in $HYBRID_WEATHER_HOME when HYBRID_WEATHER_COOKIE_SECRET names none, and the
#: fewest characters a secret has (a made one has 64 hex digits: 256 bits).
SECRET_FILE = "cookie-secret"
MIN_SECRET_CHARS = 32
#: Failed authentications an address may make in a window, and keys beginning with the same PREFIX_CHARS
#: characters from every address together (the module's docstring says what each one stops).
FAILURES_PER_ADDRESS = 10
FAILURES_PER_PREFIX = 50
FAILURE_WINDOW_S = 60
PREFIX_CHARS = 8


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


def cookie_secret(configured: str | None, home: Path) -> bytes:
    """The key the dashboard's cookies are signed with: CONFIGURED (HYBRID_WEATHER_COOKIE_SECRET), else the
    one in HOME's SECRET_FILE, made there (mode 0600) at the first start; ConfigurationError, one line,
    for a secret too short or a file others may read."""
    if configured is not None:
        if len(configured.strip()) < MIN_SECRET_CHARS:
            raise ConfigurationError(
                f"HYBRID_WEATHER_COOKIE_SECRET is shorter than {MIN_SECRET_CHARS} characters; "
                "make one with: python -c 'import secrets; print(secrets.token_hex(32))'"
            )
        return configured.strip().encode()
    path = home / SECRET_FILE
    try:
        if not path.exists():
            home.mkdir(parents=True, exist_ok=True)
            made = home / f".{SECRET_FILE}.{os.getpid()}.{secrets.token_hex(4)}"
            descriptor = os.open(made, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(descriptor, "w") as file:
                file.write(secrets.token_hex(32) + "\n")
            try:
                os.link(made, path)  # whole or not at all; the first worker to start wins, the others read its
            except FileExistsError:
                pass
            finally:
                made.unlink()
        mode = path.stat().st_mode & 0o777
        if os.name == "posix" and mode & 0o077:
            raise ConfigurationError(
                f"{path} holds the cookie secret and others may read it (mode {mode:o}); "
                f"chmod 600 it, or set HYBRID_WEATHER_COOKIE_SECRET"
            )
        secret = path.read_text("utf-8").strip()
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigurationError(
            f"the cookie secret {path} cannot be read or made ({type(error).__name__}); "
            "check HYBRID_WEATHER_HOME, or set HYBRID_WEATHER_COOKIE_SECRET"
        ) from None
    if len(secret) < MIN_SECRET_CHARS:
        raise ConfigurationError(
            f"the cookie secret {path} is shorter than {MIN_SECRET_CHARS} characters; "
            "delete it (a new one is made at start) or set HYBRID_WEATHER_COOKIE_SECRET"
        )
    return secret.encode()


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


class Failures:
    """Failed authentications per client address and per presented key's prefix, in fixed windows of
    FAILURE_WINDOW_S: in Redis when the fleet shares one, else (and while it is away) in the process."""

    def __init__(self, shared: SharedCache | None) -> None:
        self._shared = shared
        self._counts: dict[str, float] = {}  # name (its window in it) → failures, oldest first
        self._lock = threading.Lock()

    def wait(self, client: str, presented: str | None, now: float | None = None) -> float:
        """Seconds before CLIENT's attempt presenting the key PRESENTED (None: a cookie, or the form's nothing)
        is looked at; 0: look at it now."""
        if self._shared is None and not self._counts:
            return 0.0  # nothing failed here yet, and no fleet to ask: every request but a guesser's
        now = time.time() if now is None else now
        names = _failure_names(client, presented, now)
        counts = self._read(names)
        left = FAILURE_WINDOW_S - now % FAILURE_WINDOW_S
        if counts[0] >= FAILURES_PER_ADDRESS:
            return left
        if len(counts) > 1 and counts[0] > 0 and counts[1] >= FAILURES_PER_PREFIX:
            return left  # keys like this one are being guessed, and this address is one of those failing
        return 0.0

    def record(self, client: str, presented: str | None, now: float | None = None) -> None:
        """Count one failure of CLIENT presenting PRESENTED."""
        for name in _failure_names(client, presented, time.time() if now is None else now):
            if self._shared is None or self._shared.add_float(name, 1, 2 * FAILURE_WINDOW_S) is None:
                with self._lock:
                    self._counts[name] = self._counts.pop(name, 0.0) + 1
                    if len(self._counts) > MAX_BUCKETS:
                        del self._counts[next(iter(self._counts))]

    def _read(self, names: list[str]) -> list[float]:
        here = [self._counts.get(name, 0.0) for name in names]  # what this process counted, Redis away
        shared = self._shared.read_floats(names) if self._shared is not None else None
        return here if shared is None else [a + b for a, b in zip(here, shared, strict=True)]


def _failure_names(client: str, presented: str | None, now: float) -> list[str]:
    """The counters a failure of CLIENT presenting PRESENTED goes to in the window of NOW: its address's,
    and its prefix's (hashed: no part of a key is kept)."""
    window = int(now // FAILURE_WINDOW_S)
    names = [f"authfail:{window}:addr:{client}"]
    if presented:
        names.append(f"authfail:{window}:prefix:{hashed(presented[:PREFIX_CHARS])[:16]}")
    return names


class Access:
    """Checks one request's key and spends one token of its bucket; raises ApiError (401, 429)."""

    def __init__(
        self, keys: frozenset[str], rate: Rate | None, shared: SharedCache | None = None, secret: bytes | None = None
    ) -> None:
        self.keys = keys
        self.rate = rate
        self.failures = Failures(shared)
        self._shared = shared
        # Without keys there is no cookie to sign; a made-up secret then signs nothing anyone can use.
        self._secret = secret or secrets.token_bytes(32)
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

    def identify_open(self, authorization: str | None, cookie: str | None, client: str) -> str | None:
        """identify() on a path anyone may ask: a key or cookie that is not accepted counts as CLIENT's
        failure, and a CLIENT past its failures is taken as presenting none (what it sees says nothing of
        its guess)."""
        presented = _bearer(authorization)
        if not self.keys or (presented is None and not cookie):
            return None
        if self.failures.wait(client, presented) > 0:
            return None
        digest = self.identify(authorization, cookie)
        if digest is None:
            self.failures.record(client, presented)
        return digest

    def attempt(self, client: str, presented: str | None) -> None:
        """Raise ApiError 429 when CLIENT may not have an attempt presenting PRESENTED looked at now: before
        the key check, so a guess made past the limit says nothing, right or wrong."""
        wait = self.failures.wait(client, presented)
        if wait > 0:
            raise _too_many(
                f"too many failed authentications from this address; retry in {wait:.0f} s",
                "too_many_failed_authentications",
                wait,
            )

    def check(self, authorization: str | None, client: str, cookie: str | None = None) -> str:
        """The caller's identity for limits and logs: its key's hash prefix, or its address when keys are
        off. Raises ApiError 401 for a missing or unknown key, 429 past the failures or the rate."""
        caller = f"addr:{client}"
        if self.keys:
            presented = _bearer(authorization)
            self.attempt(client, presented)
            digest = self.identify(authorization, cookie)
            if digest is None:
                if presented is not None or cookie:  # a guess, not a client that has not logged in yet
                    self.failures.record(client, presented)
                raise ApiError(
                    401,
                    "authentication_error",
                    "a valid API key is required: send "
                    "'Authorization: Bearer KEY' (keys come from HYBRID_WEATHER_API_KEYS)",
                    "invalid_api_key",
                    {"www-authenticate": "Bearer"},
                )
            caller = caller_of(digest)
        if self.rate is not None:
            wait = self._spend(caller, self.rate)
            if wait > 0:
                raise _too_many(
                    f"rate limit reached ({self.rate.per_s:g} requests/s); retry in {wait:.1f} s",
                    "rate_limit_exceeded",
                    wait,
                )
        return caller

    def cookie_for(self, key: str, now: float | None = None) -> str | None:
        """The dashboard cookie's value for KEY, good for COOKIE_MAX_AGE_S; None when KEY is not accepted."""
        digest = hashed(key.strip())
        if not key.strip() or not any(hmac.compare_digest(digest, known) for known in self.keys):
            return None
        until = int(now if now is not None else time.time()) + COOKIE_MAX_AGE_S
        return f"{until}.{self._signature(digest, until)}"

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
            if hmac.compare_digest(signature, self._signature(key, until)):
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

    def _signature(self, digest: str, until: int) -> str:
        """The cookie's signature of the key whose SHA-256 hex is DIGEST until UNTIL, under the server's secret."""
        message = _COOKIE_PURPOSE + digest.encode() + b" until " + str(until).encode()
        return hmac.new(self._secret, message, hashlib.sha256).hexdigest()


def _bearer(authorization: str | None) -> str | None:
    """The key an Authorization header presents as a Bearer token, or None."""
    scheme, _, token = (authorization or "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


def _too_many(message: str, code: str, wait: float) -> ApiError:
    """A 429 that says MESSAGE and CODE, with Retry-After: WAIT seconds rounded up, one at least."""
    return ApiError(429, "rate_limit_error", message, code, {"retry-after": str(max(1, round(wait + 0.499)))})
