"""Regular expressions of many literal words, as tries: what the date scan and the marker search share."""

from __future__ import annotations

import re
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


def _branches(node: dict[str, Any]) -> str:
    branches = [re.escape(ch) + _branches(child) for ch, child in node.items() if ch]
    if not branches:
        return ""
    body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
    # Greedy: the longer words through this node are tried before the word that ends at it.
    return f"(?:{body})?" if "" in node else body
