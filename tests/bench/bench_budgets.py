"""How far over its daily budget one key gets when it asks in parallel across two `serve` processes that
share a Redis (issue 49): the overrun measured, beside the bound docs/serving.md states.

    python tests/bench/bench_budgets.py [--parallel 40] [--answers 4.5 40 400] [--model-s 0.2]

Starts a fake OpenAI-compatible model (tests/fake_openai.py: every answer takes MODEL_S and reports the
same 500 prompt and 20 completion tokens of gpt-4o-mini), and two serve processes of one worker each
sharing the local Redis (a fresh key prefix, deleted at the end), with pass-through on and one key whose
budget is each of ANSWERS answers in turn. Then sends waves of PARALLEL requests at once, half to each
process, every fourth one bringing its own tools (pass-through), until a whole wave is refused as over
budget. The key's spend is what the fake model answered times one answer's cost; the overrun is that less
the budget. With --figures-json, the last line is the headline figures as JSON.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.bench import FIGURES_FLAG, print_figures

REDIS_URL = "redis://127.0.0.1:6379/15"
#: One answer of the fake model, and what it costs on gpt-4o-mini (USD per 1M tokens: 0.15 in, 0.60 out).
ONE_ANSWER = {"prompt": 500, "completion": 20}
ANSWER_USD = (500 * 0.15 + 20 * 0.60) / 1e6


def measure(budget: float, parallel: int, model_s: float) -> tuple[int, int, int]:
    """Waves of PARALLEL requests against one key's BUDGET (USD) until a whole wave is refused as over it:
    (requests sent, waves, answers the model gave)."""
    import redis
    from live_server import serving
    from test_serve_budgets import all_at_once, chat_at

    from fake_openai import FakeOpenAI, answer

    model = FakeOpenAI().start()
    model.repeat_last = True
    model.then({"sleep": model_s, "then": answer("适合。", **ONE_ANSWER)})
    prefix = f"hw-bench-{uuid.uuid4().hex[:12]}:"
    sent = waves = 0
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)

        def host(name: str) -> Any:
            (tmp / name).mkdir()
            return serving(tmp / name, model, HYBRID_WEATHER_HOME=str(tmp / f"home-{name}"),
                           HYBRID_WEATHER_API_KEYS="bench-key", HYBRID_WEATHER_PASS_THROUGH="1",
                           HYBRID_WEATHER_KEY_BUDGETS=f"bench-key={budget:.10f}usd",
                           HYBRID_WEATHER_CACHE_URL=REDIS_URL, HYBRID_WEATHER_CACHE_PREFIX=prefix)  # fmt: skip

        with host("a") as a, host("b") as b:
            while True:
                waves += 1
                results = all_at_once([lambda url=h.url, tools=n % 4 == 0: chat_at(url, "bench-key", tools)
                                       for n, h in enumerate([a, b] * (parallel // 2))])  # fmt: skip
                sent += len(results)
                if all(result == (429, "key_budget_exceeded") for result in results):
                    break
    model.stop()
    client = redis.Redis.from_url(REDIS_URL)
    for key in client.scan_iter(match=f"{prefix}*"):
        client.delete(key)
    client.close()
    return sent, waves, len(model.requests)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--parallel", type=int, default=40, help="requests sent at once in each wave")
    parser.add_argument("--answers", type=float, nargs="+", default=[4.5, 40, 400],
                        help="budgets to measure, in answers of the fake model")  # fmt: skip
    parser.add_argument("--model-s", type=float, default=0.2, help="seconds the fake model takes an answer")
    parser.add_argument(FIGURES_FLAG, action="store_true")
    args = parser.parse_args()

    from hybrid_weather.agent.llm.loop import DEFAULT_TOKEN_BUDGET
    from hybrid_weather.router.serve.budgets import DEFAULT_CONCURRENCY

    worst = DEFAULT_TOKEN_BUDGET * 0.60 / 1e6  # the loop's tokens, at gpt-4o-mini's dearest price
    figures = []
    for answers in args.answers:
        budget = answers * ANSWER_USD
        sent, waves, answered = measure(budget, args.parallel, args.model_s)
        overrun = answered * ANSWER_USD - budget
        print(f"budget {answers:g} answers (${budget:.6f}): {sent} requests in {waves} waves of {args.parallel}, "
              f"{answered} answered, spent ${answered * ANSWER_USD:.6f}, overrun ${overrun:+.6f} "
              f"({overrun / ANSWER_USD:+.2f} answers; bound: {DEFAULT_CONCURRENCY} × ${worst:.4f} = "
              f"${DEFAULT_CONCURRENCY * worst:.4f})")  # fmt: skip
        figures.append((f"budget overrun, {args.parallel} parallel requests over two serve processes, "
                        f"budget of {answers:g} answers", f"{overrun / ANSWER_USD:+.2f} answers"))  # fmt: skip
    if args.figures_json:
        print_figures(figures)


if __name__ == "__main__":
    main()
