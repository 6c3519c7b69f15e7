"""One test per date form (today is Sunday 2026-11-29 throughout)."""

import datetime as dt
import itertools
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hybrid_weather.rules import dates
from hybrid_weather.rules.dates import date_words, find_dates, parse_number
from hybrid_weather.rules.normalize import normalize

TODAY = dt.date(2026, 11, 29)  # a Sunday


def days(*offsets):
    return [TODAY + dt.timedelta(days=o) for o in offsets]


def parse(text, today=TODAY):
    return sorted({d for span in find_dates(text, today) for d in span.dates})


@pytest.mark.parametrize(
    "text,offsets",
    [
        ("今天", [0]),
        ("今日", [0]),
        ("今儿", [0]),
        ("现在", [0]),
        ("今早", [0]),
        ("今晚", [0]),
        ("今天下午", [0]),
        ("明天", [1]),
        ("明日", [1]),
        ("明儿", [1]),
        ("明早", [1]),
        ("明晚", [1]),
        ("后天", [2]),
        ("大后天", [3]),
        ("昨天", [-1]),
        ("前天", [-2]),
        ("tomorrow", [1]),
        ("today", [0]),
        ("mingtian", [1]),
        ("beijing tmr weather", [1]),
        ("weather tmrw", [1]),
        ("tdy", [0]),
        ("cold tonite?", [0]),
        ("一会儿", [0]),
        ("待会", [0]),
        ("刚才", [0]),
    ],
)
def test_relative_words(text, offsets):
    assert parse(text) == days(*offsets)


@pytest.mark.parametrize(
    "text,offsets",
    [
        ("周三", [3]),
        ("星期五", [5]),
        ("礼拜六", [6]),
        ("周日", [0]),
        ("星期天", [0]),
        ("周一", [1]),
        ("这周三", [-4]),
        ("本周五", [-2]),
        ("下周三", [3]),
        ("下星期二", [2]),
        ("下礼拜一", [1]),
        ("上周五", [-9]),
    ],
)
def test_weekdays_mean_the_next_occurrence_unless_prefixed(text, offsets):
    assert parse(text) == days(*offsets)


@pytest.mark.parametrize(
    "text,expected",
    [
        ("12月3日", dt.date(2026, 12, 3)),
        ("12月3号", dt.date(2026, 12, 3)),
        ("十二月五日", dt.date(2026, 12, 5)),
        ("1月3日", dt.date(2027, 1, 3)),  # nearest such day: next January, not last
        ("11月20日", dt.date(2026, 11, 20)),
        ("3号", dt.date(2026, 12, 3)),  # past this month → next month
        ("30号", dt.date(2026, 11, 30)),
        ("2026-12-05", dt.date(2026, 12, 5)),
        ("2026/12/05", dt.date(2026, 12, 5)),
        ("2026年12月5日", dt.date(2026, 12, 5)),
    ],
)
def test_calendar_dates(text, expected):
    assert parse(text) == [expected]


@pytest.mark.parametrize(
    "text,offsets",
    [
        ("三天后", [3]),
        ("3天后", [3]),
        ("十天以后", [10]),
        ("两天之后", [2]),
        ("二十一天后", [21]),
    ],
)
def test_n_days_later_with_chinese_numerals(text, offsets):
    assert parse(text) == days(*offsets)


@pytest.mark.parametrize(
    "text,offsets",
    [
        ("今明两天", [0, 1]),
        ("明后天", [1, 2]),
        ("未来三天", [0, 1, 2]),
        ("接下来5天", [0, 1, 2, 3, 4]),
        ("这几天", [0, 1, 2]),
        ("这两天", [0, 1]),
        ("周末", [0]),
        ("下周末", [6, 7]),
        ("下周", [1, 2, 3, 4, 5, 6, 7]),
        ("未来一周", [0, 1, 2, 3, 4, 5, 6]),
        ("今天和明天", [0, 1]),
        # The near term without a count (北京近期天气 went to the LLM): the few days of 这几天.
        ("近期", [0, 1, 2]),
        ("最近", [0, 1, 2]),
        ("最近的", [0, 1, 2]),
        ("近日", [0, 1, 2]),
        ("这阵子", [0, 1, 2]),
        ("这段时间", [0, 1, 2]),
        ("最近三天", [0, 1, 2]),
        ("最近一周", [0, 1, 2, 3, 4, 5, 6]),
        ("过两天", [2, 3]),
        ("过几天", [2, 3, 4]),
        ("未来半个月", list(range(15))),
    ],
)
def test_ranges_give_every_day(text, offsets):
    assert parse(text) == days(*offsets)


def test_a_bare_count_of_days_before_the_weather_is_the_days_ahead():
    # 北京三天天气, 7天天气预报, 一周天气, 三天内会下雨吗 (how weather apps say it) went to the LLM over 三, 7,
    # 一周: a count of days or a week with nothing before it is the days ahead where the weather (天气,
    # 预报) follows it, or 内 (within). Every count, unit and ending; and where it is not (5日 is a day of
    # the month, 三天后 a day three days on, 下了三天雨 no date).
    import itertools

    counts = {"两": 2, "三": 3, "3": 3, "七": 7, "7": 7, "十": 10, "15": 15}
    endings = ["天气", "的天气", "的天气预报", "预报", "内", "之内", "以内"]
    for (said, n), lead, ending in itertools.product(counts.items(), ["", "后", "头"], endings):
        text = f"{lead}{said}天{ending}"
        (span,) = find_dates(text, TODAY)
        assert list(span.dates) == days(*range(n)), text
        assert text[span.start : span.end] in (f"{lead}{said}天", f"{lead}{said}天{ending}"), text
    for week, ending in itertools.product(["一周", "1周", "一个星期", "一礼拜"], endings):
        assert parse(week + ending) == days(*range(7)), week + ending
    for later, offset in [("一周后", 7), ("两周后", 14), ("一个星期以后", 7), ("三天后", 3)]:
        assert parse(later) == days(offset), later
    assert parse("5日天气") == [dt.date(2026, 12, 5)] and parse("三日天气") == [dt.date(2026, 12, 3)]
    assert find_dates("下了三天雨", TODAY) == [] and find_dates("三天两头", TODAY) == []


def test_weekdays_said_together_are_days_of_one_week():
    # On a Sunday (2026-11-29), 周六周日 was the coming Saturday and today: each weekday alone is the next of
    # its name, today included. Said one after another in the week's order, a later one with no 这 or 下 of
    # its own is the first of its name after the day before it. Every join and spelling; each on its own,
    # an explicit prefix and the week's order reversed keep their own day.
    sunday = dt.date(2026, 11, 29)
    for sat, sun, join in itertools.product(["周六", "星期六", "礼拜六"], ["周日", "星期天", "礼拜日"],
                                            ["", "和", "、", "跟", "或"]):  # fmt: skip
        days = [d for span in find_dates(f"{sat}{join}{sun}", sunday) for d in span.dates]
        assert days == [dt.date(2026, 12, 5), dt.date(2026, 12, 6)], (sat, join, sun)

    def days_of(text):
        return [(d - sunday).days for span in find_dates(text, sunday) for d in span.dates]

    assert days_of("周五周六周日") == [5, 6, 7]
    assert days_of("周日") == [0]
    assert days_of("周六下周日") == [6, 7]
    assert days_of("周五周三") == [5, 3]


