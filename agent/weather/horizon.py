"""How far ahead and back a provider covers: the one place a date is checked against that limit."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from typing import NamedTuple


class Horizon(NamedTuple):
    """Days a provider covers around today (today itself is day 0)."""

    days_ahead: int  #: forecast days after today (Open-Meteo: 15, so 16 days with today)
    days_back: int  #: past days it keeps (Open-Meteo: 92)
    air_days_ahead: int  #: air-quality forecasts are shorter (Open-Meteo: 6, so 7 days with today)

    def first_outside(self, dates: Iterable[dt.date], today: dt.date, *, air: bool = False) -> dt.date | None:
        """The first of DATES this horizon does not cover, or None when it covers them all."""
        ahead = self.air_days_ahead if air else self.days_ahead
        for day in dates:
            offset = (day - today).days
            if offset > ahead or offset < -self.days_back:
                return day
        return None

    def explain(self, day: dt.date, label: str, *, air: bool = False, name: str | None = None) -> str:
        """Why DAY cannot be answered, in the words a user (or the LLM) reads; NAME is the named day it is
        (春节), so the user learns which date that was."""
        ahead = self.air_days_ahead if air else self.days_ahead
        back = f"和过去{self.days_back}天" if self.days_back else ""
        what = "空气质量" if air else "天气"
        date = f"{day.year}年{day.month}月{day.day}日"
        subject = f"{name}是{date}，" if name else f"{date}"
        return f"{label}只提供今天起{ahead + 1}天内{back}的{what}，{subject}不在范围内。"
