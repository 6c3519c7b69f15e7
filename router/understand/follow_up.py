"""Follow-ups in a conversation: fill what a question leaves out from the last rule answer."""

from __future__ import annotations

import datetime as dt

from hybrid_weather.rules import Place, PlaceMatch, Reading

from .decision import Decision

#: How many recent places a comparison without a count word means (这些城市哪个更热 → the last two).
DEFAULT_FOLLOW_UP_PLACES = 2


def borrow_context(
    reading: Reading, dates: list[dt.date], context: Decision, recent: list[Place], follow_up: bool
) -> tuple[list[dt.date], str]:
    """Fill READING and DATES from CONTEXT: 后天呢 keeps the place, 那上海呢 the day, 这两个城市哪个更热 the
    last two places asked about (the count comes from the words 两个/三个/几个, never from a character).

    Returns the dates to use and what was borrowed ("" when nothing was: 你好 is no follow-up).
    """
    if not (dates or reading.aspects or reading.compare or follow_up):
        return dates, ""
    borrowed = []
    if not reading.places:
        if reading.compare and len(context.places) < 2:
            count = DEFAULT_FOLLOW_UP_PLACES if reading.count is None else reading.count
            places = recent[-count:] if count else list(recent)
        else:
            places = list(context.places)
        reading.places = [(-len(places) + i, p.display, PlaceMatch((p,), "context")) for i, p in enumerate(places)]
        borrowed.append("places")
        if not dates:
            dates = list(context.dates)
            borrowed.append("dates")
        if not reading.aspects and context.aspect:
            reading.aspects.append(context.aspect)
            borrowed.append("aspect")
    elif not dates and not reading.aspects and not reading.compare:
        dates = list(context.dates)
        if context.aspect:
            reading.aspects.append(context.aspect)
        borrowed.append("dates, aspect")
    return dates, ", ".join(borrowed)
