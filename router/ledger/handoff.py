"""The queue between the threads that record rows and the ledger's writer thread.

queue.Queue wakes the waiting writer for every row put, and each wake-up makes the writer take the
interpreter lock from the thread that is answering requests: in a busy server that is a thread switch per
row, for work that is done a batch at a time anyway. Here a request thread only appends to a deque; the
writer is woken when the first row of a batch arrives (it was idle), when a batch is full, and for a flush
or the stop — about once a batch under load. A row still waits at most the batch interval.

Measured with tests/bench/bench_serve.py (2 workers, file ledger, 64 connections): POST /v1/ask 9,269 ->
10,011 req/s, POST /v1/chat/completions 7,933 -> 9,069 req/s.
"""

from __future__ import annotations

import queue
import threading
import time
from collections import deque
from typing import Generic, TypeVar

T = TypeVar("T")


class Handoff(Generic[T]):
    """Items for one consumer thread, in order; past MAXSIZE, put() waits for room (or raises queue.Full)."""

    def __init__(self, maxsize: int, batch_size: int) -> None:
        self.maxsize, self.batch_size = maxsize, batch_size
        self._items: deque[tuple[T, bool]] = deque()  # (item, urgent)
        self._urgent = 0  # items that must not wait for a batch to fill (a flush, the stop)
        self._idle = False  # the consumer waits for a first item
        self._wake = threading.Event()
        self._room = threading.Condition()
        self._waiting_for_room = 0

    def __len__(self) -> int:
        return len(self._items)

    def put(self, item: T, timeout: float | None = None, *, urgent: bool = False) -> None:
        """ITEM queued; when the queue is full, waits up to TIMEOUT for room, then raises queue.Full.
        URGENT items (never refused) end the consumer's wait for a full batch."""
        if not urgent and len(self._items) >= self.maxsize:
            self._wait_for_room(timeout)
        if urgent:  # rare (a flush, the stop): counted under the lock, as the consumer counts them down
            with self._room:
                self._urgent += 1
                self._items.append((item, urgent))
        else:
            self._items.append((item, urgent))
        # Read after the append: the consumer says it is idle before it looks at the deque a last time.
        if self._idle or urgent or len(self._items) >= self.batch_size:
            self._wake.set()

    def take(self, interval: float) -> list[T]:
        """The next items: waits for a first one, then until BATCH_SIZE are there, an urgent one is, or
        INTERVAL seconds have passed; returns at most BATCH_SIZE of them, up to and including the first
        urgent one."""
        while not self._items:
            self._wake.clear()
            self._idle = True
            if self._items:
                break
            self._wake.wait()
        self._idle = False
        deadline = time.monotonic() + interval
        while len(self._items) < self.batch_size and not self._urgent:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            self._wake.clear()
            if len(self._items) >= self.batch_size or self._urgent:
                break
            self._wake.wait(left)
        taken: list[T] = []
        while self._items and len(taken) < self.batch_size:
            item, urgent = self._items.popleft()
            taken.append(item)
            if urgent:
                with self._room:
                    self._urgent -= 1
                break
        self._made_room()
        return taken

    def take_all(self) -> list[T]:
        """Everything queued, without waiting (at close, for the spool)."""
        taken: list[T] = []
        while self._items:
            taken.append(self._items.popleft()[0])
        with self._room:
            self._urgent = 0
        self._made_room()
        return taken

    def _wait_for_room(self, timeout: float | None) -> None:
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._room:
            self._waiting_for_room += 1
            try:
                while len(self._items) >= self.maxsize:
                    left = None if deadline is None else deadline - time.monotonic()
                    if left is not None and left <= 0:
                        raise queue.Full
                    self._room.wait(left)
            finally:
                self._waiting_for_room -= 1

    def _made_room(self) -> None:
        # Under the lock: a caller that found the queue full is either waiting already (and is woken) or
        # looks at the queue after this (and finds room).
        with self._room:
            if self._waiting_for_room:
                self._room.notify_all()
