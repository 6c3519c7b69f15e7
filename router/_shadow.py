"""Shadow mode: send a sample of rule-answered questions through the LLM too, off the request path,
to measure what an all-LLM design really costs and whether it would have said the same thing."""

from __future__ import annotations

import datetime as dt
import re

from .render import Facts

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
