"""The weather tools the LLM may call: the same gazetteer, providers and cache as the rule route.

Only the tools declared here ever run: a call to any other name, with arguments that are not JSON, or
that do not fit the schema goes back to the model as an error it can act on.
"""

from __future__ import annotations

import datetime as dt
import json
import time
from dataclasses import dataclass
from typing import Any

from hybrid_weather.rules import Place, Reader, find_dates, normalize

from ..errors import WeatherUnavailable
from ..weather import Fetched, WeatherService, past_days_for, to_jsonable

_PLACE = {"type": "string", "description": "地点名称，如“上海”“北京朝阳区”“东京”，一次一个地点"}
_DATE = {"type": "string", "description": "日期或范围，如“今天”“明天”“周六”“2026-12-01”“未来三天”；不填表示今天"}

TOOL_SCHEMAS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "查询一个地点某天或几天的天气预报：天气状况、最高和最低气温、降水概率和降水量、风力、湿度。",
            "parameters": {
                "type": "object",
                "properties": {"place": _PLACE, "date": _DATE},
                "required": ["place"],
                "additionalProperties": False,
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "get_air_quality",
            "description": "查询一个地点某天或几天的空气质量：AQI 及等级、PM2.5、PM10。",
            "parameters": {
                "type": "object",
                "properties": {"place": _PLACE, "date": _DATE},
                "required": ["place"],
                "additionalProperties": False,
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "get_current_weather",
            "description": "查询一个地点此刻的实况：天气状况、气温、湿度。",
            "parameters": {
                "type": "object",
                "properties": {"place": _PLACE},
                "required": ["place"],
                "additionalProperties": False,
            },
        },
    },
]
TOOL_NAMES = tuple(schema["function"]["name"] for schema in TOOL_SCHEMAS)


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    """One tool call's result as the model will read it."""

    content: str  #: JSON text sent back as the tool message
    ok: bool
    place: str | None = None  #: canonical place the call was about, for the ledger
    duration_ms: float = 0.0


class ToolBox:
    """Runs tool calls against the shared weather service. Thread-safe."""

    def __init__(self, service: WeatherService, reader: Reader, deadline_s: float = 5.0) -> None:
        self.service = service
        self.reader = reader  #: the rules' own place reading: names, nicknames, hierarchy, typos
        self.deadline_s = deadline_s

    def run(self, name: str, arguments: str, today: dt.date, *, deadline: float | None = None) -> ToolOutcome:
        """Run one call; TODAY anchors relative dates (明天) as the question's own today. The call ends by
        DEADLINE (time.monotonic()) when given, and within this box's own deadline_s in any case."""
        started = time.perf_counter()
        own = time.monotonic() + self.deadline_s
        outcome = self._run(name, arguments, today, own if deadline is None else min(own, deadline))
        return ToolOutcome(outcome.content, outcome.ok, outcome.place, (time.perf_counter() - started) * 1000)

    def _run(self, name: str, arguments: str, today: dt.date, deadline: float) -> ToolOutcome:
        if name not in TOOL_NAMES:
            return _error(f"没有名为 {name!r} 的工具；可用的工具：{', '.join(TOOL_NAMES)}")
        try:
            args = json.loads(arguments or "{}")
        except (ValueError, RecursionError):
            return _error("参数不是合法的 JSON，请按工具的参数说明重新调用")
        problem = _check_arguments(name, args)
        if problem:
            return _error(problem)
        place, problem = self._place(args["place"], deadline)
        if place is None:
            return _error(problem or "找不到这个地点")
        fetched: Fetched[Any]
        try:
            if name == "get_current_weather":
                fetched = self.service.forecast(place, 1, deadline)
                current = fetched.value.current
                payload = {"place": place.name, "current": to_jsonable(current)}
            else:
                dates, problem = self._dates(args.get("date"), today, air=name == "get_air_quality")
                if problem:
                    return _error(problem, place.name)
                past = past_days_for(dates, today)
                if name == "get_air_quality":
                    fetched = self.service.air_quality(place, past, deadline)
                else:
                    fetched = self.service.forecast(place, past, deadline)
                days = [to_jsonable(day) for day in fetched.value.days if day.date in dates]
                payload = {"place": place.name, "days": days}
        except WeatherUnavailable as error:
            return _error(f"天气服务暂时不可用：{error}", place.name)
        payload["source"] = fetched.value.source
        if fetched.stale:
            payload["stale_age_s"] = round(fetched.age_s)
        return ToolOutcome(json.dumps(payload, ensure_ascii=False), True, place.name)

    def _place(self, name: str, deadline: float) -> tuple[Place | None, str | None]:
        match = self.reader.resolve_place(name)
        if match is None:
            try:
                found = self.service.geocode(normalize(name), deadline)
            except WeatherUnavailable:
                found = None
            return found, None if found else f"找不到地点“{name}”，请换一个写法（如城市全称）"
        if match.ambiguous:
            options = "、".join(p.name for p in match.candidates)
            return None, f"“{name}”可以指{options}，请用全称重新调用"
        return match.candidates[0], None

    def _dates(self, text: str | None, today: dt.date, air: bool) -> tuple[list[dt.date], str | None]:
        if not text:
            return [today], None
        spans = find_dates(normalize(text), today)
        dates = sorted({d for span in spans for d in span.dates})
        if not dates:
            return [], f"看不懂日期“{text}”，请用“明天”或“2026-12-01”这样的写法"
        provider = self.service.provider
        outside = provider.horizon.first_outside(dates, today, air=air)
        if outside is not None:
            return [], provider.horizon.explain(outside, provider.label, air=air)
        return dates, None


def _check_arguments(name: str, args: Any) -> str | None:
    schema = next(s["function"]["parameters"] for s in TOOL_SCHEMAS if s["function"]["name"] == name)
    if not isinstance(args, dict):
        return "参数必须是一个 JSON 对象"
    unknown = set(args) - set(schema["properties"])
    if unknown:
        return f"不认识的参数：{', '.join(sorted(unknown))}；可用参数：{', '.join(schema['properties'])}"
    for required in schema["required"]:
        if required not in args:
            return f"缺少必填参数 {required}"
    for key, value in args.items():
        if not isinstance(value, str) or (key == "place" and not value.strip()):
            return f"参数 {key} 必须是非空字符串"
    return None


def _error(message: str, place: str | None = None) -> ToolOutcome:
    return ToolOutcome(json.dumps({"error": message}, ensure_ascii=False), False, place)