def test_saturday_and_sunday_in_one_word_are_the_weekend():
    # 这周六日, 下周六日 (周六 and 周日 in one) went to the LLM over the 日 left after 周六. They are the weekend,
    # with the weekend's prefixes, on every day of a week; 周六日出 and 周六日落 are Saturday's sunrise and sunset.
    for offset, prefix in itertools.product(range(7), ["", "这", "下", "本", "下个"]):
        today = dt.date(2026, 11, 23) + dt.timedelta(days=offset)
        weekend = [d for span in find_dates(f"{prefix}周末", today) for d in span.dates]
        assert [d for span in find_dates(f"{prefix}周六日", today) for d in span.dates] == weekend, (today, prefix)
    for sun in ["周六日出几点", "周六日落时间"]:
        (span,) = find_dates(sun, TODAY)
        assert span.text == "周六" and span.dates[0].isoweekday() == 6


def test_weekend_asked_midweek_is_saturday_and_sunday():
    wednesday = dt.date(2026, 12, 2)
    assert parse("周末", wednesday) == [dt.date(2026, 12, 5), dt.date(2026, 12, 6)]


def test_impossible_dates_give_no_days():
    (span,) = find_dates("2月30日", TODAY)
    assert span.dates == ()


def test_weather_words_are_not_dates():
    assert parse("下周天气") == days(1, 2, 3, 4, 5, 6, 7)  # 下周 + 天气, not 下周天 (Sunday) + 气
    assert parse("snow") == []  # "now" inside a word is not a date


@pytest.mark.parametrize(
    "text,value",
    [("七", 7), ("十", 10), ("十五", 15), ("二十", 20), ("二十一", 21), ("两", 2), ("12", 12), ("十十", None)],
)
def test_parse_number(text, value):
    assert parse_number(text) == value


def test_every_date_word_is_matched_whole():
    # The words are matched as a trie, longest first: 明后天 is one span, not 明后 and a stray 天.
    today = dt.date(2026, 11, 30)
    for word in date_words():
        assert [(span.start, span.end) for span in find_dates(word, today)] == [(0, len(word))], word
        assert [span.text for span in find_dates(f"北京{word}吗", today)] == [word], word


def test_the_days_of_a_span_are_in_order_without_repeats():
    # The parser takes a single span's days as they come (sorted and unique) without sorting them again.
    texts = [*date_words(), "从周五到下周一", "12月30日到1月2日", "未来5天", "这周末", "下周", "春节", "3天后"]
    texts.append("next 3 days")
    for offset in range(0, 400, 7):
        today = dt.date(2026, 1, 1) + dt.timedelta(days=offset)
        for text in texts:
            for span in find_dates(text, today):
                assert list(span.dates) == sorted(set(span.dates)), (text, today, span)


_KINDS = dates._han_kinds(*dates._han_words())
# Questions made of dates of every kind (drawn from each kind's own pattern) and of the pieces around and
# between them: near-dates, the characters dates are made of, a question's words.
_PIECES = st.sampled_from(sorted(set("0123456789一二两三十年月日号个的了./-~ 北京气温吗a") | {"今后", "周末", "星期"}))
_DATE_TEXT = st.lists(st.one_of(_PIECES, *(st.from_regex(re.compile(p), fullmatch=True) for _, p in _KINDS)),
                      max_size=5).map("".join)  # fmt: skip


def _found(matches):
    return [(m.span(), m.lastgroup, {k: v for k, v in m.groupdict().items() if v is not None}) for m in matches]


# One pattern that tries every kind of date at every position where any may start.
_EVERY_KIND = re.compile(
    f"(?=[{re.escape(''.join(sorted(set().union(*(chars for chars, _ in _KINDS)))))}])(?:"
    + "|".join(pattern for _, pattern in _KINDS)
    + ")"
)


# 1,000 texts: drawing from the date patterns (st.from_regex) is most of the time, about 6 ms a text. No
# deadline nor speed check: a text's first use of a character's pattern compiles it, which on a loaded
# machine took 260 ms (Hypothesis' deadline is 200 ms); what is checked is what is found, not how fast.
@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_DATE_TEXT)
def test_the_scan_finds_what_one_pattern_of_every_kind_finds(text):
    # The scan tries, at a character, only the kinds of date stated to start with it. One pattern that tries
    # every kind at every position where any may start must find the same: a kind whose start characters
    # were stated wrong would find a date the scan misses.
    assert _found(dates._han_matches(text)) == _found(_scan(_EVERY_KIND, text))


def test_a_character_that_starts_a_date_only_before_a_month_starts_none_without_one():
    # The lunar and the Nth-weekday kinds look for their 月 first, and the scan leaves them out where there
    # is none: a character only they start (阴 of 阴历) must then start no date, not an empty one (莫文蔚阴天
    # was read as an invalid date).
    starts = sorted(set().union(*(chars for chars, _ in _KINDS)))
    for first in starts:
        for text in (f"莫文蔚{first}天", f"{first}"):
            assert all(m.group() for m in dates._han_matches(text)), (first, text)
            assert _found(dates._han_matches(text)) == _found(_scan(_EVERY_KIND, text)), (first, text)


def _scan(pattern, text):
    """PATTERN's matches, each looked for after the last, passing over clock shapes that are no time."""
    found, at = [], 0
    while at < len(text):
        m = pattern.match(text, at)
        if m is not None and (m.lastgroup != "clock" or dates._is_clock(m, text)):
            found.append(m)
            at = m.end()
        else:
            at += 1
    return found


