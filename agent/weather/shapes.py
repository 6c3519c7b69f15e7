"""What the weather tools return, the same for every provider, and the conversions answers need."""

from __future__ import annotations

import dataclasses
import datetime as dt
import types
import typing
from typing import Any, NamedTuple

from hybrid_weather.rules.gazetteer import Place

# WMO weather interpretation codes (Open-Meteo's weather_code) in Chinese; wording after wttr.in zh-cn.
WMO_CODES: dict[int, tuple[str, str]] = {
    0: ("晴", "☀️"),
    1: ("少云", "🌤️"),
    2: ("多云", "⛅"),
    3: ("阴", "☁️"),
    45: ("雾", "🌫️"),
    48: ("冻雾", "🌫️"),
    51: ("小毛毛雨", "🌦️"),
    53: ("毛毛雨", "🌦️"),
    55: ("大毛毛雨", "🌦️"),
    56: ("冻毛毛雨", "🌧️"),
    57: ("强冻毛毛雨", "🌧️"),
    61: ("小雨", "🌦️"),
    63: ("中雨", "🌧️"),
    65: ("大雨", "🌧️"),
    66: ("小冻雨", "🌧️"),
    67: ("大冻雨", "🌧️"),
    71: ("小雪", "🌨️"),
    73: ("中雪", "🌨️"),
    75: ("大雪", "❄️"),
    77: ("米雪", "🌨️"),
    80: ("小阵雨", "🌦️"),
    81: ("中阵雨", "🌧️"),
    82: ("强阵雨", "🌧️"),
    85: ("小阵雪", "🌨️"),
    86: ("大阵雪", "❄️"),
    95: ("雷阵雨", "⛈️"),
    96: ("雷阵雨伴小冰雹", "⛈️"),
    99: ("雷阵雨伴大冰雹", "⛈️"),
}
SNOW_CODES = frozenset({71, 73, 75, 77, 85, 86})
#: A day counts as rainy from this chance of precipitation (%) or this much of it (mm), whatever its code.
RAIN_LIKELY_PROBABILITY = 50
RAIN_LIKELY_MM = 1.0
RAIN_CODES = frozenset({51, 53, 55, 56, 57, 61, 63, 65, 66, 67, 80, 81, 82, 95, 96, 99})
# Upper bounds (m/s) of Beaufort forces 0-11; 12 and above is 风力12级.
_BEAUFORT_LIMITS = (0.3, 1.6, 3.4, 5.5, 8.0, 10.8, 13.9, 17.2, 20.8, 24.5, 28.5, 32.7)
# AQI categories; US EPA and China's HJ 633 share these index breakpoints.
_AQI_CATEGORIES = ((50, "优"), (100, "良"), (150, "轻度污染"), (200, "中度污染"), (300, "重度污染"))


def condition_of(code: int | None) -> tuple[str, str]:
    """(中文, emoji) for a WMO code; unknown codes say so instead of guessing."""
    if code is None:
        return ("未知", "✨")
    return WMO_CODES.get(code, ("未知", "✨"))


def beaufort(speed_ms: float | None) -> int | None:
    """风力级 (Beaufort force) for a wind speed in m/s."""
    if speed_ms is None:
        return None
    for force, limit in enumerate(_BEAUFORT_LIMITS):
        if speed_ms < limit:
            return force
    return 12


def aqi_category(aqi: float | None) -> str | None:
    if aqi is None:
        return None
    for limit, name in _AQI_CATEGORIES:
        if aqi <= limit:
            return name
    return "严重污染"


