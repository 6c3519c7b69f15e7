"""Rule answers: fetch what a rule decision needs from the weather service and say it in Chinese."""

from __future__ import annotations

import dataclasses
import datetime as dt
from typing import Any

from hybrid_weather.agent.errors import NotCovered
from hybrid_weather.agent.weather import (
    DailyWeather,
    Fetched,
    Forecast,
    HourlyForecast,
    HourlyWeather,
    WeatherService,
    beaufort,
    condition_of,
    past_days_for,
    to_jsonable,
)
from hybrid_weather.rules import Place, great_circle_km

from ..understand import Decision
from .answer import Answer, elapsed_ms
from .render import Facts, render, render_distance

_STALE_NOTE = "\n（天气服务暂时无法访问，以上为缓存数据，数据更新于{age}前）"
_DEMO_MARK = "【演示数据】"
_NO_HOURLY_NOTE = "\n（{label}没有逐小时预报，以上是全天的预报）"
# A condition code's severity, for the one that stands for several hours: storms over snow over rain over
# fog over cloud over clear (the most severe is what a person needs to hear).
_SEVERITY = ((95, 99), (71, 86), (51, 67), (80, 82), (45, 48), (1, 3), (0, 0))


class RuleAnswerer:
    """Answers rule and clarify decisions from one weather service. Thread-safe."""

    def __init__(self, weather: WeatherService) -> None:
        self.weather = weather
        self._has_hours = True  # until the provider says it has no hourly forecast (AMap)
        # id(item) -> (item, its JSON): the item itself is kept, so its id cannot be reused while the entry lives.
        self._flat_jsons: dict[int, tuple[Any, dict[str, Any]]] = {}
        # (what render() reads of the decision, today, emoji, the ids of the fetched values) -> (the values,
        # the text): a popular question is answered again and again from the same cached forecast, and
        # render() is a pure function of these (the values are frozen, and kept so their ids stay theirs).
        self._texts: dict[tuple[Any, ...], tuple[tuple[Any, ...], str]] = {}

    def answer(
        self, decision: Decision, today: dt.date, *, emoji: bool, started: float, deadline: float
    ) -> tuple[Answer, list[Fetched[Any]]]:
        """The answer to DECISION, and what was fetched for it (nothing for a clarify)."""
        if decision.route == "clarify":
            return clarify_answer(decision, started), []
        if decision.aspect == "distance":
            return distance_answer(decision, started, emoji=emoji), []
        fetched = [self._fetch(decision, place, today, deadline) for place in decision.places]
        return self.compose(decision, fetched, today, emoji=emoji, started=started), fetched

    async def aanswer(
        self, decision: Decision, today: dt.date, *, emoji: bool, started: float, deadline: float
    ) -> tuple[Answer, list[Fetched[Any]]]:
        """answer() for asyncio: the places are fetched concurrently."""
        import asyncio  # not at module level: an import cost synchronous programs never need

        if decision.route == "clarify":
            return clarify_answer(decision, started), []
        if decision.aspect == "distance":
            return distance_answer(decision, started, emoji=emoji), []
        if len(decision.places) == 1:  # most questions: no task to schedule, and a cached place never yields
            fetched = [await self._afetch(decision, decision.places[0], today, deadline)]
        else:
            fetched = list(await asyncio.gather(*(self._afetch(decision, p, today, deadline) for p in decision.places)))
        return self.compose(decision, fetched, today, emoji=emoji, started=started), fetched

    def _fetch(self, decision: Decision, place: Place, today: dt.date, deadline: float) -> Fetched[Any]:
        past = past_days_for(decision.dates, today)
        if decision.aspect == "air":
            return self.weather.air_quality(place, past, deadline, today=today)
        if decision.aspect in _SUN_ASPECTS:
            return self.weather.sun(place, past, deadline, today=today)
        if decision.hours and self._has_hours:
            try:
                return self.weather.hourly(place, past, deadline, today=today)
            except NotCovered:
                self._has_hours = False
        return self.weather.forecast(place, past, deadline, today=today)

    async def _afetch(self, decision: Decision, place: Place, today: dt.date, deadline: float) -> Fetched[Any]:
        past = past_days_for(decision.dates, today)
        if decision.aspect == "air":
            return await self.weather.aair_quality(place, past, deadline, today=today)
        if decision.aspect in _SUN_ASPECTS:
            return await self.weather.asun(place, past, deadline, today=today)
        if decision.hours and self._has_hours:
            try:
                return await self.weather.ahourly(place, past, deadline, today=today)
            except NotCovered:
                self._has_hours = False
        return await self.weather.aforecast(place, past, deadline, today=today)

    def _flat_json(self, item: Any) -> dict[str, Any] | None:
        """ITEM (a day, or the current weather, of a cached forecast) as --json shows it. The same cached
        items answer question after question: each is converted once and every answer gets a copy of its
        own (their values are plain numbers and text, so a shallow copy is a whole one): converting them
        again for every answer was a visible share of a warm ask."""
        if item is None:
            return None
        known = self._flat_jsons.get(id(item))
        if known is None or known[0] is not item:
            if len(self._flat_jsons) >= _FLAT_MEMO:
                self._flat_jsons.clear()
            known = self._flat_jsons[id(item)] = (item, to_jsonable(item))
        return dict(known[1])

    def _render(self, shown: Decision, days: list[Any], facts: list[Facts], today: dt.date, emoji: bool) -> str:
        """render(SHOWN, FACTS, ...), kept per decision and fetched values (DAYS, which FACTS are made of):
        a warm ask asks the same question of the same cached days again and again."""
        key = (
            shown.aspect,
            tuple(shown.dates),
            shown.compare,
            shown.hours,
            shown.threshold,
            today,
            emoji,
            *map(id, days),
        )
        known = self._texts.get(key)
        if known is not None and all(kept is day for kept, day in zip(known[0], days, strict=True)):
            return known[1]
        text = render(shown, facts, today, emoji=emoji)
        if len(self._texts) >= _FLAT_MEMO:
            self._texts.clear()
        self._texts[key] = (tuple(days), text)
        return text

    def compose(
        self, decision: Decision, fetched: list[Fetched[Any]], today: dt.date, *, emoji: bool, started: float
    ) -> Answer:
        """The rule answer from the fetched data: the text, and the data behind it for --json."""
        provider = self.weather.provider
        air = decision.aspect == "air"
        sun = decision.aspect in _SUN_ASPECTS
        days = [f.value if air or sun else _as_days(f.value, decision) for f in fetched]
        by_hour = any(isinstance(f.value, HourlyForecast) for f in fetched)
        # Without hourly data (AMap has none) the answer is about whole days, and says so.
        shown = decision if by_hour or decision.hours is None else dataclasses.replace(decision, hours=None)
        facts = [
            Facts(d.place, air=d) if air else Facts(d.place, sun=d) if sun else Facts(d.place, weather=d) for d in days
        ]
        text = self._render(shown, days, facts, today, emoji)
        if fetched and not air and not sun and shown.hours != decision.hours:
            text += _NO_HOURLY_NOTE.format(label=provider.label)
        stale = any(f.stale for f in fetched)
        oldest = max((f.age_s for f in fetched), default=0.0)
        if stale:
            text += _STALE_NOTE.format(age=_age_text(oldest))
        if provider.name == "demo":
            text = _DEMO_MARK + text
        data = {
            "places": [
                {
                    **_place_json(d.place),
                    "days": [self._flat_json(day) for day in d.days if day.date in decision.dates],
                    "hours": _hours_json(f.value, decision),
                    "current": self._flat_json(getattr(d, "current", None))
                    if today in decision.dates and not by_hour
                    else None,
                }
                for f, d in zip(fetched, days, strict=True)
            ],
        }
        return Answer(
            text=text,
            route="rule",
            decision=decision,
            data=data,
            source=provider.name,
            stale=stale,
            cost_usd=0.0,
            latency_ms=elapsed_ms(started),
            stale_age_s=oldest if stale else None,
            cache_hit=all(f.cache_hit for f in fetched),
            provider_ms=sum(f.provider_ms for f in fetched),
            attribution=provider.attribution,
        )


