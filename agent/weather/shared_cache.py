"""The forecast cache a fleet shares: Redis (HYBRID_WEATHER_CACHE_URL=redis://host:port/db or rediss://).

Every worker on every host reads the same copy of each fetch, so N workers ask the provider once per
place, and any of them can answer with the last good copy when the provider fails. What lives here:
- each fetch as JSON under `<prefix>data:<key>` (a copy as copies.py writes it: it names its key),
  kept for the stale window (its age is in the value, so freshness is judged by the reader with the
  usual TTL); a copy that is not sound is the reader's to drop (get() raises MalformedResponse);
- a fetch lock per key, `SET NX PX` with a random token, released only by its holder (compare-and-delete
  in one Lua script); a holder that dies frees the key when the lock expires, which is never later than
  the holder's own deadline.
Redis is a speed-up, never a dependency of an answer: an error of the server or the connection marks it
down for DOWN_INTERVAL (one warning per interval) and the caller fetches for itself; it reconnects by
itself after that. An error that belongs to one key (a value of the wrong type or shape under our prefix,
written by hand or by another program) is a miss for that key alone: the rest of Redis, with every budget
and rate limit counted there, stays in use.
"""

from __future__ import annotations

import logging
import math
import secrets
import threading
import time
from typing import Any

from ..errors import ConfigurationError, install_hint
from . import copies

logger = logging.getLogger("hybrid_weather")

#: Seconds Redis is left alone after an error before it is tried again.
DOWN_INTERVAL = 5.0
#: Seconds one Redis command may take (connect included): a cache slower than this is no cache.
COMMAND_TIMEOUT = 0.25
_UNLOCK = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end"
# Take the fetch lock KEYS[1] with token ARGV[1] for ARGV[2] ms: 1 when taken, 0 when another worker holds it,
# 2 when the key holds something that never expires: no lock of ours (each is taken with an expiry), so a
# value planted there must not make every worker wait on a holder that does not exist.
_LOCK = """
if redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end
if redis.call('pttl', KEYS[1]) == -1 then return 2 end
return 0
"""
# Append ARGV[1] to the list KEYS[1], keep its newest ARGV[2] items, expire it ARGV[3] ms after: one script,
# so appends from many hosts at once each land (a conversation's turns). A key that holds no list (planted,
# or left by another program under our prefix) holds nothing a reader can use: it is replaced.
_APPEND = """
local kind = redis.call('type', KEYS[1]).ok
if kind ~= 'list' and kind ~= 'none' then redis.call('del', KEYS[1]) end
redis.call('rpush', KEYS[1], ARGV[1])
redis.call('ltrim', KEYS[1], -tonumber(ARGV[2]), -1)
redis.call('pexpire', KEYS[1], ARGV[3])
return 1
"""
# One request against every window at once, or none: KEYS are the windows' counters, ARGV their limits
# then their lengths in ms. Returns 0 when the request may go, else the 1-based index of a full window.
_SPEND = """
local n = #KEYS
for i = 1, n do
  if tonumber(redis.call('get', KEYS[i]) or '0') >= tonumber(ARGV[i]) then return i end
end
for i = 1, n do
  if redis.call('incr', KEYS[i]) == 1 then redis.call('pexpire', KEYS[i], ARGV[n + i]) end
end
return 0
"""
# A token bucket (HTTP rate limits): KEYS[1] holds tokens and the time they were counted; ARGV: tokens a
# second, burst, now (ms, the server's clock so every host agrees). Returns the ms to wait, 0 to go on.
_TAKE = """
local t = redis.call('time')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local rate, burst = tonumber(ARGV[1]), tonumber(ARGV[2])
local state = redis.call('hmget', KEYS[1], 'tokens', 'at')
local tokens = tonumber(state[1]) or burst
local at = tonumber(state[2]) or now
tokens = math.min(burst, tokens + (now - at) * rate / 1000)
local wait = 0
if tokens >= 1 then tokens = tokens - 1 else wait = math.ceil((1 - tokens) * 1000 / rate) end
redis.call('hset', KEYS[1], 'tokens', tostring(tokens), 'at', tostring(now))
redis.call('pexpire', KEYS[1], math.ceil(burst * 1000 / rate) + 1000)
return wait
"""
# A reservation against a budget and a cap on requests in flight, both at once or neither. KEYS[1]: the
# budget's counter (spent and reserved), KEYS[2]: the holds in flight, a sorted set of tokens scored by the
# ms their lease ends (a worker that died frees its holds then). ARGV: the budget (-1: none), what this
# worker counted while Redis was away, the estimate to reserve, the cap (0: none), the hold's token, its
# lease (ms), the counter's life (s). Returns {0, counted} when reserved, {1, counted} when the budget is
# spent, {2, held} at the cap; numbers as text, as Lua would truncate them.
_RESERVE = """
local t = redis.call('time')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local budget, cap = tonumber(ARGV[1]), tonumber(ARGV[4])
local counted = (tonumber(redis.call('get', KEYS[1]) or '0') or 0) + tonumber(ARGV[2])
if budget >= 0 and counted >= budget then return {1, tostring(counted)} end
if cap > 0 then
  redis.call('zremrangebyscore', KEYS[2], '-inf', now)
  local held = redis.call('zcard', KEYS[2])
  if held >= cap then return {2, tostring(held)} end
  redis.call('zadd', KEYS[2], now + tonumber(ARGV[6]), ARGV[5])
  redis.call('pexpire', KEYS[2], ARGV[6])
end
if tonumber(ARGV[3]) > 0 then
  redis.call('incrbyfloat', KEYS[1], ARGV[3])
  redis.call('expire', KEYS[1], ARGV[7], 'NX')
end
return {0, tostring(counted)}
"""
_UNITS = {"s": 1, "sec": 1, "min": 60, "m": 60, "h": 3600, "hour": 3600, "d": 86400, "day": 86400}


