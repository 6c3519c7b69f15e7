"""route() never raises, whatever it is given (docs/contracts.md), and is safe to share between threads."""

import datetime as dt
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hybrid_weather.router import HybridRouter

TODAY = dt.date(2026, 11, 29)
ROUTER = HybridRouter()
ROUTES = {"rule", "clarify", "llm"}

weather_words = st.sampled_from(
    [
        "上海",
        "明天",
        "天气",
        "下雨",
        "哪个",
        "冷",
        "和",
        "周三",
        "12月3日",
        "适合",
        "魔都",
        "杭洲",
        "new york",
        "pm2.5",
        "、",
        "三天后",
        "未来30天",
        "2月30日",
        "<b>",
        "'; drop",
    ]
)
mixed_text = st.lists(st.one_of(st.text(max_size=20), weather_words), max_size=30).map("".join)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=st.one_of(st.text(), mixed_text))
def test_route_never_raises(text):
    decision = ROUTER.route(text, today=TODAY)
    assert decision.route in ROUTES
    assert decision.reason
    if decision.route == "rule":
        assert decision.cities and decision.dates and decision.aspect
    else:
        assert decision.aspect is None


@settings(max_examples=60, deadline=None)
@given(date=st.dates(min_value=dt.date(1900, 1, 1), max_value=dt.date(2200, 12, 31)), text=mixed_text)
def test_route_never_raises_for_any_today(date, text):
    assert ROUTER.route(text, today=date).route in ROUTES


@pytest.mark.parametrize(
    "text",
    [
        "上海" * 500_000,  # 1 MB of Han text
        "a" * 1_000_000,
        "\x00\x01\x02\x1b[31m" * 200_000,
        "".join(chr(c) for c in range(0x20, 0x3000)) * 50,
        "上海明天天气" + "😀" * 300_000,
        "\ud800上海",  # a lone surrogate
    ],
)
def test_huge_and_hostile_strings(text):
    assert ROUTER.route(text, today=TODAY).route in ROUTES


def test_non_str_input_does_not_raise():
    assert ROUTER.route(None, today=TODAY).route in ROUTES  # type: ignore[arg-type]


def test_concurrent_routes_agree_with_serial_ones():
    queries = [
        "上海今天天气",
        "魔都明天会下雨吗",
        "北京和上海明天哪个冷",
        "北京明天适合出游吗",
        "杭洲明天天气",
        "纳尼亚明天天气",
    ] * 50
    serial = [ROUTER.route(q, today=TODAY).to_json(q) for q in queries]
    fresh = HybridRouter()  # built lazily by whichever thread gets there first
    with ThreadPoolExecutor(max_workers=8) as pool:
        threaded = list(pool.map(lambda q: fresh.route(q, today=TODAY).to_json(q), queries))
    assert threaded == serial


# Shapes that once made a pattern scan again from every position (quadratic): 1,600 semicolons took 80 ms.
BAD_SHAPES = [";", "'", '"', "`", " ", "; ", "' ", "1", "1 ", "a1", "-", ".", "<", "&", "@", "@a ", "上", "明天",
              "冷不冷", "12.", "一下", "到", "select ", "<b>", "&amp;", "pm2.5", "，", "、"]  # fmt: skip


def test_route_stays_fast_on_every_known_bad_shape():
    # The bar for the product is 2 ms (tests/bench prints the figures); this test fails only on the
    # quadratic kind of regression, at 10 times that. Timed on this thread's CPU clock: the work route()
    # does, which other processes on the core stretch on the wall clock but not here.
    router = HybridRouter()
    router.route("北京明天天七怎么样", today=TODAY)  # every lazy table loaded first
    worst = 0.0
    for shape in BAD_SHAPES:
        for size in (1_600, 100_000):
            text = (shape * size)[:size]
            timings = []
            for _ in range(3):
                started = time.thread_time()
                router.route(text, today=TODAY)
                timings.append(time.thread_time() - started)
            worst = max(worst, sorted(timings)[1])
    print(f"worst route() over the bad shapes: {worst * 1000:.2f} ms")
    assert worst < 0.020


@pytest.mark.parametrize("today", [dt.date(9999, 12, 31), dt.date(1, 1, 1), dt.date(1969, 12, 31), dt.date(2100, 1, 1)])
def test_a_today_outside_the_supported_range_is_a_clarify_not_an_overflow(today):
    decision = ROUTER.route("上海下下周五到下个月3号天气", today=today)
    assert decision.route == "clarify" and "today out of range" in decision.reason


@pytest.mark.parametrize("today", [dt.date(1970, 1, 1), dt.date(2099, 12, 31)])
def test_the_edges_of_the_range_are_asked_on(today):
    assert ROUTER.route("上海下下周五到下周日天气", today=today).route in ROUTES
