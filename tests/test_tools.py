"""Your own tools in the LLM loop (issue 16): the @tool decorator, its schema, and calls over the wire."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import threading
import time
from typing import Annotated, Literal

import pytest

from hybrid_weather.router import HybridRouter, Settings, ToolContext, ToolError, tool

from fake_openai import answer, tool_calls
from llm_router import ledger_rows
from support import FAST_HTTP, FAST_LLM, TODAY, midway

KEY = "sk-test-tools"


def make_router(weather_server, llm_server, tools, **llm):
    settings = Settings(open_meteo_url=weather_server.url, openai_api_key=KEY, openai_base_url=llm_server.base_url,
                        model="gpt-4o-mini")  # fmt: skip
    return HybridRouter(settings=settings, ledger=":memory:", http_options=FAST_HTTP, llm_options={**FAST_LLM, **llm},
                        tools=tools)  # fmt: skip


# -- the schema -------------------------------------------------------------------------------------


def test_the_schema_comes_from_the_type_hints_and_the_docstring():
    @tool
    def book_room(
        city: str,
        nights: int,
        budget: float | None = None,
        kind: Literal["single", "double"] = "double",
        breakfast: bool = False,
        tags: list[str] | None = None,
        *,
        context: ToolContext,
    ) -> dict:
        """Book a hotel room.

        More text that the model does not need.

        Args:
            city: where to stay,
                as the user said it
            nights: how many nights
            kind: the room
        """
        return {}

    schema = book_room.__hybrid_weather_tool__.schema
    assert schema["type"] == "function"
    function = schema["function"]
    assert function["name"] == "book_room" and function["description"] == "Book a hotel room."
    parameters = function["parameters"]
    assert parameters["required"] == ["city", "nights"] and parameters["additionalProperties"] is False
    assert parameters["properties"] == {
        "city": {"type": "string", "description": "where to stay, as the user said it"},
        "nights": {"type": "integer", "description": "how many nights"},
        "budget": {"type": "number"},
        "kind": {"type": "string", "enum": ["single", "double"], "default": "double", "description": "the room"},
        "breakfast": {"type": "boolean", "default": False},
        "tags": {"type": "array", "items": {"type": "string"}},
    }  # context is filled in by the router, never shown to the model
    assert book_room("x", 1, context=None) == {}  # the decorator returns the function unchanged


#: One description for the same parameter of several tools.
City = Annotated[str, "the city, as the user said it"]


def test_an_annotated_parameter_carries_its_description():
    @tool
    def hotels(city: City, stars: Annotated[int | None, "at least this many stars"] = None) -> list[str]:
        """Hotels in a city."""
        return []

    @tool
    def museums(city: City) -> list[str]:
        """Museums in a city.

        Args:
            city: a city with museums
        """
        return []

    properties = hotels.__hybrid_weather_tool__.schema["function"]["parameters"]["properties"]
    assert properties == {
        "city": {"type": "string", "description": "the city, as the user said it"},
        "stars": {"type": "integer", "description": "at least this many stars"},
    }
    # The docstring's Args: line, when there is one, is what the model reads.
    museum_city = museums.__hybrid_weather_tool__.schema["function"]["parameters"]["properties"]["city"]
    assert museum_city == {"type": "string", "description": "a city with museums"}


def test_name_and_description_can_be_given():
    @tool(name="fx", description="汇率")
    def rate(base: str) -> float:
        return 1.0

    assert rate.__hybrid_weather_tool__.schema["function"]["name"] == "fx"
    assert rate.__hybrid_weather_tool__.schema["function"]["description"] == "汇率"


@pytest.mark.parametrize(
    "define, problem",
    [
        (lambda: tool(_undocumented), "docstring"),
        (lambda: tool(_set_typed), "JSON cannot carry"),
        (lambda: tool(_untyped), "type hint"),
        (lambda: tool(_star_args), "cannot be described"),
        (lambda: tool(_optional_without_default), "give it a default"),
        (lambda: tool(name="bad name!")(_documented), "letters, digits"),
        (lambda: tool(_unresolvable), "cannot be read"),
    ],
)
def test_what_cannot_be_described_is_refused_when_the_tool_is_made(define, problem):
    with pytest.raises(TypeError, match=problem):
        define()


def _undocumented(x: str) -> str:
    return x


def _set_typed(x: set[str]) -> str:
    """Doc."""
    return ""


def _untyped(x) -> str:  # type: ignore[no-untyped-def]
    """Doc."""
    return ""


def _star_args(*names: str) -> str:
    """Doc."""
    return ""


def _optional_without_default(x: str | None) -> str:
    """Doc."""
    return ""


def _unresolvable(x: NoSuchType) -> str:  # type: ignore[name-defined]  # noqa: F821 - a hint nothing defines
    """Doc."""
    return ""


def _documented(x: str) -> str:
    """Doc."""
    return x


def test_the_router_refuses_an_unmarked_function_or_two_tools_of_one_name():
    def plain(x: str) -> str:
        """Not marked."""
        return x

    def echo(x: str) -> str:
        """Echo."""
        return x

    with pytest.raises(TypeError, match="mark it with"):
        HybridRouter(settings=Settings(provider="demo", ledger="off"), tools=[plain])
    with pytest.raises(ValueError, match="same"):
        HybridRouter(settings=Settings(provider="demo", ledger="off"),
                     tools=[tool(name="same")(plain), tool(name="same")(echo)])  # fmt: skip


# -- over the wire ------------------------------------------------------------------------------------


def test_the_model_calls_a_registered_tool_and_reads_its_result(weather_server, llm_server):
    seen: list[tuple[str, str, dt.date]] = []

    @tool
    def exchange_rate(base: str, context: ToolContext, quote: str = "CNY") -> dict:
        """The latest exchange rate.

        Args:
            base: currency code to convert from
            quote: currency code to convert to
        """
        seen.append((base, quote, context.today))
        return {"base": base, "quote": quote, "rate": 7.12}

    llm_server.then(
        tool_calls(("exchange_rate", {"base": "USD"}), prompt=300, completion=20),
        answer("1 美元约合 7.12 元人民币。", prompt=400, completion=15),
    )
    with make_router(weather_server, llm_server, [exchange_rate]) as router:
        result = router.ask("美元兑人民币汇率多少", today=TODAY)
        rows = ledger_rows(router)
    assert result.route == "llm" and result.text == "1 美元约合 7.12 元人民币。"
    assert seen == [("USD", "CNY", TODAY)]
    first, second = llm_server.requests
    offered = {t["function"]["name"]: t["function"] for t in first["tools"]}
    assert {"get_weather", "distance", "exchange_rate"} <= set(offered)
    assert offered["exchange_rate"]["parameters"]["required"] == ["base"]
    sent = [m for m in second["messages"] if m["role"] == "tool"]
    assert json.loads(sent[0]["content"]) == {"base": "USD", "quote": "CNY", "rate": 7.12}
    call = result.llm.loops[0].tools[0]  # what --explain prints
    assert call.name == "exchange_rate" and call.ok and call.duration_ms >= 0
    assert rows[0]["tool_calls"] == 1 and rows[0]["tool_failures"] == 0 and rows[0]["plain_lookup"] == 0


def test_an_async_tool_runs_too(weather_server, llm_server):
    @tool
    async def slow_echo(text: str) -> str:
        """Echo the text after a short wait."""
        await asyncio.sleep(0.01)
        return text.upper()

    llm_server.then(tool_calls(("slow_echo", {"text": "hi"})), answer("HI"))
    with make_router(weather_server, llm_server, [slow_echo]) as router:
        assert router.ask("喊一声", today=TODAY).text == "HI"
    sent = [m for m in llm_server.requests[1]["messages"] if m["role"] == "tool"]
    assert json.loads(sent[0]["content"]) == {"result": "HI"}


def test_unregistered_names_bad_arguments_and_failures_go_back_to_the_model(weather_server, llm_server):
    @tool
    def flaky(n: int) -> int:
        """Fails for negative numbers."""
        if n < 0:
            raise ToolError("n must not be negative")
        if n == 0:
            raise RuntimeError("boom")
        return n

    calls = [("run_shell", {"command": "rm -rf /"}), ("flaky", {"n": "three"}), ("flaky", {"n": -1}),
             ("flaky", {"n": 0}), ("flaky", {"n": 2})]  # fmt: skip
    llm_server.then(tool_calls(*calls), answer("done"))
    with make_router(weather_server, llm_server, [flaky]) as router:
        result = router.ask("试试这些工具", today=TODAY)
        rows = ledger_rows(router)
    errors = [json.loads(m["content"]) for m in llm_server.requests[1]["messages"] if m["role"] == "tool"]
    assert "没有名为 'run_shell' 的工具" in errors[0]["error"]
    assert "参数 n 应为 整数" in errors[1]["error"]
    assert errors[2] == {"error": "n must not be negative"}
    assert "RuntimeError: boom" in errors[3]["error"]
    assert errors[4] == 2
    assert result.text == "done" and rows[0]["tool_calls"] == 5 and rows[0]["tool_failures"] == 4


def test_a_slow_tool_is_cut_at_the_deadline(weather_server, llm_server):
    released = threading.Event()

    @tool
    def stuck(x: str) -> str:
        """Never returns in time."""
        released.wait(30)
        return x

    llm_server.then(tool_calls(("stuck", {"x": "a"})), answer("gave up on it"))
    started = time.monotonic()
    try:
        with make_router(weather_server, llm_server, [stuck], deadline=1.5) as router:
            result = router.ask("卡住的工具", today=TODAY)
    finally:
        released.set()
    held = midway(1.5, 30)  # the request's deadline, not the 30 s the tool would take
    assert time.monotonic() - started < held
    call = result.llm.loops[0].tools[0]
    assert call.name == "stuck" and call.ok is False and 1.0 <= call.duration_ms / 1000 < held
    # The request's deadline passed with the tool: the loop stops there and says so, asking the model no more.
    assert result.llm.stopped == "deadline" and len(llm_server.requests) == 1 and "抱歉" in result.text


# -- the built-in tools: the question's day, an unreachable geocoder, personal data -------------------------


def _tool_results(llm_server) -> list[dict]:
    return [json.loads(m["content"]) for m in llm_server.requests[-1]["messages"] if m["role"] == "tool"]


def test_the_weather_tools_fetch_the_days_of_the_questions_day(weather_server, llm_server):
    # Asked on 2026-09-15 (the fake Open-Meteo's clock says 11-29): 明天 is 09-16, fetched by date.
    asked_on = dt.date(2026, 9, 15)
    weather_server.set_day(39.9042, 116.4074, asked_on + dt.timedelta(days=1), weather_code=63)
    llm_server.then(tool_calls(("get_weather", {"place": "北京", "date": "明天"}),
                               ("get_air_quality", {"place": "北京", "date": "明天"})), answer("好。"))  # fmt: skip
    with make_router(weather_server, llm_server, []) as router:
        router.ask("北京明天适合遛狗吗", today=asked_on)
    weather, air = _tool_results(llm_server)
    assert [day["date"] for day in weather["days"]] == ["2026-09-16"] and weather["days"][0]["weather_code"] == 63
    assert [day["date"] for day in air["days"]] == ["2026-09-16"]


def test_a_geocoder_that_cannot_be_reached_is_not_a_place_that_does_not_exist_for_the_model(llm_server):
    from fake_weather import refused_url

    settings = Settings(open_meteo_url=refused_url(), openai_api_key=KEY, openai_base_url=llm_server.base_url,
                        model="gpt-4o-mini")  # fmt: skip
    llm_server.then(tool_calls(("get_weather", {"place": "雷克雅未克"})), answer("暂时查不到。"))
    with HybridRouter(settings=settings, ledger="off", http_options=FAST_HTTP, llm_options=FAST_LLM) as router:
        router.ask("雷克雅未克明天适合遛狗吗", today=TODAY)
    (result,) = _tool_results(llm_server)
    assert "天气服务暂时不可用" in result["error"] and "找不到地点" not in result["error"]


@pytest.mark.parametrize("place", ["zhangsan@example.com", "ｚｈａｎｇ＠ｑｑ．ｃｏｍ", "13812345678"])
def test_personal_data_named_as_a_tools_place_is_not_sent_to_the_geocoder(place, weather_server, llm_server):
    llm_server.then(tool_calls(("get_weather", {"place": place})), answer("好。"))
    with make_router(weather_server, llm_server, []) as router:
        router.ask("北京明天适合遛狗吗", today=TODAY)
    (result,) = _tool_results(llm_server)
    assert "找不到地点" in result["error"] and weather_server.requests["/v1/search"] == 0


def test_the_docs_count_and_name_the_tools_the_model_gets():
    # docs/asking.md said three tools where the model got four (distance was left out).
    import re
    from pathlib import Path

    docs = (Path(__file__).parents[1] / "docs" / "asking.md").read_text("utf-8").replace("\n", " ")
    said = re.search(r"The model gets (\w+) tools — (.*?) — and a (\w+) with `AMAP_KEY`, `(\w+)`", docs)
    assert said, "docs/asking.md no longer says which tools the model gets"
    count, listed, nth, with_amap = said.groups()
    numbers, ordinals = ["one", "two", "three", "four", "five", "six"], ["first", "second", "third", "fourth", "fifth"]

    def names(**settings):
        with HybridRouter(settings=Settings(provider="demo", openai_api_key=KEY, **settings), ledger="off") as router:
            return [schema["function"]["name"] for schema in router.agent.tools.schemas]

    plain, amap = names(), names(amap_key="k")
    assert re.findall(r"`(\w+)`", listed) == plain and numbers.index(count) + 1 == len(plain)
    assert amap == [*plain, with_amap] and ordinals.index(nth) + 1 == len(amap)
