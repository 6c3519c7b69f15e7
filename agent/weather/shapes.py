"""What the weather tools return, the same for every provider, and the conversions answers need."""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
import time
import types
import typing
from collections.abc import Callable
from typing import Any, NamedTuple, TypeVar

from hybrid_weather.rules.gazetteer import Place

from ..errors import MalformedResponse

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
    """The record class CLS rebuilt from what to_jsonable made of one (the caches' way back). Every field must
    be there (KeyError): to_jsonable writes them all, so a missing one is a copy cut or tampered with; fields
    this version does not know are left out (a newer worker of the fleet wrote them). What comes back is only
    as sound as DATA was: checked() says whether it is."""
    hints = typing.get_type_hints(cls)
    return cls(**{name: _decode(hints[name], data[name]) for name in field_names(cls) or ()})


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
    "checked",
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


# -- what a fetch may hold: the one check of upstream replies and of cached copies alike -------------------

#: What the atmosphere allows, with room: a value outside is an upstream fault or a tampered copy, not a fact.
_PLAUSIBLE = {
    "temperature": (-90.0, 60.0), "percent": (0.0, 100.0), "wind": (0.0, 120.0), "precipitation": (0.0, 2000.0),
    "aqi": (0.0, 1000.0), "particles": (0.0, 5000.0), "uv": (0.0, 25.0), "code": (0.0, 99.0),
}  # fmt: skip
#: Which of those ranges each numeric field of the shapes is held to (every one is: see _problem).
_KIND_OF = {
    "temp_max": "temperature", "temp_min": "temperature", "temperature": "temperature",
    "precip_probability": "percent", "humidity": "percent", "wind_speed_max": "wind", "wind_speed": "wind",
    "precip_sum": "precipitation", "aqi": "aqi", "pm2_5": "particles", "pm10": "particles", "uv_index_max": "uv",
    "weather_code": "code",
}  # fmt: skip
#: AMap's weather phenomena (its 天气现象表), the words its `weather`, `dayweather` and `nightweather` hold.
AMAP_CONDITIONS = frozenset((
    "晴", "少云", "晴间多云", "多云", "阴", "有风", "平静", "微风", "和风", "清风", "强风/劲风",
    "疾风", "大风", "烈风", "风暴", "狂爆风", "飓风", "热带风暴", "霾", "中度霾", "重度霾",
    "严重霾", "阵雨", "雷阵雨", "雷阵雨并伴有冰雹", "小雨", "中雨", "大雨", "暴雨", "大暴雨",
    "特大暴雨", "强阵雨", "强雷阵雨", "极端降雨", "毛毛雨/细雨", "雨", "小雨-中雨", "中雨-大雨",
    "大雨-暴雨", "暴雨-大暴雨", "大暴雨-特大暴雨", "雨雪天气", "雨夹雪", "阵雨夹雪", "冻雨", "雪",
    "阵雪", "小雪", "中雪", "大雪", "暴雪", "小雪-中雪", "中雪-大雪", "大雪-暴雪", "浮尘", "扬沙",
    "沙尘暴", "强沙尘暴", "龙卷风", "雾", "浓雾", "强浓雾", "轻雾", "大雾", "特强浓雾", "热", "冷",
    "未知",
))  # fmt: skip
#: Every condition a provider writes: the WMO codes' words (condition_of) and AMap's (未知 among them).
_CONDITIONS = frozenset(name for name, _ in WMO_CODES.values()) | AMAP_CONDITIONS
_CLOCK = re.compile(r"\d{2}:\d{2}").fullmatch


def _is_condition(text: str) -> bool:
    """A condition word, or AMap's day and night words joined by 转 (多云转小雨)."""
    parts = text.split("转")
    return len(parts) <= 2 and all(part in _CONDITIONS for part in parts)


#: What each text field of the shapes may say (every one is held to this: see _problem). Providers write
#: them from codes and a few documented words, so anything else — markup, instructions to a model that will
#: read the data, a paragraph — is not weather, whoever wrote it.
_TEXTS: dict[str, Callable[[str], object]] = {
    "condition": _is_condition,
    "wind_scale": re.compile(r"[≤<]?\d{1,2}(-\d{1,2})?级").fullmatch,  # AMap's windpower + 级, or a Beaufort force
    "wind_direction": re.compile(r"(无风向|旋转不定|[东南西北]{1,2})风").fullmatch,
    "time": re.compile(r"(\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2})?)?)?").fullmatch,  # the current hour's
    "sunrise": _CLOCK,
    "sunset": _CLOCK,
    "source": re.compile(r"[a-z][a-z-]{0,31}").fullmatch,
}
#: Seconds a fetch's time may lie ahead of this host's clock (a fleet's hosts disagree a little); a copy
#: from further ahead would never grow stale.
CLOCK_SKEW_S = 300.0
Shape = TypeVar("Shape", Forecast, HourlyForecast, AirQuality, SunForecast)
#: Each record class's fields as _problem walks them (see _layout).
_LAYOUTS: dict[type, tuple[tuple[str, Any, bool, Any], ...]] = {}
#: The type _layout gives the fields checked() judges against the ask (the place, the fetch time).
_ABOUT = object()


