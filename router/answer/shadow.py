"""Shadow mode: send a sample of rule-answered questions through the LLM too, off the request path,
to measure what an all-LLM design really costs and whether it would have said the same thing."""

from __future__ import annotations

import datetime as dt
import random
import re
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from hybrid_weather.agent.errors import HybridWeatherError
from hybrid_weather.agent.weather import Fetched
from hybrid_weather.rules import mask_personal_data

from ..understand import Decision
from .answer import elapsed_ms
from .render import Facts

if TYPE_CHECKING:
    from hybrid_weather.agent.llm import LLMAgent, ModelTable

    from ..ledger import Recorder

_DEGREES = r"\s*(?:°C?|℃|度)"
# A temperature, or a range whose second end carries the unit (8到15度, 8~15°C, -3 - 5℃).
_TEMPERATURES = re.compile(
    rf"(-?\d+(?:\.\d+)?)(?:(?:{_DEGREES})?\s*(?:~|～|-|到|至)\s*(-?\d+(?:\.\d+)?))?(?={_DEGREES})"
)
# Temperatures within this many degrees count as the same forecast.
_TEMPERATURE_TOLERANCE = 2.0


def agreement(llm_text: str, facts: list[Facts], day: dt.date) -> bool | None:
    """Does the LLM's answer state the rule answer's condition and temperatures for DAY?

    None when the LLM's text gives neither a condition nor a temperature to check.
    """
    checks: list[bool] = []
    numbers = [float(n) for pair in _TEMPERATURES.findall(llm_text) for n in pair if n]
    for item in facts:
        weather = item.weather.day(day) if item.weather is not None else None
        if weather is None:
            continue
        if numbers:
            for value in (weather.temp_min, weather.temp_max):
                if value is not None:
                    checks.append(any(abs(n - value) <= _TEMPERATURE_TOLERANCE for n in numbers))
        if weather.condition and weather.condition != "未知":
            mentioned = weather.condition in llm_text
            if mentioned or numbers:  # only judge the condition when the LLM described the weather at all
                checks.append(mentioned)
    return all(checks) if checks else None


class ShadowRunner:
    """Sends a sample of rule-answered questions through the LLM on two background threads.

    The user's answer never waits: run() only submits. Each run becomes a `shadow` ledger row.
    """

    def __init__(
        self, rate: float, *, agent: Callable[[], LLMAgent], models: ModelTable, recorder: Recorder, mask: bool = True
    ) -> None:
        self.rate = rate
        self._mask = mask  # HYBRID_WEATHER_LLM_SEES: personal data masked before it reaches the model
        self._agent = agent  # called in the background: building the agent may fail (no key), and that is a row
        self._models = models
        self._recorder = recorder
        self._pool: ThreadPoolExecutor | None = None
        self._pending: set[Future[None]] = set()
        self._lock = threading.Lock()

    def maybe_run(self, query: str, decision: Decision, fetched: list[Fetched[Any]], today: dt.date) -> None:
        """Submit a shadow run for a sampled fraction (RATE) of rule answers."""
        if not fetched or random.random() >= self.rate:
            return
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="hybrid-weather-shadow")
            future = self._pool.submit(self._run, query, decision, fetched, today)
            self._pending.add(future)
        future.add_done_callback(self._pending.discard)

    def wait(self) -> None:
        """Block until every submitted run has been recorded."""
        for future in list(self._pending):
            future.result()

    def close(self) -> None:
        with self._lock:
            if self._pool is not None:
                self._pool.shutdown(wait=True)

    def _run(self, query: str, decision: Decision, fetched: list[Fetched[Any]], today: dt.date) -> None:
        arrived, started = time.time(), time.perf_counter()
        try:
            agent = self._agent()
            result = agent.run(mask_personal_data(query) if self._mask else query, today=today)
        except HybridWeatherError as error:
            self._recorder.shadow(
                query,
                decision,
                arrived=arrived,
                latency_ms=elapsed_ms(started),
                model=None,
                result=None,
                cost_usd=0.0,
                agreement=None,
                error=error,
            )
            return
        facts = [Facts(f.value.place, weather=f.value) for f in fetched if decision.aspect != "air"]
        self._recorder.shadow(
            query,
            decision,
            arrived=arrived,
            latency_ms=elapsed_ms(started),
            model=agent.model,
            result=result,
            cost_usd=self._models.cost(agent.model, result.usage),
            agreement=agreement(result.text, facts, decision.dates[0]) if facts else None,
        )
