"""Find the days a question asks about: relative words, weekdays, calendar dates and ranges.

Spans are found on the normalised string, before segmentation: jieba splits 下周三 into 下/周三 and
keeps 今天天气 as one token, so dates are matched here and cut out before the tokenizer runs.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable
from dataclasses import dataclass

from .china_time import WEEKDAY_CHARS

_NUM = r"[0-9零〇一二两三四五六七八九十]{1,3}"
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
# 周一 … 周日 (and 周天), or 周1 … 周7, to Python's weekday numbers (Monday = 0).
_WEEKDAYS = {
    **{char: number for number, char in enumerate(WEEKDAY_CHARS)},
    "天": 6,
    **{str(number + 1): number for number in range(7)},
}

# Single words and their offset in days from today.
_OFFSETS = {
    "大大后天": 4,
    "大后天": 3,
    "后天": 2,
    "明天": 1,
    "明日": 1,
    "明儿个": 1,
    "明儿": 1,
    "明早": 1,
    "明晚": 1,
    "明晨": 1,
    "明夜": 1,
    "明个": 1,
    "今天": 0,
    "今日": 0,
    "今儿个": 0,
    "今儿": 0,
    "今早": 0,
    "今晚": 0,
    "今晨": 0,
    "今夜": 0,
    "现在": 0,
    "此刻": 0,
    "当下": 0,
    "此时": 0,
    "今个": 0,
    "昨天": -1,
    "昨日": -1,
    "昨儿": -1,
    "昨晚": -1,
    "大前天": -3,
    "前天": -2,
    "day after tomorrow": 2,
    "tomorrow": 1,
    "today": 0,
    "tonight": 0,
    "yesterday": -1,
    "now": 0,
    "houtian": 2,
    "mingtian": 1,
    "jintian": 0,
    "zuotian": -1,
    "xianzai": 0,
}
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
}


def _alternatives(words: Iterable[str]) -> str:
    # Latin words need word boundaries ("now" must not match inside "snow"); Han text has none.
    ordered = sorted(words, key=len, reverse=True)
    return "|".join(rf"(?<![a-z]){re.escape(w)}(?![a-z])" if w.isascii() else re.escape(w) for w in ordered)


_PATTERN = re.compile(
    "|".join(
        [
            r"(?P<iso>(?P<iy>\d{4})[-/.年](?P<im>\d{1,2})[-/.月](?P<id>\d{1,2})[日号]?)",
            rf"(?P<md>(?P<mm>{_NUM})月(?P<mdd>{_NUM})[日号]?)",
            rf"(?P<later>(?P<ln>{_NUM})天[以之]?后)",
            r"(?P<week_ahead>(?:未来|接下来|往后|今后|最近)的?(?:一|1)?(?:周|个?星期|个?礼拜))",
            rf"(?P<next_n>(?:未来|接下来|最近|往后|今后|近)的?(?P<nn>{_NUM})[天日])",
            "(?P<range>" + _alternatives(_RANGES) + ")",
            r"(?P<weekend>(?P<wep>下个?|这个?|本|next )?(?:周末|(?<![a-z])weekend(?![a-z])))",
            r"(?P<weekday>(?P<wdp>下下个?|下个?|这个?|本|上个?)?(?:周|星期|礼拜)(?P<wd>["
            + WEEKDAY_CHARS
            + "1-7]|天(?!气)))",
            r"(?P<week>(?P<wkp>下个?|这个?|本)(?:周|星期|礼拜)|(?<![a-z])(?:next|this) week(?![a-z]))",
            rf"(?P<dom>(?P<dn>{_NUM})[号日])",
            "(?P<word>" + _alternatives(_OFFSETS) + ")",
        ]
    )
)


@dataclass(frozen=True, slots=True)
class DateSpan:
    """One date expression in the text: where it stands and the days it means (empty if impossible)."""

    start: int
    end: int
    text: str
    dates: tuple[dt.date, ...]


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


def find_dates(text: str, today: dt.date) -> list[DateSpan]:
    """Every date expression in normalised TEXT, in order, resolved against TODAY."""
    return [DateSpan(m.start(), m.end(), m.group(0), _resolve(m, today)) for m in _PATTERN.finditer(text)]


def _days(first: dt.date, count: int) -> tuple[dt.date, ...]:
    return tuple(first + dt.timedelta(days=i) for i in range(count))


def _safe_date(year: int, month: int, day: int) -> dt.date | None:
    try:
        return dt.date(year, month, day)
    except ValueError:
        return None


def _resolve(m: re.Match[str], today: dt.date) -> tuple[dt.date, ...]:
    # Each alternative is one outer named group, which closes last, so lastgroup names the alternative.
    kind = m.lastgroup
    monday = today - dt.timedelta(days=today.weekday())
    if kind == "iso":
        day = _safe_date(int(m["iy"]), int(m["im"]), int(m["id"]))
        return (day,) if day else ()
    if kind == "md":
        month, mday = parse_number(m["mm"]), parse_number(m["mdd"])
        if month is None or mday is None:
            return ()
        # No year given: the nearest such day, so 1月3日 asked in late November is next January.
        candidates = [d for y in (today.year - 1, today.year, today.year + 1) if (d := _safe_date(y, month, mday))]
        return (min(candidates, key=lambda d: abs((d - today).days)),) if candidates else ()
    if kind == "later":
        n = parse_number(m["ln"])
        return (today + dt.timedelta(days=n),) if n is not None else ()
    if kind == "week_ahead":
        return _days(today, 7)
    if kind == "next_n":
        n = parse_number(m["nn"])
        return _days(today, n) if n else ()
    if kind == "range":
        first, count = _RANGES[m["range"]]
        return _days(today + dt.timedelta(days=first), count)
    if kind == "weekend":
        saturday = monday + dt.timedelta(days=5)
        if (m["wep"] or "").startswith(("下", "next")):
            saturday += dt.timedelta(days=7)
        return tuple(d for d in _days(saturday, 2) if d >= today) or _days(saturday + dt.timedelta(days=7), 2)
    if kind == "weekday":
        weekday = _WEEKDAYS[m["wd"]]
        prefix = m["wdp"] or ""
        if prefix.startswith("下下"):
            return (monday + dt.timedelta(days=14 + weekday),)
        if prefix.startswith("下"):
            return (monday + dt.timedelta(days=7 + weekday),)
        if prefix.startswith("上"):
            return (monday + dt.timedelta(days=weekday - 7),)
        if prefix:
            return (monday + dt.timedelta(days=weekday),)
        # A bare weekday means its next occurrence, today included.
        return (today + dt.timedelta(days=(weekday - today.weekday()) % 7),)
    if kind == "week":
        text = m["week"]
        if text.startswith("下") or text == "next week":
            return _days(monday + dt.timedelta(days=7), 7)
        return _days(today, 7 - today.weekday())
    if kind == "dom":
        n = parse_number(m["dn"])
        if n is None:
            return ()
        # This month if the day is still to come, else next month.
        day = _safe_date(today.year, today.month, n)
        if day is None or day < today:
            year, month = (today.year + 1, 1) if today.month == 12 else (today.year, today.month + 1)
            day = _safe_date(year, month, n)
        return (day,) if day else ()
    return (today + dt.timedelta(days=_OFFSETS[m["word"]]),)