def checked(data: Shape, label: str, *, place: Place | None = None, source: str | None = None) -> Shape:
    """DATA if it is what a fetch may be, else MalformedResponse naming the first fault, as LABEL sent it.

    Every field has the type its shape declares (bool is no number, a float no count, a date a date); every
    number is finite and physically plausible (an AQI of -1e300 is not 优); every text is one the providers
    write; its time is not in the future. With PLACE and SOURCE, it must also be about that place, from that
    provider. Providers pass their replies through here and WeatherService the copies it reads from a cache,
    so a cache can hold nothing the upstream could not have sent."""
    problem = _problem(data) if type(data) in _SHAPES else f"a {type(data).__name__}"
    if problem is None:
        if type(data.place) is not Place or (place is not None and data.place != place):
            asked = "" if place is None else f", not {place.name}"
            problem = f"data about another place ({str(getattr(data.place, 'name', '?'))[:20]!r}{asked})"
        elif source is not None and data.source != source:
            problem = f"data from another provider ({data.source!r}, not {source!r})"
        elif type(data.fetched_at) not in (int, float) or not 0 <= data.fetched_at <= time.time() + CLOCK_SKEW_S:
            problem = "a fetch time that is not a past moment"
    if problem is not None:
        raise MalformedResponse(f"{label} sent {problem}", provider=source or "")
    return data


# Above ruff's complexity bound on purpose: one check per documented field of the reply, read top to bottom.
def _problem(record: Any) -> str | None:  # noqa: C901
    """What is wrong with RECORD (one of the shapes), or None. Its place and time are left to checked(), which
    knows what was asked."""
    for (name, hint, optional, rule), value in zip(_layout(type(record)), record, strict=True):
        if value is None:
            if optional:
                continue
            return f"no {name}"
        if hint is float or hint is int:
            if type(value) is not int and (hint is int or type(value) is not float):
                return f"a {name} that is not {'a whole number' if hint is int else 'a number'}"
            if not rule[0] <= value <= rule[1]:  # NaN fails both
                return f"an implausible {name}: {value:.6g}"
        elif hint is str:
            if type(value) is not str or not rule(value):
                return f"a {name} that is not one a provider writes"
        elif hint is tuple:
            if type(value) is not tuple:
                return f"{name} that is not a list"
            for i, element in enumerate(value):
                problem = (
                    _problem(element) if type(element) is rule else f"a {name} entry that is not a {rule.__name__}"
                )
                if problem is not None:
                    return f"{problem} ({name}[{i}])"
        elif hint is _ABOUT:
            continue
        elif type(value) is not hint:  # a date, a time, or a record inside this one (a day's air, the weather now)
            return f"a {name} that is not a {hint.__name__}"
        elif rule is not None:
            problem = _problem(value)
            if problem is not None:
                return f"{problem} ({name})"
    return None


def _layout(cls: type[Any]) -> tuple[tuple[str, Any, bool, Any], ...]:
    """(name, type, whether it may be None, its rule) of each field of the record class CLS; the rule is a
    number's plausible range, a text's test, a tuple's item class, or for a record inside, True."""
    layout = _LAYOUTS.get(cls)
    if layout is None:
        hints, fields = typing.get_type_hints(cls), []
        for name in field_names(cls) or ():
            hint, optional, rule = hints[name], False, None
            if typing.get_origin(hint) in (typing.Union, types.UnionType):  # X | None: the only unions here
                hint, optional = next(a for a in typing.get_args(hint) if a is not type(None)), True
            if hint is Place or name == "fetched_at":
                hint = _ABOUT
            elif typing.get_origin(hint) is tuple:
                hint, rule = tuple, typing.get_args(hint)[0]
            elif hint is float or hint is int:
                rule = _PLAUSIBLE[_KIND_OF[name]]  # every number has its range: a new field must say which
            elif hint is str:
                rule = _TEXTS[name]  # every text has its test, likewise
            elif field_names(hint) is not None:
                rule = True
            fields.append((name, hint, optional, rule))
        layout = _LAYOUTS[cls] = tuple(fields)
    return layout


_SHAPES = frozenset(SHAPE_OF_KIND.values())
