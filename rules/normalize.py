"""Turn raw user text into the one canonical form the router reads.

Full-width to half-width, traditional to simplified, lower case, and away with what cannot be part
of a weather question: emoji, control characters, HTML tags and SQL-looking debris.
"""

from __future__ import annotations

import functools
import re
import unicodedata

from ._data import load_table
from .privacy import EMAIL

#: Longest normalised query the router reads; longer input is cut, not refused (no weather question
#: needs more, and the cut keeps every route() call cheap, even on a 1 MB string).
MAX_QUERY_CHARS = 200
#: Longest question asked at all, as given: a longer one is refused by ask() and aask() (InvalidQuestion:
#: exit 2 in the CLI, HTTP 422 from `serve`), before any LLM sees it; whatever reaches the ledger or a
#: report by another way is cut to it. route() still never refuses: it reads MAX_QUERY_CHARS of any text.
MAX_QUESTION_CHARS = 2_000
# Raw text is cut before any other work; generous enough that debris removal cannot eat the question.
_MAX_RAW_CHARS = MAX_QUERY_CHARS * 8

# A-not-A questions (冷不冷, 下不下雨, 会唔会, 有没有, 暖和不暖和) ask the same as A: keep A.
_A_NOT_A_NEGATIONS = "不没唔"
# Han characters and ASCII digits (8点, 30度, 12月5日): what every step of the full path leaves as it is.
_HAN_AND_DIGITS = re.compile("[\u4e00-\u9fff0-9]+")
#: What normalize() keeps besides Han characters (a class for re): every other character becomes a space.
KEPT_BESIDES_HAN = r"a-z0-9.\-/:%'、"
#: Whether normalised text holds Latin letters (normalize() lowercases them): only then are the English and
#: pinyin patterns worth trying.
HAS_LATIN = re.compile("[a-z]")
# Han text and figures with punctuation between the words (上海，明天8点？ 【深圳】今天天气): every one of these
# marks, after NFKC, is outside what the full path keeps, so each run of them becomes one space there too.
_SEPARATORS = '，。？！?!,;；~～“”‘’"（）()【】《》「」『』·—\u3000 \t\n'


@functools.cache
def _han_and_separators() -> re.Pattern[str]:
    # This and _a_not_a() are compiled on first use: a class over the Han block is slow to compile
    # (re fills a table character by character), and a question of Han characters only needs neither.
    return re.compile(f"[\u4e00-\u9fff0-9{re.escape(_SEPARATORS)}]+")


@functools.cache
def _spelled_out() -> re.Pattern[str]:
    # Three or more Han characters one at a time with spaces between them (北 京 明 天 天 气: typed so, or
    # from a speech engine): the tokenizer would cut at every space, so no word would be read.
    return re.compile(f"(?<![\u4e00-\u9fff])[\u4e00-\u9fff](?:[{_SPACES}]+[\u4e00-\u9fff](?![\u4e00-\u9fff])){{2,}}")


def _joined_where_spelled_out(text: str) -> str:
    """TEXT with the spaces inside every run of Han characters spelled out one at a time taken away."""
    if _SPACE_SET.isdisjoint(text) or not _han().search(text):  # an English question: ~1.5 us spared
        return text
    return _spelled_out().sub(lambda m: "".join(m.group(0).split()), text)


@functools.cache
def _han() -> re.Pattern[str]:
    # Compiled on first use, as the classes above: only text with spaces asks (a cold run's question has none).
    return re.compile("[\u4e00-\u9fff]")


_SPACES = " \t\u3000"
_SPACE_SET = frozenset(_SPACES)


@functools.cache
def _a_not_a() -> re.Pattern[str]:
    return re.compile(rf"([\u4e00-\u9fff]{{1,2}})[{_A_NOT_A_NEGATIONS}]\1")


class _Cleaners:
    """The patterns only text with more than Han characters needs."""

    def __init__(self) -> None:
        # @mentions of a bot or a person in a chat ("@天气小助手 上海明天天气"): the name runs to the next
        # space, comma or colon; without one there is no telling where the name ends, so the text is left.
        self.mention = re.compile(r"@[^\s@,，:：]{1,30}[\s,，:：]+")
        self.html_tag = re.compile(r"<[^<>]{0,200}>|&[a-z]{2,8};|&#\d{1,6};")
        # Chat stickers pasted as text: WeChat's and QQ's [捂脸], [微笑], [666], [OK] (a word in ASCII
        # brackets; 【北京】, in Chinese brackets, is a heading and kept).
        self.sticker = re.compile(r"\[[^\[\]\s]{1,8}\]")
        # Runs of non-Han text that look like injected SQL or script, e.g. "'; DROP TABLE users; --". A match
        # starts at the start of a run of quotes, or at the keyword itself: a pattern that could start
        # anywhere in a long run of quotes or spaces would scan it again from every position (quadratic).
        self.code_debris = re.compile(
            r"""(?:(?<!['"`;])['"`;]+\s*|\b)(?:""" + "|".join(_CODE_WORDS) + r""")\b"""
            r"""[^\u3400-\u9fff]*""",
            re.IGNORECASE,
        )
        # Everything outside Han, ASCII letters and digits, and the punctuation dates and PM2.5 need, becomes
        # a space; the tokenizer treats spaces as boundaries, so "北京,上海" still reads as two places.
        self.not_kept = re.compile(rf"[^\u3400-\u4dbf\u4e00-\u9fff{KEPT_BESIDES_HAN} ]+")
        # Latin letters run into digits (tokyo12.8, 3号beijing) are two words; pm2.5 and pm10 stay one.
        self.letters_digits = re.compile(r"(?<=[a-z])(?<!pm)(?=\d)|(?<=\d)(?=[a-z])|(?<=[a-z])(?=pm(?:2\.?5|10))")
        # Latin letters with accents (Ürümqi, Xī'ān): folded to plain letters, since names are typed either way.
        self.accented = re.compile("[\u00c0-\u024f]")
        marks = f"[{re.escape(_DOTS)}]+"
        self.dangling_dots = re.compile(f"(?<![0-9a-z]){marks}|{marks}(?![0-9a-z])")


