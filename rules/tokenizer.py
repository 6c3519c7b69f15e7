"""A jieba tokenizer that knows only the router's words.

jieba's default dictionary costs most of a second and tens of MB at first use; the router needs none of it: it only
has to find its own words (places, dates, aspects, markers) and see what is left over. A Tokenizer with
a prefix dictionary built straight from those words starts in milliseconds and never writes jieba's
cache file.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from types import ModuleType

from ._kept import Kept
from .normalize import KEPT_BESIDES_HAN

_WORD_FREQUENCY = 1000
# Han runs whose segmentation is kept; runs are short, so this is a few hundred kilobytes at most.
_MEMO_SIZE = 4096
# Han runs go through jieba; everything else is split on spaces here, because jieba's own handling of
# Latin text breaks words at dictionary entries ("york" → y/or/k, since "or" is a conjunction). In
# normalised text a Han character is one not in normalize's small alphabet of the rest: a class of that
# alphabet compiles far faster than one over the Han block, which a cold start would feel.
_RUNS = re.compile(rf"[^{KEPT_BESIDES_HAN}\s]+|[{KEPT_BESIDES_HAN}]+")


class Tokenizer:
    """Segments normalised text into the router's words; unknown Han text comes out one character a token."""

    def __init__(self, words: Iterable[str]) -> None:
        jieba = _import_jieba()

        # jieba's prefix dictionary: every word at one frequency, every proper prefix of one at 0 (what
        # get_DAG walks). Built whole by dict.fromkeys, not word by word: this is most of a cold start's
        # tokenizer, ~37,000 prefixes.
        whole = dict.fromkeys(words, _WORD_FREQUENCY)
        whole.pop("", None)
        frequency = dict.fromkeys([word[:end] for word in whole for end in range(1, len(word))], 0)
        frequency.update(whole)
        self._jieba = jieba.Tokenizer()
        self._jieba.FREQ = frequency
        self._jieba.total = _WORD_FREQUENCY * len(whole)
        self._jieba.initialized = True  # the prefix dictionary is complete; skip jieba's loader
        # Questions repeat their pieces (天气, 会下雨吗, 明天): a piece seen before is not split again, nor a Han
        # run segmented again (a run recurs in pieces that differ elsewhere: 上海 in 上海 pm2.5).
        self._pieces = Kept(self._split_once, _MEMO_SIZE)
        self._segments = Kept(self._segment_once, _MEMO_SIZE)

    def split(self, text: str) -> tuple[str, ...]:
        """Tokens of TEXT, spaces dropped. Thread-safe: segmentation only reads the dictionary."""
        return self._pieces[text]

    def _split_once(self, text: str) -> tuple[str, ...]:
        tokens: list[str] = []
        for run in _RUNS.findall(text):
            if run[0] >= "\u3400":
                tokens.extend(self._segments[run])
            else:
                tokens.append(run)
        return tuple(tokens)

    def _segment_once(self, han: str) -> tuple[str, ...]:
        # jieba's own maximum-probability path over its word graph (what cut(HMM=False) does), called
        # directly: cut()'s regex pass and generator cost more than the segmentation on short queries.
        route: dict[int, tuple[float, int]] = {}
        self._jieba.calc(han, self._jieba.get_DAG(han), route)
        words = []
        start = 0
        while start < len(han):
            end = route[start][1] + 1
            words.append(han[start:end])
            start = end
        return tuple(words)


class _OnFirstUse(ModuleType):
    """Stands in for a module until something reads from it, then imports it and passes every read on."""

    def __getattr__(self, name: str) -> object:
        import importlib
        import sys

        if sys.modules.get(self.__name__) is self:
            del sys.modules[self.__name__]
        real = importlib.import_module(self.__name__)  # the real module, now in sys.modules for good
        return getattr(real, name)


def _import_jieba() -> ModuleType:
    """Import jieba without pkg_resources, and without its HMM tables until something uses them.

    jieba imports pkg_resources only to find its own files and falls back to plain paths without it;
    pkg_resources costs a large share of a cold CLI run's time and memory at import. It also loads
    jieba.finalseg, the HMM for words no dictionary has (most of it one large table), which the
    router never uses: a stand-in takes its place and imports it for whoever reads from it first (a
    program of the user's that calls jieba.cut with HMM in the same process still gets it). tempfile
    (with shutil, bz2 and lzma) is there only for jieba's cache file, which this tokenizer never
    writes: jieba gets a stand-in too, and every other importer the real module.
    """
    import importlib
    import sys

    if "jieba" in sys.modules or "pkg_resources" in sys.modules:
        return importlib.import_module("jieba")
    sys.modules["pkg_resources"] = None  # type: ignore[assignment]  # makes `import pkg_resources` fail
    sys.modules.setdefault("jieba.finalseg", _OnFirstUse("jieba.finalseg"))
    tempfile = sys.modules.setdefault("tempfile", _OnFirstUse("tempfile"))
    try:
        return importlib.import_module("jieba")
    finally:
        del sys.modules["pkg_resources"]
        if isinstance(tempfile, _OnFirstUse) and sys.modules.get("tempfile") is tempfile:
            del sys.modules["tempfile"]  # jieba keeps the stand-in; the next `import tempfile` is the real one
