"""A generated corpus of weather questions whose right Decision is known by construction, and a trap
corpus of the same parts with open-ended content that must never get a rule answer.

Each question is composed from parts of every class the router reads: a wrapper (wake word, greeting,
politeness, particles, thanks), a place (city, province, county, nickname, world city, English or pinyin
name, area, town, district with its city), a date (relative and dialect words, weekdays, calendar and
numeric dates, month-relative days, ranges, named days, parts of the day) and an aspect phrase
(standard, colloquial, A-not-A, dialect). Seeded, so a run is repeatable.
"""

from __future__ import annotations

import datetime as dt
import json
import random
from dataclasses import dataclass
from importlib import resources

#: The corpus's today: a Wednesday, so this-week and next-week words both fall inside the horizon.
TODAY = dt.date(2026, 12, 2)


def _days(*offsets: int) -> tuple[dt.date, ...]:
    return tuple(TODAY + dt.timedelta(days=o) for o in offsets)


# (what is said, the canonical place the router must name)
PLACES = [
    ("北京", "北京市"),
    ("上海市", "上海市"),
    ("广州", "广州市"),
    ("深圳", "深圳市"),
    ("成都", "成都市"),
    ("杭州市", "杭州市"),
    ("重庆", "重庆市"),
    ("武汉", "武汉市"),
    ("西安", "西安市"),
    ("南京", "南京市"),
    ("长沙", "长沙市"),
    ("郑州", "郑州市"),
    ("沈阳", "沈阳市"),
    ("青岛", "青岛市"),
    ("大连", "大连市"),
    ("厦门", "厦门市"),
    ("昆明", "昆明市"),
    ("哈尔滨", "哈尔滨市"),
    ("乌鲁木齐", "乌鲁木齐市"),
    ("拉萨", "拉萨市"),
    ("海南", "海南省"),
    ("云南省", "云南省"),
    ("新疆", "新疆维吾尔自治区"),
    ("昆山", "苏州市昆山市"),
    ("义乌", "金华市义乌市"),
    ("阳朔", "桂林市阳朔县"),
    ("浦东", "上海市浦东新区"),
    ("北京海淀区", "北京市海淀区"),
    ("广州天河", "广州市天河区"),
    ("杭州西湖区", "杭州市西湖区"),
    ("魔都", "上海市"),
    ("帝都", "北京市"),
    ("鹏城", "深圳市"),
    ("羊城", "广州市"),
    ("蓉城", "成都市"),
    ("山城", "重庆市"),
    ("春城", "昆明市"),
    ("冰城", "哈尔滨市"),
    ("东京", "东京"),
    ("纽约", "纽约"),
    ("伦敦", "伦敦"),
    ("首尔", "首尔"),
    ("香港", "香港特别行政区"),
    ("澳门", "澳门特别行政区"),
    ("台北", "台北"),
    ("Shanghai", "上海市"),
    ("beijing", "北京市"),
    ("Harbin", "哈尔滨市"),
    ("urumqi", "乌鲁木齐市"),
    ("chengdu", "成都市"),
    ("Tokyo", "东京"),
    ("张江", "上海市浦东新区张江"),
    ("陆家嘴", "上海市浦东新区陆家嘴"),
    ("鼓浪屿", "厦门市思明区鼓浪屿"),
    ("五道口", "北京市海淀区五道口"),
    ("桐乡乌镇", "嘉兴市桐乡市乌镇镇"),  # 乌镇 alone is 桐乡's or 佳县's: which one is asked (test_townships.py)
    ("周庄", "周庄"),
    ("九份", "九份"),
    ("平遥古城", "晋中市平遥县"),
    ("黄山景区", "黄山市"),
    ("崇明岛", "上海市崇明区"),
    ("广州市区", "广州市"),
]

# (what is said, the days it means); the words a date may be
DATES = [
    ("今天", _days(0)),
    ("明天", _days(1)),
    ("后天", _days(2)),
    ("大后天", _days(3)),
    ("昨天", _days(-1)),
    ("今儿个", _days(0)),
    ("明儿", _days(1)),
    ("听日", _days(1)),
    ("后日", _days(2)),
    ("明朝", _days(1)),
    ("周五", _days(2)),
    ("星期六", _days(3)),
    ("礼拜天", _days(4)),
    ("这周五", _days(2)),
    ("下周一", _days(5)),
    ("下周三", _days(7)),
    ("12月5日", _days(3)),
    ("12月6号", _days(4)),
    ("12.8", _days(6)),
    ("12/9", _days(7)),
    ("5号", _days(3)),
    ("上个月28号", (dt.date(2026, 11, 28),)),
    ("3天后", _days(3)),
    ("三天后", _days(3)),
    ("今明两天", _days(0, 1)),
    ("明后天", _days(1, 2)),
    ("未来三天", _days(0, 1, 2)),
    ("这个周末", _days(3, 4)),
    ("周四到周六", _days(1, 2, 3)),
    ("从明天到周日", _days(1, 2, 3, 4)),
    ("12月3日至5日", _days(1, 2, 3)),
    ("今晚", _days(0)),
    ("明早", _days(1)),
    ("明天早上", _days(1)),
    ("后天下午", _days(2)),
    ("今天夜里", _days(0)),
    ("双十二", (dt.date(2026, 12, 12),)),
    ("大雪那天", (dt.date(2026, 12, 7),)),
    ("未来两三天", _days(0, 1, 2)),
    ("12-6", _days(4)),
    ("次日", _days(1)),
    ("前两天", _days(-2, -1)),
    ("下下周一", _days(12)),
    ("这周剩下几天", _days(0, 1, 2, 3, 4)),
]
# Dates said in English, for the English templates.
ENGLISH_DATES = [
    ("today", _days(0)),
    ("tomorrow", _days(1)),
    ("tonight", _days(0)),
    ("on friday", _days(2)),
    ("this weekend", _days(3, 4)),
    ("next monday", _days(5)),
    ("the day after tomorrow", _days(2)),
]

