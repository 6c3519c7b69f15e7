"""docs/reading.md states the order in which the parser tries its recoveries: the page is held to the code."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

from hybrid_weather.router import HybridRouter
from hybrid_weather.router.understand.parser import RECOVERIES

READING = Path(__file__).resolve().parents[1] / "docs" / "reading.md"


def test_the_reading_page_lists_the_recoveries_in_the_order_the_parser_tries_them():
    text = READING.read_text("utf-8")
    section = text.split("## 7. When the reading does not decide", 1)[1].split("\n## ", 1)[0]
    listed = re.findall(r"^\d+\. `([a-z_]+)`", section, flags=re.MULTILINE)
    assert tuple(listed) == RECOVERIES


def test_explain_shows_what_was_tried_and_why_each_was_set_aside():
    decision = HybridRouter(provider="demo").route("北京天七怎么样", today=dt.date(2026, 12, 7))
    assert decision.reason_code == "sound_alike"
    assert [name for name, _ in decision.tried] == list(RECOVERIES[: RECOVERIES.index("sound_alike") + 1])
    assert decision.tried[-1] == ("sound_alike", "decided")
    assert all(outcome != "decided" for _, outcome in decision.tried[:-1])