class DailyWeather(NamedTuple):
    """One day at one place, in the place's own time zone. None means the provider did not say."""

    date: dt.date
    condition: str  #: 晴, 多云, 小雨 …; AMap gives day and night: "多云转小雨"
    weather_code: int | None = None
    temp_max: float | None = None  #: °C
    temp_min: float | None = None  #: °C
    precip_probability: int | None = None  #: %, the day's maximum
    precip_sum: float | None = None  #: mm
    wind_speed_max: float | None = None  #: m/s
    wind_scale: str | None = None  #: 风力级, e.g. "3级", "≤3级", "4-5级"
    wind_direction: str | None = None  #: 东北风 … (AMap)
    humidity: int | None = None  #: %, daily mean

    @property
    def rain_likely(self) -> bool:
        if self.weather_code is not None and self.weather_code in RAIN_CODES:
            return True
        if self.precip_probability is not None and self.precip_probability >= RAIN_LIKELY_PROBABILITY:
            return True
        if self.precip_sum is not None and self.precip_sum >= RAIN_LIKELY_MM:
            return True
        return "雨" in self.condition

    @property
    def snow_likely(self) -> bool:
        return (self.weather_code is not None and self.weather_code in SNOW_CODES) or "雪" in self.condition


class CurrentWeather(NamedTuple):
    """Conditions now, for questions about today."""

    time: str  #: local time as the provider gives it
    condition: str
    weather_code: int | None = None
    temperature: float | None = None
    humidity: int | None = None
    wind_scale: str | None = None


class Forecast(NamedTuple):
    """A provider's days for one place, as fetched at one moment."""

    place: Place
    days: tuple[DailyWeather, ...]
    current: CurrentWeather | None
    source: str  #: provider name: open-meteo, amap, demo
    fetched_at: float  #: time.time() of the fetch, for stale answers

    def day(self, date: dt.date) -> DailyWeather | None:
        return next((d for d in self.days if d.date == date), None)


class HourlyWeather(NamedTuple):
    """One hour at one place, in the place's own time zone (for 今晚, 明天早上, 上班路上)."""

    time: dt.datetime  #: local time, naive
    condition: str
    weather_code: int | None = None
    temperature: float | None = None  #: °C
    precip_probability: int | None = None  #: %, for the preceding hour
    wind_speed: float | None = None  #: m/s
    humidity: int | None = None  #: %


class HourlyForecast(NamedTuple):
    """A provider's hours for one place, as fetched at one moment."""

    place: Place
    hours: tuple[HourlyWeather, ...]
    source: str
    fetched_at: float

    def between(self, date: dt.date, hours: tuple[int, int]) -> list[HourlyWeather]:
        """The hours of DATE from hours[0] up to (not including) hours[1]."""
        start, end = hours
        return [h for h in self.hours if h.time.date() == date and start <= h.time.hour < end]


class DailyAir(NamedTuple):
    date: dt.date
    aqi: int | None  #: US AQI, daily maximum of the hourly values
    pm2_5: float | None  #: µg/m³, daily mean
    pm10: float | None  #: µg/m³, daily mean

    @property
    def category(self) -> str | None:
        return aqi_category(self.aqi)


class AirQuality(NamedTuple):
    place: Place
    days: tuple[DailyAir, ...]
    current: DailyAir | None  #: the latest hour, for today
    source: str
    fetched_at: float

    def day(self, date: dt.date) -> DailyAir | None:
        return next((d for d in self.days if d.date == date), None)


#: WHO's UV index categories: (lowest index of the category, its name), lowest first.
UV_CATEGORIES = ((0, "低"), (3, "中等"), (6, "高"), (8, "很高"), (11, "极高"))


def uv_category(index: float | None) -> str | None:
    """WHO's name for a UV index: 0-2 低, 3-5 中等, 6-7 高, 8-10 很高, 11+ 极高 (the index rounded)."""
    if index is None:
        return None
    rounded = round(index)
    return next(name for lowest, name in reversed(UV_CATEGORIES) if rounded >= lowest)


class SunDay(NamedTuple):
    """One day's sun at one place: local times as the place's clock shows them, and the day's top UV index."""

    date: dt.date
    sunrise: str | None = None  #: "06:42", the place's own time
    sunset: str | None = None  #: "16:53"
    uv_index_max: float | None = None

    @property
    def uv_category(self) -> str | None:
        return uv_category(self.uv_index_max)


