"""HybridRouter: the one long-lived object a program keeps."""

from __future__ import annotations

import datetime as dt
import logging
import random
import threading
import time
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from hybrid_weather.agent.errors import HybridWeatherError, LLMUnavailable, WeatherUnavailable
from hybrid_weather.agent.models import ModelTable
from hybrid_weather.rules.normalize import normalize
from hybrid_weather.agent.providers import AMapProvider, DemoProvider, OpenMeteoProvider, WeatherProvider
from hybrid_weather.agent.service import Fetched, WeatherService
from hybrid_weather.agent.weather import to_jsonable

from ._config import Settings, check_provider
from ._decision import Decision
from ._parser import QueryParser
from ._session import Session
from .render import Facts, render

if TYPE_CHECKING:  # the LLM loop and the ledger (sqlite3) load when first used: `route` needs neither
    from hybrid_weather.agent.llm import AgentResult, LLMAgent

    from .ledger import Ledger

logger = logging.getLogger("hybrid_weather")
_CHINA_TIME = dt.timezone(dt.timedelta(hours=8))  # Asia/Shanghai has no daylight saving time
DEFAULT_DEADLINE = 5.0


def today_in_china() -> dt.date:
    return dt.datetime.now(_CHINA_TIME).date()


@dataclass(slots=True)
class Answer:
    """What ask() returns: the text to show and everything behind it."""

    text: str
    route: str
    decision: Decision
    data: dict[str, Any]
    source: str | None  #: provider name (open-meteo, amap, demo), None when no weather was fetched
    stale: bool
    cost_usd: float | None
    latency_ms: float
    stale_age_s: float | None = None
    cache_hit: bool | None = None
    provider_ms: float = 0.0
    attribution: str | None = None
    model: str | None = None  #: the LLM that answered (llm route)
    llm: AgentResult | None = None  #: the loop's trace: tokens, time and tools per loop

    def to_json(self, query: str) -> dict[str, Any]:
        decision = self.decision.to_json(query)
        del decision["query"]
        payload = {
            "query": query, "route": self.route, "answer": self.text, "decision": decision, "data": self.data,
            "source": self.source, "stale": self.stale, "latency_ms": round(self.latency_ms, 3),
            "cost_usd": self.cost_usd,
        }
        if self.stale:
            payload["stale_age_s"] = round(self.stale_age_s or 0.0, 1)
        if self.attribution:
            payload["attribution"] = self.attribution
        return payload


