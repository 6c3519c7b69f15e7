"""The tools the LLM may call: the built-in weather and distance tools (the same gazetteer, providers and
cache as the rule route) and the ones a library user registers.

Only registered tools ever run: a call to any other name, with arguments that are not JSON, or that do
not fit the schema goes back to the model as an error it can act on.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Annotated, Any

from hybrid_weather.rules import Place, Reader, contains_personal_data, find_dates, great_circle_km, normalize

from ..errors import WeatherUnavailable
from ..weather import Fetched, WeatherService, past_days_for, to_jsonable
from .registry import MAX_RESULT_CHARS, Tool, ToolContext, ToolError, build_tool, to_content, tool_of
from .travel import TravelTimes

logger = logging.getLogger("hybrid_weather")

#: A place, as the built-in tools describe it to the model.
PlaceName = Annotated[str, "地点名称，如“上海”“北京朝阳区”“东京”，一次一个地点"]
#: A day or days, as the built-in tools describe them to the model.
DateWords = Annotated[str | None, "日期或范围，如“今天”“明天”“周六”“2026-12-01”“未来三天”；不填表示今天"]

#: How to travel, as the travel_time tool describes it to the model.
TravelMode = Annotated[str, "出行方式：driving（驾车）或 transit（公共交通）；不填为驾车"]

#: The tools that look up the weather: an LLM answer that only called these, about one place and day,
#: is one the rules could have given (the ledger's plain_lookup).
WEATHER_TOOL_NAMES = ("get_weather", "get_air_quality", "get_current_weather")


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    """One tool call's result as the model will read it."""

    content: str  #: JSON text sent back as the tool message
    ok: bool
    place: str | None = None  #: canonical place the call was about, for the ledger
    duration_ms: float = 0.0
    started_at: float = 0.0  #: time.time() when the call started (traces)


