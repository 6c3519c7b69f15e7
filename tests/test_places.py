"""One test per place rule: nicknames, names and suffixes, hierarchy, ambiguity, typos, world, Latin."""

import datetime as dt

import pytest

from hybrid_weather.router import HybridRouter

TODAY = dt.date(2026, 11, 29)


@pytest.fixture(scope="module")
def router():
    return HybridRouter()


def cities(router, text):
    decision = router.route(text, today=TODAY)
    assert decision.route == "rule", decision.reason
    return decision.cities


@pytest.mark.parametrize(
    "nickname,city",
    [
        ("魔都", "上海市"),
        ("帝都", "北京市"),
        ("羊城", "广州市"),
        ("鹏城", "深圳市"),
        ("蓉城", "成都市"),
        ("春城", "昆明市"),
        ("冰城", "哈尔滨市"),
        ("泉城", "济南市"),
        ("星城", "长沙市"),
        ("金陵", "南京市"),
        ("鹭岛", "厦门市"),
        ("杭城", "杭州市"),
        ("申城", "上海市"),
        ("沪", "上海市"),
        ("京城", "北京市"),
        ("津门", "天津市"),
        ("雾都", "重庆市"),
    ],
)
def test_nicknames(router, nickname, city):
    assert cities(router, f"{nickname}明天天气") == [city]


@pytest.mark.parametrize("nickname,city", [("江城", "武汉市"), ("榕城", "福州市"), ("山城", "重庆市")])
def test_nickname_table_wins_over_a_district_of_that_name(router, nickname, city):
    # 江城区, 榕城区 and 山城区 are real districts elsewhere; the nickname is what people mean.
    assert cities(router, f"{nickname}明天天气") == [city]


@pytest.mark.parametrize("nickname", ["花城", "鹿城", "车城", "龙城", "油城"])
def test_ambiguous_nicknames_ask_which(router, nickname):
    decision = router.route(f"{nickname}明天天气", today=TODAY)
    assert decision.route == "clarify"
    assert nickname in decision.clarification


@pytest.mark.parametrize(
    "text,city",
    [
        ("上海", "上海市"),
        ("上海市", "上海市"),
        ("广东省广州市", "广州市"),
        ("广东广州", "广州市"),
        ("深圳市南山区", "深圳市南山区"),
        ("上海浦东新区", "上海市浦东新区"),
        ("浦东", "上海市浦东新区"),
        ("北京朝阳", "北京市朝阳区"),
        ("朝阳", "朝阳市"),
        ("吉林市", "吉林市"),
        ("吉林省", "吉林省"),
        ("吉林", "吉林市"),
        ("延边", "延边朝鲜族自治州"),
        ("香港", "香港特别行政区"),
    ],
)
def test_names_suffixes_and_hierarchy(router, text, city):
    assert cities(router, f"{text}今天天气") == [city]


def test_admin_changes_since_2017(router):
    assert cities(router, "莱芜明天天气") == ["济南市莱芜区"]
    assert cities(router, "那曲明天天气") == ["那曲市"]


@pytest.mark.parametrize(
    "typo,city",
    [
        ("杭洲", "杭州市"),
        ("成督", "成都市"),
        ("苏洲", "苏州市"),
        ("武汗", "武汉市"),
        ("沈杨", "沈阳市"),
        ("广洲", "广州市"),
        ("深镇", "深圳市"),
        ("西按", "西安市"),
    ],
)
def test_homophone_typos_are_repaired_in_place_position(router, typo, city):
    assert cities(router, f"{typo}明天天气") == [city]


def test_typo_repair_needs_a_weather_question(router):
    # 吃什么 sounds a little like a city name; outside a weather question it must not become one.
    assert router.route("今天吃什么", today=TODAY).route == "llm"


def test_a_place_the_gazetteer_lacks_is_a_clarify(router):
    decision = router.route("纳尼亚明天天气", today=TODAY)
    assert decision.route == "clarify" and "纳尼亚" in decision.clarification


