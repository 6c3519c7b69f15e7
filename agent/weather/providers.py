"""Weather providers: Open-Meteo (default, no key), AMap (Chinese places, AMAP_KEY) and demo (offline).

Each turns its service's documented JSON into the shared shapes in shapes.py and passes the result through
shapes.checked (the check cached copies pass too); a body that does not have the documented shape, or
holds what no weather is, is a MalformedResponse, never a crash.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import math
import time
import zlib
from abc import ABC, abstractmethod
from collections import defaultdict
from typing import Any, ClassVar, NamedTuple

from hybrid_weather.rules import CHINA_TZ_NAME, Place

from ..errors import ConfigurationError, MalformedResponse, NotCovered, UpstreamRejected
from .horizon import Horizon
from .http import ResilientClient
from .shapes import (
    AirQuality,
    CurrentWeather,
    DailyAir,
    DailyWeather,
    Forecast,
    HourlyForecast,
    HourlyWeather,
    SunDay,
    SunForecast,
    beaufort,
    checked,
    condition_of,
)

OPEN_METEO_FORECAST_URL = "https://api.open-meteo.com"
OPEN_METEO_AIR_URL = "https://air-quality-api.open-meteo.com"
OPEN_METEO_GEOCODING_URL = "https://geocoding-api.open-meteo.com"
AMAP_URL = "https://restapi.amap.com"

# Ten variables: Open-Meteo bills more than ten per location as extra calls.
_DAILY = (
    "weather_code",
    "temperature_2m_max",
    "temperature_2m_min",
    "precipitation_probability_max",
    "precipitation_sum",
    "wind_speed_10m_max",
    "relative_humidity_2m_mean",
)
_CURRENT = ("temperature_2m", "relative_humidity_2m", "weather_code")
_AIR = ("us_aqi", "pm2_5", "pm10")
# Asked only when a question names a part of the day, in its own request: with the daily ones they would
# pass Open-Meteo's ten variables per call.
_HOURLY = ("temperature_2m", "precipitation_probability", "weather_code", "wind_speed_10m", "relative_humidity_2m")
# Asked only for a question about sunrise, sunset or UV, in its own request, for the same reason.
_SUN = ("sunrise", "sunset", "uv_index_max")
# Geocoding ranks villages first for some Chinese names; capitals and seats of government go first.
_FEATURE_RANK = {"PPLC": 0, "PPLA": 1, "PPLA2": 2, "PPLA3": 3, "PPLA4": 4, "PPL": 5}
# The suffixes of Chinese units, longest first, that a geocoder may or may not write (余杭区 / 余杭, 青禾镇 / 青禾).
_UNIT_ENDINGS = (
    "特别行政区",
    "自治区",
    "自治州",
    "自治县",
    "街道",
    "地区",
    "省",
    "市",
    "区",
    "县",
    "镇",
    "乡",
    "盟",
    "旗",
)
# AMap's match levels coarser than a township: an answer at one of them is where AMap gave up on the name.
_AMAP_COARSE_LEVELS = frozenset({"国家", "省", "市", "区县", "开发区"})


class Enclosure(NamedTuple):
    """Where a place the question named must lie (杭州市余杭区 for 余杭区青禾街道): a geocoder's answer counts
    only inside it, by the geocoder's own record of where its answer is (AMap's adcode, Open-Meteo's admin1..4)."""

    place: Place  #: the innermost unit the question wrote
    names: tuple[str, ...]  #: the units' own names, outermost first: 浙江省, 杭州市, 余杭区


def _stem(name: str) -> tuple[str, str]:
    """NAME as (its stem, its unit's suffix): 余杭区 → (余杭, 区), 青禾 → (青禾, "")."""
    for ending in _UNIT_ENDINGS:
        if name.endswith(ending) and len(name) > len(ending):
            return name[: -len(ending)], ending
    return name, ""


def _same_name(found: str, asked: str) -> bool:
    """Whether a geocoder's FOUND names what was ASKED: one stem, and one suffix or none written (青禾 for 青禾镇;
    never 青禾村 for 青禾镇)."""
    (found_stem, found_suffix), (asked_stem, asked_suffix) = _stem(found), _stem(asked)
    return found_stem == asked_stem and (found_suffix == asked_suffix or not found_suffix or not asked_suffix)


