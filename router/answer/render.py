"""Answers in natural Chinese: the asked-for fact first, then the numbers behind it."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import NamedTuple

from hybrid_weather.agent.weather import (
    AirQuality,
    DailyAir,
    DailyWeather,
    Forecast,
    SunDay,
    SunForecast,
    condition_of,
    fixed,
)
from hybrid_weather.rules import CHINA_TZ_NAME, Place, Threshold, weekday_char

from ..understand import Decision

_RELATIVE_DAYS = {0: "今天", 1: "明天", 2: "后天", 3: "大后天", -1: "昨天", -2: "前天"}
# A day that will probably stay dry still gets "bring an umbrella" from this chance of rain (%).
_UMBRELLA_PROBABILITY = 30
# Beaufort forces: up to 3 (gentle breeze) is 风不大, up to 5 (fresh breeze) 风有点大, above 风很大.
_CALM_FORCE = 3
_BREEZY_FORCE = 5
# Below this many degrees apart, two places or days are "about the same".
_SAME_TEMPERATURE = 0.5


class Facts(NamedTuple):
    """What one place has for the asked days: weather days or air days, in date order."""

    place: Place
    weather: Forecast | None = None
    air: AirQuality | None = None
    sun: SunForecast | None = None


def day_label(day: dt.date, today: dt.date, *, with_date: bool = False, hours: tuple[int, int] | None = None) -> str:
    """今天, 明天, 12月3日（周四）; with HOURS the part of the day too (今天18时至24时), or its hour (明天15时)."""
    relative = _RELATIVE_DAYS.get((day - today).days)
    calendar = f"{day.month}月{day.day}日（周{weekday_char(day)}）"
    label = f"{relative} {calendar}" if relative and with_date else relative or calendar
    if hours is None:
        return label
    return f"{label}{hours[0]}时" if hours[1] - hours[0] == 1 else f"{label}{hours[0]}时至{hours[1]}时"


def render_distance(first: Place, second: Place, km: float, *, emoji: bool = True) -> str:
    """北京到上海的直线距离约1,068公里, said plainly as the distance over the Earth's surface."""
    figure = f"{km:,.0f}" if km >= 100 else f"{km:.1f}"
    return (
        f"{'📏 ' if emoji else ''}{first.display}到{second.display}的直线距离约{figure}公里"
        "（按两地坐标算的球面距离，不是公路或铁路里程）。"
    )


def render(decision: Decision, facts: Sequence[Facts], today: dt.date, *, emoji: bool = True) -> str:
    """The answer to a rule decision from the fetched facts (one per place, in the order asked)."""
    lines: list[str] = []
    if decision.compare:
        lines.extend(_comparison(decision, facts, today))
    several_days = len(decision.dates) > 1
    for item in facts:
        if several_days:
            lines.append(f"{item.place.display}：")
        for day in decision.dates:
            line = _fact_line(
                decision.aspect or "weather",
                item,
                day,
                today,
                emoji,
                prefix=day_label(day, today, with_date=True, hours=decision.hours) + "：" if several_days else None,
                hours=decision.hours,
                threshold=decision.threshold,
            )
            lines.append("  " + line if several_days else line)
    return "\n".join(lines)