def test_parts_of_a_month_are_their_days_from_today_on():
    # 月底, 下旬, 下个月初, 12月中旬, 12月 went to the LLM (月底 unknown) or read 12月 as nothing. A part of a month
    # is its days (初 the first five, 上/中/下旬 tens, 底 and 末 the last five), from today on; said without a
    # month, once this month's has passed, next month's (月初 asked on the 29th); with this month said, a part
    # that has passed keeps its days (the horizon says they are past); a month alone is all of it.
    def days_of(text, today=TODAY):
        return [d for span in find_dates(text, today) for d in span.dates]

    def part_of(year, month, part):
        length = ((dt.date(year, month, 28) + dt.timedelta(days=4)).replace(day=1) - dt.date(year, month, 1)).days
        first, last = {"初": (1, 5), "上旬": (1, 10), "中旬": (11, 20), "中": (11, 20), "下旬": (21, length),
                       "底": (length - 4, length), "末": (length - 4, length)}[part]  # fmt: skip
        return [dt.date(year, month, d) for d in range(first, last + 1)]

    for today in [dt.date(2026, 11, 3), dt.date(2026, 11, 15), dt.date(2026, 11, 29), dt.date(2026, 12, 30),
                  dt.date(2027, 1, 31)]:  # fmt: skip
        following = (today.replace(day=28) + dt.timedelta(days=4)).replace(day=1)
        for part in ["初", "上旬", "中旬", "中", "下旬", "底", "末"]:
            whole = part_of(today.year, today.month, part)
            this = [d for d in whole if d >= today]
            coming = part_of(following.year, following.month, part)
            bare = part if part.endswith("旬") else f"月{part}"
            assert days_of(bare, today) == (this or coming), (bare, today)
            for said in ["这个月", "本月", "这月"]:
                assert days_of(f"{said}{part}", today) == (this or whole), (said, part, today)
            for said in ["下个月", "下月"]:
                assert days_of(f"{said}{part}", today) == coming, (said, part, today)
    assert days_of("12月上旬") == part_of(2026, 12, "上旬")
    assert days_of("十二月份下旬") == part_of(2026, 12, "下旬")
    assert days_of("2月底") == [dt.date(2027, 2, d) for d in range(24, 29)]  # not a leap year
    assert days_of("12月") == days_of("下个月") == [dt.date(2026, 12, d) for d in range(1, 32)]
    assert days_of("这个月") == [TODAY, TODAY + dt.timedelta(days=1)]
    assert days_of("11月初") == part_of(2026, 11, "初")  # said by its month: kept, though past
    assert days_of("13月") == [] and days_of("0月底") == []
    # Not parts of a month: a day of it, or 月 in other words.
    assert days_of("12月5号") == days_of("下个月5号") == [dt.date(2026, 12, 5)]
    assert find_dates("月亮几点升起", TODAY) == [] and find_dates("三个月", TODAY) == []


def test_the_nights_hours_after_midnight_are_the_next_days():
    # 北京后半夜冷吗 went to the LLM (后 unknown) and 下半夜 was read as 半夜, the hours before midnight. The
    # night's second half is the next day's small hours: tonight's is tomorrow's 0 to 6 h, 明天后半夜 the day
    # after's; a clock time in it is that day's hour. Its first half is the evening's.
    from hybrid_weather.router import HybridRouter

    router = HybridRouter(provider="demo", ledger="off")
    for second_half, (date_word, offset) in itertools.product(
        ["后半夜", "下半夜"], [("", 0), ("今天", 0), ("明天", 1), ("后天", 2), ("周二", 2)]
    ):
        for form in ["北京{}{}冷吗", "上海{}{}会下雨吗", "{}{}广州天气"]:
            query = form.format(date_word, second_half)
            decision = router.route(query, today=TODAY)
            assert (decision.route, decision.hours) == ("rule", (0, 6)), (query, decision.reason)
            assert decision.dates == [TODAY + dt.timedelta(days=offset + 1)], query
    assert router.route("北京后半夜3点冷吗", today=TODAY).hours == (3, 4)
    assert router.route("北京明天后半夜3点冷吗", today=TODAY).dates == [TODAY + dt.timedelta(days=2)]
    for first_half in ["上半夜", "前半夜"]:
        decision = router.route(f"北京{first_half}冷吗", today=TODAY)
        assert (decision.dates, decision.hours) == ([TODAY], (20, 24)), first_half
    assert router.route("北京半夜冷吗", today=TODAY).hours == (22, 24)


def test_a_day_before_before_is_every_day_until_it_and_a_count_before_it_is_days_ago():
    # 周五之前会下雨吗, 月底前会下雪吗 went to the LLM (之前, 前 unknown), and 周五前天气 was read as Friday and
    # 前天 (the day before yesterday) with a 气 left over. A day said before 之前, 以前 or 前 is every day from
    # today to it, that one included; a count of days or weeks before 前 is that many ago, as before 后 it is
    # that many on (三天前, 两周以前); 前后 (around) and a day already past are not until.
    def days_of(text, today=TODAY):
        return [d for span in find_dates(text, today) for d in span.dates]

    words = ["周五", "下周三", "12月5号", "月底", "后天", "这周日"]
    tails = ["", "天气", "会下雨吗", "天气怎么样"]
    for word, before, tail in itertools.product(words, ["之前", "以前", "前"], tails):
        last = days_of(word)[-1]
        query = f"{word}{before}{tail}"
        spans = find_dates(query, TODAY)
        assert len(spans) == 1 and spans[0].text == word + before, (query, spans)
        assert days_of(query) == [TODAY + dt.timedelta(days=n) for n in range((last - TODAY).days + 1)], query
    assert len(days_of("元旦之前")) == dates.MAX_RANGE_DAYS  # the horizon says the rest are too far
    for count, ago in itertools.product(["三天", "3天", "两周", "一个星期"], ["前", "以前", "之前"]):
        offset = {"三天": 3, "3天": 3, "两周": 14, "一个星期": 7}[count]
        assert days_of(f"{count}{ago}天气") == [TODAY - dt.timedelta(days=offset)], count + ago
    assert days_of("昨天之前") == days_of("昨天") + days_of("之前")  # a day past: not until
    assert days_of("12月5号前后") == [dt.date(2026, 12, d) for d in (4, 5, 6)]  # around, not until


_AROUND_UNTIL = st.sampled_from(["前", "之前", "以前", "前天", "前日", "前后", "天气", "气", "后"])


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])  # as above
@given(st.lists(st.one_of(_DATE_TEXT, _AROUND_UNTIL), max_size=4).map("".join), st.sampled_from(
    [TODAY, dt.date(1970, 1, 2), dt.date(2099, 12, 20), dt.date(2027, 2, 28)]))  # fmt: skip
def test_spans_stay_in_order_apart_and_inside_the_text(text, today):
    # The reader cuts each span out of the question: spans that overlapped (周五之前 and a 前日 inside its 前)
    # would cut a character twice. Whatever the text and day, spans are in order, apart, inside the text,
    # and their days sorted without repeats.
    spans = find_dates(text, today)
    for span in spans:
        assert 0 <= span.start < span.end <= len(text) and list(span.dates) == sorted(set(span.dates)), span
    assert all(before.end <= after.start for before, after in itertools.pairwise(spans)), spans


def test_the_days_ahead_said_with_any_word_of_the_future_and_a_few_or_a_count():
    # 后面几天, 往后几天, 今后几天会下雨吗 went to the LLM (后面, 往后 unknown; 几 no count) while 未来几天 and
    # 未来三天 were the days ahead. Every word of the future before a count of days, or 几 (a few: three, as
    # 这几天 and 最近 are), with or without 的 or 这, is as many days from today.
    def days_of(text):
        return [d for span in find_dates(text, TODAY) for d in span.dates]

    ahead = ["未来", "接下来", "往后", "今后", "以后", "后面", "最近", "近"]
    for word, between, (count, n), day in itertools.product(ahead, ["", "的", "这"], [("几", 3), ("五", 5), ("7", 7)],
                                                             ["天", "日"]):  # fmt: skip
        text = f"{word}{between}{count}{day}"
        assert days_of(f"{text}天气") == days(*range(n)), text
    assert days_of("以后") == [] and days_of("后面") == [] and days_of("可以") == []


