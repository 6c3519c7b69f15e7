"""WeatherService: the one object that fetches weather, for both routes.

It owns the provider (and so its HTTP client), a TTL cache keyed by place so that different questions
about one place share one fetch, single-flight so that N concurrent asks for one key cause one upstream
request, and a stale store that answers with the last good data when the provider fails. A second level
can sit behind the in-process cache: the one-shot CLI's file (disk_cache.py) or a fleet's Redis
(shared_cache.py), which also makes single-flight and the upstream budget fleet-wide. What a second level
gives back is held to the checks an upstream reply passes (shapes.checked): a copy that fails them is
dropped and counted, and the provider is asked as on a miss.
"""

from __future__ import annotations

import collections
import concurrent.futures
import datetime as dt
import functools
import logging
import threading
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Generic, NamedTuple, TypeVar

import cachetools

from hybrid_weather.rules import Place

from ..errors import BudgetExhausted, MalformedResponse, NotCovered, UpstreamTimeout, WeatherUnavailable
from .providers import Enclosure, WeatherProvider
from .shapes import AirQuality, Forecast, HourlyForecast, SunForecast, checked

if TYPE_CHECKING:  # the second-level caches load only when configured; asyncio only for asyncio callers
    import asyncio

    from .disk_cache import DiskCache
    from .shared_cache import SharedCache

DEFAULT_CACHE_TTL = 600.0
#: The oldest data served when the provider fails (stale-if-error). Six hours: older forecasts have
#: drifted enough that an error is more honest than the numbers.
DEFAULT_MAX_STALE_AGE = 6 * 3600.0
DEFAULT_CACHE_SIZE = 4096
#: Threads that run upstream requests for asyncio callers (aask): each waits on the network, not the CPU,
#: so the pool is sized for concurrent requests, not cores. Past it, requests queue here, and a request
#: whose deadline passed in the queue is never sent (nor counted against the provider's health).
DEFAULT_IO_THREADS = 64
# Past days are fetched in a few fixed windows, so 昨天 and 前天 share a fetch with 今天.
_PAST_WINDOWS = (1, 7, 31, 92)

logger = logging.getLogger("hybrid_weather")
T = TypeVar("T", Forecast, AirQuality, HourlyForecast, SunForecast)
R = TypeVar("R")
#: (kind, provider, the provider's origin, place name, latitude, longitude, the question's day, past-days
#: window): where the data came from is part of the key, so a test server's or a mirror's copies are never
#: another's; the day is the one the provider counts its days from, so a question asked on another day
#: (--today, today=) is another fetch.
CacheKey = tuple[str, str, str, str, float, float, str, int]
#: A provider's forecast or air_quality method: (place, *, today, past_days, deadline) → data.
Fetch = Callable[..., Any]


# Returned with a cache hit, where no one waits on a future.
_NO_FUTURE: concurrent.futures.Future[Any] = concurrent.futures.Future()


def past_days_for(dates: Iterable[dt.date], today: dt.date) -> int:
    """How many past days a fetch must include to cover DATES (at least 1, so 昨天 shares today's fetch)."""
    return max(1, max((today - day).days for day in dates))


class Fetched(NamedTuple, Generic[T]):
    """Data for one place, and how it was obtained."""

    value: T
    cache_hit: bool
    stale: bool
    age_s: float  #: seconds since the provider produced it
    provider_ms: float  #: time spent waiting for the provider (0 on a cache hit)