def _admin_inside(result: dict[str, Any], within: Enclosure) -> bool:
    """Whether an Open-Meteo result lies inside WITHIN by its admin1..admin4: every unit of WITHIN among them,
    the province as admin1 (余杭区 under 宁波市 is not 杭州市's; a result that leaves a level out proves nothing)."""
    if str(result.get("country_code") or "") != within.place.country:
        return False
    admins = [_stem(str(result.get(f"admin{level}") or ""))[0] for level in range(1, 5)]
    stems = [_stem(name)[0] for name in within.names]
    return admins[0] == stems[0] and set(stems) <= set(admins)


def _geocoded(
    word: str, within: Enclosure, latitude: float, longitude: float, timezone: str, adcode: str | None
) -> Place:
    """The Place a geocoder found for WORD inside WITHIN, named with it as a township is (下塘镇（合肥市长丰县）)."""
    parent = within.place
    return Place(
        parent.name + word,
        f"{word}（{parent.name}）",
        "geocoded",
        latitude,
        longitude,
        timezone,
        parent.country,
        adcode,
        parent.adcode,
    )


class WeatherProvider(ABC):
    """A source of forecasts and air quality for places."""

    name: ClassVar[str]
    label: ClassVar[str]  #: for messages and answers
    attribution: ClassVar[str | None] = None
    #: Open-Meteo's: forecast_days=16 (today and 15 more), past_days ≤ 92, air quality forecast_days ≤ 7.
    horizon: ClassVar[Horizon] = Horizon(days_ahead=15, days_back=92, air_days_ahead=6)
    #: Requests a fleet may make, as HYBRID_WEATHER_UPSTREAM_LIMIT spells it, when the user sets none.
    default_upstream_limit: ClassVar[str | None] = None
    #: Where its data comes from (origin_of its base URLs; empty for a provider that makes its own): part of
    #: every cache key, so a mirror's or a test server's data is never served as the public service's.
    origin: str = ""

    # TODAY, in every method: the question's day (--today, today=, else the day in China when it was asked).
    # The days fetched are counted from it, PAST_DAYS before and the horizon after, never from the clock.

    @abstractmethod
    def forecast(self, place: Place, *, today: dt.date, past_days: int, deadline: float) -> Forecast: ...

    def air_quality(self, place: Place, *, today: dt.date, past_days: int, deadline: float) -> AirQuality:
        raise NotCovered(f"{self.label} has no air-quality data; use --provider open-meteo", provider=self.name)

    def hourly(self, place: Place, *, today: dt.date, past_days: int, deadline: float) -> HourlyForecast:
        """Hour-by-hour forecasts, for a part of the day (今晚); NotCovered where the provider has none."""
        raise NotCovered(f"{self.label} has no hourly forecast", provider=self.name)

    def sun(self, place: Place, *, today: dt.date, past_days: int, deadline: float) -> SunForecast:
        """Sunrise, sunset and the top UV index by day; NotCovered where the provider has none."""
        raise NotCovered(
            f"{self.label} has no sunrise, sunset or UV data; use --provider open-meteo", provider=self.name
        )

    def geocode(self, name: str, *, deadline: float, within: Enclosure | None = None) -> Place | None:
        """A place the gazetteer lacks, looked up by name, inside WITHIN when given; None where the provider
        cannot search or finds none (inside WITHIN, by its own record of where it is)."""
        return None

    def close(self) -> None:  # noqa: B027 - most providers hold nothing to close; the HTTP ones override it
        pass


def origin_of(*urls: str) -> str:
    """A short name for the service at URLS: a hash, so no host, port or password in a URL lands in a cache key."""
    return hashlib.sha256(" ".join(urls).encode()).hexdigest()[:12]


class _HTTPProvider(WeatherProvider):
    """A provider behind HTTP: owns one ResilientClient (pool, retries, breaker)."""

    http: ResilientClient

    def close(self) -> None:
        self.http.close()


