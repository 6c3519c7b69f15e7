"""Words that act on other words (issue 50, Operators): a retraction takes back what it names, a correction
replaces what came before it, a replacement swaps one place or day, and a day said of another day is one
day. Each rule with its own cases; none of them are hold-out questions (tests/test_holdout.py)."""

import datetime as dt

import pytest

from hybrid_weather.router import HybridRouter

TODAY = dt.date(2026, 12, 7)  # a Monday


@pytest.fixture(scope="module")
def route():
    router = HybridRouter(provider="demo")
    yield lambda text: router.route(text, today=TODAY)
    router.close()


def _days(*offsets: int) -> list[dt.date]:
    return [TODAY + dt.timedelta(days=n) for n in offsets]


@pytest.mark.parametrize(
    ("question", "cities", "dates"),
    [
        # taken back after they were said, where others stand
        ("广州、深圳、珠海明天天气，珠海就不用了", ["广州市", "深圳市"], _days(1)),
        ("厦门福州泉州后天下雨吗，泉州不用查", ["厦门市", "福州市"], _days(2)),
        ("西安、咸阳、宝鸡明天多少度，咸阳宝鸡都不要了", ["西安市"], _days(1)),
        ("明天后天大后天南昌天气，后天不用看", ["南昌市"], _days(1, 3)),
        ("明天到周四长春天气，周三不需要", ["长春市"], _days(1, 3)),
        # taken back before they are said
        ("合肥芜湖蚌埠 后天气温 去掉蚌埠", ["合肥市", "芜湖市"], _days(2)),
        ("这周二到周四太原天气，跳过周三", ["太原市"], _days(1, 3)),
        # a correction replaces what came before it, of the same kind
        ("贵阳后天天气 不对 遵义后天天气", ["遵义市"], _days(2)),
        ("杭州周三，不对，周四会下雨吗", ["杭州市"], _days(3)),
        ("兰州明天，我说错了，是银川明天冷吗", ["银川市"], _days(1)),
        # a replacement swaps only the one before it
        ("济南和淄博明天天气，淄博换成泰安", ["济南市", "泰安市"], _days(1)),
    ],
)
def test_what_is_taken_back_or_corrected_is_not_answered(route, question, cities, dates):
    decision = route(question)
    assert (decision.route, decision.cities, decision.dates) == ("rule", cities, dates), decision.reason


@pytest.mark.parametrize(
    "question",
    [
        "明天天气怎么样，去掉",  # a retraction that names nothing: the question is not read
        "上海明天天气，删掉",
    ],
)
def test_a_retraction_that_takes_back_nothing_is_not_read(route, question):
    decision = route(question)
    assert decision.route == "llm", decision.reason


@pytest.mark.parametrize("question", ["上海明天不用带伞吧", "哈尔滨后天应该不用带伞吧"])
def test_no_need_said_of_the_only_place_and_day_takes_nothing_back(route, question):
    decision = route(question)
    assert decision.route == "rule" and len(decision.cities) == 1 and len(decision.dates) == 1, decision.reason


@pytest.mark.parametrize(
    ("question", "day"),
    [
        ("四周前的今天成都天气", TODAY - dt.timedelta(weeks=4)),
        ("一周后的今天重庆天气", TODAY + dt.timedelta(weeks=1)),
        ("两个月前的今天天津天气", dt.date(2026, 10, 7)),
        ("两周前的周四南京天气", dt.date(2026, 11, 26)),
        ("前天的后天武汉天气", TODAY),
        ("周二的明天长沙下雨吗", dt.date(2026, 12, 9)),
    ],
)
def test_a_day_said_of_another_day_is_one_day(route, question, day):
    decision = route(question)
    assert decision.route == "rule" and decision.dates == [day], decision.reason


@pytest.mark.parametrize(
    ("question", "city"),
    [
        ("辽宁大连明天天气", "大连市"),
        ("吉林长春明天冷吗", "长春市"),  # 吉林 is a province and a city: the path says which
        ("慈溪市 宁波 浙江 后天下雨吗", "宁波市慈溪市"),
        ("昆山（苏州）明天天气", "苏州市昆山市"),
        ("大连，辽宁省的，明天刮风吗", "大连市"),
    ],
)
def test_a_place_inside_a_place_is_one_place(route, question, city):
    decision = route(question)
    assert decision.route == "rule" and decision.cities == [city], decision.reason


@pytest.mark.parametrize("question", ["山东省苏州市明天天气", "广西省长沙市后天下雨吗"])
def test_a_path_whose_parts_disagree_is_asked_about(route, question):
    decision = route(question)
    assert decision.route == "clarify" and decision.cities == [], decision.reason