class SunForecast(NamedTuple):
    """A provider's sunrise, sunset and UV days for one place (asked apart from the forecast: Open-Meteo
    bills more than ten variables a request as extra calls)."""

    place: Place
    days: tuple[SunDay, ...]
    source: str
    fetched_at: float

    def day(self, date: dt.date) -> SunDay | None:
        return next((d for d in self.days if d.date == date), None)


#: The field names of each record class (a dataclass or a NamedTuple) to_jsonable has met, in order.
_FIELD_NAMES: dict[type, tuple[str, ...]] = {}
_SCALARS = (str, int, float, bool, type(None))


def field_names(cls: type[Any]) -> tuple[str, ...] | None:
    """The fields of CLS in declaration order if it is a record: a NamedTuple (the shapes here, made
    cheaply at import) or a dataclass (Place); None for anything else."""
    names = _FIELD_NAMES.get(cls)
    if names is None:
        if issubclass(cls, tuple) and hasattr(cls, "_fields"):
            names = cls._fields
        elif dataclasses.is_dataclass(cls):
            names = tuple(f.name for f in dataclasses.fields(cls))
        else:
            return None
        _FIELD_NAMES[cls] = names
    return names


def to_jsonable(value: Any) -> Any:
    """Records (NamedTuples, dataclasses), dates and tuples as plain JSON values (for --json and the LLM
    tools).

    A direct walk over each class's fields: dataclasses.asdict deep-copies every leaf first, which cost a
    quarter of a warm rule answer (the issue-15 profile)."""
    if isinstance(value, _SCALARS):
        return value
    names = field_names(type(value))
    if names is not None:
        return {name: to_jsonable(getattr(value, name)) for name in names}
    if isinstance(value, dict):
        return {k: to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, dt.date):
        return value.isoformat()
    return value


#: What each kind of cached fetch is (the first part of a cache key), for caches that store them as JSON.
SHAPE_OF_KIND: dict[str, type[Any]] = {
    "forecast": Forecast, "air": AirQuality, "hourly": HourlyForecast, "sun": SunForecast,
}  # fmt: skip


def from_jsonable(cls: type[Any], data: dict[str, Any]) -> Any:
    """The record class CLS rebuilt from what to_jsonable made of one (the disk cache's way back)."""
    hints = typing.get_type_hints(cls)
    return cls(**{name: _decode(hints[name], data[name]) for name in field_names(cls) or () if name in data})


def _decode(hint: Any, value: Any) -> Any:
    if value is None:
        return None
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):  # X | None: the only unions in these shapes
        return _decode(next(a for a in typing.get_args(hint) if a is not type(None)), value)
    if origin is tuple:
        return tuple(_decode(typing.get_args(hint)[0], item) for item in value)
    if hint is dt.datetime:
        return dt.datetime.fromisoformat(value)
    if hint is dt.date:
        return dt.date.fromisoformat(value)
    if isinstance(hint, type) and field_names(hint) is not None:
        return from_jsonable(hint, value)
    return value


__all__ = [
    "SHAPE_OF_KIND",
    "AirQuality",
    "CurrentWeather",
    "DailyAir",
    "DailyWeather",
    "Forecast",
    "HourlyForecast",
    "HourlyWeather",
    "SunDay",
    "SunForecast",
    "aqi_category",
    "beaufort",
    "condition_of",
    "fixed",
    "from_jsonable",
    "to_jsonable",
    "uv_category",
]


def fixed(value: float, digits: int) -> str:
    """VALUE with DIGITS decimals, never "-0" or "-0.0": a temperature of -0.3 rounds to 0, not to minus nothing."""
    text = f"{value:.{digits}f}"
    return text[1:] if text.startswith("-") and float(text) == 0 else text
