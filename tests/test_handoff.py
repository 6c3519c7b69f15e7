"""The ledger's queue between request threads and the writer (router/ledger/handoff.py)."""

from __future__ import annotations

import queue
import threading
import time

import pytest

from hybrid_weather.router.ledger.store.handoff import Handoff


def _taken_in_thread(handoff: Handoff[int], interval: float) -> tuple[list[list[int]], threading.Thread]:
    out: list[list[int]] = []
    thread = threading.Thread(target=lambda: out.append(handoff.take(interval)))
    thread.start()
    return out, thread


def test_items_come_out_in_order_in_batches_of_at_most_batch_size():
    handoff: Handoff[int] = Handoff(maxsize=100, batch_size=4)
    for i in range(10):
        handoff.put(i)
    assert [handoff.take(0.01) for _ in range(3)] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert len(handoff) == 0


def test_a_waiting_consumer_wakes_for_the_first_item_and_returns_after_the_interval():
    handoff: Handoff[int] = Handoff(maxsize=100, batch_size=100)
    out, thread = _taken_in_thread(handoff, 0.2)
    time.sleep(0.05)
    assert thread.is_alive()  # nothing queued: it waits
    started = time.monotonic()
    handoff.put(1)
    handoff.put(2)
    thread.join(2)
    assert out == [[1, 2]]
    assert 0.15 < time.monotonic() - started < 1.5  # it waited the interval for more rows, not for ever


@pytest.mark.parametrize(
    "maxsize, batch_size",
    [(100, 3), (3, 10)],  # a batch larger than the queue is capped at its size, or it could never fill
)
def test_a_full_batch_ends_the_wait_at_once(maxsize, batch_size):
    handoff: Handoff[int] = Handoff(maxsize=maxsize, batch_size=batch_size)
    out, thread = _taken_in_thread(handoff, 30)
    time.sleep(0.02)
    for i in range(3):
        handoff.put(i)
    thread.join(5)
    assert not thread.is_alive() and out == [[0, 1, 2]]


def test_an_urgent_item_ends_the_wait_and_the_batch():
    handoff: Handoff[int] = Handoff(maxsize=100, batch_size=50)
    out, thread = _taken_in_thread(handoff, 30)
    time.sleep(0.02)
    handoff.put(1)
    handoff.put(2, urgent=True)
    handoff.put(3)
    thread.join(5)
    assert not thread.is_alive() and out == [[1, 2]]
    assert handoff.take(0.01) == [3]  # the urgent item was counted down: the next take waits its interval


def test_an_item_put_both_ways_ends_a_batch_only_where_it_was_put_urgently():
    # Rows come out as themselves, an urgent item from its box: equal items, even the same object, do not
    # stand in for each other.
    handoff: Handoff[int] = Handoff(maxsize=100, batch_size=50)
    for urgent in (False, False, True, False):
        handoff.put(7, urgent=urgent)
    assert handoff.take(0.01) == [7, 7, 7]
    assert handoff.take(0.01) == [7]
    handoff.put(8, urgent=True)
    handoff.put(9)
    assert handoff.take_all() == [8, 9] and len(handoff) == 0


def test_a_full_queue_makes_put_wait_for_room_then_refuse():
    handoff: Handoff[int] = Handoff(maxsize=2, batch_size=10)
    handoff.put(1)
    handoff.put(2)
    started = time.monotonic()
    with pytest.raises(queue.Full):
        handoff.put(3, timeout=0.1)
    assert time.monotonic() - started >= 0.1
    handoff.put(4, urgent=True)  # a flush or the stop is never refused

    taken: list[int] = []
    threading.Timer(0.1, lambda: taken.extend(handoff.take(0.01))).start()  # makes room
    handoff.put(5, timeout=5)  # waits, then gets in
    assert taken == [1, 2] and handoff.take_all() == [4, 5]  # a batch is at most the queue's size


def test_many_producers_lose_nothing():
    handoff: Handoff[int] = Handoff(maxsize=50, batch_size=16)
    got: list[int] = []
    done = threading.Event()

    def consume() -> None:
        while not done.is_set() or len(handoff):
            got.extend(handoff.take(0.001))

    consumer = threading.Thread(target=consume)
    consumer.start()
    producers = [threading.Thread(target=lambda k=k: [handoff.put(k * 10_000 + i, timeout=5) for i in range(2_000)])
                 for k in range(4)]  # fmt: skip
    for producer in producers:
        producer.start()
    for producer in producers:
        producer.join()
    done.set()
    handoff.put(-1, urgent=True)  # wakes a consumer that waits for a first item
    consumer.join(10)
    assert sorted(x for x in got if x >= 0) == sorted(k * 10_000 + i for k in range(4) for i in range(2_000))
