"""A bounded memo for the reader's look-ups of words: what a word gives, made on its first asking."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

K = TypeVar("K")
V = TypeVar("V")


class Kept(dict[K, V]):
    """kept[key] is MAKE(key), made on the first asking and kept; emptied when it holds SIZE keys.

    A dict, so a key asked before is read in C with no Python call; questions repeat their words all day,
    and forgetting all at once keeps no order to maintain. Thread-safe under the GIL: reads and writes of
    one key are atomic, and a race only makes a value twice.
    """

    def __init__(self, make: Callable[[K], V], size: int) -> None:
        super().__init__()
        self.make, self.size = make, size

    def __missing__(self, key: K) -> V:
        if len(self) >= self.size:
            self.clear()
        value = self[key] = self.make(key)
        return value