def test_a_district_name_shared_by_two_cities_asks_which(router):
    decision = router.route("南山区明天天气", today=TODAY)
    assert decision.route == "clarify"
    assert "深圳市南山区" in decision.clarification and "鹤岗市南山区" in decision.clarification


def test_several_places_in_order(router):
    assert cities(router, "北京上海广州三城明天天气") == ["北京市", "上海市", "广州市"]
    assert cities(router, "北京和上海明天哪个冷") == ["北京市", "上海市"]


def test_more_places_than_the_limit_ask_to_split(router):
    decision = router.route("北京上海广州深圳杭州成都明天天气", today=TODAY)
    assert decision.route == "clarify" and "5" in decision.clarification


@pytest.mark.parametrize(
    "text,city",
    [
        ("东京", "东京"),
        ("纽约", "纽约"),
        ("伦敦", "伦敦"),
        ("Tokyo", "东京"),
        ("new york", "纽约"),
        ("Shanghai", "上海市"),
        ("shenzhen", "深圳市"),
        ("hong kong", "香港特别行政区"),
        ("Xi'an", "西安市"),
    ],
)
def test_world_cities_and_latin_input_resolve_to_chinese_names(router, text, city):
    assert cities(router, f"{text} weather") == [city]


def _after_three_cities(router):
    from hybrid_weather.router import Session

    session = Session()
    for text in ("北京明天天气", "上海明天天气", "广州明天天气"):
        decision = router.route(text, today=TODAY, session=session)
        session.remember(text, "", decision)
    return session


@pytest.mark.parametrize(
    "text,cities",
    [
        # 周三 holds the character 三: the count must come from the words 两个/三个/几个, never a character search.
        ("这两个城市周三哪个更热", ["上海市", "广州市"]),
        ("这两个城市哪个更热", ["上海市", "广州市"]),
        ("这三个城市周三哪个更热", ["北京市", "上海市", "广州市"]),
        ("这几个城市哪个最冷", ["北京市", "上海市", "广州市"]),
        ("哪个更热", ["上海市", "广州市"]),
    ],
)
def test_follow_up_place_count_comes_from_the_count_word(router, text, cities):
    decision = router.route(text, today=TODAY, session=_after_three_cities(router))
    assert decision.route == "rule" and decision.compare and decision.cities == cities, decision.reason


@pytest.mark.parametrize(
    "typo,city",
    [("shangahi", "上海市"), ("bejing", "北京市"), ("hangzhouu", "杭州市"), ("gaungzhou", "广州市"),
     ("chongqinn", "重庆市"), ("shijazhuang", "石家庄市"), ("huhehaote", "呼和浩特市")],
)  # fmt: skip
def test_misspelled_latin_names_are_repaired(router, typo, city):
    assert router.parts.parser.reader.gazetteer.repair_latin(typo).name == city


def test_a_latin_repair_looks_at_every_name_within_reach():
    # Only names whose length is within the edit limit are scanned: a name an edit or two away is always
    # among them, whichever edits they are.
    import random

    from rapidfuzz.distance import OSA

    from hybrid_weather.rules import Gazetteer

    gazetteer = Gazetteer()
    keys = sorted(gazetteer._latin)
    rng = random.Random(3)
    reached = 0
    for _ in range(500):
        typo = list(rng.choice(keys))
        for _ in range(rng.randint(1, 2)):
            at = rng.randrange(len(typo) + 1)
            edit = rng.choice(["insert", "delete", "replace", "swap"])
            if edit == "insert":
                typo.insert(at, rng.choice("aeiounghz"))
            elif edit == "delete" and at < len(typo):
                del typo[at]
            elif edit == "replace" and at < len(typo):
                typo[at] = rng.choice("aeiounghz")
            elif edit == "swap" and at + 1 < len(typo):
                typo[at], typo[at + 1] = typo[at + 1], typo[at]
        text = "".join(typo)
        for limit in (1, 2):
            within = {k for k in keys if OSA.distance(text, k) <= limit}
            reached += bool(within)
            assert within <= set(gazetteer._latin_near(len(text), limit)), (text, limit)
    assert reached > 500  # most typos are within reach of their name: the check above is not empty


