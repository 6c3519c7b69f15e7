"""Route accuracy on the labelled dev set tests/data/queries.jsonl (docs/contracts.md: precision first)."""

import datetime as dt
import json
from collections import Counter
from pathlib import Path

import pytest

from hybrid_weather.router import HybridRouter

DEV_SET = Path(__file__).parent / "data" / "queries.jsonl"
CASES = [json.loads(line) for line in DEV_SET.read_text("utf-8").splitlines() if line.strip()]


@pytest.fixture(scope="module")
def router():
    return HybridRouter()


def _wrong(router, case):
    decision = router.route(case["query"], today=dt.date.fromisoformat(case["today"]))
    got = {"route": decision.route}
    want = {"route": case["route"]}
    if case["route"] == "rule":
        got.update(cities=decision.cities, dates=[d.isoformat() for d in decision.dates], aspect=decision.aspect)
        want.update(cities=case["cities"], dates=case["dates"], aspect=case["aspect"])
    return None if got == want else f"{case['query']!r}: want {want}, got {got} ({decision.reason})"


def test_dev_set_is_large_and_covers_every_category():
    categories = Counter(case["category"] for case in CASES)
    assert len(CASES) >= 700
    assert categories["open"] + categories["open2"] >= 100
    for category in (
        "standard",
        "order",
        "punctuation",
        "suffixes",
        "districts",
        "nicknames",
        "typos",
        "traditional",
        "dates",
        "ranges",
        "aspects",
        "multi",
        "world",
        "latin",
        "clarify",
        # real traffic: wrapped, colloquial and dialect, misheard, and the rest (issue 9)
        "wrapped",
        "dialect",
        "asr",
        "dates2",
        "holidays",
        "dayparts",
        "english",
        "corrections",
        "places2",
        "compare2",
        "open2",
        "distance",  # issue 16: the straight-line distance between two places, and its traps
        "sun",  # issue 16: sunrise, sunset and UV, and their traps
    ):
        assert categories[category] >= 5, category
    # The open-ended traps must mention a city and a weather word, or they prove nothing about precision.
    weather_traps = [
        c
        for c in CASES
        if c["category"] == "open"
        and any(w in c["query"] for w in ("天气", "下雨", "冷", "热", "空气", "雨", "雪", "度"))
    ]
    assert len(weather_traps) >= 40


#: The questions of the dev set known to be decided wrongly today, each with why. The test fails on any other
#: (a new mistake) and on one of these read right (then it leaves this list): a floor of 99 % would let
#: six new mistakes pass unseen.
KNOWN_MISSES = {
    # The mountain's name is also its district's: the gazetteer's district 泰安市泰山区 is read, where the
    # label asks for the city whose forecast point is the mountain's.
    "泰山明早几点日出": "district 泰山区 read, city 泰安市 labelled",
}


def test_the_dev_set_is_decided_right_but_for_its_known_misses(router):
    wrong = {case["query"]: why for case in CASES if (why := _wrong(router, case))}
    new = {query: why for query, why in wrong.items() if query not in KNOWN_MISSES}
    assert new == {}, f"{len(new)} questions newly decided wrongly:\n" + "\n".join(new.values())
    fixed = sorted(set(KNOWN_MISSES) - set(wrong))
    assert fixed == [], f"now decided right, take them out of KNOWN_MISSES: {fixed}"
    assert set(KNOWN_MISSES) <= {case["query"] for case in CASES}
    print(f"dev set: {len(CASES) - len(wrong)} of {len(CASES)} right ({1 - len(wrong) / len(CASES):.2%})")


def test_no_open_ended_trap_takes_the_rule_route(router):
    # A wrong rule answer is the worst outcome, so this holds with no tolerance at all.
    leaks = [
        c["query"]
        for c in CASES
        if c["route"] == "llm" and router.route(c["query"], today=dt.date.fromisoformat(c["today"])).route == "rule"
    ]
    assert leaks == []


def test_the_memo_gives_every_question_the_decision_a_fresh_parse_gives():
    memo = HybridRouter()
    questions = [(case["query"], dt.date.fromisoformat(case["today"])) for case in CASES]
    first = [memo.route(q, today=day) for q, day in questions]  # asked once: not kept
    second = [memo.route(q, today=day) for q, day in questions]  # asked again: kept
    parser = memo.parts.parser
    assert parser._alone.cache_info().currsize == len(set(questions))
    again = [memo.route(q, today=day) for q, day in questions]  # read from the memo
    assert parser._alone.cache_info().hits >= len(questions)
    fresh = [parser._decide_text(q, day) for q, day in questions]  # the same parser, bypassing the memo
    assert again == second == first == fresh


def test_a_question_asked_once_is_not_kept():
    # Most distinct questions come once: keeping each would push a kept one out for nothing.
    router = HybridRouter()
    router.route("北京明天会下雨吗", today=dt.date(2026, 11, 29))
    assert router.parts.parser._alone.cache_info().currsize == 0


def test_a_caller_cannot_change_what_the_memo_gives_the_next_caller():
    router = HybridRouter()
    day = dt.date(2026, 11, 29)
    router.route("北京和上海明天哪个冷", today=day)
    decision = router.route("北京和上海明天哪个冷", today=day)  # the second asking: kept in the memo
    decision.cities.append("广州市")
    decision.dates.clear()
    decision.places.clear()
    again = router.route("北京和上海明天哪个冷", today=day)
    assert again.cities == ["北京市", "上海市"] and again.dates == [dt.date(2026, 11, 30)] and len(again.places) == 2


def test_the_fast_copies_of_a_decision_keep_every_field():
    import dataclasses

    from hybrid_weather.router.understand import Decision

    values = {f.name: f"value of {f.name}" for f in dataclasses.fields(Decision)}
    values |= {"cities": ["a"], "dates": [dt.date(2026, 1, 1)], "places": ["p"]}
    original = Decision(**values)
    copy = original.with_own_lists()
    assert copy == original and copy.cities is not original.cities and copy.places is not original.places
    assert original.with_reason("another reason") == dataclasses.replace(original, reason="another reason")