class HybridRouter:
    """Routes questions and answers the simple ones. Thread-safe; build one and share it.

    Keyword arguments left as None come from the environment (DESIGN.md §3.3), read here, at
    construction, never at import.
    """

    def __init__(self, *, provider: str | None = None, ledger: str | None = None, cache_ttl: float | None = None,
                 deadline: float = DEFAULT_DEADLINE, settings: Settings | None = None,
                 http_options: dict[str, Any] | None = None, llm_options: dict[str, Any] | None = None,
                 shadow_rate: float = 0.0) -> None:
        self._settings = settings
        self._provider_name = provider
        self._cache_ttl = cache_ttl
        self._ledger_setting = ledger
        self.deadline = deadline
        self._http_options = http_options or {}
        self._llm_options = llm_options or {}
        self._agent: LLMAgent | None = None
        if not 0.0 <= shadow_rate <= 1.0:
            raise ValueError("shadow_rate is a fraction from 0 to 1")
        #: Fraction of rule answers also sent through the LLM in the background (measured baseline).
        self.shadow_rate = shadow_rate
        self._shadow_pool: Any = None
        self._parser: QueryParser | None = None
        self._service: WeatherService | None = None
        self._ledger: Ledger | None = None
        self._entry: Any = None  # the LedgerEntry class, once the ledger module is loaded
        self._ledger_ready = False
        self._models: ModelTable | None = None
        self._lock = threading.RLock()  # re-entrant: building the agent builds the weather service
        if provider is not None:
            check_provider(provider)

    # -- the expensive parts, built on first use ---------------------------------------------------

    @property
    def settings(self) -> Settings:
        if self._settings is None:
            self._settings = Settings.from_env()
        return self._settings

    @property
    def parser(self) -> QueryParser:
        if self._parser is None:
            with self._lock:
                if self._parser is None:
                    self._parser = QueryParser()
        return self._parser

    @property
    def weather(self) -> WeatherService:
        if self._service is None:
            with self._lock:
                if self._service is None:
                    settings = self.settings
                    ttl = settings.cache_ttl if self._cache_ttl is None else self._cache_ttl
                    self._service = WeatherService(self._make_provider(self._provider_name or settings.provider), cache_ttl=ttl)
        return self._service

    @property
    def models(self) -> ModelTable:
        if self._models is None:
            self._models = ModelTable(self.settings.home_dir() / "models.json")
        return self._models

    @property
    def ledger(self) -> Ledger | None:
        """The request ledger, or None when it is off (ledger="off" or HYBRID_WEATHER_LEDGER=off)."""
        if not self._ledger_ready:
            with self._lock:
                if not self._ledger_ready:
                    location = self._ledger_setting or self.settings.ledger_location()
                    if location and location != "off":
                        from .ledger import Ledger, LedgerEntry

                        self._entry = LedgerEntry
                        self._ledger = Ledger(location, models=self.models, model=self.settings.model,
                                              store_queries=self.settings.ledger_queries)
                    self._ledger_ready = True
        return self._ledger

    @property
    def agent(self) -> LLMAgent:
        """The LLM loop; raises LLMUnavailable when no API key is configured."""
        if self._agent is None:
            with self._lock:
                if self._agent is None:
                    settings = self.settings
                    model = settings.model or self.models.default_model
                    facts = self.models.get(model)
                    if facts and facts.retires_on and facts.retires_on <= today_in_china().isoformat():
                        logger.warning("model %s was retired on %s; set HYBRID_WEATHER_MODEL to a current one",
                                       model, facts.retires_on)
                    from hybrid_weather.agent.llm import LLMAgent
                    from hybrid_weather.agent.tools import ToolBox

                    tools = ToolBox(self.weather, self.parser.resolve_place, deadline_s=self.deadline)
                    self._agent = LLMAgent(tools, model=model, api_key=settings.openai_api_key,
                                           base_url=settings.openai_base_url, facts=facts, **self._llm_options)
        return self._agent

    def _make_provider(self, name: str) -> WeatherProvider:
        settings = self.settings
        if name == "demo":
            return DemoProvider()
        if name == "amap":
            return AMapProvider(settings.amap_key, settings.amap_url, **self._http_options)
        return OpenMeteoProvider(settings.open_meteo_url, **self._http_options)

    def close(self) -> None:
        """Finish shadow runs, flush the ledger and close the HTTP clients."""
        if self._shadow_pool is not None:
            self._shadow_pool.shutdown(wait=True)
        if self._ledger is not None:
            self._ledger.close()
        if self._agent is not None:
            self._agent.close()
        if self._service is not None:
            self._service.close()

    def __enter__(self) -> HybridRouter:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- routing and answering ---------------------------------------------------------------------

    def route(self, text: str, *, today: dt.date | None = None, session: Session | None = None) -> Decision:
        """Decide what to do with TEXT: no I/O, never raises for any str. A SESSION supplies follow-up context."""
        context = session.last if isinstance(session, Session) else None
        recent = list(session.recent_places) if isinstance(session, Session) else None
        return self.parser.parse(text if isinstance(text, str) else str(text), today or today_in_china(), context, recent)

    def ask(self, text: str, *, today: dt.date | None = None, session: Session | None = None,
            emoji: bool = True) -> Answer:
        """Answer TEXT. Raises WeatherUnavailable (no data, not even stale) or LLMUnavailable."""
        arrived, started = time.time(), time.perf_counter()
        today = today or today_in_china()
        decision = self.route(text, today=today, session=session)
        try:
            deadline = time.monotonic() + self.deadline
            decision = self._geocoded(decision, deadline)
            if decision.route == "llm":
                answer = self._ask_llm(text, decision, today, session, emoji, started)
            else:
                answer, fetched = self._rule_answer(decision, today, emoji, started, deadline)
                if fetched:
                    self._maybe_shadow(text, decision, fetched, today)
        except HybridWeatherError as error:
            self._record_failure(text, decision, error, arrived, started, session)
            raise
        self._finish(text, answer, arrived, session)
        return answer

    async def aask(self, text: str, *, today: dt.date | None = None, session: Session | None = None,
                   emoji: bool = True) -> Answer:
        """ask() for asyncio programs: places are fetched concurrently, the event loop never blocks."""
        import asyncio

        arrived, started = time.time(), time.perf_counter()
        today = today or today_in_china()
        decision = self.route(text, today=today, session=session)
        loop = asyncio.get_running_loop()
        try:
            deadline = time.monotonic() + self.deadline
            if decision.pending is not None:
                decision = await loop.run_in_executor(None, self._geocoded, decision, deadline)
            if decision.route == "llm":
                # The loop is sequential network I/O with its own deadline; a worker thread runs it.
                answer = await loop.run_in_executor(None, self._ask_llm, text, decision, today, session, emoji, started)
            else:
                answer = self._early_answer(decision, today, started)
                if answer is None:
                    fetched = await asyncio.gather(*(self._afetch(decision, place, today, deadline) for place in decision.places))
                    answer = self._answer(decision, list(fetched), today, emoji, started)
                    self._maybe_shadow(text, decision, list(fetched), today)
        except HybridWeatherError as error:
            self._record_failure(text, decision, error, arrived, started, session)
            raise
        self._finish(text, answer, arrived, session)
        return answer

    def _ask_llm(self, text: str, decision: Decision, today: dt.date, session: Session | None, emoji: bool,
                 started: float) -> Answer:
        try:
            agent = self.agent
            result = agent.run(text, history=session.llm_history() if session else None, today=today)
        except LLMUnavailable as error:
            error.partial = self._weather_part(text, today, emoji)
            raise
        cost = self.models.cost(agent.model, result.usage)
        data = {"stopped": result.stopped, "places": result.places, "loops": [
            {"loop": t.loop, "prompt_tokens": t.usage.prompt_tokens, "cached_tokens": t.usage.cached_tokens,
             "completion_tokens": t.usage.completion_tokens, "latency_ms": round(t.latency_ms, 1), "attempts": t.attempts,
             "tools": [{"name": c.name, "arguments": c.arguments, "ok": c.ok, "ms": round(c.duration_ms, 1), "reused": c.reused}
                       for c in t.tools]} for t in result.loops]}
        return Answer(text=result.text, route="llm", decision=decision, data=data,
                      source=self.weather.provider.name if result.tool_calls else None, stale=False, cost_usd=cost,
                      latency_ms=_ms(started), model=agent.model, llm=result,
                      attribution=self.weather.provider.attribution if result.tool_calls else None)

    def _maybe_shadow(self, text: str, decision: Decision, fetched: list[Fetched], today: dt.date) -> None:
        if self.shadow_rate <= 0 or random.random() >= self.shadow_rate or self.ledger is None:
            return
        if self._shadow_pool is None:
            with self._lock:
                if self._shadow_pool is None:
                    from concurrent.futures import ThreadPoolExecutor

                    self._shadow_pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="hybrid-weather-shadow")
        self._shadow_pool.submit(self._shadow, text, decision, fetched, today)

    def _shadow(self, text: str, decision: Decision, fetched: list[Fetched], today: dt.date) -> None:
        """Answer a rule-answered question with the LLM as well; record its real cost and agreement."""
        from ._shadow import agreement

        arrived, started = time.time(), time.perf_counter()
        entry = dict(started_at=arrived, route="shadow", query=text, reason=f"shadow of: {decision.reason}",
                     aspect=decision.aspect, places=tuple(decision.cities), days=len(decision.dates))
        try:
            agent = self.agent
            result = agent.run(text, today=today)
        except HybridWeatherError as error:
            self.ledger.record(self._entry(**entry, cost_usd=0.0, latency_ms=_ms(started), outcome=type(error).__name__))
            return
        facts = [Facts(f.value.place, weather=f.value) for f in fetched if decision.aspect != "air"]
        self.ledger.record(self._entry(
            **entry, model=agent.model, usage=result.usage, llm_attempts=result.attempts, llm_loops=len(result.loops),
            tool_calls=result.tool_calls, tool_failures=result.tool_failures,
            cost_usd=self.models.cost(agent.model, result.usage), latency_ms=_ms(started),
            agreement=agreement(result.text, facts, decision.dates[0]) if facts else None,
        ))

    def _weather_part(self, text: str, today: dt.date, emoji: bool) -> Answer | None:
        """The plain weather part of an LLM question, answered by the rules (for a degraded answer)."""
        clean = self.parser.lexicon.strip_open_ended(normalize(text))
        decision = self.route(clean, today=today)
        if decision.route != "rule":
            return None
        try:
            answer, _ = self._rule_answer(decision, today, emoji, time.perf_counter(), time.monotonic() + self.deadline)
        except HybridWeatherError:
            return None
        answer.text = "（没有可用的 LLM，只能回答其中的天气部分）\n" + answer.text
        return answer

    def _rule_answer(self, decision: Decision, today: dt.date, emoji: bool, started: float,
                     deadline: float) -> tuple[Answer, list[Fetched]]:
        """Answer a rule or clarify decision; also return what was fetched (nothing for a clarify)."""
        answer = self._early_answer(decision, today, started)
        if answer is not None:
            return answer, []
        fetched = [self._fetch(decision, place, today, deadline) for place in decision.places]
        return self._answer(decision, fetched, today, emoji, started), fetched

    def _early_answer(self, decision: Decision, today: dt.date, started: float) -> Answer | None:
        """The answer when no weather needs fetching: a clarify, or a date beyond the provider's horizon."""
        answer = self._without_weather(decision, started)
        if answer is None:
            answer = self._beyond_horizon(decision, today, started)
        return answer

    def _finish(self, text: str, answer: Answer, arrived: float, session: Session | None) -> None:
        if session is not None:
            session.remember(text, answer.text, answer.decision)
        ledger = self.ledger
        if ledger is None:
            return
        decision, result = answer.decision, answer.llm
        ledger.record(self._entry(
            started_at=arrived, route=answer.route, query=text, reason=decision.reason, aspect=decision.aspect,
            places=tuple(result.places if result else decision.cities), days=len(decision.dates), provider=answer.source,
            cache_hit=answer.cache_hit, stale=answer.stale, cost_usd=answer.cost_usd, latency_ms=answer.latency_ms,
            model=answer.model, usage=result.usage if result else None, llm_attempts=result.attempts if result else None,
            llm_loops=len(result.loops) if result else None, tool_calls=result.tool_calls if result else None,
            tool_failures=result.tool_failures if result else None,
            session_id=session.id if session is not None else None,
        ))

    def _record_failure(self, text: str, decision: Decision, error: Exception, arrived: float, started: float,
                        session: Session | None) -> None:
        ledger = self.ledger
        if ledger is None:
            return
        ledger.record(self._entry(
            started_at=arrived, route=decision.route, query=text, reason=decision.reason, aspect=decision.aspect,
            places=tuple(decision.cities), days=len(decision.dates),
            provider=self.weather.provider.name if decision.route == "rule" else None,
            model=(self._agent.model if self._agent else None) if decision.route == "llm" else None,
            cost_usd=0.0, latency_ms=_ms(started), outcome=type(error).__name__,
            session_id=session.id if session is not None else None,
        ))

    def _geocoded(self, decision: Decision, deadline: float) -> Decision:
        """For a place the gazetteer lacks, ask the provider's geocoder before giving up."""
        if decision.pending is None or decision.unknown_place is None:
            return decision
        try:
            found = self.weather.geocode(decision.unknown_place, deadline)
        except WeatherUnavailable:
            return decision  # the clarify stands; the forecast fetch would fail the same way
        if found is None:
            return decision
        pending = decision.pending
        places = [found if p.level == "geocoded" and p.name == decision.unknown_place else p for p in pending.places]
        return replace(pending, places=places, cities=[p.name for p in places],
                       reason=pending.reason.replace("via geocoding", f"via geocoding ({self.weather.provider.name})"))

    def _without_weather(self, decision: Decision, started: float) -> Answer | None:
        if decision.route == "clarify":
            return Answer(decision.clarification or "", "clarify", decision, {}, None, False, 0.0, _ms(started))
        return None

    def _beyond_horizon(self, decision: Decision, today: dt.date, started: float) -> Answer | None:
        """A clarifying answer when a date asked is outside what the provider covers; else None."""
        provider = self.weather.provider
        ahead = provider.max_air_days_ahead if decision.aspect == "air" else provider.max_days_ahead
        for day in decision.dates:
            offset = (day - today).days
            if offset > ahead or offset < -provider.max_days_back:
                message = (f"{provider.label}只提供今天起{ahead + 1}天内"
                           + (f"和过去{provider.max_days_back}天" if provider.max_days_back else "")
                           + f"的{'空气质量' if decision.aspect == 'air' else '天气'}，"
                           f"{day.month}月{day.day}日不在范围内。")
                clarify = Decision("clarify", [], [], None, f"clarify: beyond {provider.name} horizon: {day.isoformat()}",
                                   clarification=message, normalized=decision.normalized)
                return Answer(message, "clarify", clarify, {}, None, False, 0.0, _ms(started))
        return None

    def _past_days(self, decision: Decision, place_today: dt.date) -> int:
        return max(1, max((place_today - day).days for day in decision.dates))

    def _fetch(self, decision: Decision, place, today: dt.date, deadline: float) -> Fetched:
        service = self.weather
        past = self._past_days(decision, today)
        if decision.aspect == "air":
            return service.air_quality(place, past, deadline)
        return service.forecast(place, past, deadline)

    async def _afetch(self, decision: Decision, place, today: dt.date, deadline: float) -> Fetched:
        service = self.weather
        past = self._past_days(decision, today)
        if decision.aspect == "air":
            return await service.aair_quality(place, past, deadline)
        return await service.aforecast(place, past, deadline)

    def _answer(self, decision: Decision, fetched: list[Fetched], today: dt.date, emoji: bool, started: float) -> Answer:
        provider = self.weather.provider
        air = decision.aspect == "air"
        facts = [Facts(f.value.place, air=f.value) if air else Facts(f.value.place, weather=f.value) for f in fetched]
        text = render(decision, facts, today, emoji=emoji)
        stale = any(f.stale for f in fetched)
        oldest = max((f.age_s for f in fetched), default=0.0)
        if stale:
            text += f"\n（天气服务暂时无法访问，以上为缓存数据，数据更新于{_age_text(oldest)}前）"
        if provider.name == "demo":
            text = "【演示数据】" + text
        data = {
            "places": [
                {"name": f.value.place.name, "latitude": f.value.place.latitude, "longitude": f.value.place.longitude,
                 "timezone": f.value.place.timezone,
                 "days": [to_jsonable(d) for d in f.value.days if d.date in decision.dates],
                 "current": to_jsonable(f.value.current) if today in decision.dates else None}
                for f in fetched
            ],
        }
        return Answer(
            text=text, route="rule", decision=decision, data=data, source=provider.name, stale=stale,
            cost_usd=0.0, latency_ms=_ms(started), stale_age_s=oldest if stale else None,
            cache_hit=all(f.cache_hit for f in fetched), provider_ms=sum(f.provider_ms for f in fetched),
            attribution=provider.attribution,
        )


def _ms(started: float) -> float:
    return (time.perf_counter() - started) * 1000


def _age_text(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f}秒"
    if seconds < 5400:
        return f"{seconds / 60:.0f}分钟"
    return f"{seconds / 3600:.1f}小时"



