"""The queue between the threads that record rows and the ledger's writer thread.

queue.Queue wakes the waiting writer for every row put, and each wake-up makes the writer take the
interpreter lock from the thread that is answering requests: in a busy server that is a thread switch per
row, for work that is done a batch at a time anyway. Here a request thread only appends to a deque; the
writer is woken when the first row of a batch arrives (it was idle), when a batch is full, and for a flush
or the stop — about once a batch under load. A row still waits at most the batch interval.

No Python-level lock is taken on the way in: the wake-ups are tokens in a queue.SimpleQueue (C, safe to
call from a signal handler). A lock a signal handler's exception interrupts between its acquire and its
`with` block stays locked, and close() — run by that very SystemExit — would wait on it for ever (it did,
with threading.Event, in tests/test_ledger_integrity.py's SIGTERM test).

Waking the writer once a batch rather than once a row is what keeps a served worker's requests from
paying for the writer's wake-ups (tests/bench/bench_serve_ledger.py measures the share).
"""

from __future__ import annotations

import contextlib
import itertools
import queue
import time
from collections import deque
from typing import Generic, TypeVar, cast

T = TypeVar("T")
#: Seconds a caller waiting for room looks again, should the writer's token have gone to another caller.
_ROOM_POLL = 0.05


class Handoff(Generic[T]):
    """Items for one consumer thread, in order; past MAXSIZE, put() waits for room (or raises queue.Full)."""

    def __init__(self, maxsize: int, batch_size: int) -> None:
        # A batch larger than the queue would never fill: callers would wait for room while the consumer
        # waited out its interval, at every batch, for rows that cannot come.
        self.maxsize, self.batch_size = maxsize, min(batch_size, maxsize)
        # Items as they were put; an urgent one in an _Urgent box, so a row goes in (and comes out) as itself.
        self._items: deque[T | _Urgent] = deque()
        self._idle = False  # the consumer waits for a first item
        self._wake: queue.SimpleQueue[None] = queue.SimpleQueue()  # tokens: look at the items again
        self._urgent: queue.SimpleQueue[None] = queue.SimpleQueue()  # one token per urgent item not yet taken
        self._room: queue.SimpleQueue[None] = queue.SimpleQueue()  # tokens: the consumer took items

    def __len__(self) -> int:
        return len(self._items)

    def put(self, item: T, timeout: float | None = None, *, urgent: bool = False) -> None:
        """ITEM queued; when the queue is full, waits up to TIMEOUT for room, then raises queue.Full.
        URGENT items (never refused) end the consumer's wait for a full batch."""
        items = self._items
        if urgent:
            self._urgent.put(None)  # before the item: the consumer never finds an urgent item uncounted
            items.append(_Urgent(item))
            if self._wake.empty():
                self._wake.put(None)
            return
        # A row, on the path of every request: a length, an append and, about once a batch, a wake-up.
        if len(items) >= self.maxsize:
            self._wait_for_room(timeout)
        items.append(item)
        # Read after the append: the consumer says it is idle before it looks at the deque a last time.
        if (self._idle or len(items) >= self.batch_size) and self._wake.empty():
            self._wake.put(None)

    def take(self, interval: float, idle: float | None = None) -> list[T]:
        """The next items: waits for a first one (IDLE seconds at most, then returns none), then until
        BATCH_SIZE are there, an urgent one is, or INTERVAL seconds have passed; returns at most BATCH_SIZE
        of them, up to and including the first urgent one."""
        while not self._items:
            self._idle = True
            if self._items:
                break
            try:
                self._wake.get(timeout=idle)
            except queue.Empty:
                self._idle = False  # a wake-up a producer sends meanwhile only makes the next take look again
                return []
        self._idle = False
        deadline = time.monotonic() + interval
        while len(self._items) < self.batch_size and self._urgent.empty():
            left = deadline - time.monotonic()
            if left <= 0:
                break
            try:
                self._wake.get(timeout=left)
            except queue.Empty:
                break
        items = self._items
        count = min(len(items), self.batch_size)
        # No urgent item counted after COUNT was read: none is among the first COUNT items (its token goes in
        # before it), so they are taken at once, by a loop in C (map): the consumer holds the interpreter lock
        # that every request thread waits for, and this is its share of it for each row.
        taken: list[object]
        if self._urgent.empty():
            taken = list(map(deque.popleft, itertools.repeat(items, count)))
        else:
            taken = []
            while items and len(taken) < count:
                item = items.popleft()
                if type(item) is _Urgent:
                    self._urgent.get_nowait()
                    taken.append(item.item)
                    break
                taken.append(item)
        self._made_room()
        return cast("list[T]", taken)

    def take_all(self) -> list[T]:
        """Everything queued, without waiting (at close, for the spool)."""
        taken: list[object] = []
        while self._items:
            item: object = self._items.popleft()
            if type(item) is _Urgent:
                self._urgent.get_nowait()
                item = item.item
            taken.append(item)
        self._made_room()
        return cast("list[T]", taken)

    def _made_room(self) -> None:
        if self._room.empty():  # one token at a time: unused ones would pile up, one a batch
            self._room.put(None)

    def _wait_for_room(self, timeout: float | None) -> None:
        deadline = None if timeout is None else time.monotonic() + timeout
        while len(self._items) >= self.maxsize:
            left = _ROOM_POLL if deadline is None else min(_ROOM_POLL, deadline - time.monotonic())
            if left <= 0:
                raise queue.Full
            with contextlib.suppress(queue.Empty):
                self._room.get(timeout=left)


class _Urgent:
    """An urgent item as the queue holds it: no row is one of these, so the consumer tells them apart."""

    __slots__ = ("item",)

    def __init__(self, item: object) -> None:
        self.item = item