@pytest.mark.parametrize("first", ["广州明天会下雨吗", "广州后天冷不冷", "广州周六风大吗"])
@pytest.mark.parametrize("follow_up", ["深圳也是吗", "深圳也一样吗", "深圳同样吗", "那深圳呢", "深圳也{aspect}吗"])
def test_a_place_asked_as_also_asks_the_last_question_again(router, first, follow_up):
    # 也, 一样, 同样 make a question about a place alone a follow-up, as 呢 does: the same days and question.
    # With its own question (深圳也冷吗) it keeps the days only.
    from hybrid_weather.router import Session

    session = Session()
    asked = router.route(first, today=TODAY, session=session)
    session.remember(first, "", asked)
    word = {"rain": "下雨", "temperature": "冷", "wind": "刮风"}[asked.aspect]
    decision = router.route(follow_up.format(aspect=word), today=TODAY, session=session)
    assert (decision.route, decision.cities, decision.dates, decision.aspect) == (
        "rule", ["深圳市"], asked.dates, asked.aspect
    ), decision.reason  # fmt: skip


def test_a_date_right_after_a_place_that_ends_as_a_date_begins(router):
    # 昆明后日 was read as 昆 and 明后 and then, cut back to the place, as 昆明 and 后 (no date): the date after
    # the place was read again only as far as the first span reached (明后), so 后日, 后儿, 后儿个 were lost
    # (后日 was answered only through a sound-alike repair to the traditional 後日). Every place whose name
    # ends with a character a date word starts with, before every Han day word: that place, those days.
    import itertools

    from hybrid_weather.rules.dates import _OFFSETS, _RANGES, find_dates

    horizon = TODAY + dt.timedelta(days=router.parts.weather.provider.horizon.days_ahead)
    # Not those that reach past the provider's horizon (未来一个月): their answer is a clarify that says so.
    words = [w for w in (*_OFFSETS, *_RANGES) if not w.isascii() and max(find_dates(w, TODAY)[0].dates) <= horizon]
    starts = {w[0] for w in words}
    gazetteer = router.parts.parser.reader.gazetteer
    places = []
    for name in gazetteer.words():
        match = gazetteer.lookup(name)
        if match is not None and not match.ambiguous and len(name) >= 2 and name[-1] in starts:
            places.append((name, match.candidates[0].name))
    assert len(places) >= 20 and ("昆明", "昆明市") in places
    wrong = []
    for (name, city), word in itertools.product(places, words):
        query = f"{name}{word}会下雨吗"
        decision = router.route(query, today=TODAY)
        expected = sorted({day for span in find_dates(word, TODAY) for day in span.dates})
        if (decision.route, [p.name for p in decision.places], decision.dates) != ("rule", [city], expected):
            wrong.append(f"{query}: {decision.reason}")
    assert wrong == []