# aspect → phrases (Chinese), said after place and date
ASPECTS = {
    "weather": [
        "天气",
        "天气怎么样",
        "天气如何",
        "啥天气",
        "天儿咋样",
        "天气点样",
        "天气哪能",
        "天气咋个样",
        "的天气预报",
        "晴不晴",
        "出不出太阳",
    ],
    "temperature": ["多少度", "冷不冷", "热不热", "几度", "气温多少", "几多度", "冷唔冷", "冷伐", "最高气温多少"],
    "rain": ["会下雨吗", "下不下雨", "有雨吗", "会不会落雨", "落雨伐", "要带伞吗", "得不得下雨", "会唔会落雨"],
    "snow": ["会下雪吗", "下不下雪", "有雪吗", "落雪伐"],
    "wind": ["风大吗", "刮风吗", "风大不大", "刮不刮风", "几级风"],
    "humidity": ["湿度多少", "潮不潮", "湿度大吗"],
    "air": ["空气质量怎么样", "空气好不好", "有雾霾吗", "pm2.5多少"],
}
ENGLISH_ASPECTS = {
    "weather": ["weather", "weather forecast"],
    "temperature": ["temperature"],
    "rain": ["rain"],
    "snow": ["snow"],
    "wind": ["wind"],
}

PREFIXES = [
    "",
    "",
    "",
    "小度小度，",
    "嘿Siri ",
    "小爱同学 ",
    "你好，",
    "请问",
    "麻烦问下，",
    "求问",
    "哈喽 ",
    "亲，",
    "帮我查一下",
    "我想知道",
    "喂喂，",
    "老铁，",
    "@天气助手 ",
    "哎，",
]
SUFFIXES = ["", "", "", "？", "呀", "啊", "呢", "谢谢", "，谢谢啦", "哈哈哈", "😀", "～", "嘛", "!!"]

# Content only a model can handle; added to a weather question, it must send it to the LLM.
OPEN_ENDED = [
    "适合出去玩吗",
    "要穿什么衣服",
    "适不适合跑步",
    "帮我规划一下行程",
    "推荐几个景点",
    "为什么这么冷",
    "顺便讲个笑话",
    "然后帮我订张机票",
    "如果下雨怎么办",
    "要不要取消会议",
    "写一首诗",
    "能洗车吗",
    "航班会延误吗",
    "帮我提醒一下家人",
    "值得去吗",
    "对身体有什么影响",
    "用英文回答",
    "是什么原因",
    "路上会堵车吗",
    "股票会涨吗",
]


@dataclass(frozen=True, slots=True)
class Case:
    query: str
    city: str | None  #: None for a trap
    dates: tuple[dt.date, ...]
    aspect: str | None


def weather_corpus(count: int = 20_000, seed: int = 7) -> list[Case]:
    """COUNT plain weather questions with their expected place, days and aspect."""
    rng = random.Random(seed)
    cases = []
    while len(cases) < count:
        place, city = rng.choice(PLACES)
        if place.isascii() and rng.random() < 0.5:
            aspect = rng.choice(list(ENGLISH_ASPECTS))
            when, days = rng.choice(ENGLISH_DATES)
            phrase = rng.choice(ENGLISH_ASPECTS[aspect])
            query = rng.choice([f"{place} {phrase} {when}", f"{phrase} in {place} {when}", f"{when} {place} {phrase}"])
        else:
            aspect = rng.choice(list(ASPECTS))
            when, days = rng.choice(DATES)
            if aspect == "air" and (max(days) - TODAY).days > 6:
                continue  # beyond the air-quality forecast: a clarify by design, not a lookup
            phrase = rng.choice(ASPECTS[aspect])
            body = rng.choice([f"{place}{when}{phrase}", f"{when}{place}{phrase}", f"{place}{when}的{phrase}"])
            query = f"{rng.choice(PREFIXES)}{body}{rng.choice(SUFFIXES)}"
        cases.append(Case(query, city, tuple(sorted(days)), aspect))
    return cases


def trap_corpus(count: int = 5_000, seed: int = 11) -> list[Case]:
    """COUNT questions made of the same parts plus open-ended content: none may get a rule answer."""
    rng = random.Random(seed)
    cases = []
    for case in weather_corpus(count, seed):
        extra = rng.choice(OPEN_ENDED)
        query = rng.choice([f"{case.query}，{extra}", f"{extra}？{case.query}", f"{case.query}{extra}"])
        cases.append(Case(query, None, (), None))
    return cases


def distinct_cities(router, count: int, today: dt.date) -> list[str]:
    """COUNT prefecture-level city names the ROUTER reads as exactly one place each, at distinct coordinates
    (for bursts of questions about many places: one upstream request each)."""
    data = json.loads(resources.files("hybrid_weather.rules").joinpath("data/places.json").read_text("utf-8"))
    names, seen = [], set()
    columns = data["china"]["columns"]
    for row in data["china"]["rows"]:
        entry = dict(zip(columns, row, strict=True))
        if entry["level"] != 2 or not entry.get("short"):
            continue
        decision = router.route(f"{entry['short'][0]}今天天气", today=today)
        if decision.route != "rule" or len(decision.cities) != 1:
            continue
        where = (entry["lat"], entry["lon"])
        if where in seen:
            continue
        seen.add(where)
        names.append(entry["short"][0])
        if len(names) == count:
            return names
    raise ValueError(f"only {len(names)} distinct cities found, {count} asked for")