# Above ruff's complexity bound on purpose: one branch per aspect's sentence, side by side to compare.
def _fact_line(  # noqa: C901
    aspect: str,
    item: Facts,
    day: dt.date,
    today: dt.date,
    emoji: bool,
    prefix: str | None,
    hours: tuple[int, int] | None,
    threshold: Threshold | None = None,
) -> str:
    place, when = item.place.display, day_label(day, today, hours=hours)
    head = prefix if prefix is not None else f"{place}{when}"
    if aspect == "air":
        air = item.air.day(day) if item.air else None
        if air is None:
            return f"{head}暂无空气质量数据。"
        return f"{head}{_air_phrase(air)}。"
    if aspect in ("sun", "uv"):
        sun = item.sun.day(day) if item.sun else None
        return _sun_line(aspect, sun, head, emoji, abroad=item.place.timezone != CHINA_TZ_NAME)
    weather = item.weather.day(day) if item.weather else None
    if weather is None:
        return f"{head}暂无预报数据。"
    mark = condition_of(weather.weather_code)[1] + " " if emoji and weather.weather_code is not None else ""
    current = item.weather.current if item.weather and day == today else None
    if current is not None and not _now_on(current.time, today):
        current = None  # the provider's "now" is not the question's day (asked with --today or today=)
    if aspect == "rain":
        if weather.rain_likely:
            falls = _falls_as(weather)
            advice = "记得带伞" if falls == "雨" else "出门注意保暖和路滑"
            return f"{mark}{head}可能下{falls}（{_rain_numbers(weather)}），{advice}。"
        if weather.precip_probability is not None and weather.precip_probability >= _UMBRELLA_PROBABILITY:
            return f"{mark}{head}下雨的可能不大（{_rain_numbers(weather)}），可以备一把伞。"
        return f"{mark}{head}不会下雨（{_rain_numbers(weather)}）。"
    if aspect == "snow":
        verdict = "可能下雪" if weather.snow_likely else "不会下雪"
        return f"{mark}{head}{verdict}（{weather.condition}，{_temperature_range(weather)}）。"
    if aspect == "temperature":
        now = f"，现在{_degrees(current.temperature)}" if current and current.temperature is not None else ""
        verdict = _threshold_verdict(threshold, weather) if threshold is not None else ""
        return f"{mark}{head}气温{_temperature_range(weather)}{now}{verdict}。"
    if aspect == "wind":
        return f"{mark}{head}{_wind_verdict(weather)}，{_wind_phrase(weather)}。"
    if aspect == "humidity":
        if current and current.humidity is not None:
            average = f"，全天平均{weather.humidity}%" if weather.humidity is not None else ""
            return f"{mark}{prefix or place}现在湿度{current.humidity}%{average}。"
        if weather.humidity is None:
            return f"{head}暂无湿度数据。"
        return f"{mark}{head}平均湿度{weather.humidity}%。"
    parts = [weather.condition, _temperature_range(weather)]
    if weather.precip_probability is not None:
        parts.append(f"降水概率{weather.precip_probability}%")
    parts.append(_wind_phrase(weather))
    if weather.humidity is not None:
        parts.append(f"湿度{weather.humidity}%")
    now = ""
    if current and current.temperature is not None:
        now = f"现在{current.condition}，{_degrees(current.temperature)}；"
    colon = "：" if prefix is None else ""
    return f"{mark}{head}{colon}{now}{'，'.join(parts)}。"


def _sun_line(aspect: str, sun: SunDay | None, head: str, emoji: bool, *, abroad: bool) -> str:
    """日出06:36，日落16:51 in the place's own time; or the day's top UV index, its WHO category and what to do."""
    if aspect == "sun":
        if sun is None or (sun.sunrise is None and sun.sunset is None):
            return f"{head}暂无日出日落数据（或是极昼、极夜）。"
        times = "，".join(f"{name}{clock}" for name, clock in (("日出", sun.sunrise), ("日落", sun.sunset)) if clock)
        return f"{'🌅 ' if emoji else ''}{head}{times}{'（当地时间）' if abroad else ''}。"
    if sun is None or sun.uv_index_max is None:
        return f"{head}暂无紫外线数据。"
    category = sun.uv_category or ""
    advice = _UV_ADVICE.get(category, "外出注意防晒")
    return f"{'🕶️ ' if emoji else ''}{head}紫外线指数最高{fixed(sun.uv_index_max, 0)}（{category}），{advice}。"


# What WHO's categories ask of someone going out.
_UV_ADVICE = {"低": "不需要特别防晒", "中等": "外出注意防晒", "高": "外出注意防晒，正午前后少晒",
              "很高": "尽量避开正午阳光，做好防晒", "极高": "尽量避开正午阳光，做好防晒"}  # fmt: skip