class OpenMeteoProvider(_HTTPProvider):
    name = "open-meteo"
    label = "Open-Meteo"
    attribution = "Weather data by Open-Meteo.com (CC BY 4.0)"
    # The free tier's published limits (open-meteo.com/en/terms): past them, requests are refused.
    default_upstream_limit = "600/min,5000/h,10000/d"

    def __init__(self, base_url: str | None = None, **http: Any) -> None:
        base = base_url.rstrip("/") if base_url else None
        self.forecast_url = f"{base or OPEN_METEO_FORECAST_URL}/v1/forecast"
        self.air_url = f"{base or OPEN_METEO_AIR_URL}/v1/air-quality"
        self.geocoding_url = f"{base or OPEN_METEO_GEOCODING_URL}/v1/search"
        self.origin = origin_of(self.forecast_url, self.air_url)
        self.http = ResilientClient(self.label, **http)

    def forecast(self, place: Place, *, today: dt.date, past_days: int, deadline: float) -> Forecast:
        body = self.http.get_json(
            self.forecast_url,
            {
                **_where(place, today, past_days, self.horizon.days_ahead),
                "daily": ",".join(_DAILY),
                "current": ",".join(_CURRENT),
                "wind_speed_unit": "ms",
            },
            deadline=deadline,
        )
        daily = _columns(body, "daily", _DAILY, self.label)
        days = []
        for i, day in enumerate(daily["time"]):
            code = _int(daily["weather_code"][i])
            wind = _float(daily["wind_speed_10m_max"][i])
            force = beaufort(wind)
            days.append(
                DailyWeather(
                    date=_date(day, self.label),
                    condition=condition_of(code)[0],
                    weather_code=code,
                    temp_max=_float(daily["temperature_2m_max"][i]),
                    temp_min=_float(daily["temperature_2m_min"][i]),
                    precip_probability=_int(daily["precipitation_probability_max"][i]),
                    precip_sum=_float(daily["precipitation_sum"][i]),
                    wind_speed_max=wind,
                    wind_scale=None if force is None else f"{force}级",
                    humidity=_int(daily["relative_humidity_2m_mean"][i]),
                )
            )
        current = None
        if isinstance(body.get("current"), dict):
            now = body["current"]
            code = _int(now.get("weather_code"))
            current = CurrentWeather(
                time=str(now.get("time", "")),
                condition=condition_of(code)[0],
                weather_code=code,
                temperature=_float(now.get("temperature_2m")),
                humidity=_int(now.get("relative_humidity_2m")),
            )
        return checked(Forecast(place, tuple(days), current, self.name, time.time()), self.label, source=self.name)

    def hourly(self, place: Place, *, today: dt.date, past_days: int, deadline: float) -> HourlyForecast:
        body = self.http.get_json(
            self.forecast_url,
            {
                **_where(place, today, past_days, self.horizon.days_ahead),
                "hourly": ",".join(_HOURLY),
                "wind_speed_unit": "ms",
            },
            deadline=deadline,
        )
        hourly = _columns(body, "hourly", _HOURLY, self.label)
        hours = []
        for i, stamp in enumerate(hourly["time"]):
            code = _int(hourly["weather_code"][i])
            hours.append(
                HourlyWeather(
                    time=_datetime(stamp, self.label),
                    condition=condition_of(code)[0],
                    weather_code=code,
                    temperature=_float(hourly["temperature_2m"][i]),
                    precip_probability=_int(hourly["precipitation_probability"][i]),
                    wind_speed=_float(hourly["wind_speed_10m"][i]),
                    humidity=_int(hourly["relative_humidity_2m"][i]),
                )
            )
        return checked(HourlyForecast(place, tuple(hours), self.name, time.time()), self.label, source=self.name)

    def sun(self, place: Place, *, today: dt.date, past_days: int, deadline: float) -> SunForecast:
        body = self.http.get_json(
            self.forecast_url,
            {**_where(place, today, past_days, self.horizon.days_ahead), "daily": ",".join(_SUN)},
            deadline=deadline,
        )
        daily = _columns(body, "daily", _SUN, self.label)
        days = tuple(
            SunDay(
                date=_date(day, self.label),
                sunrise=_clock(daily["sunrise"][i], self.label),
                sunset=_clock(daily["sunset"][i], self.label),
                uv_index_max=_float(daily["uv_index_max"][i]),
            )
            for i, day in enumerate(daily["time"])
        )
        return checked(SunForecast(place, days, self.name, time.time()), self.label, source=self.name)

    def air_quality(self, place: Place, *, today: dt.date, past_days: int, deadline: float) -> AirQuality:
        body = self.http.get_json(
            self.air_url,
            {
                **_where(place, today, past_days, self.horizon.air_days_ahead),
                "hourly": ",".join(_AIR),
                "current": ",".join(_AIR),
            },
            deadline=deadline,
        )
        hourly = _columns(body, "hourly", _AIR, self.label)
        by_day: dict[str, list[int]] = defaultdict(list)
        for i, stamp in enumerate(hourly["time"]):
            by_day[str(stamp)[:10]].append(i)
        days = []
        for day, rows in by_day.items():
            aqi = [v for i in rows if (v := _float(hourly["us_aqi"][i])) is not None]
            pm25 = [v for i in rows if (v := _float(hourly["pm2_5"][i])) is not None]
            pm10 = [v for i in rows if (v := _float(hourly["pm10"][i])) is not None]
            days.append(
                DailyAir(
                    _date(day, self.label),
                    round(max(aqi)) if aqi else None,
                    round(sum(pm25) / len(pm25), 1) if pm25 else None,
                    round(sum(pm10) / len(pm10), 1) if pm10 else None,
                )
            )
        current = None
        if isinstance(body.get("current"), dict):
            now = body["current"]
            aqi_now = _float(now.get("us_aqi"))
            current = DailyAir(
                _date(str(now.get("time", ""))[:10], self.label) if now.get("time") else today,
                None if aqi_now is None else round(aqi_now),
                _float(now.get("pm2_5")),
                _float(now.get("pm10")),
            )
        return checked(AirQuality(place, tuple(days), current, self.name, time.time()), self.label, source=self.name)

    def geocode(self, name: str, *, deadline: float, within: Enclosure | None = None) -> Place | None:
        # Under a parent, the stem is searched (3 characters and more match as a prefix: 青禾 finds 青禾 and
        # 青禾镇, 青禾镇 would not find 青禾), and only an answer inside the parent of the asked name counts.
        stem = _stem(name)[0]
        asked = stem if within is not None and len(stem) >= 2 else name
        params = {"name": asked, "count": 100 if within else 10, "language": "zh", "format": "json"}
        if within is not None:
            params["countryCode"] = within.place.country
        body = self.http.get_json(self.geocoding_url, params, deadline=deadline)
        if not isinstance(body, dict):
            raise MalformedResponse(
                f"{self.label} geocoding sent {type(body).__name__}, not an object", provider=self.name
            )
        found = body.get("results") or []
        if not isinstance(found, list):
            raise MalformedResponse(
                f"{self.label} geocoding sent results as {type(found).__name__}, not a list", provider=self.name
            )
        results = [
            r
            for r in found
            if isinstance(r, dict) and _within(r.get("latitude"), 90) and _within(r.get("longitude"), 180)
        ]
        if within is not None:
            results = [r for r in results if _same_name(str(r.get("name") or ""), name) and _admin_inside(r, within)]
        if not results:
            return None
        best = min(
            results, key=lambda r: (_FEATURE_RANK.get(str(r.get("feature_code")), 9), -(_int(r.get("population")) or 0))
        )
        if within is not None:
            timezone = str(best.get("timezone") or within.place.timezone)
            latitude, longitude = float(best["latitude"]), float(best["longitude"])
            return _geocoded(name, within, latitude, longitude, timezone, within.place.adcode)
        label = str(best.get("name") or name)
        return Place(
            label,
            label,
            "geocoded",
            float(best["latitude"]),
            float(best["longitude"]),
            str(best.get("timezone") or "UTC"),
            str(best.get("country_code") or ""),
        )


