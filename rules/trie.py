"""Regular expressions of many literal words, as tries: what the date scan and the lexicon share."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any


def trie_pattern(words: list[str]) -> str:
    """A pattern matching any of WORDS, the longest where several start at one position, written as a trie
    (明(?:天|日|后(?:天)?)...): sre tries an alternation's branches one by one, so a flat list of some
    hundred words cost that at every position one may start."""
    root: dict[str, Any] = {}
    for word in words:
        node = root
        for ch in word:
            node = node.setdefault(ch, {})
        node[""] = {}  # a word ends here
    return _branches(root)


def words_pattern(words: Iterable[str]) -> str:
    """A pattern matching the longest of WORDS at a position: the Han ones as a trie, the Latin ones whole
    (each between non-letters: "now" must not match inside "snow", nor "time" inside "sometimes"); Han text
    has no word boundaries to keep."""
    words = list(words)
    latin = sorted((w for w in words if w.isascii()), key=len, reverse=True)
    han = trie_pattern([w for w in words if not w.isascii()])
    return "|".join(([han] if han else []) + [rf"(?<![a-z]){re.escape(w)}(?![a-z])" for w in latin])


def _branches(node: dict[str, Any]) -> str:
    branches = [re.escape(ch) + _branches(child) for ch, child in node.items() if ch]
    if not branches:
        return ""
    body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
    # Greedy: the longer words through this node are tried before the word that ends at it.
    return f"(?:{body})?" if "" in node else body