#: Aspects answered from the provider's sunrise, sunset and UV days.
_SUN_ASPECTS = frozenset({"sun", "uv"})
#: Days and current readings whose JSON is kept at the most (a few per place the service answers about).
_FLAT_MEMO = 4_096


def _as_days(value: Any, decision: Decision) -> Any:
    """Daily data as the renderer reads it: an hourly forecast becomes, per asked day, one summary of the
    asked hours (今晚: 18 to 24 h), with no "now" (now is not tonight)."""
    if not isinstance(value, HourlyForecast) or decision.hours is None:
        return value
    days = tuple(summary for day in decision.dates if (summary := summarize(day, value.between(day, decision.hours))))
    return Forecast(value.place, days, None, value.source, value.fetched_at)


def summarize(day: dt.date, hours: list[HourlyWeather]) -> DailyWeather | None:
    """One DailyWeather that speaks for HOURS: the most severe condition, the range of temperatures, the
    highest chance of rain and wind, the mean humidity."""
    if not hours:
        return None
    codes = [h.weather_code for h in hours if h.weather_code is not None]
    code = max(codes, key=_severity) if codes else None
    temperatures = [h.temperature for h in hours if h.temperature is not None]
    chances = [h.precip_probability for h in hours if h.precip_probability is not None]
    winds = [h.wind_speed for h in hours if h.wind_speed is not None]
    humidity = [h.humidity for h in hours if h.humidity is not None]
    wind = max(winds) if winds else None
    force = beaufort(wind)
    return DailyWeather(
        date=day,
        condition=condition_of(code)[0] if code is not None else hours[0].condition,
        weather_code=code,
        temp_max=max(temperatures) if temperatures else None,
        temp_min=min(temperatures) if temperatures else None,
        precip_probability=max(chances) if chances else None,
        wind_speed_max=wind,
        wind_scale=None if force is None else f"{force}级",
        humidity=round(sum(humidity) / len(humidity)) if humidity else None,
    )