def test_the_working_days_of_a_week_as_its_weekend_is_its_days_off():
    # 北京工作日天气, 下周工作日会下雨吗 went to the LLM (工作日 unknown; 下周 read alone as seven days). The working
    # days are Monday to Friday of the week named (下周: the next, as 下周三 is), from today on; once this week's
    # have passed (a Saturday or a Sunday), the next week's.
    def days_of(text, today):
        return [d for span in find_dates(text, today) for d in span.dates]

    for offset in range(14):
        today = dt.date(2026, 11, 23) + dt.timedelta(days=offset)  # two weeks from a Monday
        monday = today - dt.timedelta(days=today.weekday())
        this = [monday + dt.timedelta(days=i) for i in range(5) if monday + dt.timedelta(days=i) >= today]
        coming = [monday + dt.timedelta(days=7 + i) for i in range(5)]
        for said in ["工作日", "这周工作日", "本周工作日", "这个星期工作日", "周工作日"]:
            assert days_of(said, today) == (this or coming), (said, today)
        for said in ["下周工作日", "下个星期工作日", "下礼拜工作日"]:
            assert days_of(said, today) == coming, (said, today)


def test_a_day_before_qianhou_or_zuoyou_is_that_day_and_its_neighbours_and_a_few_days_on_are_days():
    # 北京12月5号前后天气 went to the LLM (前后 unknown, and 后天 read inside 前后天气), 北京5号左右 was the 5th
    # alone, and 北京几天后天气 was read as 后天 with a 气 left over. A day said before 前后 or 左右 (around) is
    # it and the day on either side; 几天后, 几天以后, 几天之后 are the few days after tomorrow, as 过几天 is.
    def days_of(text):
        return [d for span in find_dates(text, TODAY) for d in span.dates]

    for word, around, tail in itertools.product(["周五", "12月5号", "后天", "下周三", "5号"], ["前后", "左右"],
                                                ["", "天气", "会下雨吗", "天气怎么样"]):  # fmt: skip
        (day,) = days_of(word)
        query = f"{word}{around}{tail}"
        spans = find_dates(query, TODAY)
        assert len(spans) == 1 and spans[0].text == word + around, (query, spans)
        assert days_of(query) == [day + dt.timedelta(days=d) for d in (-1, 0, 1)], query
    assert days_of("25度左右") == [] and days_of("周末左右") == days_of("周末")  # a temperature; two days already
    for later in ["几天后", "几天以后", "几天之后"]:
        assert days_of(f"{later}天气") == days_of("过几天") == days(2, 3, 4), later


def test_an_approximate_count_of_days_is_its_most_ahead_and_every_day_it_spans_on_or_ago():
    # 北京未来两三天天气, 这两三天会下雨吗 were a clarify ('invalid date': 两三 read as one number). Two neighbouring
    # numerals (一两 … 八九) or 三五 count a few days, the fewest to the most: ahead, as many days as the most; on
    # (两三天后) or ago (两三天前), every day from the fewest to the most. 这 before a count is the days ahead too.
    def days_of(text):
        return [d for span in find_dates(text, TODAY) for d in span.dates]

    numerals = "一两三四五六七八九"
    pairs = [(numerals[i] + numerals[i + 1], i + 1, i + 2) for i in range(len(numerals) - 1)] + [("三五", 3, 5)]
    for (count, _, high), word, tail in itertools.product(pairs, ["未来", "接下来", "最近", "往后", "这", "未来的"],
                                                            ["天", "天天气", "天会下雨吗"]):  # fmt: skip
        assert days_of(f"{word}{count}{tail}") == days(*range(high)), (word, count, tail)
    for count, low, high in pairs:
        assert days_of(f"{count}天天气") == days(*range(high)), count
        assert days_of(f"{count}天后会下雨吗") == days(*range(low, high + 1)), count
        assert days_of(f"{count}天以前") == days(*range(-high, -low + 1)), count
    for not_a_count in ["三一天", "两两天", "五三天", "九十天"]:  # not neighbours rising; 九十 is ninety, too many
        assert days_of(f"未来{not_a_count}天气") == [], not_a_count
    for exact, n in [("三", 3), ("十", 10), ("5", 5)]:
        assert days_of(f"这{exact}天会下雨吗") == days(*range(n)), exact


def test_month_and_day_with_a_dash_is_a_date_unless_a_unit_or_a_count_follows():
    # 北京12-5天气 went to the LLM ('12-5' unknown) while 12/5 and 12.5 were the 5th of December. A month and a
    # day joined by a dash are that day, as with / and .; not before a unit (5-10度, 1-2级), 号 or 日 (3-5号:
    # the 3rd to the 5th), 点 (1-2点: hours), or 天 and 周 that count (3-5天后, 1-2周内: days and weeks).
    for month, day in itertools.product(range(1, 13), [1, 5, 9, 10, 28]):
        (span,) = find_dates(f"北京{month}-{day}天气", TODAY)
        (expected,) = parse(f"{month}月{day}日")  # the same day, whichever year 12月5日 picks
        assert span.dates == (expected,) and span.text == f"{month}-{day}", (month, day, span)
        assert parse(f"{month:02d}-{day:02d}会下雨吗") == [expected], (month, day)
    for said, place in [("12-6周庄", "周庄"), ("12-6天儿", "天儿"), ("12-6周边", "周边")]:  # a day, then words
        assert [(s.text, s.dates) for s in find_dates(said, TODAY)] == [("12-6", (dt.date(2026, 12, 6),))], place
    for not_a_date in ["5-10度", "1-2级", "3-5号", "1-2点", "3-5天", "3-5天后", "3-5天内", "3-5天的", "1-2周内",
                       "2-3周以后", "pm2-5", "2-3°", "13-5", "12-35"]:  # fmt: skip
        assert [s for s in find_dates(not_a_date, TODAY) if s.kind == "numeric"] == [], not_a_date
    assert parse("12-5到12-7") == [dt.date(2026, 12, 5), dt.date(2026, 12, 6), dt.date(2026, 12, 7)]


def test_the_rest_of_this_week_or_month_is_its_days_from_today_on():
    # 这周剩下几天天气, 本周剩余几天会下雨吗 went to the LLM (剩, 剩余 unknown). The rest of this week or month,
    # said any of these ways, is what 这周 and 这个月 are: their days from today on.
    rests = ["剩下", "剩余", "余下", "剩下的", "剩余的", "剩下几天", "剩下的几天", "剩下的日子", "剩余时间", "剩下两天"]
    for offset in range(9):
        today = dt.date(2026, 11, 23) + dt.timedelta(days=offset)
        for week, rest in itertools.product(["这周", "本周", "这个星期", "这礼拜"], rests):
            said = f"{week}{rest}"
            spans = find_dates(f"{said}会下雨吗", today)
            assert [s.text for s in spans] == [said] and parse(said, today) == parse(week, today), (today, said)
        for month, rest in itertools.product(["这个月", "本月"], rests):
            said = f"{month}{rest}"
            assert parse(f"{said}天气", today) == parse(month, today), (today, said)


