"""A long-lived router's memory stays bounded (issue 49, item 8): every memo the package keeps has a bound,
and distinct questions, however many, leave no container growing behind them. The figure itself (RSS
between one and three million distinct questions) is tests/bench/bench_memory.py's: a test cannot route
millions of questions, but it can find the container that would grow."""

from __future__ import annotations

import functools
import gc
import importlib
import inspect
import pkgutil
import random
import types

import hybrid_weather.agent
import hybrid_weather.router
import hybrid_weather.rules
from hybrid_weather.router import HybridRouter
from hybrid_weather.rules._data import load_table

from support import TODAY

#: A container that holds more than this and still grows is not a memo with a bound: the largest memo of
#: the rules keeps 4 × 4,096 question hashes (router/understand/parser.py, SEEN_SIZE). What is made per
#: character may hold more, keyed by the characters of the pinyin table: that table is its bound.
LARGEST_MEMO = 4 * 4_096


def _modules():
    # Each part's own path: an editable install's hybrid_weather is a namespace walk_packages cannot list.
    for part in (hybrid_weather.rules, hybrid_weather.agent, hybrid_weather.router):
        yield part
        for info in pkgutil.walk_packages(part.__path__, f"{part.__name__}."):
            if info.name.endswith("__main__"):  # runs the CLI when imported
                continue
            try:
                yield importlib.import_module(info.name)
            except ImportError:  # an extra that is not installed (traces, fleet): its module keeps nothing here
                continue


def _takes_arguments(wrapper) -> bool:
    return bool(inspect.signature(wrapper.__wrapped__).parameters)


def test_every_memo_of_the_package_that_takes_arguments_has_a_bound():
    unbounded = []
    modules = list(_modules())
    assert len(modules) > 50  # the walk found the package
    for module in modules:
        for owner in [module, *(v for v in vars(module).values() if isinstance(v, type))]:
            for name, value in vars(owner).items():
                # functools.cache of a function of nothing holds one value: its bound
                if (
                    isinstance(value, functools._lru_cache_wrapper)
                    and value.cache_parameters()["maxsize"] is None
                    and _takes_arguments(value)
                ):
                    unbounded.append(f"{module.__name__}.{name}")
    assert not unbounded, f"memos without a bound: {unbounded}"


def _containers(root) -> dict[int, tuple[object, int]]:
    """Every dict and set reachable from ROOT through the package's own objects, by id, with its length;
    lru_cache memos by their current size. Modules, classes and functions are not followed (their globals
    reach the whole process)."""
    found: dict[int, tuple[object, int]] = {}
    seen = {id(root)}
    stack = [root]
    while stack:
        item = stack.pop()
        if isinstance(item, (dict, set)):
            found[id(item)] = (item, len(item))
        elif isinstance(item, functools._lru_cache_wrapper):
            found[id(item)] = (item, item.cache_info().currsize)
        for child in gc.get_referents(item):
            if isinstance(child, (types.ModuleType, type, types.FunctionType, str, bytes, int, float)):
                continue
            if id(child) not in seen:
                seen.add(id(child))
                stack.append(child)
    return found


def _made_up(pick: random.Random, n: int) -> str:
    """A question of words no table holds: Han characters from the whole block, Latin letters, digits."""
    han = "".join(chr(pick.randrange(0x4E00, 0x9FFF)) for _ in range(pick.randint(2, 6)))
    latin = "".join(pick.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(pick.randint(3, 10)))
    return [f"{han}明天天气", f"{latin} weather {n}", f"北京{han}{n}号下雨吗", f"{han}和{latin}哪个冷"][n % 4]


def test_distinct_questions_leave_no_growing_container_behind():
    router = HybridRouter(provider="demo")
    table = sorted(load_table("pinyin")["readings"])
    characters = frozenset(table)
    # Every character with a reading asked once first: what is made per character (its sounds) is then made,
    # and bounded by the table; what still grows after that grows with the questions.
    for start in range(0, len(table), 6):
        router.route(f"{''.join(table[start : start + 6])}天气", today=TODAY)
    pick = random.Random(49)
    for n in range(30_000):
        router.route(_made_up(pick, n), today=TODAY)
    before = _containers(router)
    for n in range(30_000, 60_000):
        router.route(_made_up(pick, n), today=TODAY)
    after = _containers(router)
    router.close()
    growing = [
        f"{type(item).__name__} of {size:,} (+{size - before[key][1]:,}): {item if callable(item) else list(item)[:3]}"
        for key, (item, size) in after.items()
        if key in before
        and size > LARGEST_MEMO
        and size > before[key][1]
        and not (isinstance(item, (dict, set)) and characters.issuperset(item))
    ]
    assert not growing, "containers still growing with distinct questions:\n" + "\n".join(growing)
