"""Measure a fresh `serve`'s first LLM request, and print what was measured.

    python tests/bench/bench_first_llm.py [--runs 3]

Each run starts `hybrid-weather serve` (one worker, demo provider, a SQLite ledger of its own) against a
fake OpenAI-compatible model on 127.0.0.1 (tests/fake_openai.py, answering at once), sends it one chat
request that only the model answers, and prints the request's wall time and what its ledger row says:
the whole answer's latency_ms and the model's own model_ms. A service that built its LLM client (the
`openai` import) inside the first answer shows it as a gap between the two.

With --figures-json, the last line is the headline figure as JSON, for `python -m tests.bench`.
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # fake_openai, live_server
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # tests.bench

from live_server import post, serving

from tests.bench import FIGURES_FLAG, print_figures

from fake_openai import FakeOpenAI, answer

QUESTION = "上海明天适合穿什么去爬山"  # advice: only the model answers it


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(FIGURES_FLAG, action="store_true", help="end with the headline figure as JSON")
    args = parser.parse_args()
    model = FakeOpenAI().start()
    walls = []
    try:
        for run in range(args.runs):
            model.then(answer("上海明天多云，适合穿薄外套。"))
            home = Path(tempfile.mkdtemp(prefix="bench-first-llm-"))
            with serving(home, model) as server:
                started = time.perf_counter()
                request = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": QUESTION}]}
                status, _ = post(f"{server.url}/v1/chat/completions", request)
                walls.append((time.perf_counter() - started) * 1000)
            with sqlite3.connect(home / "ledger.db") as db:
                latency, model_ms = db.execute("SELECT latency_ms, model_ms FROM requests").fetchone()
            print(f"run {run + 1}: HTTP {status}, {walls[-1]:.0f} ms wall; ledger latency_ms {latency:.0f}, "
                  f"model_ms {model_ms:.0f}")  # fmt: skip
    finally:
        model.stop()
    median = statistics.median(walls)
    print(f"first LLM request over a fresh serve: median {median:.0f} ms of {args.runs} runs")
    if args.figures_json:
        print_figures([("a fresh `serve`'s first LLM request, fake model on 127.0.0.1, median", f"{median:.0f} ms")])


if __name__ == "__main__":
    main()