def test_the_week_after_next_is_two_weeks_on_for_every_word_of_a_week():
    # 下下周天气 was next week's (the first 下 dropped, as in 查下), and so were 下下个星期, 下下周末 and
    # 下下周工作日; 下下周三 alone was right. 下下 (个) before any word of a week is the week after next.
    for offset in range(14):
        today = dt.date(2026, 11, 23) + dt.timedelta(days=offset)  # two weeks from a Monday
        for next_one, week in itertools.product(["下", "下个"], ["周", "星期", "礼拜"]):
            after_next = [d + dt.timedelta(days=7) for d in parse(f"{next_one}{week}", today)]
            assert parse(f"下{next_one}{week}", today) == after_next, (today, next_one, week)
        for word in ["周末", "周工作日"]:
            after_next = [d + dt.timedelta(days=7) for d in parse(f"下{word}", today)]
            assert parse(f"下下{word}", today) == parse(f"下下个{word}", today) == after_next, (today, word)


def test_the_next_day_that_day_halves_of_a_day_and_a_few_days_ago():
    # 北京次日天气, 第二天会下雨吗, 当天, 明天上半天, 前两天冷吗 went to the LLM (次日, 第, 当, 半, 前两 unknown),
    # and 周五前两天 was never the two days before Friday. Without a conversation the next day is tomorrow and
    # that day today; the day's halves are its morning and afternoon; a few days ago the days before today, and
    # right after a day the days before it.
    for word, offset in [("次日", 1), ("翌日", 1), ("隔天", 1), ("第二天", 1), ("当天", 0), ("当日", 0)]:
        for tail in ["", "天气", "会下雨吗", "冷不冷"]:
            assert parse(f"{word}{tail}") == days(offset), (word, tail)
    for date_word, offset in [("", 0), ("明天", 1), ("周二", 2)]:
        for half, hours in [("上半天", (8, 12)), ("前半天", (8, 12)), ("下半天", (13, 18)), ("后半天", (13, 18))]:
            spans = find_dates(f"{date_word}{half}会下雨吗", TODAY)
            assert [s.hours for s in spans if s.is_part_of_day] == [hours], (date_word, half)
            # Alone, a part of the day has no days of its own: the question's are today's.
            assert parse(f"{date_word}{half}") == (days(offset) if date_word else []), (date_word, half)
    for ago, count in [("前两天", 2), ("前几天", 3), ("前些天", 3), ("前些日子", 3)]:
        assert parse(f"{ago}冷吗") == days(*range(-count, 0)), ago
        for day_word in ["周五", "5号", "12月5号", "下周三"]:
            (day,) = parse(day_word)
            expected = [day - dt.timedelta(days=n) for n in range(count, 0, -1)]
            assert parse(f"{day_word}{ago}会下雨吗") == expected, (day_word, ago)


def test_the_end_and_the_start_of_a_year_are_their_last_and_first_days():
    # 北京年底天气 went to the LLM (年底 unknown). 年底 and 年末 are December's last days as 月底 is a month's
    # (from today on), 年初 January's first as 月初 is (the coming one once this year's have passed); 今年 and
    # 明年 before them say which year.
    for today in [dt.date(2026, 1, 3), dt.date(2026, 6, 15), dt.date(2026, 12, 20), dt.date(2026, 12, 31)]:
        this_end = [d for d in days_between(dt.date(today.year, 12, 27), 5) if d >= today]  # from today on
        for said in ["年底", "年末", "今年底", "今年年底", "今年年末"]:
            assert parse(said, today) == this_end == parse("12月底", today), (today, said)
        assert parse("明年底", today) == days_between(dt.date(today.year + 1, 12, 27), 5)
        this_start = days_between(dt.date(today.year, 1, 1), 5)
        assert parse("今年初", today) == ([d for d in this_start if d >= today] or this_start), today
        assert parse("明年初", today) == days_between(dt.date(today.year + 1, 1, 1), 5)
        coming = [d for d in this_start if d >= today] or days_between(dt.date(today.year + 1, 1, 1), 5)
        assert parse("年初", today) == coming, today
    assert [s.kind for s in find_dates("年底前", dt.date(2026, 12, 20))] == ["until"]


def days_between(first, count):
    return [first + dt.timedelta(days=n) for n in range(count)]


def test_an_approximate_hour_is_every_hour_it_names_within_the_part_of_the_day():
    # 北京明天晚上七八点下雨吗, 下午两三点热吗 went to the LLM (七八, 两三 unknown: no clock time). Two neighbouring
    # numerals before 点 are both hours, read within the part of the day as one hour is (晚上七八点: 19 to 21 h),
    # the last no later than the day's last hour.
    from hybrid_weather.router import HybridRouter

    router = HybridRouter(provider="demo", ledger="off")
    said = {("晚上", "七八"): (19, 21), ("下午", "两三"): (14, 16), ("早上", "七八"): (7, 9), ("", "三四"): (15, 17),
            ("晚上", "十一二"): (23, 24), ("凌晨", "一两"): (1, 3)}  # fmt: skip
    for (part, hours), expected in said.items():
        for form in ["北京明天{}{}点下雨吗", "明天{}{}点上海冷不冷"]:
            query = form.format(part, hours)
            decision = router.route(query, today=TODAY)
            assert (decision.route, decision.hours) == ("rule", expected), (query, decision.reason)
    for not_neighbours in ["五三", "两两", "三一"]:  # no clock time: only the part of the day is read
        assert [span.kind for span in find_dates(f"下午{not_neighbours}点", TODAY)] == ["part"], not_neighbours
    assert router.route("北京明天冷一点吗", today=TODAY).hours is None  # 一点 is a little, as before