class AMapProvider(_HTTPProvider):
    name = "amap"
    label = "高德天气 (AMap)"
    attribution = "天气数据来自高德开放平台"
    # casts: today and three more days. AMap has no air quality at all: air_quality() says so.
    horizon = Horizon(days_ahead=3, days_back=0, air_days_ahead=3)

    _ERRORS: ClassVar[dict[str, str]] = {
        "10001": "AMap rejected the key (10001 INVALID_USER_KEY): check AMAP_KEY",
        "10003": "AMap daily quota used up (10003 DAILY_QUERY_OVER_LIMIT); it resets at 00:00 Beijing time, "
        "or use --provider open-meteo",
        "10004": "AMap says requests come too often (10004 ACCESS_TOO_FREQUENT); try again in a minute",
    }
    # Codes that mean the key (or what it is bound to) is wrong: the user's setting, not the service's health.
    _KEY_CODES: ClassVar[frozenset[str]] = frozenset(
        {"10001", "10002", "10005", "10006", "10007", "10008", "10009", "10012"}
    )

    def __init__(self, key: str | None, base_url: str | None = None, **http: Any) -> None:
        if not key:
            raise ConfigurationError("the amap provider needs a key: set AMAP_KEY (or use --provider open-meteo)")
        self.key = key
        self.url = f"{(base_url or AMAP_URL).rstrip('/')}/v3/weather/weatherInfo"
        self.geocode_url = f"{(base_url or AMAP_URL).rstrip('/')}/v3/geocode/geo"
        self.origin = origin_of(self.url)
        self.http = ResilientClient(self.label, **http)

    def _get(self, place: Place, extensions: str, deadline: float) -> dict[str, Any]:
        if not place.adcode:
            raise NotCovered(
                f"AMap covers places in China only, not {place.display}; use --provider open-meteo", provider=self.name
            )
        return self._envelope(
            self.url, {"key": self.key, "city": place.adcode, "extensions": extensions, "output": "JSON"}, deadline
        )

    def geocode(self, name: str, *, deadline: float, within: Enclosure | None = None) -> Place | None:
        """AMap's geocoder (v3/geocode/geo): an answer counts where AMap matched the name itself (its level a
        township, a village, a point of interest; not the county it fell back to), its address says the name,
        and, under a parent, its adcode lies in the parent's. Answers in more than one county: none is proved."""
        params = {"key": self.key, "address": name, "output": "JSON"}
        if within is not None and within.place.adcode:
            params |= {"address": "".join(within.names) + name, "city": within.place.adcode}
        body = self._envelope(self.geocode_url, params, deadline)
        found = body.get("geocodes") or []
        if not isinstance(found, list):
            raise MalformedResponse(f"AMap geocoding sent geocodes as {type(found).__name__}", provider=self.name)
        stem = _stem(name)[0]
        prefix = _adcode_prefix(within.place.adcode) if within is not None and within.place.adcode else ""
        places = {
            (adcode, location)
            for g in found
            if isinstance(g, dict)
            and str(g.get("level") or "") not in _AMAP_COARSE_LEVELS
            and stem in str(g.get("formatted_address") or "")
            and (adcode := str(g.get("adcode") or "")).startswith(prefix)
            and len(adcode) == 6
            and (location := _amap_location(g.get("location"))) is not None
        }
        if len({adcode for adcode, _ in places}) != 1:
            return None
        adcode, (longitude, latitude) = places.pop()
        if within is not None:
            return _geocoded(name, within, latitude, longitude, within.place.timezone, adcode)
        return Place(name, name, "geocoded", latitude, longitude, CHINA_TZ_NAME, "CN", adcode, adcode)

    def _envelope(self, url: str, params: dict[str, str], deadline: float) -> dict[str, Any]:
        """AMap's answer at URL, its status envelope checked: a key refused is a ConfigurationError, any other
        refusal UpstreamRejected."""
        body = self.http.get_json(url, params, deadline=deadline)
        if not isinstance(body, dict) or "status" not in body:
            raise MalformedResponse("AMap sent a body without its status envelope", provider=self.name)
        if body["status"] != "1":
            code = str(body.get("infocode", ""))
            info = str(body.get("info", ""))[:80]
            if code in self._KEY_CODES:
                raise ConfigurationError(
                    self._ERRORS.get(code, f"AMap rejected the key ({code} {info}): check AMAP_KEY and its settings")
                )
            message = self._ERRORS.get(code, f"AMap refused the request ({code} {info})")
            raise UpstreamRejected(message, provider=self.name)
        return body

    def forecast(self, place: Place, *, today: dt.date, past_days: int, deadline: float) -> Forecast:
        # AMap takes no dates: its casts start at its own today; a question's day it lacks says 暂无预报数据.
        body = self._get(place, "all", deadline)
        try:
            casts = body["forecasts"][0]["casts"]
            days = []
            for cast in casts:
                day_weather, night_weather = cast["dayweather"], cast["nightweather"]
                temps = [_float(cast["daytemp"]), _float(cast["nighttemp"])]
                known = [t for t in temps if t is not None]
                days.append(
                    DailyWeather(
                        date=_date(cast["date"], self.label),
                        condition=day_weather if day_weather == night_weather else f"{day_weather}转{night_weather}",
                        temp_max=max(known) if known else None,
                        temp_min=min(known) if known else None,
                        wind_scale=f"{cast['daypower']}级",
                        wind_direction=f"{cast['daywind']}风",
                    )
                )
        except (KeyError, IndexError, TypeError) as exc:
            raise MalformedResponse(f"AMap forecast is missing {exc}", provider=self.name) from None
        live = self._get(place, "base", deadline)
        try:
            now = live["lives"][0]
            current = CurrentWeather(
                time=str(now["reporttime"]),
                condition=str(now["weather"]),
                temperature=_float(now["temperature"]),
                humidity=_int(now["humidity"]),
                wind_scale=f"{now['windpower']}级",
            )
        except (KeyError, IndexError, TypeError) as exc:
            raise MalformedResponse(f"AMap live weather is missing {exc}", provider=self.name) from None
        return checked(Forecast(place, tuple(days), current, self.name, time.time()), self.label, source=self.name)


