import itertools
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hybrid_weather.rules.normalize import (
    _SEPARATORS,
    KEPT_BESIDES_HAN,
    MAX_QUERY_CHARS,
    _normalize_fully,
    normalize,
)


@pytest.mark.parametrize(
    "raw,clean",
    [
        ("廣州明天天氣", "广州明天天气"),
        ("Ｓｈａｎｇｈａｉ　今天", "shanghai 今天"),
        ("上海ＰＭ２．５", "上海pm2.5"),
        ("<b>北京</b>明天😀天气？？", "北京 明天 天气"),
        ("上海今天天气'; DROP TABLE users; --", "上海今天天气"),
        ("北京\x00\x07明天\u200b天气", "北京 明天 天气"),
        ("  北京、上海  ", "北京、上海"),
        ("", ""),
        ("🌧️🌧️", ""),
        # Chat stickers pasted as text (WeChat, QQ), in ASCII or full-width brackets; 【】 is a heading.
        ("北京明天冷吗[捂脸]", "北京明天冷吗"),
        ("[微笑]上海今天天气", "上海今天天气"),
        ("北京明天下雨吗[OK][OK]", "北京明天下雨吗"),
        ("［旺柴］广州明天热吗", "广州明天热吗"),
        ("【北京】明天天气", "北京 明天天气"),
    ],
)
def test_normalize(raw, clean):
    assert normalize(raw) == clean


def test_long_input_is_cut_not_refused():
    assert len(normalize("上海" * 100_000)) == MAX_QUERY_CHARS


# Han text, alone, with figures or with punctuation, takes a shortcut; it must give what the full path gives,
# traditional characters, A-not-A questions and overlong text included.
_HAN_AND_PUNCTUATION = st.text(
    alphabet=st.sampled_from("上海今天天氣冷不冷會下雨嗎没有北京0123456789点度" + _SEPARATORS), max_size=40
)


@settings(max_examples=500)
@given(_HAN_AND_PUNCTUATION | _HAN_AND_PUNCTUATION.map(lambda text: text * 60))
def test_the_shortcuts_for_han_text_give_what_the_full_path_gives(text):
    assert normalize(text) == _normalize_fully(text)


# Any text at all: letters of every script, symbols, controls, surrogates-free planes beyond the BMP.
_ANY_TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=60)
_HAN = re.compile("[\u3400-\u4dbf\u4e00-\u9fff]")


@settings(max_examples=1000)
@given(_ANY_TEXT | st.text(st.sampled_from("上海Ｐｍ２．５、，ü" + KEPT_BESIDES_HAN.replace("\\", "")), max_size=30))
def test_normalised_text_holds_han_and_the_kept_alphabet_only(text):
    """The tokenizer tells Han from the rest by the kept alphabet alone (a Han class costs ~2 ms to
    compile): anything else normalize() let through would be segmented as Han."""
    rest = re.compile(f"[^{KEPT_BESIDES_HAN} ]")
    assert all(_HAN.match(ch) for ch in rest.findall(normalize(text))), normalize(text)


def test_every_traditional_character_simplifies_into_the_kept_han():
    """OpenCC simplifies some rare characters into the supplementary planes (俓 → 𠇹, 輋 → 𪨶): the Han
    shortcut kept those, the full path dropped them, and a place such as 禾輋 was stored as neither."""
    from hybrid_weather.rules._data import load_table

    rest = re.compile(f"[^{KEPT_BESIDES_HAN} ]")
    for traditional in load_table("t2s")["chars"]:
        for text in (traditional, f"{traditional} ?", f"香港{traditional}天气"):
            assert all(_HAN.match(ch) for ch in rest.findall(normalize(text))), (traditional, normalize(text))