def test_a_clock_time_before_qian_or_hou_is_every_hour_until_or_from_it():
    # 北京明天早上8点前会下雨吗 and 下午5点以后下雨吗 went to the LLM (前, 以后 unknown after a clock time). Before
    # 之前, 以前 or 前 a clock time is every hour from the start of the part of the day said with it (or midnight)
    # until it; before 之后, 以后 or 后, every hour from it to the day's end. 后天 and 前天 begun in the word stay
    # days, unless their 天 is the weather's (8点后天气).
    from hybrid_weather.router import HybridRouter

    router = HybridRouter(provider="demo", ledger="off")
    until = {("早上", "8"): (6, 8), ("", "8"): (0, 8), ("下午", "三"): (13, 15), ("晚上", "10"): (18, 22)}
    since = {("下午", "5"): (17, 24), ("晚上", "10"): (22, 24), ("早上", "七"): (7, 24), ("", "9"): (9, 24)}
    asked = itertools.chain(itertools.product(until.items(), ["前", "之前", "以前"]),
                            itertools.product(since.items(), ["后", "之后", "以后"]))  # fmt: skip
    for ((part, hour), hours), word in asked:
        for form in ["北京明天{}{}点{}会下雨吗", "明天{}{}点{}上海冷不冷"]:
            query = form.format(part, hour, word)
            decision = router.route(query, today=TODAY)
            got = (decision.route, decision.dates, decision.hours)
            assert got == ("rule", days(1), hours), (query, decision.reason)
    assert router.route("北京明天8点后天气", today=TODAY).hours == (8, 24)
    assert router.route("北京明天8点后天冷吗", today=TODAY).dates == days(1, 2)  # 后天: a day


# The lunar calendar's words: months (正月 and 一月 are the first, 冬月 the eleventh, 腊月 the twelfth) and days
# (初一 … 初十, 十一 … 二十, 廿一 … 廿九 or 二十一 … 二十九, 三十).
_LUNAR_MONTHS = {1: ["正", "一"], **{n: [c] for n, c in enumerate("二三四五六七八九十", 2)}, 11: ["冬", "十一"],
                 12: ["腊", "十二"]}  # fmt: skip
_UNITS = "一二三四五六七八九"
_LUNAR_DAYS = {
    **{n: [f"初{c}"] for n, c in enumerate(_UNITS + "十", 1)},
    **{10 + n: [f"十{c}"] for n, c in enumerate(_UNITS, 1)},
    20: ["二十"],
    **{20 + n: [f"廿{c}", f"二十{c}"] for n, c in enumerate(_UNITS, 1)},
    30: ["三十"],
}
# The lunar named days of calendar.json (computed there by lunar-python's own conversion) and their month and day.
_LUNAR_FESTIVALS = {"春节": (1, 1), "元宵节": (1, 15), "龙抬头": (2, 2), "端午节": (5, 5), "七夕": (7, 7),
                    "中元节": (7, 15), "中秋节": (8, 15), "重阳节": (9, 9), "腊八节": (12, 8)}  # fmt: skip
_SOME_DAYS = [dt.date(2026, 11, 29), dt.date(2027, 1, 20), dt.date(2027, 2, 6), dt.date(2031, 6, 30),
              dt.date(2033, 12, 23), dt.date(2045, 9, 1)]  # fmt: skip


def _next_or_last_week(days_of_name, today):
    """The named-day rule: the next occurrence, or the last one if it was less than a week ago."""
    return next(d for d in days_of_name if (d - today).days >= -7)


def test_a_lunar_month_and_day_said_any_way_is_that_day():
    # 北京农历十月廿五天气, 阴历腊月初八冷吗 went to the LLM (农历 an open-ended word; 腊, 八 unknown), and
    # 冬月初一 left 冬 and 气 unknown. A lunar month and day — after 农历, 阴历 or 旧历, any month and any way of
    # saying a day; alone, with a month only the lunar calendar has (正月, 冬月, 腊月) or a day only it says
    # (初X, 廿X) — are that day of the lunar calendar, next or, under a week ago, last (as named days are).
    # Checked against the lunar festivals calendar.json holds.
    named = dates._calendar()[1]
    for today, (festival, (month, day)) in itertools.product(_SOME_DAYS, _LUNAR_FESTIVALS.items()):
        expected = [_next_or_last_week(named[festival], today)]
        for marker, month_word, day_word in itertools.product(["农历", "阴历", "旧历"], _LUNAR_MONTHS[month],
                                                              _LUNAR_DAYS[day]):  # fmt: skip
            said = f"{marker}{month_word}月{day_word}"
            spans = find_dates(f"北京{said}冷吗", today)
            assert [(s.text, list(s.dates)) for s in spans] == [(said, expected)], (today, said)
        lunar_only = [m for m in _LUNAR_MONTHS[month] if m in "正冬腊"]
        for month_word, day_word in itertools.product(_LUNAR_MONTHS[month], _LUNAR_DAYS[day]):
            if month_word in lunar_only or day_word.startswith(("初", "廿")):
                assert parse(f"{month_word}月{day_word}天气", today) == expected, (today, month_word, day_word)
    # 除夕 is the lunar year's last day: 腊月 has 29 or 30 days, and its last is the eve.
    for today in _SOME_DAYS:
        eve = _next_or_last_week(named["除夕"], today)
        last = [parse(f"农历腊月{word}", today) for word in ("廿九", "三十")]
        assert [eve] in last, (today, last)


def test_every_lunar_day_of_a_year_follows_the_one_before():
    # A lunar year's days, said one by one from 正月初一 to its last, are one calendar day apart each: months are
    # 29 or 30 days long, 三十 of a 29-day month is no day, and the year ends on the eve of the next 春节.
    named = dates._calendar()[1]
    for year in (2026, 2033, 2045):
        today = next(d for d in named["春节"] if d.year == year)  # 正月初一: each of the year's days is to come
        expected, said = today, []
        for month, leap in itertools.product(range(1, 13), ["", "闰"]):
            for day in range(1, 31):
                # Said of the future: the next one, not one under a week ago (the last year's 腊月廿三).
                got = parse(f"农历{leap}{_LUNAR_MONTHS[month][0]}月{_LUNAR_DAYS[day][0]}会下雨吗", today)
                if got == [expected]:
                    said.append(expected)
                    expected += dt.timedelta(days=1)
                elif leap and day == 1:
                    break  # no leap month here: this year repeats another, or none
                else:  # only 三十 of a 29-day month is no day of this year
                    assert day == 30, (year, month, day, got, expected)
        assert expected == next(d for d in named["春节"] if d.year == year + 1), year
        assert len(said) in range(353, 386), (year, len(said))


def test_leap_months_and_the_lunar_year_said():
    # 2033 has a leap eleventh month (the "2033 problem" that lunar tables got wrong); 闰 before a month is its
    # leap repeat. 今年, 明年, 去年 before a lunar date pick the lunar year (the one today is in, and its neighbours).
    today = dt.date(2033, 11, 1)
    (first,) = parse("农历冬月初一", today)
    (leap,) = parse("农历闰冬月初一", today)
    assert (leap - first).days in (29, 30) and parse("农历腊月初一", today)[0] - leap in (
        dt.timedelta(days=29), dt.timedelta(days=30))  # fmt: skip
    named = dates._calendar()[1]
    sunday = dt.date(2026, 11, 29)  # 农历2026年十月廿一
    mid_autumns = {d.year: d for d in named["中秋节"]}
    assert parse("今年农历八月十五", sunday) == [mid_autumns[2026]]
    assert parse("明年农历八月十五", sunday) == [mid_autumns[2027]]
    assert parse("去年农历八月十五", sunday) == [mid_autumns[2025]]
    assert parse("农历十月廿五", sunday) == [dt.date(2026, 12, 3)] and parse("腊月初八", sunday) == [
        dt.date(2027, 1, 15)
    ]