@functools.cache
def _cleaners() -> _Cleaners:
    """Compiled on first use: compiling them is a sizeable part of a cold CLI run (the code-debris pattern
    most of it), and most questions are Han characters only."""
    return _Cleaners()


@functools.cache
def _t2s_table() -> tuple[dict[int, str], frozenset[str]]:
    """OpenCC's t2s table for str.translate, and its traditional characters."""
    table = str.maketrans(load_table("t2s")["chars"])
    return table, frozenset(map(chr, table))


def to_simplified(text: str) -> str:
    """Map traditional Han characters to simplified ones, character by character (OpenCC's t2s table)."""
    table, traditional = _t2s_table()
    # Most questions are typed in simplified characters: a set check is cheaper than translate's
    # dictionary lookup per character, which it spares them.
    return text if traditional.isdisjoint(text) else text.translate(table)


def writes_traditional(text: str) -> bool:
    """Whether TEXT holds a traditional character (天氣, 東區), which normalize() makes simplified: the asker
    writes as Hong Kong, Macau and Taiwan do."""
    return not _t2s_table()[1].isdisjoint(text[:_MAX_RAW_CHARS])


def has_a_minus_sign(text: str) -> bool:
    """Whether TEXT, as far as normalize() reads it, has a minus sign, which normalize() drops (-5度 reads as
    5度): a figure's sign is then unknown."""
    return not _MINUS_SIGNS.isdisjoint(text[:_MAX_RAW_CHARS])


_MINUS_SIGNS = frozenset("-−－﹣‐‑–")


def asked_as_a_not_a(text: str, word: str) -> bool:
    """Whether TEXT asks WORD as A-not-A (贵不贵, 有没有): what normalize() folds to WORD alone."""
    return any(word + no + word in text for no in _A_NOT_A_NEGATIONS)


def _without_a_not_a(text: str) -> str:
    # re.sub costs a scan even when nothing matches; a question without 不, 没 or 唔 has nothing to fold.
    return _a_not_a().sub(r"\1", text) if "不" in text or "没" in text or "唔" in text else text


def _fold_accent(match: re.Match[str]) -> str:
    return "".join(ch for ch in unicodedata.normalize("NFKD", match.group(0)) if not unicodedata.combining(ch))


def normalize(text: str) -> str:
    """Return TEXT in the form the router parses; never raises on any str."""
    # Nothing past this is read (a 10 MB string is as cheap as a question); the shortcuts below look at no
    # more than the full path keeps, so they give what it gives.
    text = text[:_MAX_RAW_CHARS]
    if _HAN_AND_DIGITS.fullmatch(text):
        # Most questions are Han characters only, some with a figure: nothing to fold, strip or split but the
        # A-not-A. Cut after folding, as the full path does: folding 冷不冷 to 冷 shortens the text.
        return _without_a_not_a(to_simplified(text))[:MAX_QUERY_CHARS]
    if _han_and_separators().fullmatch(text):  # what _normalize_fully gives, in a fourth of the time
        text = _joined_where_spelled_out(text)
        return _without_a_not_a(to_simplified(" ".join(_HAN_AND_DIGITS.findall(text))))[:MAX_QUERY_CHARS].rstrip()
    return _normalize_fully(text)


def _normalize_fully(text: str) -> str:
    clean = _cleaners()
    text = _joined_where_spelled_out(text[:_MAX_RAW_CHARS])
    text = unicodedata.normalize("NFKC", text).lower()
    text = to_simplified(text)
    # Each pattern runs only where a character it cannot match without is there: a scan that finds nothing
    # still costs a pass over the text, and an English question would go through eight
    # (tests/test_normalize.py holds the guarded path to the patterns run one after another).
    if clean.accented.search(text):
        text = clean.accented.sub(_fold_accent, text)
    if "@" in text:
        # An e-mail address goes whole, before the @mention rule would leave its local part behind as a word
        # (zhangsan@qq.com明天天气 sent "zhangsanqq.com" to the geocoder as an unknown place, and the ledger
        # kept it among the words the router lacked).
        text = EMAIL.sub(" ", text)
        text = clean.mention.sub(" ", text)
    if "<" in text or "&" in text:
        text = clean.html_tag.sub(" ", text)
    if "[" in text:
        text = clean.sticker.sub(" ", text)
    if "ı" in text or any(word in text for word in _CODE_WORDS):  # re's IGNORECASE takes a dotless ı for i
        text = clean.code_debris.sub(" ", text)
    text = clean.not_kept.sub(" ", text)
    if not _DOT_SET.isdisjoint(text):
        text = clean.dangling_dots.sub(" ", text)
    if not _DIGITS.isdisjoint(text):
        text = clean.letters_digits.sub(" ", text)
    text = " ".join(text.split())  # runs of spaces as one: str.split's spaces are re's \s
    text = _without_a_not_a(text)
    return text[:MAX_QUERY_CHARS].rstrip()


# What the guarded patterns cannot match without: a keyword of code debris (the text is lowercased by then),
# one of the marks dangling_dots takes, a digit for letters run into digits.
_CODE_WORDS = ("drop", "select", "insert", "delete", "update", "union", "alter", "truncate", "script", "exec")
_DOTS = ".-/:%'"
_DOT_SET = frozenset(_DOTS)
_DIGITS = frozenset("0123456789")