class DemoProvider(WeatherProvider):
    """Deterministic synthetic weather for offline use and tests. Every answer says 演示数据."""

    name = "demo"
    label = "演示数据 (demo)"
    attribution = "演示数据：合成天气，不是真实预报"

    def forecast(self, place: Place, *, today: dt.date, past_days: int, deadline: float) -> Forecast:
        days = tuple(
            self._day(place, today + dt.timedelta(days=offset))
            for offset in range(-past_days, self.horizon.days_ahead + 1)
        )
        first = self._day(place, today)
        current = CurrentWeather(
            time=f"{today.isoformat()}T12:00",
            condition=first.condition,
            weather_code=first.weather_code,
            temperature=round(((first.temp_max or 0) + (first.temp_min or 0)) / 2, 1),
            humidity=first.humidity,
        )
        return checked(Forecast(place, days, current, self.name, time.time()), self.label, source=self.name)

    def air_quality(self, place: Place, *, today: dt.date, past_days: int, deadline: float) -> AirQuality:
        days = []
        for offset in range(-past_days, self.horizon.air_days_ahead + 1):
            day = today + dt.timedelta(days=offset)
            seed = zlib.crc32(f"air|{place.name}|{day}".encode())
            # PM10 includes PM2.5, so it is never less; the AQI follows the PM2.5 it would be computed from.
            pm2_5 = 5.0 + seed % 90
            pm10 = pm2_5 + 5 + (seed >> 8) % 80
            days.append(DailyAir(day, round(min(300.0, 10 + pm2_5 * 1.4)), pm2_5, pm10))
        return checked(
            AirQuality(place, tuple(days), days[past_days], self.name, time.time()), self.label, source=self.name
        )

    def hourly(self, place: Place, *, today: dt.date, past_days: int, deadline: float) -> HourlyForecast:
        hours = []
        for offset in range(-past_days, self.horizon.days_ahead + 1):
            day = self._day(place, today + dt.timedelta(days=offset))
            low, high = day.temp_min or 0.0, day.temp_max or 0.0
            for hour in range(24):
                # Coldest at dawn, warmest mid-afternoon; the day's condition, rain likelier in the evening.
                warmth = (1 - math.cos(2 * math.pi * (hour - 5) / 24)) / 2
                chance = day.precip_probability or 0
                hours.append(
                    HourlyWeather(
                        time=dt.datetime.combine(day.date, dt.time(hour)),
                        condition=day.condition,
                        weather_code=day.weather_code,
                        temperature=round(low + (high - low) * warmth, 1),
                        precip_probability=min(100, chance + 10) if hour >= 17 else max(0, chance - 10),
                        wind_speed=day.wind_speed_max,
                        humidity=day.humidity,
                    )
                )
        return checked(HourlyForecast(place, tuple(hours), self.name, time.time()), self.label, source=self.name)

    def sun(self, place: Place, *, today: dt.date, past_days: int, deadline: float) -> SunForecast:
        days = []
        for offset in range(-past_days, self.horizon.days_ahead + 1):
            day = today + dt.timedelta(days=offset)
            sunrise, sunset = _sun_times(place, day)
            # The UV index follows the noon sun's height, less on cloudy or rainy days: plausible, never real.
            noon_height = 90 - abs(place.latitude - _declination(day))
            cloud = {0: 1.0, 1: 0.9, 2: 0.75, 3: 0.5}.get(self._day(place, day).weather_code or 0, 0.35)
            uv = round(max(0.0, 12.5 * math.sin(math.radians(max(0.0, noon_height))) ** 2.5 * cloud), 1)
            days.append(SunDay(day, sunrise, sunset, uv))
        return checked(SunForecast(place, tuple(days), self.name, time.time()), self.label, source=self.name)

    @staticmethod
    def _day(place: Place, day: dt.date) -> DailyWeather:
        seed = zlib.crc32(f"{place.name}|{day}".encode())
        codes = (0, 1, 2, 3, 3, 61, 63, 80, 2, 1, 45, 71 if abs(place.latitude) > 35 else 65)
        code = codes[seed % len(codes)]
        # Warmer near the equator, seasons flipped south of it: plausible, never real.
        season = math.cos(2 * math.pi * (day.timetuple().tm_yday - 200) / 365) * (1 if place.latitude >= 0 else -1)
        mean = 30 - 0.5 * abs(place.latitude) + 9 * season * min(1.0, abs(place.latitude) / 30)
        spread = 4 + seed % 6
        wind = round((seed >> 8) % 90 / 10, 1)
        rainy = code in (61, 63, 65, 80, 71)
        return DailyWeather(
            date=day,
            condition=condition_of(code)[0],
            weather_code=code,
            temp_max=round(mean + spread / 2, 1),
            temp_min=round(mean - spread / 2, 1),
            precip_probability=60 + seed % 40 if rainy else seed % 30,
            precip_sum=round((seed % 120) / 10, 1) if rainy else 0.0,
            wind_speed_max=wind,
            wind_scale=f"{beaufort(wind)}级",
            humidity=40 + seed % 50,
        )


