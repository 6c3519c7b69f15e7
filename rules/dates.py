"""Find the days a question asks about: relative words, weekdays, calendar dates, named days, ranges,
and the part of the day (今晚, 明天早上, 上班路上).

Spans are found on the normalised string, before segmentation: jieba splits 下周三 into 下/周三 and
keeps 今天天气 as one token, so dates are matched here and cut out before the tokenizer runs.

Conventions (docs/reading.md and docs/contracts.md): weeks start on Monday (ISO 8601, as Chinese calendars
print them), so on Sunday 这周三 is three days back and 下周三 is three days ahead; a bare weekday or
N号 is the next one, today included; a named day (春节, 中秋, 冬至) or a lunar date (农历十月廿五) is its
most recent occurrence in a question said in the past (下雨了吗), its next in one said of the future (会下雨吗),
and otherwise its next, or the last one if that was less than a week ago; 今年/明年/去年 pick the year.
"""

from __future__ import annotations

import datetime as dt
import functools
import re
from bisect import bisect_right
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from ._data import load_table
from .china_time import FIRST_DAY, LAST_DAY, WEEKDAY_CHARS
from .normalize import HAS_LATIN
from .trie import words_pattern

_CN_DIGITS = {
    "零": 0,
    "〇": 0,
    "一": 1,
    "二": 2,
    "两": 2,
    "三": 3,
    "四": 4,
    "五": 5,
    "六": 6,
    "七": 7,
    "八": 8,
    "九": 9,
}
_DIGITS = "0123456789"
#: The characters of a number up to 99 (parse_number reads it), and the pattern of one.
_NUM_CHARS = _DIGITS + "".join(_CN_DIGITS) + "十"
_NUM = f"[{_NUM_CHARS}]{{1,3}}"
# 周一 … 周日 (and 周天), or 周1 … 周7, to Python's weekday numbers (Monday = 0).
_WEEKDAYS = {
    **{char: number for number, char in enumerate(WEEKDAY_CHARS)},
    "天": 6,
    **{str(number + 1): number for number in range(7)},
}
_ENGLISH_MONTHS = {
    name: number
    for number, names in enumerate(
        (
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sept", "sep"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ),
        1,
    )
    for name in names
}
_ENGLISH_WEEKDAYS = {
    name: number
    for number, names in enumerate(
        (
            ("monday", "mon"),
            ("tuesday", "tue", "tues"),
            ("wednesday", "wed"),
            ("thursday", "thu", "thur", "thurs"),
            ("friday", "fri"),
            ("saturday", "sat"),
            ("sunday", "sun"),
        )
    )
    for name in names
}
#: Longest range a question may span (ranges are answered day by day); longer is not a weather question.
MAX_RANGE_DAYS = 31

#: Parts of the day and the local hours they cover (start inclusive, end exclusive).
Hours = tuple[int, int]
MORNING: Hours = (6, 12)
EVENING: Hours = (18, 24)
_PARTS: dict[str, Hours] = {
    "凌晨": (0, 6),
    "清晨": (5, 9),
    "早晨": (6, 9),
    "早上": (6, 9),
    "一早": (6, 9),
    "大清早": (5, 8),
    "上午": (8, 12),
    "中午": (11, 14),
    "午间": (11, 14),
    "晌午": (11, 14),
    "下午": (13, 18),
    "午后": (13, 18),
    "傍晚": (17, 20),
    "黄昏": (17, 20),
    "晚上": EVENING,
    "晚间": EVENING,
    "夜里": (20, 24),
    "夜间": (20, 24),
    "半夜": (22, 24),
    "深夜": (22, 24),
    "上半夜": (20, 24),
    "前半夜": (20, 24),
    # The night's hours after midnight: past 24, the next day's (明天后半夜 is the day after's 0 to 6 h).
    "下半夜": (24, 30),
    "后半夜": (24, 30),
    "白天": (8, 18),
    # The day's halves: its morning and its afternoon (明天上半天下雨吗).
    "上半天": (8, 12),
    "前半天": (8, 12),
    "下半天": (13, 18),
    "后半天": (13, 18),
    "日间": (8, 18),
    # What people are doing then: the usual hours of a commute or a school run.
    "上班路上": (7, 10),
    "上班的时候": (7, 10),
    "上班时": (7, 10),
    "早高峰": (7, 10),
    "通勤": (7, 10),
    "上学路上": (7, 9),
    "上学的时候": (7, 9),
    "下班路上": (17, 20),
    "下班的时候": (17, 20),
    "下班时": (17, 20),
    "晚高峰": (17, 20),
    "放学的时候": (15, 18),
    "放学时": (15, 18),
    "放学": (15, 18),
    "午休": (12, 14),
    "this morning": (6, 12),
    "morning": (6, 12),
    "this afternoon": (12, 18),
    "afternoon": (12, 18),
    "this evening": EVENING,
    "evening": EVENING,
    "night": EVENING,
}

# Single words and their offset in days from today, and the part of that day some of them name.
_OFFSETS = {
    "大大后天": 4,
    "大后天": 3,
    "大后儿个": 3,
    "大后儿": 3,
    "大后日": 3,
    "后天": 2,
    "后日": 2,
    "后儿个": 2,
    "后儿": 2,
    "明天": 1,
    "明日": 1,
    "明儿个": 1,
    "明个儿": 1,
    "明儿": 1,
    "明早": 1,
    "明晚": 1,
    "明晨": 1,
    "明夜": 1,
    "明个": 1,
    # The day after today, said as the next one (北京次日天气, 第二天会下雨吗, 隔天冷吗).
    "次日": 1,
    "翌日": 1,
    "隔天": 1,
    "第二天": 1,
    # Cantonese 听日/听朝 and Wu 明朝 (in a weather question, tomorrow; not the Ming dynasty).
    "听日": 1,
    "听朝": 1,
    "明朝": 1,
    "今天": 0,
    "今日": 0,
    "今儿个": 0,
    "今个儿": 0,
    "今儿": 0,
    "今早": 0,
    "今晚": 0,
    "今晨": 0,
    "今夜": 0,
    "今朝": 0,
    "现在": 0,
    "此刻": 0,
    "当下": 0,
    "此时": 0,
    "今个": 0,
    "当天": 0,
    "当日": 0,
    "眼下": 0,
    "这会儿": 0,
    # A while from now or ago, said of today (北京一会儿会下雨吗, 待会儿冷吗, 刚才下雨了吗): today's weather.
    "一会儿": 0,
    "一会": 0,
    "待会儿": 0,
    "待会": 0,
    "等会儿": 0,
    "等会": 0,
    "等一会儿": 0,
    "过会儿": 0,
    "过一会儿": 0,
    "过一会": 0,
    "稍后": 0,
    "马上": 0,
    "刚才": 0,
    "刚刚": 0,
    "昨天": -1,
    "昨日": -1,
    "昨儿个": -1,
    "昨儿": -1,
    "昨晚": -1,
    "琴日": -1,
    "寻日": -1,
    "大前天": -3,
    "前天": -2,
    "前日": -2,
    "前儿": -2,
    "前儿个": -2,
    "大前儿个": -3,
    "大前儿": -3,
    "day after tomorrow": 2,
    "tomorrow morning": 1,
    "tomorrow night": 1,
    "tomorrow evening": 1,
    "tomorrow": 1,
    # How chat spells them (beijing tmr weather).
    "tmr": 1,
    "tmrw": 1,
    "tdy": 0,
    "tonite": 0,
    "today": 0,
    "tonight": 0,
    "yesterday": -1,
    "now": 0,
    "right now": 0,
    "houtian": 2,
    "mingtian": 1,
    "jintian": 0,
    "zuotian": -1,
    "xianzai": 0,
    "jinwan": 0,
    "mingwan": 1,
}
_OFFSET_PARTS: dict[str, Hours] = {
    "明早": (6, 9),
    "明晨": (5, 9),
    "明晚": EVENING,
    "明夜": (20, 24),
    "今早": (6, 9),
    "今晨": (5, 9),
    "今晚": EVENING,
    "今夜": (20, 24),
    "昨晚": EVENING,
    "听朝": (6, 12),
    "tonight": EVENING,
    "tonite": EVENING,
    "tomorrow morning": (6, 12),
    "tomorrow night": EVENING,
    "tomorrow evening": EVENING,
    "jinwan": EVENING,
    "mingwan": EVENING,
}
# A few days ahead, said without a count (未来几天, 后面几天): as many as 这几天 and 最近 are.
_A_FEW_DAYS = 3
# A few days ago (北京前两天冷吗, 前几天下雨了吗): the days before today; right after a day, the days before it.
_DAYS_AGO = {"前两天": (-2, 2), "前几天": (-3, 3), "前些天": (-3, 3), "前些日子": (-3, 3)}
# Ranges given as (first offset, number of days).
_RANGES = {
    "今明后三天": (0, 3),
    "今明后": (0, 3),
    "今明两天": (0, 2),
    "今明两日": (0, 2),
    "今明": (0, 2),
    "明后两天": (1, 2),
    "明后两日": (1, 2),
    "明后天": (1, 2),
    "明后": (1, 2),
    "这两天": (0, 2),
    "这几天": (0, 3),
    "这几日": (0, 3),
    "最近几天": (0, 3),
    "近几天": (0, 3),
    "最近两天": (0, 2),
    "近两天": (0, 2),
    "未来几天": (0, 3),
    "接下来几天": (0, 3),
    # The near term said without a count (北京近期天气, 最近会下雨吗): the same few days as 这几天.
    "近期": (0, 3),
    "最近": (0, 3),
    "近日": (0, 3),
    "这阵子": (0, 3),
    "这段时间": (0, 3),
    "next few days": (0, 3),
    "next couple of days": (0, 2),
    "this week": (0, 7),
    # In a few days (北京过两天会降温吗): not today or tomorrow, the few after.
    "过两天": (2, 2),
    "过几天": (2, 3),
    "几天后": (2, 3),
    "几天以后": (2, 3),
    "几天之后": (2, 3),
    "过些天": (2, 3),
    **_DAYS_AGO,
    # Half a month and a month ahead (a month is more than any provider covers: its answer says so).
    "未来半个月": (0, 15),
    "接下来半个月": (0, 15),
    "未来一个月": (0, 30),
    "接下来一个月": (0, 30),
}
# What joins two date expressions into a range: 周一到周三, 从明天至后天, 3号~5号.
_RANGE_JOINS = frozenset({"到", "至", "~", "-", "—", "一直到", "直到", "to", "until", "through"})
_RANGE_FROM = ("从", "由", "from")
# 下 as in "next" (下周三), but not the 下 of 一下 (查一下周庄, 看一下星期六: check on Saturday).
_NEXT = "(?<!一)下"
# 上 as in "last" (上周末), but not the 上 of 赶上, 碰上, 遇上 (赶上周末: falls on the weekend).
_LAST = "(?<![赶碰遇])上"
_YEAR_WORDS = {"今年": 0, "明年": 1, "去年": -1}
# What may follow the hour of a clock time: 半, 一刻, 整, 30, 30分, 二十, 十五分.
_CLOCK_MINUTES = r"半|[一三]刻|整|[0-5]?\d分?|[二三四五]?十[一二三四五六七八九]?分?|[一二三四五六七八九]分"
# 一点 and 两点 are also "a little" (冷一点, 穿厚一点): a time only with 钟 or minutes after them, or right
# after a day or a part of the day (明天一点, 凌晨两点).
_LITTLE = frozenset({"一", "两", "二"})
# What follows a bare count of days for it to be the days ahead: the weather asked for (三天天气, 7天的天气预报),
# or 内, within, which the span takes (三天内会下雨吗).
_AHEAD = "(?:[之以]?内|(?=的?(?:天气|预报)))"
# The parts of a month (月初, 月底, 中旬) and their first and last days; a last day past the month's is its end.
_MONTH_PARTS = {"初": (1, 5), "上旬": (1, 10), "中": (11, 20), "中旬": (11, 20), "下旬": (21, 31), "底": (-4, 31),
                "末": (-4, 31)}  # fmt: skip
_MONTH_PART = "|".join(sorted(_MONTH_PARTS, key=len, reverse=True))
# What follows this week or this month to say the rest of it (这周剩下的几天, 本月剩余时间): the days from today
# on, which is what 这周 and 这个月 are anyway.
_REST = r"(?:剩下|剩余|余下|其余|剩)的?(?:这?几天|[一两二三四五六七]天|日子|时间|几日)?"
_NAMED_DAY_MARKERS = r"(?:节气)?(?:那天|那日|当天|这天|那一天|当日)?"
# What says which occurrence of a named day is meant (上个中秋, 刚过的冬至, 下一个春节): the last or the next.
_NAMED_WHICH = "(?P<named_which>上一?个|刚过去的|刚过的|过去的|(?<!一)下一?个)"
# What makes a question about a day one said in the past, after the day: it asks whether something happened
# (下雨了吗, 下了没, 下过雪吗; not 过后, after) or tells it (那天下雨了), or says when it was (当时, 已经); and
# one said of the future: 会, 将, 要 (会下雨吗, 要下雪吗). Which occurrence of a named or lunar day is meant
# follows from it.
# (Patterns as text: re compiles and keeps them on first use, not at import.)
_SAID_PAST = r"了没|过[雨雪风]?(?:吗|么|没)|当时|已经"
_SAID_PAST_AT_END = r"了[吗么嘛不呢吧啊呀]?\s*$"
_SAID_FUTURE = "[会将要]"
# A named day said without a tense is its next occurrence, or the last one if it was this recently: 双十一
# asked on the 12th means yesterday.
_RECENTLY_DAYS = 7
# The lunar calendar (农历十月廿五, 腊月初八): its months (正月 the first, 冬月 the eleventh, 腊月 the twelfth, or
# by number, 闰 before one its leap repeat) and its days (初一 … 初十, 十一 … 二十, 廿一 … 廿九, 三十). After 农历,
# 阴历 or 旧历 any month and day, Arabic numerals too; without, a month only the lunar calendar names (正月,
# 冬月, 腊月) or a day only it says (初五, 廿三): 十月十五 stays October's.
_LUNAR_MONTH_WORDS = {"正": 1, "冬": 11, "腊": 12}
_LUNAR_DAY = (
    r"初(?:十|[一二三四五六七八九])|廿[一二三四五六七八九]|二十[一二三四五六七八九]?|十[一二三四五六七八九]?|三十|卅"
)
_LUNAR_NUMBERED = r"十[一二]?|[一二三四五六七八九]"
_LUNAR_MARKERS = ("农历", "阴历", "旧历")


@functools.cache
def _calendar() -> tuple[dict[str, str], dict[str, list[dt.date]]]:
    """Named-day words → canonical name, and each name's dates (rules/data/calendar.json)."""
    table: dict[str, Any] = load_table("calendar")
    dates = {name: [dt.date.fromisoformat(d) for d in days] for name, days in table["dates"].items()}
    return dict(table["words"]), dates


def _han_kinds(named: list[str], words: list[str]) -> list[tuple[set[str], str]]:
    """Each kind of Han date, in the order they are tried (the first that matches wins), as (the
    characters it can start with, its pattern); NAMED days and single WORDS (dates, ranges, parts of the
    day) as tries of those words."""
    this = {"这", "本"}  # 这周, 本月
    return [
        (set(_DIGITS), r"(?P<iso>(?P<iso_year>\d{4})[-/.年](?P<iso_month>\d{1,2})[-/.月](?P<iso_day>\d{1,2})[日号]?)"),
        # 农历十月廿五, 腊月初八, 十月初一: a lunar month and day (tried before 12月 and 十月初, early October).
        ({w[0] for w in _LUNAR_MARKERS} | set(_LUNAR_MONTH_WORDS) | set("闰十一二三四五六七八九"),
         rf"(?=[^月]{{0,{_MONTH_REACH-1}}}月)(?P<lunar>(?:{'|'.join(_LUNAR_MARKERS)})(?P<lunar_leap>闰)?(?P<lunar_month>正|冬|腊|{_LUNAR_NUMBERED}|1[0-2]|0?[1-9])"
         rf"月份?的?(?P<lunar_day>{_LUNAR_DAY}|[12]\d|30|0?[1-9])(?!\d)[日号]?"
         rf"|(?P<lunar_leap_named>闰)?(?:(?P<lunar_month_named>[正冬腊])月(?P<lunar_day_named>{_LUNAR_DAY})"
         rf"|(?P<lunar_month_numbered>{_LUNAR_NUMBERED})月(?P<lunar_day_numbered>初(?:十|[一二三四五六七八九])|廿[一二三四五六七八九])))"),
        # 12月第一个周日, 这个月最后一个周五, 下个月第二个周六: the Nth (or last) weekday of a month. This kind and the
        # lunar one look for their 月 first: they are tried at every numeral, and most numerals are no month.
        ({"下", "上", *this} | set(_NUM_CHARS),
         rf"(?=[^月]{{0,3}}月)(?P<nth>(?:(?P<nth_month>{_NUM})|(?P<nth_month_said>{_NEXT}下个?|{_NEXT}个?|这个?|本|上个?))月份?的?"
         r"(?:第(?P<nth_count>[一二三四五1-5])个?|(?P<nth_last>最后一?个?|倒数第一个?))(?:周|星期|礼拜)"
         r"(?P<nth_weekday>[" + WEEKDAY_CHARS + r"1-7]|天(?!气)))"),
        (set(_NUM_CHARS), rf"(?P<md>(?P<md_month>{_NUM})月(?P<md_day>{_NUM})[日号]?)"),
        # 12.5, 12/8, 12.5号, 12-5: month and day, unless they are a number with a unit (2.5度, 2.5℃ — 2.5 c once
        # normalised —, 5-10度) or part of one (pm2.5). With a dash, not before 号, 日 or 点 (3-5号 is the 3rd to
        # the 5th, 1-2点 hours), nor before 天 or 周 that count (3-5天后, 1-2周内, 3-5天天气; but 12-5天气 and 12-5天儿
        # are a day's weather, 12-6周庄 a day and a place).
        (set(_DIGITS), r"(?P<numeric>(?<![\da-z.-])(?P<numeric_month>1[0-2]|0?[1-9])"
                       r"(?:[./](?P<numeric_day>3[01]|[12]\d|0?[1-9])[号日]?|-(?P<numeric_day_dashed>3[01]|[12]\d|0?[1-9])(?![号日点]|[天周](?=[后内以之前天的]|$)))"
                       r"(?![\d./-]|\s*(?:度|摄氏|℃|°|c(?![a-z])|%|毫米|mm|米|公里|km|元|块|倍|级)))"),
        ({"下", "上", *this},
         rf"(?P<month_rel>(?P<month_rel_which>{_NEXT}下个?|{_NEXT}个?|上个?|这个?|本)月(?P<month_rel_day>{_NUM})[日号])"),
        # 月底, 这个月下旬, 下个月初, 12月中旬: a part of a month; 12月, 下个月: the whole month.
        ({"下", "月", "上", "中", *this} | set(_NUM_CHARS),
         rf"(?P<month_part>(?:(?P<month_number>{_NUM})|(?P<month_which>{_NEXT}下个?|{_NEXT}个?|这个?|本))月份?(?:(?P<month_part_said>{_MONTH_PART})|{_REST})?"
         rf"|月(?P<month_part_bare>{_MONTH_PART})|(?P<ten_days>[上中下]旬))"),
        # 年底, 明年初: the end of December, the start of January. A kind of its own, so that 今 and 明, which
        # start many questions, do not compile the month's long pattern.
        ({"年", "今", "明"}, r"(?P<year_part>(?P<year_which>[今明])?年(?P<year_part_said>[底末初]))"),
        ({w[0] for w in named} | _NAMED_WHICH_STARTS if named else set(),  # no words: no kind (not an empty one)
         rf"(?P<named>{_NAMED_WHICH}?(?P<named_word>{words_pattern(named)}){_NAMED_DAY_MARKERS})"),
        # 三天后, 一周以后, 三个月后, 半个月后: that many days, weeks or months on; 三天前, 两周前: that many ago.
        (set(_NUM_CHARS) | {"半"},
         rf"(?P<later>(?:(?P<later_count>{_NUM})(?P<later_unit>天|周|个?星期|个?礼拜|个月)|半个月)[以之]?(?P<later_way>[后前]))"),
        # 三天天气, 7天天气预报, 一周天气, 三天内: a bare count of days (not 日: 5日 is a day of the month) or a
        # week is the days ahead where the weather follows it, or 内.
        (set("未接往今最一1"), r"(?P<week_ahead>(?:(?:未来|接下来|往后|今后|最近)的?(?:一|1)?(?:周|个?星期|个?礼拜))"
                             rf"|[一1](?:周|个?星期|个?礼拜){_AHEAD})"),
        # 未来三天, 往后五天, 后面几天 (几: a few, three), 这三天, 三天天气: the days ahead.
        (set("未接最往今近后头以这") | set(_NUM_CHARS),
         rf"(?P<next_n>(?:未来|接下来|最近|往后|今后|以后|后面|近|这)的?(?:这)?(?P<next_count>{_NUM}|几)[天日]"
         rf"|[后头]?(?P<bare_count>{_NUM})天{_AHEAD})"),
        # 周六日 is 周六 and 周日 (not 周六 and its 日出, sunrise); 上周末, 上个周末: last week's.
        ({"下", "上", "周", *this},
         rf"(?P<weekend>(?P<weekend_which>{_NEXT}下个?|{_NEXT}个?|{_LAST}上?个?|这个?|本)?(?:周末|周六日(?![出落]))(?:两天)?)"),
        # 工作日, 下周工作日: the working days of a week, as 周末 are its days off.
        ({"下", "周", "星", "礼", "工", *this},
         rf"(?P<workdays>(?P<workdays_which>{_NEXT}下个?|{_NEXT}个?|这个?|本)?(?:周|星期|礼拜)?工作日)"),
        # 周天气 is the week's weather, but 星期天气温 is Sunday's temperature. 今个礼拜六, 今儿个周三: this week's
        # (今个 alone is today).
        ({"下", "上", "周", "星", "礼", "今", *this},
         rf"(?P<weekday>(?P<weekday_which>{_NEXT}下个?|{_NEXT}个?|这个?|本|上个?|今(?:儿个|个儿?))?"
         r"(?:周(?P<weekday_said>[" + WEEKDAY_CHARS + r"1-7]|天(?!气))"
         r"|(?:星期|礼拜)(?P<weekday_said_long>[" + WEEKDAY_CHARS + r"1-7]|天(?!气(?!温)))))"),
        ({"下", *this}, rf"(?P<week>(?P<week_which>{_NEXT}下个?|{_NEXT}个?|这个?|本)(?:周|星期|礼拜)(?:{_REST})?)"),
        (set(_NUM_CHARS), rf"(?P<dom>(?P<dom_day>{_NUM})[号日])"),
        # 3点, 下午三点半 (the 下午 is a part of the day of its own), 8:30, 十点一刻: an hour of the day.
        (set(_NUM_CHARS),
         rf"(?P<clock>(?P<clock_hour>{_NUM})(?:点钟?|[:：](?=[0-5]\d))(?P<clock_minutes>{_CLOCK_MINUTES})?)"),
        # 前两天, 前几天 (a few days ago), but not before 后: 鄂托克前几天后 is 鄂托克前 (a banner) and 几天后.
        ({w[0] for w in _DAYS_AGO}, "(?P<ago>(?:" + words_pattern(list(_DAYS_AGO)) + ")(?![以之]?后))"),
        ({w[0] for w in words}, "(?P<word>" + words_pattern(words) + ")"),
    ]  # fmt: skip


def _han_words() -> tuple[list[str], list[str]]:
    """The named days' words and the single Han date words (dates, ranges, parts of the day)."""
    return list(_calendar()[0]), [w for w in (*_OFFSETS, *_RANGES, *_PARTS) if not w.isascii() and w not in _DAYS_AGO]


_NAMED_WHICH_STARTS = {"上", "刚", "过", "下"}


@functools.cache
def _han_starts() -> re.Pattern[str]:
    """The characters a Han date can start with. Most characters of a question start none: the scan
    looks for these, then tries there only the kinds that can start with that character."""
    starts = set().union(*(chars for chars, _ in _han_kinds(*_han_words())))
    return re.compile("[" + "".join(sorted(re.escape(ch) for ch in starts)) + "]")


#: A lunar date (农历十月廿五) or the Nth weekday of a month (12月第一个周日) has its 月 within its first this many
#: characters: the patterns of both look for it first, and neither is compiled or tried where there is none.
_MONTH_REACH = 6
#: How the patterns that look for their 月 first begin (the lunar and the Nth weekday's).
_MONTH_FIRST = "(?=[^月]{0,"


@functools.cache
def _named_which() -> re.Pattern[str]:
    return re.compile(_NAMED_WHICH)


def _han_pattern_at(text: str, at: int) -> re.Pattern[str] | None:
    """The pattern of the Han dates that can start at AT of TEXT: those that start with its character, less
    the kinds that cannot match there. A named day starts with that character unless 上个, 刚过的 or the like
    is said there first (上个中秋); a lunar or Nth-weekday date needs a 月 near. Most questions that hold 上
    (上海) say neither: the pattern a cold run compiles for them is a quarter of the one of every named day."""
    first = text[at]
    which = first in _NAMED_WHICH_STARTS and _named_which().match(text, at) is not None
    return _han_pattern(first, which, "月" in text[at : at + _MONTH_REACH])


@functools.lru_cache(maxsize=1024)  # at most four per character that starts a Han date: a few dozen of them
def _han_pattern(first: str, which: bool, month: bool) -> re.Pattern[str] | None:
    """The kinds of Han date that can start with the character FIRST, as one pattern, compiled on first
    use; the named days of every first character where WHICH (said after 上个), else of FIRST alone; those
    that look for a 月 first only where MONTH; None where none can match. One pattern of every kind would
    try all 13 at each position that may start a date, and a cold run compiles only the few a question
    needs, not all of them."""
    named, words = _han_words()
    named = [w for w in named if w[0] == first or which]
    words = [w for w in words if w[0] == first]
    kinds = [
        pattern
        for chars, pattern in _han_kinds(named, words)
        if first in chars and (month or not pattern.startswith(_MONTH_FIRST))
    ]
    # None where no kind is left (阴 of 阴天 starts only 阴历…月…): an empty pattern would match everywhere.
    return re.compile("|".join(kinds)) if kinds else None


@functools.cache
def _latin_pattern() -> re.Pattern[str]:
    """The English and pinyin dates, run only on text with Latin letters: an alternation of Latin words
    with word-boundary lookarounds is slow to try at every Han position."""
    latin = [w for w in (*_OFFSETS, *_RANGES, *_PARTS) if w.isascii()]
    months = "|".join(sorted(_ENGLISH_MONTHS, key=len, reverse=True))
    return re.compile(
        r"(?<![a-z])(?:"
        + "|".join(
            [
                r"(?P<week>(?P<week_which>next|this) week)",
                # 3pm, 8:30 am, at 11 a.m.: an hour of the day that says which half (not the 8pm of 12.8pm2.5).
                r"(?P<en_clock>(?:at )?(?<![\d.:])(?P<en_hour>1[0-2]|0?[1-9])(?::[0-5]\d)? ?"
                r"(?P<en_half>am|pm|[ap]\.m\.?)(?![\d.]))",
                r"(?P<next_n>(?:the )?next (?P<en_count>\d{1,2}|two|three|four|five|seven) days)",
                # Dec 12, December 12th, 12th December, (on) the 12th of Dec: a month's name and a day.
                r"(?P<en_md>(?:on )?(?:the )?(?:(?P<en_month>"
                + months
                + r") (?P<en_day>[0-3]?\d)(?!\d)(?: ?(?:st|nd|rd|th))?"
                r"|(?<![\d./:-])(?P<en_day_first>[0-3]?\d) ?(?:st|nd|rd|th)?(?: of)? (?P<en_month_after>"
                + months
                + r")))",
                r"(?P<weekend>(?P<weekend_which>next |this )?weekend)",
                r"(?P<en_weekday>(?P<en_weekday_which>next |this |on )?(?P<en_weekday_said>"
                + "|".join(sorted(_ENGLISH_WEEKDAYS, key=len, reverse=True))
                + "))",
                "(?P<word>" + "|".join(re.escape(w) for w in sorted(latin, key=len, reverse=True)) + ")",
            ]
        )
        + r")(?![a-z])"
    )


class DateSpan(NamedTuple):
    """One date expression in the text: where it stands and the days it means.

    `dates` is empty for an impossible date (2月30日) and for a part of the day alone (早上), which
    names `hours` instead; `name` is the named day it was (春节), for messages. A NamedTuple, not a frozen
    dataclass: as immutable, and built much faster (every question makes one or more).
    """

    start: int
    end: int
    text: str
    dates: tuple[dt.date, ...]
    hours: Hours | None = None
    name: str | None = None
    kind: str = ""

    @property
    def is_part_of_day(self) -> bool:
        """A part of the day (早上) or a time (3点, 3pm): hours, no day of their own."""
        return self.kind == "part" or self.is_clock_time

    @property
    def is_clock_time(self) -> bool:
        """A time of day: 3点 ("clock": the hour as said, read within the part of the day said with it) or
        3pm ("hour": the hour itself)."""
        return self.kind in _CLOCK_KINDS


def date_words() -> list[str]:
    """Every Han word that is a date or a part of the day on its own (for sound-alike repair)."""
    words = [*_OFFSETS, *_RANGES, *_PARTS, *_calendar()[0]]
    return [w for w in words if not w.isascii()]


def parse_number(text: str) -> int | None:
    """Read an Arabic or Chinese numeral up to 99 (十五, 二十一, 两, 7); None if it is not one."""
    if text.isdigit():
        return int(text)
    if "十" in text:
        tens, _, units = text.partition("十")
        if (tens and tens not in _CN_DIGITS) or (units and units not in _CN_DIGITS):
            return None
        return (_CN_DIGITS[tens] if tens else 1) * 10 + (_CN_DIGITS[units] if units else 0)
    if len(text) == 1 and text in _CN_DIGITS:
        return _CN_DIGITS[text]
    return None


def _count(text: str) -> tuple[int, int] | None:
    """The fewest and the most a count says: 三 and 3 (3, 3); an approximate one, two neighbouring numerals or
    三五, (2, 3) for 两三, (11, 12) for 十一二 and (3, 5) for 三五 (两三天: two or three days; 七八点: seven or
    eight o'clock)."""
    n = parse_number(text)
    if n is not None:
        return n, n
    if len(text) >= 2 and text[-1] in _CN_DIGITS and (first := parse_number(text[:-1])) is not None:
        units, last = first % 10, _CN_DIGITS[text[-1]]
        if units and (last == units + 1 or (units, last) == (3, 5)):  # 两三, 十一二 (eleven or twelve), 三五
            return first, first - units + last
    return None


def find_dates(text: str, today: dt.date) -> list[DateSpan]:
    """Every date expression in normalised TEXT, in order, resolved against TODAY.

    Two expressions joined by 到/至/~ (从X到Y) become one span with every day between them.
    """
    spans = [_span(m, today, text) for m in _han_matches(text)]
    if HAS_LATIN.search(text):
        latin = [_span(m, today, text) for m in _latin_pattern().finditer(text)]
        # A Latin date over a Han one (12/12 of dec 12/12) is not a second date: the first found stands.
        latin = [s for s in latin if not any(h.start < s.end and s.start < h.end for h in spans)]
        spans = sorted(spans + latin, key=lambda s: s.start)
    if "前" in text:
        spans = _until(text, spans, today)
    if "点" in text and ("前" in text or "后" in text):
        spans = _from_or_until_the_hour(text, spans)
    if "前后" in text or "左右" in text:
        spans = _around(text, spans)
    if "天" in text and any(span.kind in _PERIODS for span in spans):
        spans = _counted_within(text, spans)
    if len(spans) < 2:
        return spans  # most questions: nothing to join
    if "的" in text:
        spans = _composed(text, spans)
    return _join_ranges(text, _in_one_week(text, spans))


#: The kinds of date that are a period whose first or last days may be counted (下周前两天, 一月头五天).
_PERIODS = frozenset({"week", "month_part", "weekend"})
_COUNTED = re.compile(r"(?:的)?(前|头|后|最后)([0-9一二两三四五六七八九十]{1,3})天")


def _counted_within(text: str, spans: list[DateSpan]) -> list[DateSpan]:
    """SPANS, with a period followed by a count of its first or last days (下周前两天, 下周后三天, 一月头五天,
    11月最后三天) as those days: not the period whole, nor a count of days ago (前两天) beside it."""
    at = 0
    while at < len(spans):
        span = spans[at]
        found = _COUNTED.match(text, span.end) if span.kind in _PERIODS and span.dates else None
        count = parse_number(found.group(2)) if found else None
        if found is None or count is None or not 0 < count <= len(span.dates):
            at += 1
            continue
        days = span.dates[:count] if found.group(1) in ("前", "头") else span.dates[-count:]
        counted = DateSpan(span.start, found.end(), text[span.start : found.end()], days, kind="span")
        rest = [later for later in spans[at + 1 :] if later.start >= found.end()]
        spans[at:] = [counted, *rest]
        at += 1
    return spans


#: The kinds of date said from a day (today, unless another day is said before it with 的): 明天, 周二, 三天后.
_FROM_A_DAY = frozenset({"word", "weekday", "later"})


def _composed(text: str, spans: list[DateSpan]) -> list[DateSpan]:
    """SPANS, with a day said of another day (六周前的今天, 三周前的周二, 昨天的明天, 下周三的后天) as the one day
    it means: the second said from the first, not from today, and not a second day beside it."""
    at = 0
    while at + 1 < len(spans):
        first, then = spans[at], spans[at + 1]
        if (
            text[first.end : then.start] == "的"
            and len(first.dates) == 1
            and first.kind in _ONE_DAY_KINDS
            and then.kind in _FROM_A_DAY
            and len(then.dates) == 1
        ):
            again = find_dates(then.text, first.dates[0])
            if len(again) == 1 and again[0].text == then.text and len(again[0].dates) == 1:
                spans[at : at + 2] = [
                    DateSpan(first.start, then.end, text[first.start : then.end], again[0].dates, kind=again[0].kind)
                ]
                continue
        at += 1
    return spans


def _until(text: str, spans: list[DateSpan], today: dt.date) -> list[DateSpan]:
    """SPANS, with a day said before 之前, 以前 or 前 (周五之前, 月底前) as every day from today to it: the days
    until then, that one included (MAX_RANGE_DAYS of them at most: the horizon says the rest are too far). Not
    a count of days (三天前: three days ago), a day past, nor 前后 (around). Before 天气 the 前天 found there is
    no date (周五前天气: until Friday, the weather; not Friday and the day before yesterday)."""
    at = 0
    while at < len(spans):
        span = spans[at]
        after = next((word for word in _BEFORE if text.startswith(word, span.end)), None)
        at += 1
        if after is None or not span.dates or span.kind in _NOT_UNTIL or span.dates[-1] < today:
            continue
        end = span.end + len(after)
        ago = spans[at] if at < len(spans) and spans[at].start == span.end else None
        if ago is not None and ago.text in _DAYS_AGO and span.kind in _ONE_DAY_KINDS:
            # 周五前两天, 5号前几天: the days just before that day, as many as the words count
            count, day = len(ago.dates), span.dates[0]
            days = tuple(d for d in (_shift(day, -n) for n in range(count, 0, -1)) if d is not None)
            spans[at - 1 : at + 1] = [DateSpan(span.start, ago.end, text[span.start : ago.end], days, kind="span")]
            continue
        if _weathers_tian(text, spans, at, end, "前天"):
            del spans[at]
        elif text.startswith(("后", "天"), end) or (at < len(spans) and spans[at].start < end):
            continue  # 前后 (around), or a date that begins in the 前 (周五前日: Friday, the day before yesterday)
        count = min((span.dates[-1] - today).days + 1, MAX_RANGE_DAYS)
        spans[at - 1] = DateSpan(
            span.start, end, text[span.start : end], _days(today, count), span.hours, span.name, "until"
        )
    return spans


def _from_or_until_the_hour(text: str, spans: list[DateSpan]) -> list[DateSpan]:
    """SPANS, with a clock time said before 之前, 以前 or 前 (早上8点前: until that hour) or before 之后, 以后 or 后
    (下午5点以后: from that hour on) as such; not where a date begins in that word (8点后天: 后天 is a day),
    unless its 天 is the weather's (8点后天气)."""
    for at, span in enumerate(spans):
        if span.kind != "clock":
            continue
        kind, word = "clock_until", next((w for w in _BEFORE if text.startswith(w, span.end)), None)
        if word is None:
            kind, word = "clock_from", next((w for w in _AFTER if text.startswith(w, span.end)), None)
        if word is None:
            continue
        end = span.end + len(word)
        if _weathers_tian(text, spans, at + 1, end, "前天" if kind == "clock_until" else "后天"):
            del spans[at + 1]  # 8点后天气: after 8, the weather; not 8 o'clock and the day after tomorrow
        elif at + 1 < len(spans) and spans[at + 1].start < end:
            continue
        spans[at] = span._replace(end=end, text=text[span.start : end], kind=kind)
    return spans


_AFTER = ("之后", "以后", "后")
#: The kinds of a time of day: said (3点, read within the part of the day), said with its half (3pm), and a
#: time said until (8点前) or from (5点以后).
_CLOCK_KINDS = frozenset({"clock", "hour", "clock_until", "clock_from"})


def _around(text: str, spans: list[DateSpan]) -> list[DateSpan]:
    """SPANS, with a day said before 前后 or 左右 (12月5号前后, 春节左右) as that day and the one on either side.
    Before 天气 the 后天 found in 前后天气 is no date, as 前天 in 周五前天气 is not."""
    for at, span in enumerate(spans):
        if span.kind in _ONE_DAY_KINDS and span.dates and text.startswith(_AROUND, span.end):
            end = span.end + 2
            if _weathers_tian(text, spans, at + 1, end, "后天"):
                del spans[at + 1]
            elif at + 1 < len(spans) and spans[at + 1].start < end:
                continue  # a date that begins in the 前后 (周五前后日)
            day = span.dates[0]
            days = tuple(d for d in (_shift(day, -1), day, _shift(day, 1)) if d is not None)
            spans[at] = DateSpan(span.start, end, text[span.start : end], days, span.hours, span.name, "around")
    return spans


_AROUND = ("前后", "左右")
# The kinds of date that name one day (周末, a week or a part of a month is a period, even when one day is left).
_ONE_DAY_KINDS = frozenset(
    {
        "iso",
        "md",
        "numeric",
        "month_rel",
        "named",
        "later",
        "weekday",
        "en_weekday",
        "dom",
        "word",
        "lunar",
        "nth",
        "en_md",
    }
)


def _weathers_tian(text: str, spans: list[DateSpan], at: int, end: int, word: str) -> bool:
    """Whether SPANS[AT] is WORD begun in the last character of what ends at END and followed by 气: in
    周五前天气 and 5号前后天气 the 前天 and 后天 are no dates, their 天 is the weather's."""
    return (
        at < len(spans)
        and spans[at].start == end - 1
        and spans[at].text == word
        and text.startswith("气", spans[at].end)
    )


# What follows a day to say until it (周五之前), and the kinds of date it does not follow so: counts of days
# before 前 are days ago (三天前), and ranges already say their days.
_BEFORE = ("之前", "以前", "前")
_NOT_UNTIL = frozenset({"later", "next_n", "week_ahead", "range", "part", "clock", "hour", "en_clock"})


def _in_one_week(text: str, spans: list[DateSpan]) -> list[DateSpan]:
    """SPANS, with weekdays named one after another in the week's order (周六周日, 周五和周六, 星期六、星期天)
    as days of one week: a later one without a 这 or 下 of its own is the first of its name after the day
    before it. Each alone is the next of its name, today included, so on a Sunday 周六周日 was the coming
    Saturday and today."""
    for at in range(1, len(spans)):
        before, span = spans[at - 1], spans[at]
        if not (before.kind == span.kind == "weekday" and before.dates and span.dates):
            continue
        first, second = before.dates[0], span.dates[0]
        if (
            second < first
            and second.isoweekday() > first.isoweekday()
            and span.text.startswith(_BARE_WEEKDAY)
            and text[before.end : span.start].strip() in _WEEKDAY_JOINS
        ):
            spans[at] = span._replace(dates=(second + dt.timedelta(days=7),))
    return spans


# What a weekday said with no 这, 下 or 上 of its own starts with, and what may stand between two said together.
_BARE_WEEKDAY = ("周", "星期", "礼拜")
_WEEKDAY_JOINS = frozenset({"", "和", "、", "跟", "与", "及", "或", "或者", "and", "or"})


def _han_matches(text: str) -> list[re.Match[str]]:
    """The Han dates of TEXT, left to right, each looked for after the last: at each character that can
    start one, the first kind that matches there."""
    matches: list[re.Match[str]] = []
    end = 0
    for start in _han_starts().finditer(text):
        at = start.start()
        pattern = _han_pattern_at(text, at) if at >= end else None
        if pattern is not None and (m := pattern.match(text, at)) is not None:
            if m.lastgroup == "clock" and not _is_clock(m, text):
                continue
            matches.append(m)
            end = m.end()
    return matches


def _is_clock(m: re.Match[str], text: str) -> bool:
    """Whether a match of the clock pattern is a time of day (not 冷一点, a little colder; not 30点)."""
    counted = _count(m["clock_hour"])  # 七八点: seven or eight o'clock
    if counted is None or counted[1] > 24 or (m.start() > 0 and text[m.start() - 1] in _NUM_CHARS):
        return False  # not an hour, or the end of a longer number (30点 is no 0点)
    if text[m.end() :].lstrip().startswith(("am", "pm", "a.m", "p.m")):
        return False  # 8:30am: the English time, which says its half
    if m["clock_hour"] not in _LITTLE or m["clock_minutes"] or text.startswith("点钟", m.end("clock_hour")):
        return True
    return text.endswith(_clock_leads(), 0, m.start())


@functools.cache
def _clock_leads() -> tuple[str, ...]:
    """The Han words after which 一点 and 两点 are times: days and parts of the day (明天, 凌晨, 今晚)."""
    return tuple(w for w in (*_OFFSETS, *_PARTS, *_OFFSET_PARTS) if not w.isascii())


def _span(m: re.Match[str], today: dt.date, text: str) -> DateSpan:
    # Each alternative is one outer named group, which closes last, so lastgroup names the alternative.
    kind, word, start = m.lastgroup or "", m.group(0), m.start()
    if kind == "word":  # one alternation holds the single words, the ranges and the parts of the day
        kind = "part" if word in _PARTS else "range" if word in _RANGES else kind
    elif kind == "ago":  # a range of its own pattern, for what may not follow it
        kind = "range"
    if kind == "part":
        return DateSpan(start, m.end(), word, (), _PARTS[word], None, kind)
    if kind == "clock":  # the hour as said (3 of 下午3点): the parser reads it within the part of the day
        first, last = _count(m["clock_hour"]) or (0, 0)  # 七八点: from the first hour to the end of the last
        return DateSpan(start, m.end(), word, (), (first, last + 1), None, kind)
    if kind == "en_clock":  # 3pm: the hour itself, 0-23
        hour = int(m["en_hour"]) % 12 + (12 if m["en_half"].startswith("p") else 0)
        return DateSpan(start, m.end(), word, (), (hour, hour + 1), None, "hour")
    if kind in ("named", "lunar"):
        # 今年/明年/去年 (的) before a named day or a lunar date pick its year.
        year_word = next((y for y in _YEAR_WORDS if text[:start].rstrip("的").endswith(y)), None)
        if year_word:
            start = text.rindex(year_word, 0, start)
        tense = _tense(text, m.end(), m["named_which"] if kind == "named" else None)
        if kind == "named":
            day = _named_day(m["named_word"], year_word, today, tense)
            name = _calendar()[0][m["named_word"]]
        else:
            day = _lunar_day(m, year_word, today, tense)
            # 正月十五 is 元宵节, for messages; another lunar date is named as said (农历十月廿五是…).
            said = word.removeprefix(word[:2]) if word.startswith(_LUNAR_MARKERS) else word
            name = _calendar()[0].get(said, word)
        return DateSpan(start, m.end(), text[start : m.end()], (day,) if day else (), None, name, kind)
    key = (kind, word, today)
    days = _resolved.get(key)
    if days is None:
        if len(_resolved) >= _RESOLVED_SIZE:
            _resolved.clear()
        days = _resolved[key] = _resolve(m, kind, today)
    return DateSpan(start, m.end(), word, days, _OFFSET_PARTS.get(word), None, kind)


# The days of a date word on a given day, kept: a day's questions share a few dozen date words (明天, 周末),
# and resolving one costs more than the rest of its span. The matched text and its kind fix every group
# _resolve reads; named days are not kept (a year word before them counts too).
_RESOLVED_SIZE = 4_096
_resolved: dict[tuple[str, str, dt.date], tuple[dt.date, ...]] = {}


def _join_ranges(text: str, spans: list[DateSpan]) -> list[DateSpan]:
    joined: list[DateSpan] = []
    for span in spans:
        previous = joined[-1] if joined else None
        if (
            previous is not None
            and previous.dates
            and span.dates
            and not previous.is_part_of_day
            and text[previous.end : span.start].strip() in _RANGE_JOINS
        ):
            start_text = text[: previous.start].rstrip()
            begin = previous.start
            for word in _RANGE_FROM:
                if start_text.endswith(word):
                    begin = len(start_text) - len(word)
            first, last = previous.dates[0], _range_end(previous, span)
            days = _days(first, (last - first).days + 1) if first <= last else ()
            if len(days) > MAX_RANGE_DAYS:
                days = ()
            joined[-1] = DateSpan(begin, span.end, text[begin : span.end], days, kind="span")
        else:
            joined.append(span)
    return joined


def _range_end(first: DateSpan, second: DateSpan) -> dt.date:
    """The last day of a range: a bare day of the month keeps the first's month (12月1号至3号), and a
    bare weekday is the first of its name from the first day on (上周一到周三, 周五到周一)."""
    end = second.dates[-1]
    start = first.dates[0]
    if second.kind == "dom" and first.kind in ("md", "iso", "numeric", "month_rel"):
        same_month = _safe_date(start.year, start.month, end.day)
        if same_month is not None and same_month >= start:
            return same_month
    if second.kind == "weekday" and first.kind == "weekday" and second.text.startswith(_BARE_WEEKDAY):
        # 上周一到周三, 下周五到周日: a bare weekday ends the range in the first day's week, or the next
        return start + dt.timedelta(days=(end.isoweekday() - start.isoweekday()) % 7)
    if end < start and second.kind in ("weekday", "en_weekday"):
        return end + dt.timedelta(days=7 * ((start - end).days // 7 + 1))
    return end


def _days(first: dt.date, count: int) -> tuple[dt.date, ...]:
    return tuple(first + dt.timedelta(days=i) for i in range(count))


def _safe_date(year: int, month: int, day: int) -> dt.date | None:
    try:
        return dt.date(year, month, day)
    except (ValueError, OverflowError):
        return None


def _shift(today: dt.date, days: int) -> dt.date | None:
    try:
        return today + dt.timedelta(days=days)
    except OverflowError:
        return None


def _resolve(m: re.Match[str], kind: str, today: dt.date) -> tuple[dt.date, ...]:
    """The days the date expression M of KIND means, asked on TODAY: by the kind's resolver (_ONE_DAY for the
    kinds that name one day, _DAYS for periods; an approximate count, 两三天后, is a period of its own)."""
    one = _ONE_DAY.get(kind)
    if one is not None and (day := one(m, today)) is not None:
        return (day,)
    many = _DAYS.get(kind)
    return many(m, today) if many is not None else ()


def _monday(today: dt.date) -> dt.date:
    return today - dt.timedelta(days=today.weekday())


def _later_days(m: re.Match[str], today: dt.date) -> tuple[dt.date, ...]:
    """两三天后, 三四周前: an approximate count, every day from the fewest to the most."""
    said = m["later_count"]
    counted = _count(said) if said is not None and m["later_unit"] != "个月" else None
    if counted is None:
        return ()
    unit, sign = (1 if m["later_unit"] == "天" else 7), (1 if m["later_way"] == "后" else -1)
    earliest = _shift(today, sign * counted[0 if sign > 0 else 1] * unit)
    spanned = (counted[1] - counted[0]) * unit + 1
    return _days(earliest, spanned) if earliest is not None and spanned <= MAX_RANGE_DAYS else ()


def _next_n_days(m: re.Match[str], today: dt.date) -> tuple[dt.date, ...]:
    """未来三天, 往后几天 (几: a few), the next 3 days: that many days from today."""
    groups = m.groupdict()
    said = groups.get("next_count") or groups.get("bare_count")
    counted = _count(said) if said and said != "几" else None
    n = _A_FEW_DAYS if said == "几" else counted[1] if counted else _english_number(groups.get("en_count"))
    return _days(today, n) if n and n <= MAX_RANGE_DAYS else ()


def _workdays(m: re.Match[str], today: dt.date) -> tuple[dt.date, ...]:
    """工作日: Monday to Friday from today on; none left this week (a Saturday): next week's."""
    week = _monday(today) + dt.timedelta(days=7 * _weeks_on(m.groupdict().get("workdays_which")))
    return tuple(d for d in _days(week, 5) if d >= today) or _days(week + dt.timedelta(days=7), 5)


def _weekend(m: re.Match[str], today: dt.date) -> tuple[dt.date, ...]:
    """周末: the Saturday and Sunday to come; 上周末: last week's, both past."""
    weeks = _weeks_on(m.groupdict().get("weekend_which"))
    saturday = _monday(today) + dt.timedelta(days=5 + 7 * weeks)
    if weeks < 0:
        return _days(saturday, 2)
    return tuple(d for d in _days(saturday, 2) if d >= today) or _days(saturday + dt.timedelta(days=7), 2)


def _week(m: re.Match[str], today: dt.date) -> tuple[dt.date, ...]:
    """下周: that week's seven days; 这周: what is left of this one."""
    weeks = _weeks_on(m.groupdict().get("week_which"))
    return _days(_monday(today) + dt.timedelta(days=7 * weeks), 7) if weeks else _days(today, 7 - today.weekday())


def _weeks_on(prefix: str | None) -> int:
    """How many weeks after this one a week's PREFIX names: 下下 (个) two, 下 (个) and next one, 上 (个) one
    back, 上上 (个) two back, else none."""
    if not prefix:
        return 0
    if prefix.startswith("上"):
        return -2 if prefix.startswith("上上") else -1
    return 2 if prefix.startswith("下下") else 1 if prefix.startswith(("下", "next")) else 0


def _add_months(today: dt.date, months: int) -> dt.date | None:
    """The day MONTHS months from TODAY, the same day of the month or that month's last (1月31日 + 1: 2月28日)."""
    year, month = divmod(today.year * 12 + today.month - 1 + months, 12)
    if not FIRST_DAY.year <= year <= LAST_DAY.year:
        return None
    month += 1
    length = (dt.date(year + month // 12, month % 12 + 1, 1) - dt.date(year, month, 1)).days
    return dt.date(year, month, min(today.day, length))


def _nth_weekday(m: re.Match[str], today: dt.date) -> dt.date | None:
    """12月第一个周日, 这个月最后一个周五: the Nth or last weekday of a month said by its number (this year's while
    it lasts, as 12月 is) or relative to this one; None if it has no such (a fifth Monday)."""
    if m["nth_month"] is not None:
        month = parse_number(m["nth_month"])
        if month is None or not 1 <= month <= 12:
            return None
        year = today.year if month >= today.month else today.year + 1
    else:
        said = m["nth_month_said"]
        step = 2 if said.startswith("下下") else 1 if said.startswith("下") else -1 if said.startswith("上") else 0
        year, month = divmod(today.year * 12 + today.month - 1 + step, 12)
        month += 1
    weekdays = [d for d in _month_days(year, month, None) if d.weekday() == _WEEKDAYS[m["nth_weekday"]]]
    nth = -1 if m["nth_last"] else parse_number(m["nth_count"])
    if nth is None or not weekdays or nth > len(weekdays):
        return None
    return weekdays[nth if nth < 0 else nth - 1]


def _month_part(m: re.Match[str], today: dt.date) -> tuple[dt.date, ...]:
    """The days of a month or a part of one from today on. A month said by its number is its next (this one
    while it lasts); a part said without a month is this month's, or next month's once it has passed (月初
    asked on the 29th is the coming one). A part of a month said that has passed keeps its days (the horizon
    then says they are past)."""
    part = m["month_part_said"] or m["month_part_bare"] or m["ten_days"]
    if m["month_number"] is not None:
        month = parse_number(m["month_number"])
        if month is None or not 1 <= month <= 12:
            return ()
        year = today.year if month >= today.month else today.year + 1
    else:
        step = (
            2 if (m["month_which"] or "").startswith("下下") else 1 if (m["month_which"] or "").startswith("下") else 0
        )
        year, month = divmod(today.year * 12 + today.month - 1 + step, 12)
        month += 1
    days = _month_days(year, month, part)
    ahead = tuple(day for day in days if day >= today)
    if not ahead and m["month_number"] is None and m["month_which"] is None:
        year, month = divmod(year * 12 + month, 12)
        return _month_days(year, month + 1, part)
    return ahead or days


def _year_part(part: str, which: str | None, today: dt.date) -> tuple[dt.date, ...]:
    """年底, 今年年末, 明年初: the last days of December or the first of January (PART 底, 末 or 初) of the year
    WHICH (今, 明) says, from today on; 年初 said alone once this year's has passed is the next year's."""
    month = 1 if part == "初" else 12
    days = _month_days(today.year + (which == "明"), month, part)
    if which is None and days and days[-1] < today:
        days = _month_days(today.year + 1, month, part)
    return tuple(day for day in days if day >= today) or days


def _month_days(year: int, month: int, part: str | None) -> tuple[dt.date, ...]:
    """The days of PART of the month (all of them for None)."""
    if not FIRST_DAY.year <= year <= LAST_DAY.year:
        return ()
    start = dt.date(year, month, 1)
    length = (dt.date(year + month // 12, month % 12 + 1, 1) - start).days  # not calendar: 3 ms to import
    first, last = _MONTH_PARTS[part] if part else (1, 31)
    first, last = (length + first if first < 0 else first), min(last, length)
    return _days(start.replace(day=first), last - first + 1)


def _iso_day(m: re.Match[str], today: dt.date) -> dt.date | None:
    return _safe_date(int(m["iso_year"]), int(m["iso_month"]), int(m["iso_day"]))


def _nearest(month: int | None, mday: int | None, today: dt.date) -> dt.date | None:
    """A month and day said without a year: the nearest such day, so 1月3日 asked in late November is next
    January's."""
    if month is None or mday is None:
        return None
    candidates = [d for y in (today.year - 1, today.year, today.year + 1) if (d := _safe_date(y, month, mday))]
    return min(candidates, key=lambda d: abs((d - today).days)) if candidates else None


def _month_and_day(m: re.Match[str], today: dt.date) -> dt.date | None:
    """12月8日, 十二月八号."""
    return _nearest(parse_number(m["md_month"]), parse_number(m["md_day"]), today)


def _numeric_day(m: re.Match[str], today: dt.date) -> dt.date | None:
    """12.8, 12/8, 12-8."""
    return _nearest(int(m["numeric_month"]), int(m["numeric_day"] or m["numeric_day_dashed"]), today)


def _english_day(m: re.Match[str], today: dt.date) -> dt.date | None:
    """Dec 12, the 12th of December."""
    month = _ENGLISH_MONTHS[m["en_month"] or m["en_month_after"]]
    return _nearest(month, int(m["en_day"] or m["en_day_first"]), today)


def _day_of_a_month_said(m: re.Match[str], today: dt.date) -> dt.date | None:
    """下个月3号, 这个月15日: a day of the month said relative to this one."""
    n = parse_number(m["month_rel_day"])
    which = m["month_rel_which"]
    step = {"下下": 2, "下": 1, "上": -1}.get(which[:2] if which.startswith("下下") else which[:1], 0)
    year, month = divmod(today.year * 12 + today.month - 1 + step, 12)
    return _safe_date(year, month + 1, n) if n is not None else None


def _later_day(m: re.Match[str], today: dt.date) -> dt.date | None:
    """三天后, 两周前, 三个月后, 半个月后; None for an approximate count (两三天后), which _later_days reads."""
    sign = 1 if m["later_way"] == "后" else -1  # 三天前: three days ago
    if m["later_count"] is None:  # 半个月后: half a month, fifteen days
        return _shift(today, sign * 15)
    counted = _count(m["later_count"])
    if m["later_unit"] == "个月" and counted is not None:  # 三个月后; 两三个月后: far enough that the first will do
        return _add_months(today, sign * counted[0 if sign > 0 else 1])
    n = parse_number(m["later_count"])
    if n is None:
        return None
    return _shift(today, sign * (n if m["later_unit"] == "天" else n * 7))


def _weekday(m: re.Match[str], today: dt.date) -> dt.date | None:
    """周三, 下周三, 下下周三, 上周三, 这周三; a bare weekday is its next occurrence, today included."""
    weekday, which = _WEEKDAYS[m["weekday_said"] or m["weekday_said_long"]], m["weekday_which"] or ""
    monday = _monday(today)
    if which.startswith("下下"):
        return monday + dt.timedelta(days=14 + weekday)
    if which.startswith("下"):
        return monday + dt.timedelta(days=7 + weekday)
    if which.startswith("上"):
        return monday + dt.timedelta(days=weekday - 7)
    if which:
        return monday + dt.timedelta(days=weekday)
    return today + dt.timedelta(days=(weekday - today.weekday()) % 7)


def _english_weekday(m: re.Match[str], today: dt.date) -> dt.date | None:
    weekday = _ENGLISH_WEEKDAYS[m["en_weekday_said"]]
    if (m["en_weekday_which"] or "").startswith("next"):
        return _monday(today) + dt.timedelta(days=7 + weekday)
    return today + dt.timedelta(days=(weekday - today.weekday()) % 7)


def _day_of_this_month(m: re.Match[str], today: dt.date) -> dt.date | None:
    """15号: this month's if the day is still to come, else next month's."""
    n = parse_number(m["dom_day"])
    if n is None:
        return None
    day = _safe_date(today.year, today.month, n)
    if day is None or day < today:
        year, month = (today.year + 1, 1) if today.month == 12 else (today.year, today.month + 1)
        day = _safe_date(year, month, n)
    return day


#: The resolvers of the kinds of date that name one day (named and lunar days are resolved in _span, with the
#: tense the words around them give).
_ONE_DAY: dict[str, Callable[[re.Match[str], dt.date], dt.date | None]] = {
    "iso": _iso_day,
    "md": _month_and_day,
    "numeric": _numeric_day,
    "en_md": _english_day,
    "month_rel": _day_of_a_month_said,
    "later": _later_day,
    "nth": _nth_weekday,
    "weekday": _weekday,
    "en_weekday": _english_weekday,
    "dom": _day_of_this_month,
    "word": lambda m, today: _shift(today, _OFFSETS[m.group(0)]),
}
#: The resolvers of the kinds of date that name a period (or, for `later`, an approximate count of days).
_DAYS: dict[str, Callable[[re.Match[str], dt.date], tuple[dt.date, ...]]] = {
    "month_part": _month_part,
    "year_part": lambda m, today: _year_part(m["year_part_said"], m["year_which"], today),
    "later": _later_days,
    "week_ahead": lambda m, today: _days(today, 7),
    "next_n": _next_n_days,
    "range": lambda m, today: _days(today + dt.timedelta(days=_RANGES[m.group(0)][0]), _RANGES[m.group(0)][1]),
    "workdays": _workdays,
    "weekend": _weekend,
    "week": _week,
}


def _named_day(word: str, year_word: str | None, today: dt.date, tense: int) -> dt.date | None:
    """The date of a named day: in the year 今年/明年/去年 names, else its occurrence TENSE picks."""
    words, dates = _calendar()
    days = dates[words[word]]
    if year_word:
        year = today.year + _YEAR_WORDS[year_word]
        return next((d for d in days if d.year == year), None)
    return _occurrence(days, today, tense)


def _tense(text: str, end: int, which: str | None) -> int:
    """How a question says a named or lunar day that ends at END: -1 in the past (上个中秋; 中秋下雨了吗, 下了没,
    那天下雨了), 1 of the future (下个中秋; 中秋会下雨吗, 要下雪吗), 0 neither. WHICH is the word before the day
    (上个, 下个) that says so itself. Whether it happened (了没, 下过雪吗) outweighs a modal; a modal (会) outweighs
    a clause that ends in 了, which may say a change to come (要冷了)."""
    if which:
        return 1 if which.startswith("下") else -1
    after = text[end:]
    if re.search(_SAID_PAST, after):
        return -1
    if re.search(_SAID_FUTURE, after):
        return 1
    return -1 if re.search(_SAID_PAST_AT_END, after) else 0


def _occurrence(days: Sequence[dt.date], today: dt.date, tense: int) -> dt.date | None:
    """Of DAYS (sorted), the one a question said in TENSE means: in the past, the most recent (today included);
    of the future, the next (today included); otherwise the next, or the last if it was under a week ago."""
    if tense < 0:
        at = bisect_right(days, today)
        return days[at - 1] if at else None
    earliest = today if tense > 0 else today - dt.timedelta(days=_RECENTLY_DAYS)
    return next((d for d in days if d >= earliest), None)


@functools.cache
def _lunar_years() -> tuple[list[dt.date], dict[int, tuple[dt.date, int, tuple[int, ...]]]]:
    """The lunar years of calendar.json: their first days in order, and each year's first day, leap month (0:
    none) and months' lengths, the leap month right after the month it repeats."""
    rows = load_table("calendar")["lunar"]["rows"]
    years = {year: (dt.date.fromisoformat(first), leap, tuple(months)) for year, first, leap, months in rows}
    return sorted(first for first, _, _ in years.values()), years


def _lunar_to_date(year: int, month: int, day: int, leap: bool) -> dt.date | None:
    """The day of lunar YEAR, MONTH (its leap repeat if LEAP) and DAY, or None: a year outside the table, a leap
    month the year lacks, or a day past its month's end (三十 of a 29-day month)."""
    entry = _lunar_years()[1].get(year)
    if entry is None:
        return None
    first, leap_month, lengths = entry
    if leap and leap_month != month:
        return None
    index = month - 1 + (1 if leap_month and (leap or month > leap_month) else 0)
    if not 1 <= day <= lengths[index]:
        return None
    return first + dt.timedelta(days=sum(lengths[:index]) + day - 1)


def _lunar_day(m: re.Match[str], year_word: str | None, today: dt.date, tense: int) -> dt.date | None:
    """The day a lunar date means: in the lunar year 今年/明年/去年 names (the one today is in, or a neighbour),
    else its occurrence TENSE picks. A leap month is looked for in every year (it comes back every few)."""
    month_said = m["lunar_month"] or m["lunar_month_named"] or m["lunar_month_numbered"]
    day_said = m["lunar_day"] or m["lunar_day_named"] or m["lunar_day_numbered"]
    leap = bool(m["lunar_leap"] or m["lunar_leap_named"])
    month = _LUNAR_MONTH_WORDS.get(month_said) or parse_number(month_said)
    day = (
        30
        if day_said == "卅"
        else 20 + _CN_DIGITS[day_said[1]]
        if day_said[0] == "廿"
        else parse_number(day_said.removeprefix("初"))
    )
    if month is None or day is None or not 1 <= month <= 12:
        return None
    firsts, years = _lunar_years()
    this_year = min(years) - 1 + bisect_right(firsts, today)  # the lunar year today is in
    if year_word:
        return _lunar_to_date(this_year + _YEAR_WORDS[year_word], month, day, leap)
    searched = sorted(years) if leap else range(this_year - 1, this_year + 2)
    days = [d for year in searched if (d := _lunar_to_date(year, month, day, leap)) is not None]
    return _occurrence(days, today, tense)


def _english_number(text: str | None) -> int | None:
    if text is None:
        return None
    return int(text) if text.isdigit() else {"two": 2, "three": 3, "four": 4, "five": 5, "seven": 7}.get(text)
