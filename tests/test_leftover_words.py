"""Words beside a lookup (docs/reading.md): the inert ones are read past, the ones that change what is asked
send the question to the LLM. Measured both ways on tests/data/leftover/ (300 lookups that carry such words,
300 questions that mention the weather and ask something else), written by someone who had not read the
router; `bench_route.py --reading` prints the figures. Known misses are listed by name: any other is a failure."""

import datetime as dt
import json
from pathlib import Path

import pytest

from hybrid_weather.router import HybridRouter

from labels import same_city

TODAY = dt.date(2026, 12, 3)
CASES = [
    json.loads(line)
    for line in (Path(__file__).parent / "data" / "leftover" / "leftover.jsonl").read_text("utf-8").splitlines()
    if line.strip()
]
#: Questions labelled for the LLM that the rules answer: the first three by design (the past days a provider
#: keeps are lookups), the rest known mistakes.
KNOWN_TRAPS_BY_RULES = {
    "前天成都空气质量怎么样",
    "杭州昨天下了多少毫米雨",
    "昨天北京下雪了吗",
    "上海今天大雨，要不要请假",  # 假 repaired by its sound into a particle
    "每天早上7点给我播报一下北京天气",  # a daily reminder: 每天早上 is read as a date, so no action marker counts
    "我想在成都看雪，最近哪天有可能",
}
#: Lookups answered by rules with more places than asked: a landmark read as a second place beside its city.
KNOWN_WRONG_LOOKUPS = {
    "我在廊坊住，北京上班，廊坊明天空气怎么样",
    "乌鲁木齐周六风大不大，我和同事要去红山",
    "武汉东湖大后天会下雨吗",
    "合肥天气怎么样今天 我在滨湖这边上班",
    "西安钟楼今天AQI",
    "三亚大东海后天日出时间",
}


@pytest.fixture(scope="module")
def router():
    with HybridRouter(provider="demo", ledger="off") as router:
        yield router


def test_no_question_that_asks_something_else_is_answered_by_rules_but_the_known_ones(router):
    by_rules = {
        case["query"]
        for case in CASES
        if case["class"] == "trap" and router.route(case["query"], today=TODAY).route == "rule"
    }
    assert by_rules == KNOWN_TRAPS_BY_RULES


def test_every_rule_answer_to_a_lookup_is_right_but_the_known_ones(router):
    wrong, gazetteer = set(), router.parts.parser.reader.gazetteer
    for case in (case for case in CASES if case["class"] == "lookup"):
        decision = router.route(case["query"], today=TODAY)
        if decision.route != "rule":
            continue
        if (
            len(decision.places) != len(case["cities"])
            or not all(same_city(gazetteer, c, p) for c, p in zip(case["cities"], decision.places, strict=False))
            or [d.isoformat() for d in decision.dates] != case["dates"]
            or decision.aspect != case["aspect"]
        ):
            wrong.add(case["query"])
    assert wrong <= KNOWN_WRONG_LOOKUPS, wrong - KNOWN_WRONG_LOOKUPS


@pytest.mark.parametrize(
    "question, city",
    [
        ("杭州明天上班要带伞吗", "杭州市"),  # living and working
        ("我妈在上海住，这周末上海湿度怎么样", "上海市"),
        ("打开天气，看看漳州明天下不下雨", "漳州市"),  # an assistant's command
        ("海口明天降水多少毫米", "海口市"),  # a unit the answer gives anyway
        ("说实话，我就想知道宁波明天下不下雨", "宁波市"),  # a remark
    ],
)
def test_inert_words_beside_a_lookup_are_read_past(router, question, city):
    decision = router.route(question, today=TODAY)
    assert (decision.route, decision.cities) == ("rule", [city]), decision.reason


@pytest.mark.parametrize("question", ["北京暴雪，明天还要去上班吗", "明天要上学吗", "南京明孝陵明天人多吗"])
def test_words_that_change_what_is_asked_go_to_the_llm(router, question):
    assert router.route(question, today=TODAY).route == "llm"