class WeatherService:
    """Cached, single-flight, stale-if-error access to one provider. Thread-safe; share one."""

    def __init__(
        self,
        provider: WeatherProvider,
        *,
        cache_ttl: float = DEFAULT_CACHE_TTL,
        max_stale_age: float = DEFAULT_MAX_STALE_AGE,
        cache_size: int = DEFAULT_CACHE_SIZE,
        io_threads: int = DEFAULT_IO_THREADS,
        disk: DiskCache | None = None,
        shared: SharedCache | None = None,
        local_ttl: float | None = None,
        upstream_limit: tuple[tuple[int, int], ...] = (),
    ) -> None:
        self.provider = provider
        self.io_threads = io_threads
        self.cache_ttl = cache_ttl
        #: A cache that outlives the process (the one-shot CLI's), read when this one misses.
        self.disk = disk
        self.max_stale_age = max_stale_age
        #: A cache the fleet shares (Redis), read when this one misses; this one then keeps copies for only
        #: LOCAL_TTL seconds, so a worker's answers are never older than the fleet's by more than that.
        self.shared = shared
        #: (requests, window seconds) the fleet may make upstream, counted in the shared cache.
        self.upstream_limit = upstream_limit
        local = cache_ttl if local_ttl is None else min(local_ttl, cache_ttl)
        self._fresh: cachetools.TTLCache[CacheKey, Any] | None = (
            cachetools.TTLCache(cache_size, local) if cache_ttl > 0 and local > 0 else None
        )
        self._stale: cachetools.LRUCache[CacheKey, Any] = cachetools.LRUCache(cache_size)
        self._inflight: dict[CacheKey, concurrent.futures.Future[Any]] = {}
        self._geocoded: cachetools.LRUCache[str, Place | None] = cachetools.LRUCache(cache_size)
        self._lock = threading.Lock()
        self._io_pool: concurrent.futures.ThreadPoolExecutor | None = None
        #: Copies a second-level cache gave back that failed the checks, by cache ("disk", "redis").
        self.dropped_copies: collections.Counter[str] = collections.Counter()
        #: Called with the cache's name for each dropped copy (serve counts them in /metrics).
        self.on_drop: Callable[[str], None] | None = None

    def close(self) -> None:
        if self._io_pool is not None:
            self._io_pool.shutdown(wait=False, cancel_futures=True)
        if self.disk is not None:
            self.disk.close()
        if self.shared is not None:
            self.shared.close()
        self.provider.close()

    @property
    def io_pool(self) -> concurrent.futures.ThreadPoolExecutor:
        """The threads asyncio callers' blocking I/O runs on (not the event loop's small default pool)."""
        with self._lock:
            if self._io_pool is None:
                self._io_pool = concurrent.futures.ThreadPoolExecutor(self.io_threads, "hybrid-weather-io")
            return self._io_pool

    # -- public: sync and async, forecast and air quality -------------------------------------------

    # TODAY, in each: the question's day, from which the provider counts the days it fetches (PAST_DAYS before,
    # its horizon after). Nothing here reads the clock for it: a question asked on another day gets that day's.

    def forecast(self, place: Place, past_days: int, deadline: float, *, today: dt.date) -> Fetched[Forecast]:
        return self._get("forecast", place, today, past_days, deadline, self.provider.forecast)

    def air_quality(self, place: Place, past_days: int, deadline: float, *, today: dt.date) -> Fetched[AirQuality]:
        return self._get("air", place, today, past_days, deadline, self.provider.air_quality)

    def hourly(self, place: Place, past_days: int, deadline: float, *, today: dt.date) -> Fetched[HourlyForecast]:
        return self._get("hourly", place, today, past_days, deadline, self.provider.hourly)

    async def ahourly(
        self, place: Place, past_days: int, deadline: float, *, today: dt.date
    ) -> Fetched[HourlyForecast]:
        return await self._aget("hourly", place, today, past_days, deadline, self.provider.hourly)

    def geocode(self, name: str, deadline: float, within: Enclosure | None = None) -> Place | None:
        """A place the gazetteer lacks, from the provider's geocoder, inside WITHIN when given; answers (found or
        not) are kept."""
        key = name if within is None else f"{within.place.name}|{name}"
        with self._lock:
            if key in self._geocoded:
                return self._geocoded[key]
        place = self.provider.geocode(name, deadline=deadline, within=within)
        with self._lock:
            self._geocoded[key] = place
        return place

    async def aforecast(self, place: Place, past_days: int, deadline: float, *, today: dt.date) -> Fetched[Forecast]:
        return await self._aget("forecast", place, today, past_days, deadline, self.provider.forecast)

    async def aair_quality(
        self, place: Place, past_days: int, deadline: float, *, today: dt.date
    ) -> Fetched[AirQuality]:
        return await self._aget("air", place, today, past_days, deadline, self.provider.air_quality)

    def sun(self, place: Place, past_days: int, deadline: float, *, today: dt.date) -> Fetched[SunForecast]:
        return self._get("sun", place, today, past_days, deadline, self.provider.sun)

    async def asun(self, place: Place, past_days: int, deadline: float, *, today: dt.date) -> Fetched[SunForecast]:
        return await self._aget("sun", place, today, past_days, deadline, self.provider.sun)

    # -- machinery ---------------------------------------------------------------------------------

    def _get(
        self, kind: str, place: Place, today: dt.date, past_days: int, deadline: float, fetch: Fetch
    ) -> Fetched[Any]:
        key, hit, future, leader = self._begin(kind, place, today, past_days)
        if hit is not None:
            return hit
        started, asked = time.monotonic(), time.time()
        if leader:
            self._run(key, future, functools.partial(fetch, today=today), place, deadline)
        try:
            value = future.result(timeout=max(0.0, deadline - time.monotonic()))
        except concurrent.futures.TimeoutError:
            return self._stale_or_raise(key, place, self._too_late())
        except WeatherUnavailable as error:
            return self._stale_or_raise(key, place, error)
        return _came_through(value, started, asked)

    async def _aget(
        self, kind: str, place: Place, today: dt.date, past_days: int, deadline: float, fetch: Fetch
    ) -> Fetched[Any]:
        import asyncio  # not at module level: an import cost synchronous programs never need

        key, hit, future, leader = self._begin(kind, place, today, past_days)
        if hit is not None:
            return hit
        started, asked = time.monotonic(), time.time()
        if leader:
            # The provider's client is synchronous and pooled; a worker thread keeps the event loop free,
            # and the shared future lets thread and task callers wait on the same upstream request.
            self.io_pool.submit(self._run, key, future, functools.partial(fetch, today=today), place, deadline)
        try:
            # Shielded: a caller that times out or is cancelled stops waiting; the fetch goes on for the rest.
            waiting = shielded(asyncio.wrap_future(future))
            value = await asyncio.wait_for(waiting, timeout=max(0.0, deadline - time.monotonic()))
        except asyncio.TimeoutError:
            return self._stale_or_raise(key, place, self._too_late())
        except WeatherUnavailable as error:
            return self._stale_or_raise(key, place, error)
        return _came_through(value, started, asked)

    def _begin(
        self, kind: str, place: Place, today: dt.date, past_days: int
    ) -> tuple[CacheKey, Fetched[Any] | None, concurrent.futures.Future[Any], bool]:
        window = next((w for w in _PAST_WINDOWS if w >= past_days), None)
        if window is None:
            raise NotCovered(
                f"{self.provider.label} keeps at most {_PAST_WINDOWS[-1]} past days", provider=self.provider.name
            )
        key = (kind, self.provider.name, self.provider.origin, place.name, place.latitude, place.longitude,
               today.isoformat(), window)  # fmt: skip
        with self._lock:
            if self._fresh is not None:
                for wider in _PAST_WINDOWS[_PAST_WINDOWS.index(window) :]:
                    value = self._fresh.get((*key[:-1], wider))
                    if value is not None:
                        hit = Fetched(value, True, False, max(0.0, time.time() - value.fetched_at), 0.0)
                        return key, hit, _NO_FUTURE, False
            future = self._inflight.get(key)
            if future is not None:
                return key, None, future, False
            future = concurrent.futures.Future()
            # Running from the start: no waiter can cancel it for the others (cancel() now returns False).
            future.set_running_or_notify_cancel()
            self._inflight[key] = future
            return key, None, future, True

    def _run(
        self, key: CacheKey, future: concurrent.futures.Future[Any], fetch: Fetch, place: Place, deadline: float
    ) -> None:
        try:
            value = self._fetch(key, fetch, place, deadline)
        except BaseException as error:
            with self._lock:
                self._inflight.pop(key, None)
            future.set_exception(error)
            return
        with self._lock:
            if self._fresh is not None:
                self._fresh[key] = value
            self._stale[key] = value
            self._inflight.pop(key, None)
        future.set_result(value)

    def _fetch(self, key: CacheKey, fetch: Fetch, place: Place, deadline: float) -> Any:
        """KEY's data from a second-level cache that holds a fresh copy (the CLI's file, the fleet's Redis),
        else from the provider; with a shared cache, one worker fleet-wide fetches each key at a time."""
        if self.disk is not None:
            value = self._copy(self.disk, key, place)
            if self._fresh_enough(value):
                return value
        value = self._fetch_upstream(key, fetch, place, deadline)
        if self.disk is not None:
            self.disk.put(key, value)
        return value

    def _fetch_upstream(self, key: CacheKey, fetch: Fetch, place: Place, deadline: float) -> Any:
        shared = self.shared
        if shared is None:
            return fetch(place, past_days=key[-1], deadline=deadline)
        pause = 0.02
        while True:
            value = self._copy(shared, key, place)
            if self._fresh_enough(value):
                return value
            token = shared.acquire(key, hold_s=max(0.0, deadline - time.monotonic()))
            if token is not None:
                try:
                    # The holder before may have stored its copy and let go between the look above and
                    # this lock: look again, or the fleet pays for the same fetch twice.
                    value = self._copy(shared, key, place)
                    if self._fresh_enough(value):
                        return value
                    wait = shared.spend(self.provider.name, self.upstream_limit)
                    if wait:
                        raise BudgetExhausted(
                            f"upstream budget exhausted for {self.provider.label} (HYBRID_WEATHER_UPSTREAM_LIMIT); "
                            f"retry in {wait:.0f} s",
                            provider=self.provider.name,
                            retry_after_s=wait,
                        )
                    value = fetch(place, past_days=key[-1], deadline=deadline)
                    shared.put(key, value)
                    return value
                finally:
                    shared.release(key, token)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise self._too_late(f"another worker's fetch from {self.provider.label}")
            time.sleep(min(pause, remaining))  # the holder's copy lands within its own deadline
            pause = min(pause * 2, 0.2)

    def _fresh_enough(self, value: Any | None) -> bool:
        """Whether a copy from a second-level cache may be served as fresh (within the TTL)."""
        return value is not None and time.time() - value.fetched_at <= self.cache_ttl

    def _too_late(self, waited_for: str | None = None) -> UpstreamTimeout:
        """The error for a deadline that passed while waiting on WAITED_FOR (default: the provider)."""
        what = f"{self.provider.label} did not answer" if waited_for is None else f"{waited_for} did not end"
        return UpstreamTimeout(f"{what} within the deadline", provider=self.provider.name)

    def _stale_or_raise(self, key: CacheKey, place: Place, error: WeatherUnavailable) -> Fetched[Any]:
        with self._lock:
            candidates = [self._stale.get((*key[:-1], w)) for w in _PAST_WINDOWS[_PAST_WINDOWS.index(key[-1]) :]]
        if self.disk is not None:  # the last good data of an earlier process
            candidates.append(self._copy(self.disk, key, place))
        if self.shared is not None:  # the last good data any worker of the fleet saw
            candidates.append(self._copy(self.shared, key, place))
        fresh_enough = [v for v in candidates if v is not None and time.time() - v.fetched_at <= self.max_stale_age]
        if not fresh_enough:
            raise error
        value = max(fresh_enough, key=lambda v: v.fetched_at)
        return Fetched(value, False, True, time.time() - value.fetched_at, 0.0)

    def _copy(self, cache: DiskCache | SharedCache, key: CacheKey, place: Place) -> Any | None:
        """KEY's copy in CACHE, whatever its age (the caller judges it), if it is one the provider could have
        sent for PLACE; else None. A copy that is not — garbled, of the wrong types, implausible, about another
        place or from another provider or server — is dropped from CACHE and counted, and the caller asks
        upstream as on a miss; the fresh answer takes its place."""
        try:
            value = cache.get(key)
            if value is None:
                return None
            value = checked(value, f"the {cache.name} cache", place=place, source=self.provider.name)
            if getattr(value, "days", None) == ():
                # Sound in every field, and nothing to answer with: served, it said 暂无预报数据 for every day.
                raise MalformedResponse(f"the {cache.name} cache sent a {key[0]} with no days", provider=value.source)
            return value
        except MalformedResponse as error:
            cache.discard(key)
            with self._lock:
                self.dropped_copies[cache.name] += 1
            logger.warning("dropped a cached %s of %s: %s; asking %s", key[0], place.name, error, self.provider.label)
            if self.on_drop is not None:
                self.on_drop(cache.name)
            return None


def shielded(inner: asyncio.Future[R]) -> asyncio.Future[R]:
    """asyncio.shield(INNER), whose outcome is taken even when every caller stopped waiting: shield drops its
    own callback on INNER once its caller is cancelled, and an exception INNER ends with later was then
    logged as "Future exception was never retrieved" (a fetch or an LLM answer that failed after the asker
    had gone). The callers that still wait get it as ever."""
    import asyncio

    inner.add_done_callback(lambda done: done.cancelled() or done.exception())
    return asyncio.shield(inner)


def _came_through(value: Any, started: float, asked: float) -> Fetched[Any]:
    """VALUE as it came through a shared future: fetched for this ask, or a copy the fleet's cache already
    held (fetched before the ask began, so a cache hit). STARTED is monotonic, ASKED wall-clock time."""
    return Fetched(
        value,
        value.fetched_at < asked,
        False,
        max(0.0, time.time() - value.fetched_at),
        (time.monotonic() - started) * 1000,
    )