def _comparison(decision: Decision, facts: Sequence[Facts], today: dt.date) -> list[str]:
    """The sentence that answers 哪个更冷 / 明天比今天热吗 / 温差多大 before the numbers, with the difference."""
    kind = decision.compare
    sentences = []
    if kind == "spread" and len(facts) == 1:
        item = facts[0]
        for day in decision.dates:
            weather = item.weather.day(day) if item.weather else None
            when = day_label(day, today, hours=decision.hours)
            if weather is None or weather.temp_max is None or weather.temp_min is None:
                sentences.append(f"{item.place.display}{when}缺少比较所需的数据。")
            else:
                spread = weather.temp_max - weather.temp_min
                sentences.append(f"{item.place.display}{when}温差{spread:.0f}°C（{_temperature_range(weather)}）。")
        return sentences
    if len(facts) >= 2:
        for day in decision.dates:
            items = [(f.place.display, _metric(kind, f, day)) for f in facts]
            sentences.append(_compare_sentence(kind, items, day_label(day, today, hours=decision.hours)))
    else:
        item = facts[0]
        items = [(day_label(day, today, hours=decision.hours), _metric(kind, item, day)) for day in decision.dates]
        sentences.append(_compare_sentence(kind, items, "", subject=item.place.display))
    return sentences


def _metric(kind: str | None, item: Facts, day: dt.date) -> float | None:
    if kind == "air":
        air = item.air.day(day) if item.air else None
        return None if air is None or air.aqi is None else float(air.aqi)
    weather = item.weather.day(day) if item.weather else None
    if weather is None:
        return None
    if kind in ("hot", "cold", "spread"):
        if weather.temp_max is None or weather.temp_min is None:
            return None
        return (weather.temp_max + weather.temp_min) / 2
    if kind == "rain":
        if weather.precip_probability is not None:
            return float(weather.precip_probability)
        return 1.0 if weather.rain_likely else 0.0
    if kind == "snow":
        return 1.0 if weather.snow_likely else 0.0
    if kind == "wind":
        return weather.wind_speed_max
    if kind == "humidity":
        return None if weather.humidity is None else float(weather.humidity)
    return None


_COMPARATIVES = {
    # kind: (which way is "more", word for the winner, word when all are equal, the measure and its unit)
    "hot": (max, "更热", "气温差不多", "日均气温", "°C"),
    "cold": (min, "更冷", "气温差不多", "日均气温", "°C"),
    "spread": (min, "更冷", "气温差不多", "日均气温", "°C"),
    "rain": (max, "更可能下雨", "下雨的可能差不多", "降水概率", "%"),
    "snow": (max, "更可能下雪", "都不太会下雪", "", ""),
    "wind": (max, "风更大", "风力差不多", "最大风速", " m/s"),
    "humidity": (max, "更潮湿", "湿度差不多", "湿度", "%"),
    "air": (min, "空气更好", "空气质量差不多", "AQI", ""),
}


def _compare_sentence(kind: str | None, items: list[tuple[str, float | None]], when: str, subject: str = "") -> str:
    known = [(name, value) for name, value in items if value is not None]
    if len(known) < 2 or kind not in _COMPARATIVES:
        return f"{subject}{when}缺少比较所需的数据。"
    pick, better, same, measure, unit = _COMPARATIVES[kind]
    values = [v for _, v in known]
    numbers = "，".join(f"{name}{_number(value, unit)}" for name, value in known)
    shown = f"（{measure}：{numbers}）" if measure else ""
    tolerance = _SAME_TEMPERATURE if kind in ("hot", "cold", "spread") else 0.0
    if max(values) - min(values) <= tolerance:
        return f"{subject}{when}{'、'.join(n for n, _ in known)}{same}{shown}。"
    winner, top = pick(known, key=lambda item: item[1])
    if kind == "snow" and max(values) == 0:
        return f"{subject}{when}{same}。"
    if len(known) == 2 and kind in ("hot", "cold", "spread", "humidity", "rain", "wind"):
        other, value = next((n, v) for n, v in known if n != winner)
        difference = abs(top - value)
        if kind in ("hot", "cold", "spread"):
            return f"{subject}{when}{winner}比{other}{better.removeprefix('更')}{difference:.1f}°C{shown}。"
        amount = f"{difference:.0f}个百分点" if unit == "%" else _number(difference, unit)
        return f"{subject}{when}{winner}{better}，{measure}{'大' if kind == 'wind' else '高'}{amount}{shown}。"
    return f"{subject}{when}{winner}{better}{shown}。"


