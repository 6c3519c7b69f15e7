"""Parts of a long-lived object that are built on first use, once, whichever thread gets there first."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Generic, TypeVar, overload

Owner = TypeVar("Owner")
Part = TypeVar("Part")


class lazy_part(Generic[Owner, Part]):
    """A read-only attribute built by the decorated method on first access, under a per-object lock.

    The built value is stored in the instance's __dict__, so later reads are plain attribute lookups
    with no lock at all. `built(obj, name)` tells whether a part exists yet (close() only closes those).
    """

    def __init__(self, build: Callable[[Owner], Part]) -> None:
        self.build = build
        self.name = build.__name__
        self.__doc__ = build.__doc__

    def __set_name__(self, owner: type[Owner], name: str) -> None:
        self.name = name

    @overload
    def __get__(self, obj: None, objtype: type[Owner] | None = None) -> lazy_part[Owner, Part]: ...
    @overload
    def __get__(self, obj: Owner, objtype: type[Owner] | None = None) -> Part: ...

    def __get__(self, obj: Owner | None, objtype: type[Owner] | None = None) -> Any:
        if obj is None:
            return self
        values = obj.__dict__
        if self.name in values:
            return values[self.name]
        with _lock_of(obj):
            if self.name not in values:
                values[self.name] = self.build(obj)
        return values[self.name]


_locks_guard = threading.Lock()


def _lock_of(obj: object) -> threading.RLock:
    # Re-entrant: building one part may build another (the LLM agent needs the weather service).
    lock = obj.__dict__.get("_lazy_parts_lock")
    if lock is None:
        with _locks_guard:
            lock = obj.__dict__.setdefault("_lazy_parts_lock", threading.RLock())
    return lock  # type: ignore[no-any-return]


def built(obj: object, name: str) -> Any | None:
    """The part NAME of OBJ if it has been built, else None (without building it)."""
    return obj.__dict__.get(name)
