"""The shortcuts in front of the typo repairs skip only work that could find nothing, and what the reader
keeps of a word is what it would find again: with them and without them, a repair or a look-up finds the
same. Words are drawn as real names and router words with characters swapped for others of the same sound,
so that both repairs and near misses come up."""

import functools
import itertools
from collections import defaultdict

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hybrid_weather.router import HybridRouter
from hybrid_weather.rules._data import load_table
from hybrid_weather.rules._kept import Kept


@pytest.fixture(scope="module")
def reader():
    reader = HybridRouter(ledger="off").parts.parser.reader
    reader.gazetteer.repair("杭洲")  # the repair index, built on the first typo
    return reader


@pytest.fixture(scope="module")
def names(reader):
    """Place names, misheard: a strategy."""
    return _misheard(sorted(w for w in reader.gazetteer.words() if 2 <= len(w) <= 5))


@pytest.fixture(scope="module")
def router_words(reader):
    """The words a sound-alike repair may produce, misheard: a strategy."""
    return _misheard(sorted(set(itertools.chain.from_iterable(reader.sound_alikes._words.values()))))


@functools.cache
def _same_sound() -> dict[str, list[str]]:
    """Each character's homophones (any toneless reading shared)."""
    by_sound: dict[str, set[str]] = defaultdict(set)
    for char, toned in load_table("pinyin")["readings"].items():
        for reading in toned.split(","):
            by_sound[reading.rstrip("012345")].add(char)
    alike: dict[str, set[str]] = defaultdict(set)
    for chars in by_sound.values():
        for char in chars:
            alike[char] |= chars
    return {char: sorted(chars)[:60] for char, chars in alike.items()}


def _misheard(words: list[str]) -> st.SearchStrategy[str]:
    """One of WORDS with some of its characters swapped for homophones, or a few characters of anything."""
    alike = _same_sound()
    swapped = st.sampled_from(words).flatmap(
        lambda w: st.tuples(*(st.sampled_from([ch, *alike.get(ch, [])]) for ch in w)).map("".join)
    )
    return swapped | st.text(alphabet=sorted(alike)[:3000], min_size=1, max_size=4)


@settings(max_examples=600, deadline=None)
@given(data=st.data())
def test_a_place_repair_finds_the_same_with_and_without_its_shortcut(reader, names, data):
    index = reader.gazetteer._repair_index
    word = data.draw(names)
    per_char = index.readings_of(word)
    assert index.find(word) == (index.find_by_readings(per_char) if all(per_char) else None)


@settings(max_examples=600, deadline=None)
@given(data=st.data())
def test_sound_alike_rewrites_are_the_same_with_and_without_their_shortcut(reader, router_words, data):
    sound_alikes = reader.sound_alikes
    word = data.draw(router_words)
    before = data.draw(st.sampled_from(["", "北京", "明天", "今天的"]))
    after = data.draw(st.sampled_from(["", "吗", "怎么样"]))
    text = before + word + after
    start, end = len(before), len(before) + len(word)
    found = list(sound_alikes.rewrites(text, start, end))  # its windows' words kept from earlier examples, or not
    for window, words in sound_alikes._sounds_of.items():  # what is kept for a window is what it sounds like
        assert words == sound_alikes._words_sounding_like(window)
    # Read again from every sound, not from what was kept nor through the shortcut. The memo is swapped, not
    # the method patched: compiled (setup.py), the class's own calls would not see a patched method.
    kept = sound_alikes._sounds_of
    sound_alikes._sounds_of = Kept(sound_alikes.sounding_like, 4096)
    try:
        assert list(sound_alikes.rewrites(text, start, end)) == found
    finally:
        sound_alikes._sounds_of = kept


# Names of several words and their parts, and words that are no place: runs that share their first words.
_LATIN_PIECES = ["new york", "new york city", "hong kong", "xi an", "rio de janeiro", "new", "york", "hong", "in",
                 "the", "weather", "tomorrow", "sz"]  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(data=st.data())
def test_a_run_of_latin_words_is_looked_up_as_it_was_the_first_time(reader, data):
    gazetteer = reader.gazetteer
    pieces = st.lists(st.sampled_from(sorted(gazetteer._latin)) | st.sampled_from(_LATIN_PIECES), min_size=1,
                      max_size=3)  # fmt: skip
    words = " ".join(data.draw(pieces)).split()[:3]
    assert gazetteer.lookup_latin(words) == gazetteer._lookup_latin(tuple(words))
    for run, found in gazetteer._latin_matches.items():  # what is kept for a run is what it names
        assert found == gazetteer._lookup_latin(run)


def test_the_units_a_place_lies_in_are_the_same_whichever_place_of_a_parent_came_first():
    # Kept per parent: a county's chain is its prefecture's and province's, whichever county asked first.
    from hybrid_weather.rules.gazetteer import Gazetteer

    forward, backward = Gazetteer(), Gazetteer()
    places = [forward._place(row) for row in range(len(forward._china_rows))]
    chains = [forward._enclosing_codes(place) for place in places]
    assert [backward._enclosing_codes(place) for place in reversed(places)] == chains[::-1]
    by_code = {place.adcode: place for place in places}
    for place, chain in zip(places, chains, strict=True):  # each the codes of its parent, and its parent's, ...
        parent = by_code.get(place.parent or "")
        assert chain == (frozenset({parent.adcode}) | forward._enclosing_codes(parent) if parent else frozenset())


_PIECES = ["上海", "明天", "会下雨吗", "pm2.5", "tokyo", "30", "天气如何", " ", "北京上海"]


@settings(max_examples=300, deadline=None)
@given(pieces=st.lists(st.sampled_from(_PIECES), max_size=5))
def test_a_piece_of_text_is_split_as_it_was_the_first_time(reader, pieces):
    tokenizer = reader.tokenizer
    text = "".join(pieces)
    assert tokenizer.split(text) == tokenizer._split_once(text)
    for piece, tokens in tokenizer._pieces.items():  # what is kept for a piece is its tokens
        assert tokens == tokenizer._split_once(piece)


def test_a_kept_value_is_made_once_and_all_are_forgotten_when_full():
    from hybrid_weather.rules._kept import Kept

    made: list[int] = []
    kept = Kept(lambda key: made.append(key) or key * 2, size=3)
    assert [kept[1], kept[2], kept[1]] == [2, 4, 2] and made == [1, 2]
    assert kept[3] == 6 and sorted(kept) == [1, 2, 3]
    assert kept[4] == 8 and list(kept) == [4] and made == [1, 2, 3, 4]  # full: emptied, then the new one kept
    assert 5 not in kept and kept.get(5) is None  # only [] makes a value