def test_the_lunar_table_agrees_with_lunar_python():
    # The run time reads lunar dates from the table build_data.py writes; where the library is installed (the
    # data extra), every day of every month of a span of years is the library's own.
    lunar_python = pytest.importorskip("lunar_python")
    for year in (2000, 2001, 2023, 2033, 2057):
        start = lunar_python.Lunar.fromYmd(year, 1, 1).getSolar()
        today = dt.date(start.getYear(), start.getMonth(), start.getDay())
        for month_info in lunar_python.LunarYear.fromYear(year).getMonthsInYear():
            month, leap = abs(month_info.getMonth()), month_info.getMonth() < 0
            for day in range(1, month_info.getDayCount() + 1):
                solar = lunar_python.Lunar.fromYmd(year, month_info.getMonth(), day).getSolar()
                said = f"农历{'闰' if leap else ''}{_LUNAR_MONTHS[month][-1]}月{_LUNAR_DAYS[day][0]}"
                expected = dt.date(solar.getYear(), solar.getMonth(), solar.getDay())
                assert parse(f"{said}会下雨吗", today) == [expected], said


def test_lunar_words_alone_and_gregorian_months_are_not_lunar_dates():
    # 十月十五 (no lunar month or day word) stays the Gregorian one; 农历 with no month and day is no date; a
    # bare 初一 or 十五 is not read (the month is not said).
    sunday = dt.date(2026, 11, 29)
    assert parse("十月十五", sunday) == [dt.date(2026, 10, 15)]
    for text in ["今天农历几号", "农历", "初一", "十五的月亮", "腊月", "农历十月", "正月里", "十月十五"]:
        assert [s for s in find_dates(text, sunday) if s.kind == "lunar"] == [], text
    assert [s.kind for s in find_dates("十月初", sunday)] == ["month_part"]  # the start of October


def test_lunar_dates_route_and_lunar_alone_still_goes_to_the_llm():
    # 农历 is an open-ended word (what is today's lunar date is no weather question); inside a lunar date it is
    # masked as every date is, and the date is read. Out of the forecast, the clarify says which day it is.
    from hybrid_weather.router import HybridRouter

    router = HybridRouter(provider="demo", ledger="off")
    sunday = dt.date(2026, 11, 29)
    for query, day in [("北京农历十月廿五天气", dt.date(2026, 12, 3)), ("阴历冬月初一上海冷吗", dt.date(2026, 12, 9)),
                       ("广州冬月初一会下雨吗", dt.date(2026, 12, 9)),
                       ("北京农历十月十九下雨了吗", dt.date(2026, 11, 27))]:  # fmt: skip
        decision = router.route(query, today=sunday)
        assert (decision.route, decision.dates) == ("rule", [day]), (query, decision.reason)
    far = router.route("北京阴历腊月初八冷吗", today=sunday)
    assert far.route == "clarify" and "2027年1月15日" in far.clarification, far
    # 农历 outside a lunar date still counts: today's lunar date, or a lunar month alone.
    for query in ["今天农历几号", "北京今天农历几号", "农历十月是几月", "北京农历十月天气"]:
        assert router.route(query, today=sunday).route == "llm", query


# Said in the past (has it rained, did it snow, was it cold then) and said of what is to come.
_PAST_TAILS = ["下雨了吗", "下雪了没", "下了没有", "那天冷了吗", "那天下雨了", "下过雨吗", "是不是下雨了"]
_FUTURE_TAILS = ["会下雨吗", "会不会冷", "要下雪吗", "将会降温吗"]


def test_a_named_day_asked_in_the_past_is_its_last_and_of_the_future_its_next():
    # 北京冬至下雨了吗 asked on 2026-11-29 was read as the coming 冬至 (2026-12-22): a named day was always the next
    # one. Asked in the past tense it is the most recent (today included); asked of the future, the next (today
    # included); otherwise as before. Every named day, on days all through the year.
    words, named = dates._calendar()
    sample = ["中秋", "冬至", "春节", "国庆", "端午节", "立春", "大雪节气", "母亲节", "腊八", "圣诞节"]
    for offset, word in itertools.product(range(0, 366, 23), sample):
        today = dt.date(2026, 1, 5) + dt.timedelta(days=offset)
        occurrences = named[words[word]]
        last = max(d for d in occurrences if d <= today)
        coming = min(d for d in occurrences if d >= today)
        for tail in _PAST_TAILS:
            assert parse(f"北京{word}{tail}", today) == [last], (today, word, tail)
        for tail in _FUTURE_TAILS:
            assert parse(f"北京{word}{tail}", today) == [coming], (today, word, tail)
        assert parse(f"上个{word}北京冷吗", today) == [last] and parse(f"下个{word}北京冷吗", today) == [coming]
        assert parse(f"北京{word}过后会冷吗", today) == [coming], (today, word)  # 过后: after it, not 下过
    # The same for a lunar date.
    sunday = dt.date(2026, 11, 29)
    assert parse("北京农历八月十五下雨了吗", sunday) == [dt.date(2026, 9, 25)]
    assert parse("北京农历八月十五会下雨吗", sunday) == [named["中秋节"][[d.year for d in named["中秋节"]].index(2027)]]


def test_a_named_day_past_or_to_come_then_meets_the_horizon():
    # The day a tense picks is checked against the provider's horizon as any date is: within it, a rule answer
    # (history or forecast); beyond it, a clarify naming the day.
    from hybrid_weather.router import HybridRouter

    router = HybridRouter(provider="demo", ledger="off")
    sunday = dt.date(2026, 11, 29)
    decision = router.route("北京中秋下雨了吗", today=sunday)
    assert (decision.route, decision.dates) == ("rule", [dt.date(2026, 9, 25)]), decision.reason
    decision = router.route("北京冬至那天下雪了吗", today=sunday)
    assert decision.route == "clarify" and "冬至是2025年12月21日" in decision.clarification, decision
    decision = router.route("北京冬至会下雪吗", today=dt.date(2026, 12, 10))
    assert (decision.route, decision.dates) == ("rule", [dt.date(2026, 12, 22)]), decision.reason


def _nth_weekday(year, month, weekday, nth):
    """The NTH (1-5, or -1 the last) WEEKDAY of a month, or None."""
    found = [d for d in (dt.date(year, month, 1) + dt.timedelta(days=i) for i in range(31))
             if d.month == month and d.weekday() == weekday]  # fmt: skip
    return found[nth - 1 if nth > 0 else nth] if -len(found) <= nth <= len(found) and nth else None