def _declination(day: dt.date) -> float:
    """The sun's declination (degrees) on DAY, to within about a degree."""
    return -23.44 * math.cos(2 * math.pi * (day.timetuple().tm_yday + 10) / 365)


def _sun_times(place: Place, day: dt.date) -> tuple[str | None, str | None]:
    """Sunrise and sunset at PLACE on DAY on its own clock ("HH:MM"), from the sun's geometry (to within a
    few minutes); None for both during polar day or night."""
    from zoneinfo import ZoneInfo

    latitude, declination = math.radians(place.latitude), math.radians(_declination(day))
    # The sun's centre 0.833° below the horizon: refraction and the disc's radius.
    cos_hour = (math.sin(math.radians(-0.833)) - math.sin(latitude) * math.sin(declination)) / (
        math.cos(latitude) * math.cos(declination)
    )
    if not -1 <= cos_hour <= 1:
        return None, None
    half_day = math.degrees(math.acos(cos_hour)) / 15  # hours from solar noon
    b = 2 * math.pi * (day.timetuple().tm_yday - 81) / 364
    equation_of_time = 9.87 * math.sin(2 * b) - 7.53 * math.cos(b) - 1.5 * math.sin(b)  # minutes
    noon_utc = 12 - place.longitude / 15 - equation_of_time / 60
    midnight = dt.datetime.combine(day, dt.time(), tzinfo=dt.timezone.utc)
    zone = ZoneInfo(place.timezone)
    return tuple(  # type: ignore[return-value]
        (midnight + dt.timedelta(hours=noon_utc + sign * half_day)).astimezone(zone).strftime("%H:%M")
        for sign in (-1, 1)
    )


