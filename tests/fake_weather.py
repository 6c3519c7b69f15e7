"""Local HTTP servers on 127.0.0.1 that speak the documented Open-Meteo and AMap APIs, with faults.

Responses are built from the field lists in docs/upstream-apis.md: Open-Meteo's parallel `daily` and
`hourly` arrays indexed by `time`, `current` objects, `{"error": true, "reason": ...}` errors, and the
geocoding `results` list; AMap's `status/infocode` envelope with `lives` and `forecasts[].casts`.

A test scripts faults per path with `server.fail(path, *faults)`: each request to PATH takes the next
fault from the queue ("503", "429", "500", "400", "slow:SECONDS", "malformed", "truncated", "short").
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import json
import socket
import threading
import time
import zlib
from collections import Counter, defaultdict, deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

# What the fake says about a day, unless a test sets something else with server.set_day().
DEFAULT_DAY = {
    "weather_code": 2,
    "temperature_2m_max": 15.0,
    "temperature_2m_min": 8.0,
    "precipitation_probability_max": 10,
    "precipitation_sum": 0.0,
    "wind_speed_10m_max": 3.0,
    "relative_humidity_2m_mean": 60,
    # Open-Meteo's sunrise and sunset are local ISO times of the day ("2026-11-30T06:42"): the fake adds
    # the date to these clocks; set_day(sunrise=None) gives a polar day's null.
    "sunrise": "06:42",
    "sunset": "16:53",
    "uv_index_max": 3.4,
}
DEFAULT_HOUR = {
    "temperature_2m": 10.0,
    "precipitation_probability": 5,
    "weather_code": 2,
    "wind_speed_10m": 2.0,
    "relative_humidity_2m": 60,
}
DEFAULT_CURRENT = {"temperature_2m": 12.3, "relative_humidity_2m": 55, "weather_code": 2}
DEFAULT_AIR = {"us_aqi": 42, "pm2_5": 12.0, "pm10": 20.0}


class FakeWeather:
    """One server for all three Open-Meteo endpoints and AMap's weatherInfo."""

    def __init__(self, today: dt.date) -> None:
        self.today = today
        self.days: dict[tuple[str, str], dict] = {}  # (rounded "lat,lon", iso date) → values
        self.air: dict[tuple[str, str], dict] = {}
        self.hours: dict[tuple[str, str], dict] = {}  # (rounded "lat,lon", iso date and hour) → values
        self.geocoding: dict[str, list[dict]] = {}
        self.amap_casts: list[dict] | None = None
        self.amap_error: str | None = None
        self.amap_keys: set[str] = {"good-key"}
        self.amap_geocodes: dict[str, list[dict]] = {}  # address → AMap's geocodes[]
        self.requests: Counter[str] = Counter()
        self.params: defaultdict[str, list[dict[str, str]]] = defaultdict(list)
        self.faults: defaultdict[str, deque[str]] = defaultdict(deque)
        self.delay = 0.0  # seconds every answer waits (to make concurrent requests overlap)
        self.in_flight = 0
        self.max_in_flight = 0  # most requests being answered at once: proof of concurrency, unlike timings
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        # A client that gave up (a timeout test) leaves a broken pipe behind; that is the point, not an error.
        self._server.handle_error = lambda request, address: None
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> FakeWeather:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def fail(self, path: str, *faults: str) -> None:
        self.faults[path].extend(faults)

    def set_day(self, latitude: float, longitude: float, day: dt.date, **values) -> None:
        self.days[(_key(latitude, longitude), day.isoformat())] = {**DEFAULT_DAY, **values}

    def set_hours(self, latitude: float, longitude: float, day: dt.date, hours: range, **values) -> None:
        for hour in hours:
            stamp = dt.datetime.combine(day, dt.time(hour)).isoformat(timespec="minutes")
            self.hours[(_key(latitude, longitude), stamp)] = {**DEFAULT_HOUR, **values}

    def set_air(self, latitude: float, longitude: float, day: dt.date, **values) -> None:
        self.air[(_key(latitude, longitude), day.isoformat())] = {**DEFAULT_AIR, **values}

    # -- response bodies, as documented ------------------------------------------------------------

    def dates(self, q: dict[str, str], *, ahead_default: int, ahead_max: int) -> list[dt.date] | dict:
        """The days a request asks for: start_date to end_date, else past_days and forecast_days around the
        server's today; an error body for days the server does not keep (92 back, AHEAD_MAX - 1 ahead)."""
        first, last = self.today - dt.timedelta(days=92), self.today + dt.timedelta(days=ahead_max - 1)
        if "start_date" in q or "end_date" in q:
            try:
                start, end = dt.date.fromisoformat(q["start_date"]), dt.date.fromisoformat(q["end_date"])
            except (KeyError, ValueError):
                return {"error": True, "reason": "Parameter 'start_date' and 'end_date' must be set together"}
            if not first <= start <= end <= last:
                return {
                    "error": True,
                    "reason": f"Parameter 'start_date' is out of allowed range from {first} to {last}",
                }
            return [start + dt.timedelta(days=i) for i in range((end - start).days + 1)]
        past, ahead = int(q.get("past_days", 0)), int(q.get("forecast_days", ahead_default))
        if not 0 <= ahead <= ahead_max or not 0 <= past <= 92:
            return {"error": True, "reason": "Parameter forecast_days or past_days out of range"}
        return [self.today + dt.timedelta(days=i) for i in range(-past, ahead)]

    def forecast(self, q: dict[str, str]) -> dict:
        lat, lon = float(q["latitude"]), float(q["longitude"])
        dates = self.dates(q, ahead_default=7, ahead_max=16)
        if isinstance(dates, dict):
            return dates
        body: dict = {
            "latitude": lat,
            "longitude": lon,
            "elevation": 4.0,
            "generationtime_ms": 0.1,
            "utc_offset_seconds": 28800,
            "timezone": q.get("timezone", "GMT"),
            "timezone_abbreviation": "CST",
        }
        if "daily" in q:
            names = q["daily"].split(",")
            daily: dict[str, list] = {"time": [d.isoformat() for d in dates]}
            for name in names:
                values = [self.days.get((_key(lat, lon), d.isoformat()), DEFAULT_DAY).get(name) for d in dates]
                if name in ("sunrise", "sunset"):
                    values = [f"{d.isoformat()}T{v}" if isinstance(v, str) and len(v) == 5 else v
                              for d, v in zip(dates, values, strict=True)]  # fmt: skip
                daily[name] = values
            body.update(daily_units=dict.fromkeys(names, ""), daily=daily)
        if "hourly" in q:
            names = q["hourly"].split(",")
            stamps = [
                dt.datetime.combine(d, dt.time(h)).isoformat(timespec="minutes") for d in dates for h in range(24)
            ]
            hourly: dict[str, list] = {"time": stamps}
            for name in names:
                hourly[name] = [self.hours.get((_key(lat, lon), t), DEFAULT_HOUR).get(name) for t in stamps]
            body.update(hourly_units=dict.fromkeys(names, ""), hourly=hourly)
        if "current" in q:
            body["current"] = {
                "time": f"{self.today.isoformat()}T10:00",
                "interval": 900,
                **{n: DEFAULT_CURRENT.get(n) for n in q["current"].split(",")},
            }
        return body

    def air_quality(self, q: dict[str, str]) -> dict:
        lat, lon = float(q["latitude"]), float(q["longitude"])
        dates = self.dates(q, ahead_default=5, ahead_max=7)
        if isinstance(dates, dict):
            return dates
        names = q["hourly"].split(",")
        hours = [dt.datetime.combine(day, dt.time(h)) for day in dates for h in range(0, 24, 3)]
        hourly: dict[str, list] = {"time": [h.isoformat(timespec="minutes") for h in hours]}
        for name in names:
            hourly[name] = [self.air.get((_key(lat, lon), h.date().isoformat()), DEFAULT_AIR).get(name) for h in hours]
        return {
            "latitude": lat,
            "longitude": lon,
            "timezone": q.get("timezone", "GMT"),
            "hourly": hourly,
            "current": {"time": f"{self.today.isoformat()}T10:00", **{n: DEFAULT_AIR[n] for n in names}},
        }

    def search(self, q: dict[str, str]) -> dict:
        results = self.geocoding.get(q["name"], [])
        return {"results": results, "generationtime_ms": 0.2} if results else {"generationtime_ms": 0.2}

    def amap_geocode(self, q: dict[str, str]) -> dict:
        if q.get("key") not in self.amap_keys:
            return {"status": "0", "info": "INVALID_USER_KEY", "infocode": "10001"}
        found = self.amap_geocodes.get(q.get("address", ""), [])
        return {"status": "1", "info": "OK", "infocode": "10000", "count": str(len(found)), "geocodes": found}

    def amap(self, q: dict[str, str]) -> dict:
        if q.get("key") not in self.amap_keys:
            return {"status": "0", "info": "INVALID_USER_KEY", "infocode": "10001"}
        if self.amap_error:
            return {"status": "0", "info": "ERROR", "infocode": self.amap_error}
        if q.get("extensions") == "base":
            return {
                "status": "1",
                "count": "1",
                "info": "OK",
                "infocode": "10000",
                "lives": [
                    {
                        "province": "上海",
                        "city": "上海市",
                        "adcode": q["city"],
                        "weather": "阴",
                        "temperature": "11",
                        "winddirection": "东北",
                        "windpower": "≤3",
                        "humidity": "71",
                        "reporttime": f"{self.today} 10:30:00",
                    }
                ],
            }
        casts = self.amap_casts or [
            {
                "date": (self.today + dt.timedelta(days=i)).isoformat(),
                "week": str(i + 1),
                "dayweather": "小雨" if i == 1 else "多云",
                "nightweather": "小雨" if i == 1 else "晴",
                "daytemp": str(14 + i),
                "nighttemp": str(7 + i),
                "daywind": "东",
                "nightwind": "东",
                "daypower": "4" if i == 2 else "≤3",
                "nightpower": "≤3",
            }
            for i in range(4)
        ]
        return {
            "status": "1",
            "count": "1",
            "info": "OK",
            "infocode": "10000",
            "forecasts": [
                {
                    "city": "上海市",
                    "adcode": q["city"],
                    "province": "上海",
                    "reporttime": f"{self.today} 08:00:00",
                    "casts": casts,
                }
            ],
        }

    # -- HTTP ----------------------------------------------------------------------------------------

    # Above ruff's complexity bound on purpose: one branch per injected fault.
    def _handler_class(self):  # noqa: C901
        fake = self
        routes = {
            "/v1/forecast": self.forecast,
            "/v1/air-quality": self.air_quality,
            "/v1/search": self.search,
            "/v3/weather/weatherInfo": self.amap,
            "/v3/geocode/geo": self.amap_geocode,
        }

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output clean
                pass

            def do_GET(self):
                url = urlparse(self.path)
                query = {k: v[-1] for k, v in parse_qs(url.query).items()}
                with fake._lock:
                    fake.requests[url.path] += 1
                    fake.params[url.path].append(query)
                    fault = fake.faults[url.path].popleft() if fake.faults[url.path] else None
                    fake.in_flight += 1
                    fake.max_in_flight = max(fake.max_in_flight, fake.in_flight)
                try:
                    self._answer(url, query, fault)
                finally:
                    with fake._lock:
                        fake.in_flight -= 1

            # Above ruff's complexity bound on purpose: one branch per injected fault.
            def _answer(self, url, query, fault):  # noqa: C901
                if fake.delay:
                    time.sleep(fake.delay)
                if fault and fault.startswith("slow:"):
                    time.sleep(float(fault[5:]))
                    fault = None
                if fault in ("429", "500", "503", "400"):
                    reason = {"429": "Minutely API request limit exceeded", "400": "Cannot initialize WeatherVariable"}
                    return self._send(
                        int(fault), json.dumps({"error": True, "reason": reason.get(fault, "Internal error")}).encode()
                    )
                if fault == "malformed":
                    return self._send(200, b"<html>502 Bad Gateway</html>")
                if fault and fault.startswith("drip:"):  # the body one byte at a time, each within a read timeout
                    body = json.dumps(routes[url.path](query)).encode()
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    with contextlib.suppress(OSError):
                        for byte in body:
                            self.wfile.write(bytes([byte]))
                            self.wfile.flush()
                            time.sleep(float(fault[5:]))
                    return None
                if fault == "gzip-bomb":  # 1 GiB of zeros, about 1 MB on the wire
                    return self._send(200, _gzip_bomb(), encoding="gzip")
                if fault == "deep":  # JSON nested 100,000 deep
                    return self._send(200, b"[" * 100_000 + b"]" * 100_000)
                if fault == "redirect":
                    self.send_response(302)
                    self.send_header("Location", "https://elsewhere.invalid/v1/forecast")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return None
                if fault and fault.startswith("json:"):  # a body a test wrote (wrong types, absurd values)
                    return self._send(200, fault[5:].encode())
                body = (
                    json.dumps(routes[url.path](query)).encode()
                    if url.path in routes
                    else b'{"error":true,"reason":"not found"}'
                )
                if fault == "short":  # valid HTTP, JSON cut in half
                    return self._send(200, body[: len(body) // 2])
                if fault == "truncated":  # Content-Length promises more than is sent, then the connection closes
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body[: len(body) // 3])
                    self.wfile.flush()
                    self.close_connection = True
                    return
                status = 400 if b'"error": true' in body[:20] else 200
                self._send(status, body)

            def _send(self, status: int, body: bytes, encoding: str | None = None) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                if encoding:
                    self.send_header("Content-Encoding", encoding)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        return Handler


@functools.cache
def _gzip_bomb() -> bytes:
    compressor = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    block = bytes(1024 * 1024)
    return b"".join(compressor.compress(block) for _ in range(1024)) + compressor.flush()


def _key(latitude: float, longitude: float) -> str:
    return f"{latitude:.2f},{longitude:.2f}"


def free_port() -> int:
    """A port on 127.0.0.1 where nothing listens (until someone binds it)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def refused_url() -> str:
    """A URL on 127.0.0.1 where nothing listens: connections are refused."""
    return f"http://127.0.0.1:{free_port()}"
