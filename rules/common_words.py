"""Which words are everyday Chinese: those jieba's dictionary (shipped with jieba, a dependency) counts often.

An overlay word that is one (开会, 公司, 总部) stands in questions about anything, so reading it as a place or
nothing changes questions it was never meant for: 今天开会吗 became a forecast. The router's own tokenizer
needs none of this dictionary (tokenizer.py); only checking an overlay reads it, once a process.
"""

from __future__ import annotations

import functools
import importlib.util
import re
from pathlib import Path

#: A word jieba's dictionary counts at least this often is common: its 90th percentile (106 in jieba 0.42),
#: so the tenth of its 349,046 words used most. 鲲鹏 (9), 帝都 (26) and 后儿 (6) are not; 开会 (1,302) is.
COMMON_FREQUENCY = 100
#: A line of the dictionary (word, count, part of speech) whose count has three digits or more: one regular
#: expression over the file, three times faster than splitting its 349,046 lines.
_COMMON_LINE = re.compile(r"^(\S+) ([1-9]\d{2,}) ", re.MULTILINE)


def common_frequency(word: str) -> int | None:
    """How often jieba's dictionary counts WORD when it is common (COMMON_FREQUENCY or more), else None."""
    return _frequencies().get(word)


@functools.cache
def _frequencies() -> dict[str, int]:
    """The common words of jieba's dictionary and their counts (its lines: word, count, part of speech)."""
    # Found, not imported: importing jieba costs seconds (pkg_resources) and the dictionary is all this needs.
    spec = importlib.util.find_spec("jieba")
    if spec is None or spec.origin is None:
        raise ModuleNotFoundError("jieba, a dependency of hybrid-weather, is not installed")
    text = (Path(spec.origin).parent / "dict.txt").read_text("utf-8")
    # A count of three digits or more, not starting with 0: at least 100, checked once more below.
    found = _COMMON_LINE.finditer(text)
    return {match[1]: int(match[2]) for match in found if int(match[2]) >= COMMON_FREQUENCY}
