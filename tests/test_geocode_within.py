"""A township no list holds, said after where it lies (余杭区青禾街道, 杭州市青禾镇): the geocoder is asked, over the
wire, and its answer counts only inside the place the question wrote, by the geocoder's own record of where its
answer is (Open-Meteo's admin1..admin4, AMap's adcode); anything else leaves the clarify that says what was not
found, never the nearest real place (issue 51)."""

import pytest

from hybrid_weather.router import HybridRouter

from support import TODAY
from weather_router import ask, make_router


def open_meteo_result(name, admins, *, latitude=30.40, longitude=120.10, country="CN", feature="PPL", rid=1):
    return {
        "id": rid,
        "name": name,
        "latitude": latitude,
        "longitude": longitude,
        "feature_code": feature,
        "country_code": country,
        "timezone": "Asia/Shanghai",
        **{f"admin{level}": admin for level, admin in enumerate(admins, 1)},
    }


def amap_geocode(address, adcode, level, *, location="120.101,30.402"):
    return {"formatted_address": address, "adcode": adcode, "level": level, "location": location}


@pytest.mark.parametrize(
    ("question", "word", "parent"),
    [
        ("杭州市青禾镇明天天气", "青禾镇", "杭州市"),  # the city is where, not part of a made-up name
        ("杭州青禾镇明天会下雨吗", "青禾镇", "杭州市"),
        ("余杭区青禾街道明天天气", "青禾街道", "杭州市余杭区"),
        ("杭州市余杭区青禾街道明天天气", "青禾街道", "杭州市余杭区"),
        ("浙江省青禾乡后天天气", "青禾乡", "浙江省"),
    ],
)
def test_the_reading_names_the_township_and_where_it_lies(question, word, parent):
    with HybridRouter(provider="demo", ledger="off") as router:
        decision = router.route(question, today=TODAY)
    assert decision.route == "clarify" and decision.reason_code == "unknown_place"
    assert decision.unknown_place == word and decision.unknown_within.name == parent
    assert parent in decision.clarification and word in decision.clarification


def test_a_made_up_city_stays_one_name():
    # 新北京市: no county or city before a township's suffix, so the whole is the name not found (not 北京市).
    with HybridRouter(provider="demo", ledger="off") as router:
        decision = router.route("新北京市明天天气", today=TODAY)
    assert decision.unknown_place == "新北京市" and decision.unknown_within is None


def test_open_meteo_answers_the_township_inside_the_parent_and_not_its_namesakes(weather_server):
    weather_server.geocoding["青禾"] = [
        # A namesake elsewhere, ranked first by the geocoder (a bigger place), and a village of the stem.
        open_meteo_result("青禾街道", ["广东省", "广州市", "白云区"], latitude=23.2, longitude=113.3, feature="PPLA4"),
        open_meteo_result("青禾村", ["浙江省", "杭州市", "余杭区"], latitude=30.5, longitude=120.0, rid=2),
        open_meteo_result("青禾街道", ["浙江省", "杭州市", "余杭区"], latitude=30.41, longitude=120.12, rid=3),
    ]
    with make_router(weather_server.url) as router:
        answer = ask(router, "余杭区青禾街道明天天气")
    assert answer.route == "rule" and answer.decision.cities == ["杭州市余杭区青禾街道"]
    assert "青禾街道（杭州市余杭区）" in answer.text
    (forecast,) = weather_server.params["/v1/forecast"]
    assert (float(forecast["latitude"]), float(forecast["longitude"])) == pytest.approx((30.41, 120.12))
    (search,) = weather_server.params["/v1/search"]
    assert search["name"] == "青禾" and search["countryCode"] == "CN"  # the stem: 青禾镇 would not find 青禾


@pytest.mark.parametrize(
    "results",
    [
        [open_meteo_result("青禾镇", ["广东省", "广州市", "白云区"])],  # only a namesake in another province
        [open_meteo_result("青禾镇", ["浙江省", "宁波市", "余杭区"])],  # a county of the name, not this one
        [open_meteo_result("青禾村", ["浙江省", "杭州市", "余杭区"])],  # a village of the stem, not the town
        [open_meteo_result("青禾镇", ["余杭区"], country="TW")],  # another country's admin of the name
        [],
    ],
    ids=["another-province", "another-city", "a-village", "another-country", "none"],
)
def test_an_answer_outside_the_parent_leaves_the_clarify(weather_server, results):
    weather_server.geocoding["青禾"] = results
    with make_router(weather_server.url) as router:
        answer = ask(router, "杭州市余杭区青禾镇明天天气")
    assert answer.route == "clarify" and answer.decision.cities == []
    assert "杭州市余杭区" in answer.text and "青禾镇" in answer.text
    assert weather_server.requests["/v1/forecast"] == 0


def test_amap_answers_the_township_whose_adcode_lies_in_the_parent(weather_server):
    address = "浙江省杭州市余杭区青禾街道"
    weather_server.amap_geocodes[address] = [amap_geocode("浙江省杭州市余杭区青禾街道", "330110", "乡镇")]
    with make_router(weather_server.url, provider="amap", amap_key="good-key") as router:
        answer = ask(router, "余杭区青禾街道明天天气")
    assert answer.route == "rule" and answer.decision.cities == ["杭州市余杭区青禾街道"]
    (search,) = weather_server.params["/v3/geocode/geo"]
    assert search["city"] == "330110" and search["address"] == address
    assert weather_server.params["/v3/weather/weatherInfo"][0]["city"] == "330110"


@pytest.mark.parametrize(
    "geocodes",
    [
        [amap_geocode("浙江省宁波市海曙区青禾街道", "330203", "乡镇")],  # another county's
        [amap_geocode("浙江省杭州市余杭区", "330110", "区县")],  # AMap fell back to the county
        [amap_geocode("浙江省杭州市余杭区良渚街道", "330110", "乡镇")],  # another township of the county
        [amap_geocode("浙江省杭州市余杭区青禾街道", "330110", "乡镇", location="garbage")],
        [],
    ],
    ids=["another-county", "the-county-itself", "another-name", "no-location", "none"],
)
def test_an_amap_answer_that_does_not_prove_the_place_leaves_the_clarify(weather_server, geocodes):
    weather_server.amap_geocodes["浙江省杭州市余杭区青禾街道"] = geocodes
    with make_router(weather_server.url, provider="amap", amap_key="good-key") as router:
        answer = ask(router, "余杭区青禾街道明天天气")
    assert answer.route == "clarify" and "青禾街道" in answer.text
    assert weather_server.requests["/v3/weather/weatherInfo"] == 0


def test_amap_names_a_place_no_list_holds_only_when_one_county_has_it(weather_server):
    weather_server.amap_geocodes["落霞坪"] = [amap_geocode("安徽省黄山市黄山区落霞坪", "341003", "兴趣点")]
    weather_server.amap_geocodes["鹿鸣坳"] = [
        amap_geocode("湖北省恩施土家族苗族自治州利川市鹿鸣坳", "422802", "村庄"),
        amap_geocode("四川省广元市旺苍县鹿鸣坳", "510821", "村庄", location="106.3,32.2"),
    ]
    with make_router(weather_server.url, provider="amap", amap_key="good-key") as router:
        found = ask(router, "落霞坪明天天气")
        shared = ask(router, "鹿鸣坳明天天气")
    assert found.route == "rule" and found.decision.cities == ["落霞坪"]
    assert weather_server.params["/v3/weather/weatherInfo"][0]["city"] == "341003"
    assert shared.route == "clarify"  # two counties: neither is proved