def test_the_short_name_of_several_places_asks_about_each(router):
    # 北上广深明天天气, 江浙沪明天会下雨吗, 京津冀明天空气质量 asked for a place called 北上广深 (or went to the LLM):
    # the usual short names of several places at once (rules/data/aliases.json 'groups') are read as those
    # places, in any question form; a region without a fixed list (长三角) is no group.
    import itertools

    groups = {"北上广深": ["北京市", "上海市", "广州市", "深圳市"], "江浙沪": ["江苏省", "浙江省", "上海市"],
              "京津冀": ["北京市", "天津市", "河北省"], "东三省": ["黑龙江省", "吉林省", "辽宁省"],
              "港澳": ["香港特别行政区", "澳门特别行政区"], "川渝": ["四川省", "重庆市"]}  # fmt: skip
    forms = {"{}明天天气": (None, "weather"), "{}明天会下雨吗": (None, "rain"),
             "明天{}哪个最热": ("hot", "temperature"), "请问{}后天冷不冷": (None, "temperature")}  # fmt: skip
    for (word, cities), (form, (compare, aspect)) in itertools.product(groups.items(), forms.items()):
        decision = router.route(form.format(word), today=TODAY)
        assert (decision.route, decision.cities, decision.aspect, decision.compare) == (
            "rule", cities, aspect, compare,
        ), (form.format(word), decision.reason)  # fmt: skip
    assert router.route("长三角明天天气", today=TODAY).route != "rule"
    assert router.route("北上广深明天适合出游吗", today=TODAY).route == "llm"


def test_a_region_is_asked_about_not_the_district_that_shares_its_name(router):
    # 江南明天下雪吗 was answered for 南宁市江南区 (it does not snow in Nanning), 中原 for Zhengzhou's 中原区, 河西
    # for Tianjin's 河西区: region names before they are a district's short name (rules/data/aliases.json
    # 'regions'). Alone they are a clarify (a region's weather differs from place to place), never sent to a
    # geocoder; beside their city the district is meant; with its suffix, the district.
    import itertools

    forms = ["{}明天天气", "{}明天会下雪吗", "请问{}后天冷不冷", "北京和{}明天天气"]
    # 南方 was 'repaired' to 廊坊 (nan fang, lang fang), 大湾区 to 台湾 and 南部 read as 南部县; 长三角 and 全国
    # were places not found.
    regions = ["江南", "中原", "河西", "北疆", "华南", "东北", "岭南", "南方", "大湾区", "南部", "长三角", "全国"]
    for region, form in itertools.product(regions, forms):
        decision = router.route(form.format(region), today=TODAY)
        assert (decision.route, decision.reason) == ("clarify", f"clarify: a region, not a place: {region}"), (
            form.format(region)
        )
        assert decision.unknown_place is None
    for said, city in [("南宁江南明天天气", "南宁市江南区"), ("郑州中原明天冷吗", "郑州市中原区"),
                       ("天津河西明天下雨吗", "天津市河西区"), ("江南区明天天气", "南宁市江南区"),
                       ("南充南部明天冷吗", "南充市南部县"), ("南部县明天冷吗", "南充市南部县")]:  # fmt: skip
        assert router.route(said, today=TODAY).cities == [city], said


def test_the_pinyin_initials_chat_writes_for_big_cities(router):
    # bj明天天气, sh天气, hrb会下雪吗 were places not found. The initials people type for big cities name them
    # (rules/data/aliases.json 'latin'), alone, beside Han words, in English and with another place; sz is
    # 深圳 or 苏州, and the user is asked which. Units and slang that look like initials are not places.
    import itertools

    initials = {"bj": "北京市", "sh": "上海市", "gz": "广州市", "hz": "杭州市", "cd": "成都市", "cq": "重庆市",
                "sjz": "石家庄市", "hrb": "哈尔滨市"}  # fmt: skip
    forms = ["{}明天天气", "{}今天冷不冷", "请问{}后天会下雨吗", "{} weather tomorrow", "天津和{}明天哪个冷"]
    for (said, city), form in itertools.product(initials.items(), forms):
        decision = router.route(form.format(said), today=TODAY)
        assert decision.route == "rule" and city in decision.cities, (form.format(said), decision.reason)
    for form in forms[:4]:
        decision = router.route(form.format("sz"), today=TODAY)
        assert decision.reason == "clarify: ambiguous place: sz", (form.format("sz"), decision.reason)
    assert router.route("北京到上海多少km", today=TODAY).cities == ["北京市", "上海市"]  # km is no city
    assert router.route("nb明天天气", today=TODAY).route != "rule"
