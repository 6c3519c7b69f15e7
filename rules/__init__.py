"""The reading of a question: normalise, find dates, segment, and know places and words.

Everything here is deterministic, does no I/O beyond reading its own data files on first use, and
raises nothing on any input.
"""

from .china_time import (
    CHINA_TZ,
    CHINA_TZ_NAME,
    FIRST_DAY,
    LAST_DAY,
    WEEKDAY_CHARS,
    in_supported_range,
    today_in_china,
    weekday_char,
)
from .dates import DateSpan, find_dates, parse_number
from .gazetteer import ABOVE_TOWNSHIP, TOWNSHIP_SUFFIXES, Gazetteer, Place, PlaceLevel, PlaceMatch
from .geo import great_circle_km
from .lexicon import ASPECTS, WEATHER_ADVICE, Aspect, Lexicon, ThresholdSide
from .normalize import MAX_QUERY_CHARS, MAX_QUESTION_CHARS, asked_as_a_not_a, has_a_minus_sign, normalize
from .privacy import contains_personal_data, mask_personal_data
from .reader import Reader, Reading, Threshold, Tokens

__all__ = [
    "ABOVE_TOWNSHIP",
    "ASPECTS",
    "CHINA_TZ",
    "CHINA_TZ_NAME",
    "FIRST_DAY",
    "LAST_DAY",
    "MAX_QUERY_CHARS",
    "MAX_QUESTION_CHARS",
    "TOWNSHIP_SUFFIXES",
    "WEATHER_ADVICE",
    "WEEKDAY_CHARS",
    "Aspect",
    "DateSpan",
    "Gazetteer",
    "Lexicon",
    "Place",
    "PlaceLevel",
    "PlaceMatch",
    "Reader",
    "Reading",
    "Threshold",
    "ThresholdSide",
    "Tokens",
    "asked_as_a_not_a",
    "contains_personal_data",
    "find_dates",
    "great_circle_km",
    "has_a_minus_sign",
    "in_supported_range",
    "mask_personal_data",
    "normalize",
    "parse_number",
    "today_in_china",
    "weekday_char",
]