def parse_limit(text: str, setting: str = "HYBRID_WEATHER_UPSTREAM_LIMIT") -> tuple[tuple[int, int], ...]:
    """'600/min,5000/h,10000/d' as ((600, 60), (5000, 3600), (10000, 86400)); 'off' as (). SETTING names
    where the text came from, for the error."""
    if text.strip().lower() in ("off", "none", "0", ""):
        return ()
    windows = []
    for part in text.split(","):
        count, _, unit = part.strip().partition("/")
        if not count.strip().isdigit() or unit.strip().lower() not in _UNITS or int(count) <= 0:
            raise ConfigurationError(
                f"{setting}={text!r} is not a budget; use requests per window, e.g. 600/min,5000/h,10000/d (or off)"
            )
        windows.append((int(count), _UNITS[unit.strip().lower()]))
    return tuple(windows)


class SharedCache:
    """Fetches shared through Redis, and the lock that makes one worker fetch each. Thread-safe."""

    name = "redis"  #: for messages and the count of dropped copies

    def __init__(self, url: str, *, keep_s: float, prefix: str = "hybrid-weather:") -> None:
        try:
            import redis  # deferred: only a fleet that set HYBRID_WEATHER_CACHE_URL needs it
        except ImportError:
            raise ConfigurationError(
                f"HYBRID_WEATHER_CACHE_URL needs the Redis client: {install_hint('fleet')}"
            ) from None

        self.url = url
        self.keep_s = keep_s  #: how long a copy is kept: the stale window
        self.prefix = prefix
        self._errors: tuple[type[Exception], ...] = (redis.RedisError, OSError)
        # A command's reply error (WRONGTYPE, a counter that is no number, a script that met a value of the
        # wrong shape) is about its key; these few reply errors are about the whole server.
        self._key_errors = redis.ResponseError
        self._server_errors: tuple[type[Exception], ...] = (
            redis.exceptions.ReadOnlyError,
            redis.exceptions.OutOfMemoryError,
            redis.exceptions.NoPermissionError,
        )
        self._key_warned_at = -math.inf
        self._client = redis.Redis.from_url(
            url, socket_timeout=COMMAND_TIMEOUT, socket_connect_timeout=COMMAND_TIMEOUT, health_check_interval=30
        )
        self._unlock = self._client.register_script(_UNLOCK)
        self._lock_script = self._client.register_script(_LOCK)
        self._append = self._client.register_script(_APPEND)
        self._spend = self._client.register_script(_SPEND)
        self._take = self._client.register_script(_TAKE)
        self._reserve = self._client.register_script(_RESERVE)
        self._down_until = 0.0
        self._lock = threading.Lock()
        #: The first time it could not be used, in one line, for the CLI to print once (None: never).
        self.problem: str | None = None

    @property
    def down(self) -> bool:
        return time.monotonic() < self._down_until

    def get(self, key: tuple[Any, ...]) -> Any | None:
        """The copy stored under KEY, whatever its age (the caller judges it), or None; MalformedResponse for
        a body that is not a copy of KEY's."""
        raw = self._call(self._client.get, self._name("data", key))
        return None if raw is None else copies.decode(key, raw, f"the {self.name} cache")

    def put(self, key: tuple[Any, ...], value: Any) -> None:
        self._call(self._client.set, self._name("data", key), copies.encode(key, value), px=int(self.keep_s * 1000))

    def discard(self, key: tuple[Any, ...]) -> None:
        """Forget KEY's copy (one that failed its checks)."""
        self._call(self._client.delete, self._name("data", key))

    def acquire(self, key: tuple[Any, ...], hold_s: float) -> str | None:
        """A token if this worker may fetch KEY now (for at most HOLD_S), None if another worker is fetching
        it. While Redis is down every worker may fetch: a lost lock costs a request, never an answer."""
        token = secrets.token_hex(8)
        got = self._call(self._lock_script, keys=[self._name("lock", key)], args=[token, max(1, int(hold_s * 1000))])
        if got is None:  # down, or a reply error about the key: fetch
            return token
        return token if got else None

    def release(self, key: tuple[Any, ...], token: str) -> None:
        self._call(self._unlock, keys=[self._name("lock", key)], args=[token])

    def spend(self, provider: str, windows: tuple[tuple[int, int], ...]) -> float:
        """Count one upstream request against the fleet's budget: 0 when it may go, else the seconds until
        the full window ends. Windows are fixed (a minute, an hour, a day of the clock), counted in Redis
        atomically, so the whole fleet together stays within them. While Redis is down nothing is counted."""
        if not windows:
            return 0.0
        now = time.time()
        keys = [f"{self.prefix}budget:{provider}:{length}:{int(now // length)}" for _, length in windows]
        limits = [count for count, _ in windows] + [length * 1000 for _, length in windows]
        full = self._call(self._spend, keys=keys, args=limits)
        if not full:
            return 0.0
        length = windows[int(full) - 1][1]
        return length - now % length

    def take_token(self, bucket: str, per_s: float, burst: float) -> float | None:
        """Spend one token of BUCKET (PER_S a second, up to BURST): 0 to go on, else the seconds to wait;
        None while Redis is down (the caller keeps its own bucket meanwhile)."""
        waited = self._call(self._take, keys=[f"{self.prefix}{bucket}"], args=[per_s, burst])
        return None if waited is None else int(waited) / 1000

    def read_list(self, name: str, *, newest: int) -> list[str] | None:
        """The NEWEST items at most of the list NAME (under the prefix), oldest first; None while Redis is
        down or when NAME holds no list. Bounded: a list grown by another writer is read only at its end."""
        items = self._call(self._client.lrange, f"{self.prefix}{name}", -newest, -1)
        return None if items is None else [item.decode("utf-8", "replace") for item in items]

    def append_list(self, name: str, item: str, *, keep: int, idle_s: float) -> None:
        """Append ITEM to the list NAME, keep its newest KEEP items, and let it expire IDLE_S after this
        append (see _APPEND)."""
        self._call(self._append, keys=[f"{self.prefix}{name}"], args=[item, keep, max(1, int(idle_s * 1000))])

    def add_float(self, name: str, amount: float, ttl_s: float) -> float | None:
        """Add AMOUNT to the counter NAME (under the prefix), kept TTL_S after it was made: its new value,
        or None while Redis is down (the caller counts for itself)."""
        key = f"{self.prefix}{name}"

        def add() -> Any:
            with self._client.pipeline(transaction=True) as pipe:
                pipe.incrbyfloat(key, amount)
                pipe.expire(key, max(1, int(ttl_s)), nx=True)
                return pipe.execute()[0]

        value = self._call(add)
        return None if value is None else float(value)

    def reserve(self, counter: str, holds: str, *, budget: float | None, counted_here: float, estimate: float,
                cap: int | None, token: str, lease_s: float, ttl_s: float) -> tuple[int, float] | None:  # fmt: skip
        """Add ESTIMATE to the counter COUNTER while it (plus COUNTED_HERE, what this worker counted while Redis
        was away) is under BUDGET, and hold TOKEN among HOLDS (for at most LEASE_S) while fewer than CAP are
        held: one script, so any number of workers at once never pass both checks on the same room. (0, the
        count before) when reserved, (1, the count) when the budget is spent, (2, the holds) at the cap; None
        while Redis is down (the caller reserves for itself)."""
        args = [-1 if budget is None else budget, counted_here, estimate, cap or 0, token,
                max(1, int(lease_s * 1000)), max(1, int(ttl_s))]  # fmt: skip
        result = self._call(self._reserve, keys=[f"{self.prefix}{counter}", f"{self.prefix}{holds}"], args=args)
        return None if result is None else (int(result[0]), float(result[1]))

    def settle(self, counter: str, holds: str, *, token: str, change: float, ttl_s: float) -> bool:
        """End TOKEN's hold among HOLDS and add CHANGE (the real cost less the estimate reserved) to COUNTER:
        one transaction. False while Redis is down (the reservation then stands: a budget over-counted, never
        under)."""
        counter_key = f"{self.prefix}{counter}"

        def settle() -> Any:
            with self._client.pipeline(transaction=True) as pipe:
                pipe.zrem(f"{self.prefix}{holds}", token)
                if change:
                    pipe.incrbyfloat(counter_key, change)
                    pipe.expire(counter_key, max(1, int(ttl_s)), nx=True)
                return pipe.execute()

        return self._call(settle) is not None

    def read_float(self, name: str) -> float | None:
        """The counter NAME's value (0 when there is none), or None while Redis is down."""
        value = self._call(self._client.get, f"{self.prefix}{name}")
        if value is None:
            return None if self.down else 0.0
        try:
            number = float(value)
        except ValueError:
            return 0.0
        return number if math.isfinite(number) else 0.0  # 'nan' or 'inf' written by hand counts nothing

    def read_floats(self, names: list[str]) -> list[float] | None:
        """The counters NAMES' values (0 for one there is none of, or that is no number), in one round trip;
        None while Redis is down."""
        values = self._call(self._client.mget, [f"{self.prefix}{name}" for name in names])
        if values is None:
            return None
        numbers = []
        for value in values:
            try:
                number = float(value) if value is not None else 0.0
            except ValueError:
                number = 0.0
            numbers.append(number if math.isfinite(number) else 0.0)
        return numbers

    def close(self) -> None:
        self._client.close()

    def _name(self, kind: str, key: tuple[Any, ...]) -> str:
        return f"{self.prefix}{kind}:{copies.key_text(key)}"

    def _call(self, command: Any, *args: Any, **kwargs: Any) -> Any:
        """COMMAND's reply; None while Redis is down, when this call marks it down, or when the reply is an
        error about the key alone (see the module's docstring)."""
        if self.down:
            return None
        try:
            return command(*args, **kwargs)
        except self._key_errors as error:
            # A reply error may also come from the connection's own set-up (SELECT of a database the server
            # does not have, AUTH where it has no password): about the server, however it reads. The server
            # answering a PING is what makes it the key's alone.
            if isinstance(error, self._server_errors) or not self._answers():
                self._mark_down(error)
                return None
            now = time.monotonic()
            if now - self._key_warned_at >= DOWN_INTERVAL:  # one line per interval, however many keys
                self._key_warned_at = now
                logger.warning("the shared cache holds a value it cannot use (%s); read as a miss", _first_line(error))
            return None
        except self._errors as error:
            self._mark_down(error)
            return None

    def _answers(self) -> bool:
        """Whether the server answers a PING (on a connection set up as every command's is)."""
        try:
            self._client.ping()
        except self._errors:
            return False
        return True

    def _mark_down(self, error: Exception) -> None:
        with self._lock:
            if not self.down:
                # A reply error says what the server refused (a database it does not have, a password); a
                # connection error's text would only repeat the address.
                said = f": {_first_line(error)}" if isinstance(error, self._key_errors) else ""
                problem = (
                    f"the shared cache at {_safe(self.url)} is unreachable ({type(error).__name__}{said}); "
                    f"each worker fetches for itself for {DOWN_INTERVAL:.0f} s"
                )
                logger.warning("%s", problem)
                self.problem = self.problem or problem
            self._down_until = time.monotonic() + DOWN_INTERVAL


def _first_line(error: Exception) -> str:
    return str(error).splitlines()[0][:200] if str(error) else type(error).__name__


def _safe(url: str) -> str:
    """URL without its password (redis://:secret@host → redis://host)."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.hostname}:{parts.port or 6379}{parts.path}"
