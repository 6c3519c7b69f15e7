"""Time facts every layer shares: China's time zone and how Chinese calendars name the weekdays."""

from __future__ import annotations

import datetime as dt

#: The IANA name of China's one time zone, as providers and the LLM's system prompt expect it.
CHINA_TZ_NAME = "Asia/Shanghai"
#: Asia/Shanghai has had no daylight saving time since 1991, so a fixed offset is exact and needs no tzdata.
CHINA_TZ = dt.timezone(dt.timedelta(hours=8), CHINA_TZ_NAME)
#: Weekday characters, Monday first (ISO 8601, as Chinese calendars print weeks): 周一 … 周日.
WEEKDAY_CHARS = "一二三四五六日"


def today_in_china() -> dt.date:
    """Today's date in China, the default `today` of every question."""
    return dt.datetime.now(CHINA_TZ).date()


def weekday_char(day: dt.date) -> str:
    """一 … 日 for DAY (so 周{…} or 星期{…} reads as a Chinese calendar does)."""
    return WEEKDAY_CHARS[day.weekday()]


#: The days a question may be asked on (`today`): dates are resolved up to a year or so around today, and
#: Python's dates end at year 9999, so far-off days are refused rather than overflowed.
FIRST_DAY = dt.date(1970, 1, 1)
LAST_DAY = dt.date(2099, 12, 31)


def in_supported_range(day: dt.date) -> bool:
    """Whether DAY can be a question's `today` (FIRST_DAY to LAST_DAY)."""
    return FIRST_DAY <= day <= LAST_DAY
