"""The asking clause among context (docs/reading.md): a message that says more than its question."""

import datetime as dt

import pytest

from hybrid_weather.router import HybridRouter

TODAY = dt.date(2026, 12, 3)  # a Thursday
TOMORROW, NEXT_WEDNESDAY = "2026-12-04", "2026-12-09"


@pytest.fixture(scope="module")
def router():
    with HybridRouter(provider="demo", ledger="off") as router:
        yield router


@pytest.mark.parametrize(
    "message, city, day, aspect",
    [
        ("刚下飞机，后天成都冷不冷", "成都市", "2026-12-05", "temperature"),
        ("你好小优，西安今天天气", "西安市", "2026-12-03", "weather"),  # an assistant's name it does not know
        ("今天好累，明天长沙热吗", "长沙市", TOMORROW, "temperature"),
        ("房号1205，明天上海下雨吗", "上海市", TOMORROW, "rain"),  # a number that is no date
        ("我在苏州上班，明天要带伞吗", "苏州市", TOMORROW, "rain"),  # the place from the context
        ("下周三飞成都，那边天气怎么样", "成都市", NEXT_WEDNESDAY, "weather"),  # the place and the day
        ("孩子冬月初一春游，北京天气怎么样", "北京市", "2026-12-09", "weather"),  # a lunar day
        ("孩子12月第二个周六春游，北京天气怎么样", "北京市", "2026-12-12", "weather"),  # an ordinal weekday
        ("孩子明天春游，杭州天气怎么样", "杭州市", TOMORROW, "weather"),  # the day from the context
        ("明天要去见客户，杭州会下雨吗", "杭州市", TOMORROW, "rain"),
        ("刚到西宁，今天气温多少", "西宁市", "2026-12-03", "temperature"),
    ],
)
def test_the_question_is_read_among_its_context(router, message, city, day, aspect):
    decision = router.route(message, today=TODAY)
    assert (decision.route, decision.cities, [d.isoformat() for d in decision.dates], decision.aspect) == (
        "rule", [city], [day], aspect), decision.reason  # fmt: skip


def test_the_reason_says_which_question_was_read_and_what_was_set_aside(router):
    decision = router.route("刚下飞机，后天成都冷不冷", today=TODAY)
    assert decision.reason.endswith("; asked: 后天成都冷; context: 刚下飞机"), decision.reason  # --explain shows it


@pytest.mark.parametrize(
    "message",
    [
        "明天北京会下雨吗，顺便帮我订个酒店",  # a second request
        "上海明天天气好吗？我打算跑马拉松",  # what follows a question adds to it
        "北京人在上海，明天冷吗",  # two places in the context: which one?
        "我不在上海，明天冷吗",  # the context takes its place back
        "负责人说北京明天冷",  # told, not asked
        "腊月中旬北京天气",  # never cut inside a clause: 腊|月中旬
        "Xmas week，北京天气",  # no day said, and context that may say it
        "你好小优，今天好累",  # context, and no question of the weather
    ],
)
def test_context_that_asks_takes_back_or_chooses_goes_to_the_llm(router, message):
    assert router.route(message, today=TODAY).route == "llm"


def test_a_date_once_unread_is_no_longer_context_that_may_say_one(router):
    # 腊月初八北京天气 and Dec 12，北京天气 went to the LLM as holding a day the router could not read; they are read.
    decision = router.route("Dec 12，北京天气", today=TODAY)
    assert (decision.route, decision.dates) == ("rule", [dt.date(2026, 12, 12)]), decision.reason
    decision = router.route("腊月初八北京天气", today=TODAY)  # 2027-01-15: past the forecast, said so
    assert decision.route == "clarify" and "2027年1月15日" in (decision.clarification or ""), decision


def test_a_question_without_its_place_among_context_without_one_is_asked_for_it(router):
    decision = router.route("你好小优，明天气温多少", today=TODAY)
    assert decision.route == "clarify" and decision.clarification is not None


@pytest.mark.parametrize(
    "question",
    [
        "好想看雪啊",
        "下雪了",
        "冬至一定冷吗",
        "下雨天适合做什么",
        "你能查天气吗",
        "刮台风为什么会停课",
        "南方冬天总是这么湿冷",
    ],
)
def test_weather_in_general_is_no_lookup_and_asks_for_no_place(router, question):
    # Nothing to look up and no place: a wish, a remark or a question about weather in general goes to the LLM;
    # "which city?" is for a lookup that lacks its place.
    assert router.route(question, today=TODAY).route == "llm"


@pytest.mark.parametrize("question", ["明天冷吗", "外面冷不冷", "今天天气", "要带伞吗"])
def test_a_lookup_without_its_place_is_asked_for_it(router, question):
    assert router.route(question, today=TODAY).route == "clarify"