def test_every_lexicon_word_is_in_the_form_normalize_gives():
    """The router reads only normalised text, so a word normalize() changes (冷不冷 → 冷, 凍 → 冻, 该不该 → 该,
    the date 後日 → 后日) is never found: as an open-ended marker it never sent a question to the LLM (该不该,
    能不能, 准不准 were such), and 冷不冷 or 要不要 on the other lists only looked as if they did something."""
    from hybrid_weather.rules.dates import _OFFSETS, _PARTS, _RANGES, date_words
    from hybrid_weather.rules.lexicon import Lexicon

    lexicon = Lexicon()
    latin_dates = [word for word in (*_OFFSETS, *_RANGES, *_PARTS) if word.isascii()]  # tmr, tonight, mingtian
    words = [*lexicon.words(), *lexicon.latin_aspect_of, *lexicon.latin_role, *date_words(), *latin_dates]
    assert len(words) > 1000
    assert {word: normalize(word) for word in words if normalize(word) != word} == {}


def _unguarded(text):
    """What normalize()'s full path gave when every pattern ran, one after another: the reference its
    guards (each pattern only where a character it needs is there) must give."""
    import unicodedata

    from hybrid_weather.rules.normalize import (
        _cleaners,
        _fold_accent,
        _joined_where_spelled_out,
        _without_a_not_a,
        to_simplified,
    )

    clean = _cleaners()
    text = _joined_where_spelled_out(text[: MAX_QUERY_CHARS * 8])
    text = to_simplified(unicodedata.normalize("NFKC", text).lower())
    if clean.accented.search(text):
        text = clean.accented.sub(_fold_accent, text)
    for pattern in (clean.mention, clean.html_tag, clean.sticker, clean.code_debris, clean.not_kept,
                    clean.dangling_dots, clean.letters_digits):  # fmt: skip
        text = pattern.sub(" ", text)
    text = _without_a_not_a(re.sub(r"\s+", " ", text).strip())
    return text[:MAX_QUERY_CHARS].rstrip()


# What each guarded pattern matches, and what might fool a guard: IGNORECASE's ı for i, ſ (s after NFKC),
# Unicode spaces, full-width forms, digits of other scripts.
_MARKUP = st.sampled_from([
    "@小助手 ", "<b>", "&amp;", "&#123;", "[捂脸]", "'; drop table x; --", "SELECT", "unıon", "ſcript", "insert",
    "pm2.5", "tokyo12.8", "3号beijing", ".", "-", "/", ":", "%", "'", "\u3000", "\u00a0", "\u2003", "\t",
    "Ｐｍ２．５", "٣", "x", "北京", "明天", " ", "Ü",
])  # fmt: skip


@settings(max_examples=2000)
@given(st.lists(_MARKUP, max_size=12).map("".join) | _ANY_TEXT)
def test_the_guarded_patterns_give_what_every_pattern_gives(text):
    assert _normalize_fully(text) == _unguarded(text)


def test_han_spelled_out_a_character_at_a_time_reads_as_written_together():
    # 北 京 明 天 天 气 (typed so, or from a speech engine) went to the LLM: the tokenizer cut at every space, so
    # no word was read. Three or more Han characters each on its own between spaces are joined; words of two
    # or more characters keep their spaces (北京 明天 天气), and so does Latin text.
    from corpus import TODAY, weather_corpus

    from hybrid_weather.router import HybridRouter

    router = HybridRouter(provider="demo", ledger="off")
    han_only = [case.query for case in weather_corpus(1500) if re.fullmatch("[\u4e00-\u9fff]+", case.query)]
    assert len(han_only) >= 200
    for query, spaces in zip(han_only, itertools.cycle([" ", "  ", "\u3000", " \t"]), strict=False):
        spelled = spaces.join(query)
        assert normalize(spelled) == normalize(query), spelled
        assert router.route(spelled, today=TODAY) == router.route(query, today=TODAY), spelled
    assert normalize("北京 明天 天气") == "北京 明天 天气"
    assert normalize("上海 今 天") == "上海 今 天"  # two alone: not spelled out for sure
    assert normalize("a 中 b 文 c 字") == "a 中 b 文 c 字"
