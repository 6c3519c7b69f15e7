"""Rule answers: fetch what a rule decision needs from the weather service and say it in Chinese."""

from __future__ import annotations

import datetime as dt
from typing import Any

from hybrid_weather.agent.weather import Fetched, WeatherService, past_days_for, to_jsonable
from hybrid_weather.rules import Place

from ..understand import Decision
from .answer import Answer, elapsed_ms
from .render import Facts, render

_STALE_NOTE = "\n（天气服务暂时无法访问，以上为缓存数据，数据更新于{age}前）"
_DEMO_MARK = "【演示数据】"


class RuleAnswerer:
    """Answers rule and clarify decisions from one weather service. Thread-safe."""

    def __init__(self, weather: WeatherService) -> None:
        self.weather = weather

    def answer(
        self, decision: Decision, today: dt.date, *, emoji: bool, started: float, deadline: float
    ) -> tuple[Answer, list[Fetched[Any]]]:
        """The answer to DECISION, and what was fetched for it (nothing for a clarify)."""
        if decision.route == "clarify":
            return clarify_answer(decision, started), []
        fetched = [self._fetch(decision, place, today, deadline) for place in decision.places]
        return self.compose(decision, fetched, today, emoji=emoji, started=started), fetched

    async def aanswer(
        self, decision: Decision, today: dt.date, *, emoji: bool, started: float, deadline: float
    ) -> tuple[Answer, list[Fetched[Any]]]:
        """answer() for asyncio: the places are fetched concurrently."""
        import asyncio  # not at module level: ~18 ms that synchronous programs never need

        if decision.route == "clarify":
            return clarify_answer(decision, started), []
        fetched = list(await asyncio.gather(*(self._afetch(decision, p, today, deadline) for p in decision.places)))
        return self.compose(decision, fetched, today, emoji=emoji, started=started), fetched

    def _fetch(self, decision: Decision, place: Place, today: dt.date, deadline: float) -> Fetched[Any]:
        past = past_days_for(decision.dates, today)
        if decision.aspect == "air":
            return self.weather.air_quality(place, past, deadline)
        return self.weather.forecast(place, past, deadline)

    async def _afetch(self, decision: Decision, place: Place, today: dt.date, deadline: float) -> Fetched[Any]:
        past = past_days_for(decision.dates, today)
        if decision.aspect == "air":
            return await self.weather.aair_quality(place, past, deadline)
        return await self.weather.aforecast(place, past, deadline)

    def compose(
        self, decision: Decision, fetched: list[Fetched[Any]], today: dt.date, *, emoji: bool, started: float
    ) -> Answer:
        """The rule answer from the fetched data: the text, and the data behind it for --json."""
        provider = self.weather.provider
        air = decision.aspect == "air"
        facts = [Facts(f.value.place, air=f.value) if air else Facts(f.value.place, weather=f.value) for f in fetched]
        text = render(decision, facts, today, emoji=emoji)
        stale = any(f.stale for f in fetched)
        oldest = max((f.age_s for f in fetched), default=0.0)
        if stale:
            text += _STALE_NOTE.format(age=_age_text(oldest))
        if provider.name == "demo":
            text = _DEMO_MARK + text
        data = {
            "places": [
                {
                    "name": f.value.place.name,
                    "latitude": f.value.place.latitude,
                    "longitude": f.value.place.longitude,
                    "timezone": f.value.place.timezone,
                    "days": [to_jsonable(d) for d in f.value.days if d.date in decision.dates],
                    "current": to_jsonable(f.value.current) if today in decision.dates else None,
                }
                for f in fetched
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


def clarify_answer(decision: Decision, started: float) -> Answer:
    """A clarify decision answered as it stands: its question or notice, at no cost."""
    return Answer(decision.clarification or "", "clarify", decision, {}, None, False, 0.0, elapsed_ms(started))


def _age_text(seconds: float) -> str:
    # Seconds up to a minute and a half, minutes up to an hour and a half, then hours.
    if seconds < 90:
        return f"{seconds:.0f}秒"
    if seconds < 5400:
        return f"{seconds / 60:.0f}分钟"
    return f"{seconds / 3600:.1f}小时"