def test_an_ordinal_weekday_of_a_month_is_that_day():
    # 北京12月第一个周日天气, 这个月最后一个周五, 下个月第二个周六 went to the LLM (第一个, 后一个 unknown). The Nth
    # (or last) weekday of a month said by its number (this year's while it lasts, as 12月 is), of this month
    # or of the next, is that day; a fifth one a month lacks is no day.
    ordinals = {
        "第一个": 1,
        "第1个": 1,
        "第二个": 2,
        "第三个": 3,
        "第四个": 4,
        "第五个": 5,
        "最后一个": -1,
        "最后一": -1,
    }
    weekday_words = {"周日": 6, "星期六": 5, "礼拜三": 2, "周五": 4, "周1": 0}
    for today in [dt.date(2026, 11, 29), dt.date(2026, 12, 31), dt.date(2027, 2, 1)]:
        this = (today.year, today.month)
        after = (today.year + today.month // 12, today.month % 12 + 1)
        for (ordinal, nth), (weekday_word, weekday) in itertools.product(ordinals.items(), weekday_words.items()):
            for month_word, (year, month) in [("这个月", this), ("本月", this), ("下个月", after), ("下月", after),
                                              ("12月", (today.year, 12)), ("十二月份", (today.year, 12))]:  # fmt: skip
                said = f"{month_word}{ordinal}{weekday_word}"
                day = _nth_weekday(year, month, weekday, nth)
                spans = find_dates(f"北京{said}天气", today)
                assert [(s.text, list(s.dates)) for s in spans] == [(said, [day] if day else [])], (today, said)
    assert parse("2月第一个周日", dt.date(2026, 11, 29)) == [dt.date(2027, 2, 7)]  # February to come: next year's


def test_last_weekend_weeks_and_months_on_this_weeks_weekday_and_da_hou_er_ge():
    # 上周末下雨了吗 and 上个周末 went to the LLM (上 unknown); 三个月后 left 月 unknown; 今个礼拜六 was today and
    # Saturday; 大后儿个 was 后儿个 (two days on) with 大 dropped.
    for offset in range(14):
        today = dt.date(2026, 11, 23) + dt.timedelta(days=offset)  # two weeks from a Monday
        monday = today - dt.timedelta(days=today.weekday())
        last_weekend = [monday - dt.timedelta(days=2), monday - dt.timedelta(days=1)]
        for said in ["上周末", "上个周末", "上周末两天"]:
            assert parse(f"北京{said}下雨了吗", today) == last_weekend, (today, said)
        assert parse("上上周末", today) == [d - dt.timedelta(days=7) for d in last_weekend]
        assert parse("赶上周末", today) == parse("周末", today)  # falls on the weekend: this one
        said_this_week = [("礼拜六", 5), ("周三", 2), ("星期天", 6)]
        for prefix, (weekday_word, weekday) in itertools.product(["今个", "今儿个", "今个儿"], said_this_week):
            assert parse(f"{prefix}{weekday_word}北京冷吗", today) == [monday + dt.timedelta(days=weekday)], prefix
        for said, months in [("一个月后", 1), ("三个月后", 3), ("两个月以后", 2), ("6个月之后", 6)]:
            year, month = divmod(today.year * 12 + today.month - 1 + months, 12)
            last = (dt.date(year + (month + 1) // 12, (month + 1) % 12 + 1, 1) - dt.timedelta(days=1)).day
            expected = dt.date(year, month + 1, min(today.day, last))  # 11月30日 + 3: 2月28日
            assert parse(f"北京{said}天气", today) == [expected], (today, said)
        assert parse("半个月后", today) == [today + dt.timedelta(days=15)]
        assert parse("大后儿个", today) == parse("大后天", today) == [today + dt.timedelta(days=3)]
    assert parse("一个月后", dt.date(2027, 1, 31)) == [dt.date(2027, 2, 28)]  # a month's last day, not past it


def test_weeks_and_months_on_out_of_reach_are_a_clarify_naming_the_day():
    from hybrid_weather.router import HybridRouter

    router = HybridRouter(provider="demo", ledger="off")
    sunday = dt.date(2026, 11, 29)
    for query, named in [("北京三个月后天气", "2027年2月28日"), ("北京三周后冷吗", "2026年12月20日"),
                         ("北京20天后会下雨吗", "2026年12月19日")]:  # fmt: skip
        decision = router.route(query, today=sunday)
        assert decision.route == "clarify" and named in decision.clarification, (query, decision)
    decision = router.route("上海上周末下雨了吗", today=sunday)
    assert (decision.route, decision.dates) == ("rule", [dt.date(2026, 11, 21), dt.date(2026, 11, 22)])
    decision = router.route("北京今个礼拜六冷吗", today=sunday)
    assert (decision.route, decision.dates) == ("rule", [dt.date(2026, 11, 28)]), decision.reason


_ENGLISH_MONTHS = {"jan": 1, "January": 1, "Feb": 2, "march": 3, "Apr": 4, "June": 6, "Jul": 7, "Aug": 8,
                   "Sept": 9, "Sep": 9, "October": 10, "Nov": 11, "Dec": 12, "December": 12}  # fmt: skip


def test_english_month_and_day_in_an_english_or_mixed_sentence():
    # beijing weather Dec 12, 北京 December 12th 天气 went to the LLM (dec12 unknown). A month's English name or
    # abbreviation with a day before or after it, with or without st/nd/rd/th or of, is that day, the nearest
    # such (as 12月12日 is); 12/12 in an English sentence is read as in a Chinese one.
    from hybrid_weather.router import HybridRouter

    router = HybridRouter(provider="demo", ledger="off")
    sunday = dt.date(2026, 11, 29)
    for (name, month), day in itertools.product(_ENGLISH_MONTHS.items(), [1, 2, 3, 12, 22, 31]):
        (expected,) = parse(f"{month}月{day}日", sunday) or [None]
        suffix = {1: "st", 2: "nd", 3: "rd", 22: "nd", 31: "st"}.get(day, "th")
        for form in [f"{name} {day}", f"{name}. {day}", f"{name} {day}{suffix}", f"{day}{suffix} {name}",
                     f"{day} {name}", f"the {day}{suffix} of {name}"]:  # fmt: skip
            for sentence in [f"beijing weather {form}", f"Will it rain in Shanghai on {form}?", f"北京 {form} 天气"]:
                got = [list(s.dates) for s in find_dates(normalize(sentence), sunday) if s.dates or s.kind == "en_md"]
                assert got == ([[expected]] if expected else [[]]), (sentence, got)
    for query, day in [("beijing weather Dec 12", dt.date(2026, 12, 12)),
                       ("北京 December 3rd 天气", dt.date(2026, 12, 3)),
                       ("Is it going to rain in Xiamen on 1st December?", dt.date(2026, 12, 1)),
                       ("shanghai weather 12/12", dt.date(2026, 12, 12))]:  # fmt: skip
        decision = router.route(query, today=sunday)
        assert (decision.route, decision.dates) == ("rule", [day]), (query, decision.reason)
    for not_a_date in ["it may rain", "march on", "dec", "sun 12", "12 decimal"]:
        assert [s for s in find_dates(normalize(not_a_date), sunday) if s.kind == "en_md"] == [], not_a_date
