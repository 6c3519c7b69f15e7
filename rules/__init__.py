"""The router's deterministic knowledge: gazetteer, nicknames, date words, aspect and open-ended lexicons."""

from .dates import DateSpan, find_dates
from .gazetteer import Gazetteer, Place, PlaceMatch
from .lexicon import ASPECTS, Lexicon
from .normalize import MAX_QUERY_CHARS, normalize

__all__ = ["ASPECTS", "MAX_QUERY_CHARS", "DateSpan", "Gazetteer", "Lexicon", "Place", "PlaceMatch", "find_dates", "normalize"]
