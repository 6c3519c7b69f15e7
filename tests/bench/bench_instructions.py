"""A fixed workload whose CPU instructions callgrind counts: the load-independent figures of the rule path.

    valgrind --tool=callgrind --instr-atstart=no python tests/bench/bench_instructions.py WORKLOAD [--count N]

The machine this project is measured on is shared, and its speed changes by the minute: a timed ratio of
two installs moves with it, an instruction count does not. Each WORKLOAD builds and warms what it measures
with callgrind's instrumentation off (jieba's dictionary alone is some 6 billion instructions, minutes
under callgrind), then switches it on, does COUNT units of work and switches it off: callgrind's total is
the work alone, which the runner (`python -m tests.bench --against REF`) divides by COUNT. The switch is
Valgrind's client request (valgrind.h's CALLGRIND_START_INSTRUMENTATION), a few x86-64 instructions that do
nothing outside Valgrind, run through ctypes; elsewhere than x86-64 Linux the script refuses to run.

- route: COUNT dev-set questions through `route()`, on a day the warm-up did not ask on (the parser's memo
  never answers; the tokenizer's and the gazetteer's do, as in bench_route.py's rounds);
- jieba: the same questions through a bare `jieba.lcut()`, the yardstick bench_route.py uses;
- ask, ask-ledger: COUNT warm `ask()`s with the demo provider, ledger off, or a file ledger (closed inside
  the counted part, so its writer thread's work is counted too): their difference is the ledger's cost per row.
"""

from __future__ import annotations

import argparse
import ctypes
import datetime as dt
import json
import mmap
import platform
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

DEV_SET = Path(__file__).resolve().parents[1] / "data" / "queries.jsonl"
#: The day the warm-up asks on; the counted part asks on the day after.
TODAY = dt.date(2026, 11, 29)
#: bench_ledger.py's questions: the warm asks whose ledger cost is measured there.
ASKS = ["上海今天天气", "魔都明天会下雨吗", "北京和上海明天哪个冷", "北京明天多少度", "明天会下雨吗"]
WORKLOADS = ("route", "jieba", "ask", "ask-ledger")
#: Asks before the counted ones: the ledger's writer prepares a statement per batch shape once, and masks
#: a text once; the warm asks pay for those, which a long-running process pays once, not per row.
WARM_ASKS = 2000
#: Seconds within which the ledger's writer has written what was queued (it commits every 0.1 s).
WRITTEN_WITHIN = 1.0


def dev_set(count: int) -> list[str]:
    lines = [line for line in DEV_SET.read_text("utf-8").splitlines() if line.strip()]
    return [json.loads(line)["query"] for line in lines][:count]


#: valgrind.h's VALGRIND_DO_CLIENT_REQUEST on amd64, as a function of one argument (the request's six
#: words): %rax points at them, %rdx holds the default answer, then the preamble Valgrind recognizes (four
#: rotations of %rdi by 128 bits in all, and xchg %rbx,%rbx: no change outside Valgrind); returns %rdx.
_CLIENT_REQUEST = bytes.fromhex(
    "4889f8"  # mov %rdi,%rax
    "31d2"  # xor %edx,%edx
    "48c1c703" "48c1c70d" "48c1c73d" "48c1c733"  # rol $3,$13,$61,$51,%rdi
    "4887db"  # xchg %rbx,%rbx
    "4889d0"  # mov %rdx,%rax
    "c3"  # ret
)  # fmt: skip
#: callgrind.h's requests: VG_USERREQ_TOOL_BASE('C','T') + 4 and + 5.
START_INSTRUMENTATION, STOP_INSTRUMENTATION = 0x43540004, 0x43540005


def client_request() -> Callable[[int], int]:
    """A function making Valgrind's client request of the given code (no arguments)."""
    if platform.system() != "Linux" or platform.machine() != "x86_64":
        raise SystemExit("bench_instructions.py switches callgrind on and off with x86-64 code: Linux on x86-64 only")
    page = mmap.mmap(-1, mmap.PAGESIZE, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    page.write(_CLIENT_REQUEST)
    address = ctypes.addressof(ctypes.c_char.from_buffer(page))
    function = ctypes.CFUNCTYPE(ctypes.c_uint64, ctypes.POINTER(ctypes.c_uint64))(address)

    def request(code: int) -> int:
        words = (ctypes.c_uint64 * 6)(code, 0, 0, 0, 0, 0)
        return int(function(words))

    request.page = page  # type: ignore[attr-defined]  # the code lives as long as the function
    return request


def counted(work: Callable[[], object]) -> None:
    """WORK with callgrind's instrumentation on: its instructions are the run's total."""
    request = client_request()
    request(START_INSTRUMENTATION)
    work()
    request(STOP_INSTRUMENTATION)


def route(count: int) -> None:
    from hybrid_weather.router import HybridRouter

    questions = dev_set(count)
    router = HybridRouter()
    for question in questions:
        router.route(question, today=TODAY)
    day = TODAY + dt.timedelta(days=1)
    counted(lambda: [router.route(question, today=day) for question in questions])


def jieba(count: int) -> None:
    import jieba

    jieba.setLogLevel(60)
    jieba.initialize()
    questions = dev_set(count)
    for question in questions:
        jieba.lcut(question)
    counted(lambda: [jieba.lcut(question) for question in questions])


def ask(count: int, ledger: str) -> None:
    from hybrid_weather.router import HybridRouter

    router = HybridRouter(provider="demo", ledger=ledger)
    for at in range(WARM_ASKS):  # warm: parser built, forecasts cached, the ledger's file made, its memos full
        router.ask(ASKS[at % len(ASKS)])
    time.sleep(WRITTEN_WITHIN)  # the warm rows written, and their one-off costs (first masks, statements) paid

    def work() -> None:
        for at in range(count):
            router.ask(ASKS[at % len(ASKS)])
        router.close()

    counted(work)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workload", choices=WORKLOADS)
    parser.add_argument("--count", type=int, default=800, help="questions or asks counted (default 800)")
    args = parser.parse_args()
    if args.workload == "route":
        route(args.count)
    elif args.workload == "jieba":
        jieba(args.count)
    else:
        with tempfile.TemporaryDirectory() as folder:
            ask(args.count, "off" if args.workload == "ask" else str(Path(folder) / "ledger.db"))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