def _clock(text: Any, label: str) -> str | None:
    """ "HH:MM" from Open-Meteo's local ISO time ("2026-11-30T06:42"); None where it gives none (polar night)."""
    return None if text is None else _datetime(text, label).strftime("%H:%M")


def _where(place: Place, today: dt.date, past_days: int, days_ahead: int) -> dict[str, Any]:
    """The parameters every Open-Meteo request shares: the place, its time zone, and the days wanted, as
    dates counted from the question's day TODAY. past_days and forecast_days would count from Open-Meteo's
    own today: a question asked on another day (--today 2026-11-29 on 12-03) got days it did not ask about."""
    return {
        "latitude": place.latitude,
        "longitude": place.longitude,
        "timezone": place.timezone,
        "start_date": (today - dt.timedelta(days=past_days)).isoformat(),
        "end_date": (today + dt.timedelta(days=days_ahead)).isoformat(),
    }


def _columns(body: Any, block: str, names: tuple[str, ...], label: str) -> dict[str, list[Any]]:
    """Open-Meteo's parallel arrays under BLOCK, checked for presence and equal length."""
    if not isinstance(body, dict):
        raise MalformedResponse(f"{label} sent {type(body).__name__}, not an object")
    columns = body.get(block)
    if not isinstance(columns, dict) or not isinstance(columns.get("time"), list):
        raise MalformedResponse(f"{label} response has no '{block}.time' array")
    length = len(columns["time"])
    for name in names:
        if not isinstance(columns.get(name), list) or len(columns[name]) != length:
            raise MalformedResponse(f"{label} response has no '{block}.{name}' array of {length} values")
    return columns


