"""Load benchmark of `hybrid-weather serve` against a bare endpoint of the same framework and server, in
the same run (wrk, from Debian's packages).

    python tests/bench/bench_serve.py [--workers 2] [--connections 64] [--seconds 10] [--rounds 3]

Starts a bare Starlette app on uvicorn (tests/bench/bare_app.py: read a JSON body, answer a JSON
object) and the service (demo provider, so no network; a file ledger, as in production), warms both, then
drives, in turn and for ROUNDS rounds: POST /hello on the bare app, POST /v1/ask with rule questions and
POST /v1/chat/completions with rule questions, plain and streamed, on the service. Prints requests/s and
p50/p99 latency of each (medians over the rounds) and the service's throughput as a share of the bare
endpoint's.
Targets (issue 14): >= 60 % of the bare endpoint's throughput, p99 <= 20 ms at 64 connections.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).parent
QUESTIONS = ["上海今天天气", "北京明天会下雨吗", "广州后天多少度", "魔都明天天气", "深圳今天刮风吗", "成都明天冷吗"]
_LUA = """
local bodies = {%s}
local i = 0
request = function()
  i = i + 1
  return wrk.format("POST", nil, {["Content-Type"] = "application/json"}, bodies[(i %% #bodies) + 1])
end
"""


def _port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def service_env(home: Path, ledger: str) -> dict[str, str]:
    """The environment of a benchmarked service: the demo provider (no network), HOME, the ledger at LEDGER
    (or "off"), and neither API keys nor a rate limit from the caller's environment."""
    env = {**os.environ, "HYBRID_WEATHER_PROVIDER": "demo", "HYBRID_WEATHER_HOME": str(home),
           "HYBRID_WEATHER_LEDGER": ledger}  # fmt: skip
    env.pop("HYBRID_WEATHER_API_KEYS", None)
    env.pop("HYBRID_WEATHER_RATE_LIMIT", None)
    return env


def _wait(url: str, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"the server at {url} exited")
        try:
            urllib.request.urlopen(
                urllib.request.Request(url, json.dumps({"query": "上海今天天气"}).encode(), method="POST"), timeout=1
            )
            return
        except OSError:
            time.sleep(0.1)
    raise SystemExit(f"the server at {url} did not start")


def _wrk(url: str, bodies: list[dict[str, object]], connections: int, seconds: int, folder: Path) -> dict[str, float]:
    script = folder / "bodies.lua"
    lua_bodies = ", ".join("[[" + json.dumps(b, ensure_ascii=False) + "]]" for b in bodies)
    script.write_text(_LUA % lua_bodies, "utf-8")
    out = subprocess.run(
        ["wrk", "-t2", f"-c{connections}", f"-d{seconds}s", "--latency", "-s", str(script), url],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]

    def percentile(name: str) -> float:
        value, unit = re.search(rf"\s{name}%\s+([\d.]+)(us|ms|s)", out).groups()  # type: ignore[union-attr]
        return float(value) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]

    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    return {"rps": rate, "p50": percentile("50"), "p99": percentile("99"),
            "non2xx": float(errors.group(1)) if errors else 0.0}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if not shutil.which("wrk"):
        raise SystemExit("wrk is not installed: apt-get install wrk")
    folder = Path(tempfile.mkdtemp(prefix="hybrid-weather-bench-"))
    bare_port, service_port = _port(), _port()
    env = service_env(folder / "home", str(folder / "ledger.db"))
    bare = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "bare_app:app", "--app-dir", str(HERE), "--port", str(bare_port),
         "--workers", str(args.workers), "--no-access-log", "--log-level", "warning"], env=env,
    )  # fmt: skip
    service = subprocess.Popen(
        [sys.executable, "-m", "hybrid_weather.router", "serve", "--port", str(service_port),
         "--workers", str(args.workers)], env=env,
    )  # fmt: skip
    try:
        _wait(f"http://127.0.0.1:{bare_port}/hello", bare)
        _wait(f"http://127.0.0.1:{service_port}/v1/ask", service)
        ask = [{"query": q} for q in QUESTIONS]
        chat = [{"model": "any", "messages": [{"role": "user", "content": q}]} for q in QUESTIONS]
        streamed = [{**body, "stream": True} for body in chat]
        runs: dict[str, list[dict[str, float]]] = {"bare": [], "ask": [], "chat": [], "stream": []}
        targets = {
            "bare": (f"http://127.0.0.1:{bare_port}/hello", ask),
            "ask": (f"http://127.0.0.1:{service_port}/v1/ask", ask),
            "chat": (f"http://127.0.0.1:{service_port}/v1/chat/completions", chat),
            "stream": (f"http://127.0.0.1:{service_port}/v1/chat/completions", streamed),
        }
        for url, bodies in targets.values():  # warm: every question's forecast cached in every worker
            _wrk(url, bodies, 8, 2, folder)
        for _ in range(args.rounds):
            for name, (url, bodies) in targets.items():
                runs[name].append(_wrk(url, bodies, args.connections, args.seconds, folder))
    finally:
        for process in (bare, service):
            process.terminate()
            process.wait(timeout=30)
        shutil.rmtree(folder, ignore_errors=True)
    median = {name: {k: statistics.median(r[k] for r in results) for k in results[0]} for name, results in runs.items()}
    print(f"{args.workers} workers, {args.connections} connections, {args.seconds} s x {args.rounds} rounds "
          f"(medians), load {os.getloadavg()[0]:.2f}, {os.cpu_count()} cores; wrk -t2 on the same machine")  # fmt: skip
    labels = {"bare": "bare POST /hello (Starlette + uvicorn)", "ask": "POST /v1/ask, rule questions",
              "chat": "POST /v1/chat/completions, rule questions",
              "stream": "the same with stream: true"}  # fmt: skip
    for name, figures in median.items():
        share = figures["rps"] / median["bare"]["rps"]
        print(f"  {labels[name]:<44} {figures['rps']:9,.0f} req/s  p50 {figures['p50']:6.2f} ms  "
              f"p99 {figures['p99']:6.2f} ms  {100 * share:5.1f}% of bare"
              + (f"  ({figures['non2xx']:.0f} non-2xx)" if figures["non2xx"] else ""))  # fmt: skip
    for name in ("ask", "chat", "stream"):
        share = median[name]["rps"] / median["bare"]["rps"]
        met = share >= 0.6 and median[name]["p99"] <= 20
        print(f"target {name}: >= 60% of bare and p99 <= 20 ms -> {'met' if met else 'MISSED'}")


if __name__ == "__main__":
    main()
