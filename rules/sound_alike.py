"""Repair homophone and speech-recognition errors in the router's own words (天七 → 天气, 下鱼 → 下雨).

Voice assistants and pinyin keyboards replace a word with another of the same sound. The router knows a
closed vocabulary (aspect, date, filler and comparison words), so a word it does not know can be read
again as the vocabulary word that sounds the same (toneless pinyin). Whether a repair stands is for the
caller to judge: only when the repaired question is a complete weather question.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Iterable, Iterator

from ._data import load_table
from ._kept import Kept

# Words the repair reads as at most this long: longer runs are phrases, not one mistyped word.
_MAX_WORD_CHARS = 4
# Readings tried per window: a few characters have many, and their product grows fast.
_MAX_READINGS = 16
# Windows whose sound-alike words are kept (each a few characters and a short tuple).
_WINDOWS_KEPT = 4_096


class SoundAlikes:
    """Toneless-pinyin index of a vocabulary; built once, read by every thread."""

    def __init__(
        self, vocabulary: Iterable[str], *, content: Iterable[str] = (), particles: Iterable[str] = ()
    ) -> None:
        """VOCABULARY is every word a repair may produce; CONTENT those that carry meaning (aspects,
        dates), preferred over function words when one window sounds like both (下鱼 → 下雨, not 下与);
        PARTICLES the only one-character words the index holds (see rewrites)."""
        particles = frozenset(particles)
        self._table: dict[str, str] = load_table("pinyin")["readings"]  # toned, comma-separated
        # Toneless, made for the characters that are asked about: only those of the table, so never more
        # than it holds (about 21,000), whatever questions come.
        self._readings: dict[str, list[str]] = {}
        # The words each window sounds like, as rewrites tries them: the windows around a misheard word recur
        # (天七 in 北京明天天七怎么样 and in 天七预报), and reading one through its characters' sounds is a
        # large part of a repair.
        self._sounds_of = Kept(self._words_sounding_like, _WINDOWS_KEPT)
        self._content = frozenset(content)
        self._words: dict[tuple[str, ...], set[str]] = defaultdict(set)
        for word in [*vocabulary, *self._content]:
            if len(word) == 1 and word not in particles:
                continue  # one character is read again only as a particle
            if 1 <= len(word) <= _MAX_WORD_CHARS and all(ch in self._table for ch in word):
                for key in self._keys(word):
                    self._words[key].add(word)
        # For the words of each length, the syllables at each place in them: most windows a repair tries
        # have a character whose every sound is at no word's place there, and need not be read whole.
        self._syllables_at: dict[int, list[frozenset[str]]] = {
            length: [frozenset(key[at] for key in self._words if len(key) == length) for at in range(length)]
            for length in range(1, _MAX_WORD_CHARS + 1)
        }

    def _toneless(self, char: str) -> list[str] | None:
        readings = self._readings.get(char)
        if readings is None and char in self._table:
            readings = self._readings[char] = sorted({r.rstrip("012345") for r in self._table[char].split(",")})
        return readings

    def _keys(self, text: str) -> list[tuple[str, ...]]:
        per_char = [self._toneless(ch) for ch in text]
        if not all(per_char):
            return []
        return list(itertools.islice(itertools.product(*per_char), _MAX_READINGS))  # type: ignore[arg-type]

    def rewrites(self, text: str, start: int, end: int) -> Iterator[tuple[str, str, str]]:
        """(rewritten text, window, word) for each vocabulary word that sounds like a window of TEXT
        holding all of text[start:end] (a repair that leaves part of the unknown word helps nothing).
        Longest windows first, content words before function words: a longer sound-alike is less likely
        a coincidence, and a one-character function word can make a sentence complete yet wrong."""
        for length in range(_MAX_WORD_CHARS, end - start - 1, -1):
            for first in range(max(0, end - length), min(start, len(text) - length) + 1):
                if length == 1 and first + 1 < len(text) and text[first + 1] != " ":
                    # One character sounds like too many words: it is read again only as a modal particle
                    # where a clause ends (下雪马 → 下雪么). Read as any word anywhere, it made questions of
                    # words that ask something else (北京明天开吗: 开 → 嘅, a filler; 广州今天堵不堵: 堵 →
                    # 度, the temperature; 吵 → 潮, the humidity).
                    continue
                window = text[first : first + length]
                for word in self._sounds_of[window]:
                    if length > end - start and word not in self._content:
                        # A window wider than the unknown word swallows a word the router knows: it may become a
                        # word of meaning (天七 → 天气), not a function word, which would drop the unknown one
                        # (深圳明天能贵吗: 能贵 → 大概, and the question asked nothing).
                        break  # content words come first: none follows
                    yield text[:first] + word + text[first + length :], window, word

    def _words_sounding_like(self, window: str) -> tuple[str, ...]:
        """The vocabulary words WINDOW sounds like, itself excepted: content words first, then by character."""
        return self.sounding_like(window) if self._may_sound_like_a_word(window) else ()

    def sounding_like(self, window: str) -> tuple[str, ...]:
        """What _words_sounding_like gives, read through every sound of WINDOW: without its shortcut
        (tests/test_repair_shortcuts.py holds the two to the same answers)."""
        words = {w for key in self._keys(window) for w in self._words.get(key, ())} - {window}
        return tuple(sorted(words, key=lambda w: (w not in self._content, w)))

    def _may_sound_like_a_word(self, window: str) -> bool:
        """False when a character of WINDOW has no sound that a word of its length has at its place."""
        for syllables, char in zip(self._syllables_at[len(window)], window, strict=True):
            if syllables.isdisjoint(self._toneless(char) or ()):
                return False
        return True