def _date(text: Any, label: str) -> dt.date:
    try:
        return dt.date.fromisoformat(str(text)[:10])
    except ValueError:
        raise MalformedResponse(f"{label} sent a date that is not YYYY-MM-DD: {str(text)[:20]!r}") from None


def _datetime(text: Any, label: str) -> dt.datetime:
    try:
        return dt.datetime.fromisoformat(str(text)[:16])
    except ValueError:
        raise MalformedResponse(f"{label} sent a time that is not YYYY-MM-DDTHH:MM: {str(text)[:20]!r}") from None


def _adcode_prefix(adcode: str) -> str:
    """The digits every unit inside ADCODE's starts with: 330000 → 33, 330100 → 3301, 330110 → 330110."""
    for zeros, kept in ((4, 2), (2, 4)):
        if adcode.endswith("0" * zeros) and len(adcode) == 6:
            return adcode[:kept]
    return adcode


def _amap_location(value: Any) -> tuple[float, float] | None:
    """AMap's "lng,lat" as (longitude, latitude), or None when it is not two numbers on the globe."""
    longitude, _, latitude = str(value or "").partition(",")
    if not (_within(longitude, 180) and _within(latitude, 90)):
        return None
    return float(longitude), float(latitude)


def _within(value: Any, limit: float) -> bool:
    number = _float(value)
    return number is not None and -limit <= number <= limit


def _float(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _int(value: Any) -> int | None:
    number = _float(value)
    return None if number is None else round(number)


#: The providers by the name users give (HYBRID_WEATHER_PROVIDER, --provider), default first.
PROVIDER_CLASSES: dict[str, type[WeatherProvider]] = {
    OpenMeteoProvider.name: OpenMeteoProvider,
    AMapProvider.name: AMapProvider,
    DemoProvider.name: DemoProvider,
}
PROVIDERS = tuple(PROVIDER_CLASSES)
DEFAULT_PROVIDER = OpenMeteoProvider.name
