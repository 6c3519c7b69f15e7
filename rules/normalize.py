"""Turn raw user text into the one canonical form the router reads.

Full-width to half-width, traditional to simplified, lower case, and away with what cannot be part
of a weather question: emoji, control characters, HTML tags and SQL-looking debris.
"""

from __future__ import annotations

import functools
import re
import unicodedata

from ._data import load_table

#: Longest normalised query the router reads; longer input is cut, not refused (no weather question
#: needs more, and the cut keeps every route() call cheap, even on a 1 MB string).
MAX_QUERY_CHARS = 200
# Raw text is cut before any other work; generous enough that debris removal cannot eat the question.
_MAX_RAW_CHARS = MAX_QUERY_CHARS * 8

# A-not-A questions (冷不冷, 下不下雨, 会唔会, 有没有, 暖和不暖和) ask the same as A: keep A.
_A_NOT_A = re.compile(r"([\u4e00-\u9fff]{1,2})[不没唔]\1")
_HAN_ONLY = re.compile("[\u4e00-\u9fff]+")


class _Cleaners:
    """The patterns only text with more than Han characters needs."""

    def __init__(self) -> None:
        # @mentions of a bot or a person in a chat ("@天气小助手 上海明天天气"): the name runs to the next
        # space, comma or colon; without one there is no telling where the name ends, so the text is left.
        self.mention = re.compile(r"@[^\s@,，:：]{1,30}[\s,，:：]+")
        self.html_tag = re.compile(r"<[^<>]{0,200}>|&[a-z]{2,8};|&#\d{1,6};")
        # Runs of non-Han text that look like injected SQL or script, e.g. "'; DROP TABLE users; --". A match
        # starts at the start of a run of quotes, or at the keyword itself: a pattern that could start
        # anywhere in a long run of quotes or spaces scanned it again from every position (1,600 took 80 ms).
        self.code_debris = re.compile(
            r"""(?:(?<!['"`;])['"`;]+\s*|\b)(?:drop|select|insert|delete|update|union|alter|truncate|script|exec)\b"""
            r"""[^\u3400-\u9fff]*""",
            re.IGNORECASE,
        )
        # Everything outside Han, ASCII letters and digits, and the punctuation dates and PM2.5 need, becomes
        # a space; the tokenizer treats spaces as boundaries, so "北京,上海" still reads as two places.
        self.not_kept = re.compile(r"[^\u3400-\u4dbf\u4e00-\u9fffa-z0-9.\-/:%'、 ]+")
        self.spaces = re.compile(r"\s+")
        # Latin letters run into digits (tokyo12.8, 3号beijing) are two words; pm2.5 and pm10 stay one.
        self.letters_digits = re.compile(r"(?<=[a-z])(?<!pm)(?=\d)|(?<=\d)(?=[a-z])|(?<=[a-z])(?=pm(?:2\.?5|10))")
        # Latin letters with accents (Ürümqi, Xī'ān): folded to plain letters, since names are typed either way.
        self.accented = re.compile("[\u00c0-\u024f]")
        self.dangling_dots = re.compile(r"(?<![0-9a-z])[.\-/:%']+|[.\-/:%']+(?![0-9a-z])")


@functools.cache
def _cleaners() -> _Cleaners:
    """Compiled on first use: ~8 ms of a cold CLI run (the code-debris pattern alone 5 ms), and most
    questions are Han characters only."""
    return _Cleaners()


@functools.cache
def _t2s_table() -> dict[int, str]:
    return str.maketrans(load_table("t2s")["chars"])


def to_simplified(text: str) -> str:
    """Map traditional Han characters to simplified ones, character by character (OpenCC's t2s table)."""
    return text.translate(_t2s_table())


def _fold_accent(match: re.Match[str]) -> str:
    return "".join(ch for ch in unicodedata.normalize("NFKD", match.group(0)) if not unicodedata.combining(ch))


def normalize(text: str) -> str:
    """Return TEXT in the form the router parses; never raises on any str."""
    if _HAN_ONLY.fullmatch(text):
        # Most questions are Han characters only: nothing to fold, strip or split but the A-not-A.
        return _A_NOT_A.sub(r"\1", to_simplified(text[:MAX_QUERY_CHARS]))
    clean = _cleaners()
    text = text[:_MAX_RAW_CHARS]
    text = unicodedata.normalize("NFKC", text).lower()
    text = to_simplified(text)
    if clean.accented.search(text):
        text = clean.accented.sub(_fold_accent, text)
    text = clean.mention.sub(" ", text)
    text = clean.html_tag.sub(" ", text)
    text = clean.code_debris.sub(" ", text)
    text = clean.not_kept.sub(" ", text)
    text = clean.dangling_dots.sub(" ", text)
    text = clean.letters_digits.sub(" ", text)
    text = clean.spaces.sub(" ", text).strip()
    text = _A_NOT_A.sub(r"\1", text)
    return text[:MAX_QUERY_CHARS].rstrip()