def _number(value: float, unit: str) -> str:
    # Temperatures and wind to a tenth, so two values that differ are never printed alike.
    return f"{fixed(value, 1)}{unit}" if unit in (" m/s", "°C") else f"{fixed(value, 0)}{unit}"


def _degrees(value: float | None) -> str:
    return "?" if value is None else f"{fixed(value, 0)}°C"


def _threshold_verdict(threshold: Threshold, weather: DailyWeather) -> str:
    """，会超过30°C or ，不会低于0°C: yes or no to THRESHOLD from the high (above it) or the low (below it) the
    answer shows, compared as shown (rounded to a degree), so the yes or no never contradicts the figures."""
    above = threshold.side in ("above", "at_least")
    shown = weather.temp_max if above else weather.temp_min
    if shown is None:
        return ""
    value, asked = float(fixed(shown, 0)), threshold.degrees
    degrees = f"{fixed(asked, 0 if asked.is_integer() else 1)}°C"
    if threshold.side == "above":
        return f"，{'会' if value > asked else '不会'}超过{degrees}"
    if threshold.side == "at_least":
        return f"，{'会' if value >= asked else '不会'}到{degrees}"
    if threshold.side == "below":
        return f"，{'会' if value < asked else '不会'}低于{degrees}"
    return f"，{'会' if value <= asked else '不会'}到{degrees}以下"


def _falls_as(weather: DailyWeather) -> str:
    """What the day's precipitation falls as: a rain question on a snow day is answered with snow."""
    if not weather.snow_likely:
        return "雨"
    return "雨夹雪" if "雨" in weather.condition else "雪"


def _temperature_range(weather: DailyWeather) -> str:
    if weather.temp_min is None and weather.temp_max is None:
        return "气温未知"
    low, high = _degrees(weather.temp_min), _degrees(weather.temp_max)
    return low if low == high else f"{low}~{high}"  # one hour (明天15时) can have one temperature


def _rain_numbers(weather: DailyWeather) -> str:
    parts = [weather.condition]
    if weather.precip_probability is not None:
        parts.append(f"降水概率{weather.precip_probability}%")
    if weather.precip_sum:
        parts.append(f"预计{weather.precip_sum:g}毫米")
    return "，".join(parts)


def _wind_phrase(weather: DailyWeather) -> str:
    direction = weather.wind_direction or ""
    scale = f"风力{weather.wind_scale}" if weather.wind_scale else ""
    speed = f"（最大风速{weather.wind_speed_max:.1f} m/s）" if weather.wind_speed_max is not None else ""
    return f"{direction}{scale}{speed}" or "风力未知"


def _wind_verdict(weather: DailyWeather) -> str:
    # AMap gives ranges such as "≤3" or "4-5"; the first number is the force to judge by.
    digits = "".join(ch if ch.isdigit() else " " for ch in weather.wind_scale or "").split()
    if not digits:
        return "风力未知"
    force = int(digits[0])
    return "风不大" if force <= _CALM_FORCE else "风有点大" if force <= _BREEZY_FORCE else "风很大"


def _air_phrase(air: DailyAir) -> str:
    if air.aqi is None:
        return "暂无空气质量指数"
    numbers = [f"AQI {air.aqi}"]
    if air.pm2_5 is not None:
        numbers.append(f"PM2.5 {air.pm2_5:.0f} µg/m³")
    if air.pm10 is not None:
        numbers.append(f"PM10 {air.pm10:.0f} µg/m³")
    return f"空气质量{air.category}（{'，'.join(numbers)}）"


def _now_on(time: str, today: dt.date) -> bool:
    """Whether a provider's reading taken at TIME (its place's clock) is of TODAY, China's day: a day apart
    still is (New York's evening is China's next morning), and a time that is no date is taken at its word."""
    try:
        return abs((dt.date.fromisoformat(time[:10]) - today).days) <= 1
    except ValueError:
        return True