class ToolBox:
    """Runs tool calls: the built-in weather and distance tools over the shared weather service and the
    rules' reader, and the tools a library user registered (registry.py). Thread-safe."""

    def __init__(
        self,
        service: WeatherService,
        reader: Reader,
        deadline_s: float = 5.0,
        extra: Sequence[Any] = (),
        travel: TravelTimes | None = None,
    ) -> None:
        self.service = service
        self.reader = reader  #: the rules' own place reading: names, nicknames, hierarchy, typos
        self.deadline_s = deadline_s
        #: AMap's route planning, with AMAP_KEY (without it there is no travel_time tool); its maker closes it.
        self.travel = travel
        builtin = [build_tool(self.get_weather), build_tool(self.get_air_quality),
                   build_tool(self.get_current_weather), build_tool(self.distance)]  # fmt: skip
        if travel is not None:
            builtin.append(build_tool(self.travel_time))
        self._builtin = frozenset(t.name for t in builtin)
        self._tools: dict[str, Tool] = {t.name: t for t in builtin}
        for given in extra:
            registered = tool_of(given)
            if registered.name in self._tools:
                raise ValueError(f"a tool named {registered.name} is registered already")
            self._tools[registered.name] = registered

    @property
    def schemas(self) -> list[dict[str, Any]]:
        """The `tools` list sent to the model."""
        return [t.schema for t in self._tools.values()]

    def run(self, name: str, arguments: str, today: dt.date, *, deadline: float | None = None) -> ToolOutcome:
        """Run one call; TODAY anchors relative dates (明天) as the question's own today. The call ends by
        DEADLINE (time.monotonic()) when given, and within this box's own deadline_s in any case."""
        started, started_at = time.perf_counter(), time.time()
        own = time.monotonic() + self.deadline_s
        outcome = self._run(name, arguments, today, own if deadline is None else min(own, deadline))
        took = (time.perf_counter() - started) * 1000
        return ToolOutcome(outcome.content, outcome.ok, outcome.place, took, started_at)

    def _run(self, name: str, arguments: str, today: dt.date, deadline: float) -> ToolOutcome:
        chosen = self._tools.get(name)
        if chosen is None:  # only registered tools ever run
            return _error(f"没有名为 {name!r} 的工具；可用的工具：{', '.join(self._tools)}")
        try:
            args = json.loads(arguments or "{}")
        except (ValueError, RecursionError):
            return _error("参数不是合法的 JSON，请按工具的参数说明重新调用")
        problem = chosen.check(args)
        if problem:
            return _error(problem)
        try:
            result = chosen.call(args, ToolContext(today, deadline))
            content = to_content(result)
        except ToolError as error:
            return _error(str(error), error.place)
        except TimeoutError:
            return _error(f"工具 {name} 没能在时限内完成")
        except Exception as error:  # a user's tool may raise anything: the model reads what went wrong
            logger.warning("tool %s failed: %s: %s", name, type(error).__name__, error)
            return _error(f"工具 {name} 出错：{type(error).__name__}: {str(error)[:300]}")
        if len(content) > MAX_RESULT_CHARS:
            return _error(f"工具 {name} 的结果太长（{len(content)} 个字符），请缩小查询范围")
        place = result.get("place") if name in self._builtin and isinstance(result, dict) else None
        return ToolOutcome(content, True, place if isinstance(place, str) else None)

    # -- the built-in tools --------------------------------------------------------------------------

    def get_weather(self, place: PlaceName, context: ToolContext, date: DateWords = None) -> dict[str, Any]:
        """查询一个地点某天或几天的天气预报：天气状况、最高和最低气温、降水概率和降水量、风力、湿度。"""
        return self._days(place, date, context, air=False)

    def get_air_quality(self, place: PlaceName, context: ToolContext, date: DateWords = None) -> dict[str, Any]:
        """查询一个地点某天或几天的空气质量：AQI 及等级、PM2.5、PM10。"""
        return self._days(place, date, context, air=True)

    def get_current_weather(self, place: PlaceName, context: ToolContext) -> dict[str, Any]:
        """查询一个地点此刻的实况：天气状况、气温、湿度。"""
        found = self._place(place, context.deadline)
        fetched = self._fetched(found, lambda: self.service.forecast(found, 1, context.deadline, today=context.today))
        return self._with_source({"place": found.name, "current": to_jsonable(fetched.value.current)}, fetched)

    def distance(self, from_place: str, to_place: str, context: ToolContext) -> dict[str, Any]:
        """两个地点之间的直线（球面）距离，单位公里，按两地坐标计算；不是公路或铁路里程。

        Args:
            from_place: 起点名称，如“北京”
            to_place: 终点名称，如“上海”
        """
        first, second = self._place(from_place, context.deadline), self._place(to_place, context.deadline)
        km = great_circle_km(first.latitude, first.longitude, second.latitude, second.longitude)
        return {"from": first.name, "to": second.name, "straight_line_km": round(km, 1)}

    def travel_time(
        self, from_place: str, to_place: str, context: ToolContext, mode: TravelMode = "driving"
    ) -> dict[str, Any]:
        """两地之间的出行时间和路程（高德路径规划）：驾车或公共交通，单位分钟和公里。

        Args:
            from_place: 起点名称，如“北京”
            to_place: 终点名称，如“天津”
        """
        assert self.travel is not None  # the tool exists only with it
        first, second = self._place(from_place, context.deadline), self._place(to_place, context.deadline)
        return self.travel.plan(first, second, mode or "driving", context.deadline)

    def _days(self, name: str, date: str | None, context: ToolContext, *, air: bool) -> dict[str, Any]:
        place = self._place(name, context.deadline)
        dates, problem = self._dates(date, context.today, air=air)
        if problem:
            raise ToolError(problem, place.name)
        past = past_days_for(dates, context.today)
        fetch = self.service.air_quality if air else self.service.forecast
        fetched = self._fetched(place, lambda: fetch(place, past, context.deadline, today=context.today))
        days = [to_jsonable(day) for day in fetched.value.days if day.date in dates]
        return self._with_source({"place": place.name, "days": days}, fetched)

    @staticmethod
    def _fetched(place: Place, fetch: Callable[[], Fetched[Any]]) -> Fetched[Any]:
        try:
            return fetch()
        except WeatherUnavailable as error:
            raise ToolError(f"天气服务暂时不可用：{error}", place.name) from None

    @staticmethod
    def _with_source(payload: dict[str, Any], fetched: Fetched[Any]) -> dict[str, Any]:
        payload["source"] = fetched.value.source
        if fetched.stale:
            payload["stale_age_s"] = round(fetched.age_s)
        return payload

    def _place(self, name: str, deadline: float) -> Place:
        match = self.reader.resolve_place(name)
        if match is None:
            word = normalize(name)
            # Personal data where a place should be (a phone number, an e-mail address) never goes to a geocoder.
            if not word or contains_personal_data(name):
                raise ToolError(f"找不到地点“{name}”，请换一个写法（如城市全称）")
            try:
                found = self.service.geocode(word, deadline)
            except WeatherUnavailable as error:
                # Not "no such place": whether it exists is unknown until the geocoder answers.
                raise ToolError(f"天气服务暂时不可用：{error}") from None
            if found is None:
                raise ToolError(f"找不到地点“{name}”，请换一个写法（如城市全称）")
            return found
        if match.ambiguous:
            options = "、".join(p.name for p in match.candidates)
            raise ToolError(f"“{name}”可以指{options}，请用全称重新调用")
        return match.candidates[0]

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


def _error(message: str, place: str | None = None) -> ToolOutcome:
    return ToolOutcome(json.dumps({"error": message}, ensure_ascii=False), False, place)