@pytest.mark.parametrize(
    ("question", "cities"),
    [("北京上海明天天气", ["北京市", "上海市"]), ("天津重庆明天哪个冷", ["天津市", "重庆市"])],
)
def test_places_of_one_level_said_together_are_a_list(route, question, cities):
    assert route(question).cities == cities


#: Every province's capital, as the atlas has it: what capital_of must find for each.
CAPITALS = {
    "河北省": "石家庄市", "山西省": "太原市", "内蒙古自治区": "呼和浩特市", "辽宁省": "沈阳市", "吉林省": "长春市",
    "黑龙江省": "哈尔滨市", "江苏省": "南京市", "浙江省": "杭州市", "安徽省": "合肥市", "福建省": "福州市",
    "江西省": "南昌市", "山东省": "济南市", "河南省": "郑州市", "湖北省": "武汉市", "湖南省": "长沙市",
    "广东省": "广州市", "广西壮族自治区": "南宁市", "海南省": "海口市", "四川省": "成都市", "贵州省": "贵阳市",
    "云南省": "昆明市", "西藏自治区": "拉萨市", "陕西省": "西安市", "甘肃省": "兰州市", "青海省": "西宁市",
    "宁夏回族自治区": "银川市", "新疆维吾尔自治区": "乌鲁木齐市",
}  # fmt: skip


def test_every_province_has_its_capital():
    router = HybridRouter(provider="demo")
    gazetteer = router.parts.parser.reader.gazetteer
    found = {name: gazetteer.capital_of(gazetteer.units_named(name)[0]) for name in CAPITALS}
    router.close()
    assert {name: place.name if place else None for name, place in found.items()} == CAPITALS


@pytest.mark.parametrize(
    ("question", "cities"),
    [
        ("四川的省会后天下雨吗", ["成都市"]),
        ("宁夏首府明天冷不冷", ["银川市"]),
        ("山东省会城市明天天气", ["济南市"]),
        ("湖北省会和河南省会后天哪个热", ["武汉市", "郑州市"]),
    ],
)
def test_a_provinces_capital_is_its_capital_city(route, question, cities):
    decision = route(question)
    assert decision.route == "rule" and decision.cities == cities, decision.reason


@pytest.mark.parametrize("question", ["上海的省会明天天气", "我们公司首府明天天气"])
def test_a_capital_of_no_province_is_not_read(route, question):
    assert route(question).route != "rule"


@pytest.mark.parametrize(
    ("question", "first", "last"),
    [
        ("上周二到周四沈阳天气", dt.date(2026, 12, 1), dt.date(2026, 12, 3)),  # the range stays in last week
        ("上周六到周一长沙天气", dt.date(2026, 12, 5), dt.date(2026, 12, 7)),
        ("下周的前三天青岛天气", dt.date(2026, 12, 14), dt.date(2026, 12, 16)),
        ("下周最后两天大连天气", dt.date(2026, 12, 19), dt.date(2026, 12, 20)),
        ("这周头两天南宁天气", dt.date(2026, 12, 7), dt.date(2026, 12, 8)),
    ],
)
def test_counted_days_and_ranges_keep_their_period(route, question, first, last):
    decision = route(question)
    assert decision.route == "rule", decision.reason
    assert decision.dates == [first + dt.timedelta(days=n) for n in range((last - first).days + 1)]


@pytest.mark.parametrize(
    ("question", "wanted"),
    [
        ("我要听稻香", "llm"),  # a song asked with 我要听, not only 想听
        ("周末干啥好呢", "llm"),  # 干 in 干啥 is no dry weather
        ("晚上干什么", "llm"),
        ("微博热搜是什么", "llm"),  # 热 inside another word is no heat
        ("播放后天的天气", "clarify"),  # a speaker asked to play the forecast: which place?
        ("我要听天气情况", "clarify"),
        ("播放好天气", "llm"),  # a song whose title ends in 天气
        ("端午节是哪天", "llm"),  # which day a holiday falls on
        ("重庆后天天气是什么样", "rule"),
    ],
)
def test_words_of_the_weather_in_another_sense(route, question, wanted):
    decision = route(question)
    assert decision.route == wanted, decision.reason


@pytest.mark.parametrize("question", ["南京明珠明天天气", "张家界峡谷明天下雨吗", "西湖明珠明天天气"])
def test_an_everyday_word_is_not_repaired_into_a_word_of_the_weather(route, question):
    decision = route(question)
    assert "sound-alike" not in decision.reason, decision.reason


@pytest.mark.parametrize(("question", "aspect"), [("成都明天下鱼吗", "rain"), ("北京后天天七怎么样", "weather")])
def test_a_slip_that_is_no_word_is_still_repaired(route, question, aspect):
    decision = route(question)
    assert decision.route == "rule" and decision.aspect == aspect, decision.reason