def _severity(code: int) -> int:
    return next((len(_SEVERITY) - i for i, (low, high) in enumerate(_SEVERITY) if low <= code <= high), 0)


def _hours_json(value: Any, decision: Decision) -> list[Any] | None:
    if not isinstance(value, HourlyForecast) or decision.hours is None:
        return None
    return [to_jsonable(h) for day in decision.dates for h in value.between(day, decision.hours)]


def clarify_answer(decision: Decision, started: float) -> Answer:
    """A clarify decision answered as it stands: its question or notice, at no cost."""
    return Answer(decision.clarification or "", "clarify", decision, {}, None, False, 0.0, elapsed_ms(started))


def distance_answer(decision: Decision, started: float, *, emoji: bool) -> Answer:
    """The straight-line distance between a distance decision's two places, from the gazetteer's
    coordinates: no weather service is asked, and nothing is said of roads or rails."""
    first, second = decision.places
    km = great_circle_km(first.latitude, first.longitude, second.latitude, second.longitude)
    data = {
        "distance_km": round(km, 1),
        "places": [_place_json(p) for p in decision.places],
    }
    return Answer(
        render_distance(first, second, km, emoji=emoji), "rule", decision, data, None, False, 0.0, elapsed_ms(started)
    )


def _place_json(place: Place) -> dict[str, Any]:
    """What --json says of a place an answer is about; `coordinates`: "own", or "county" where the place (a
    township no source locates) is answered at its county's seat."""
    return {
        "name": place.name,
        "latitude": place.latitude,
        "longitude": place.longitude,
        "timezone": place.timezone,
        "coordinates": place.coordinates,
    }


def _age_text(seconds: float) -> str:
    # Seconds up to a minute and a half, minutes up to an hour and a half, then hours.
    if seconds < 90:
        return f"{seconds:.0f}秒"
    if seconds < 5400:
        return f"{seconds / 60:.0f}分钟"
    return f"{seconds / 3600:.1f}小时"
