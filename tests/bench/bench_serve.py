"""Load benchmark of `hybrid-weather serve`: its own figures on rule questions, and its overhead per LLM
request beside the gateway a user would put in front of a model instead, LiteLLM's proxy, on one fake model.

    python tests/bench/bench_serve.py [--workers 2] [--connections 64] [--seconds 10] [--rounds 3]
                                      [--llm-connections 1] [--peer auto|litellm|none] [--litellm PATH]

LiteLLM is no dependency of the project: the comparison needs its proxy installed in a venv of its own,

    python -m venv /tmp/litellm && /tmp/litellm/bin/pip install 'litellm[proxy]'
    python tests/bench/bench_serve.py --peer litellm --litellm /tmp/litellm/bin/litellm

--peer auto (the default) measures the peer when `litellm` is on PATH or at /tmp/litellm/bin/litellm, and
otherwise prints the service's own figures and says the peer was not measured.

Starts, each in processes of its own: a fake OpenAI-compatible model (Starlette on uvicorn: every chat
completion is answered at once with the same short text, so the model itself costs next to nothing), the
service (demo provider, so no network; a file ledger, as in production; the fake model as its endpoint)
and the peer (started from a config file whose one model is the same fake model; as many workers; no
database, as `litellm --config` runs by default). Warms each, then drives with wrk (Debian's package), for
ROUNDS rounds:
- the service's rule path at CONNECTIONS connections: POST /v1/ask, and POST /v1/chat/completions plain
  and streamed, with rule questions (target: p99 <= 20 ms at 64 connections);
- chat completions the rules leave to the model, at LLM_CONNECTIONS connections (1: one request at a time,
  so latency is the request's own cost, no queue), sent to the fake model itself, through the service and
  through the peer. Each one's overhead per request is its p50 less the fake model's own p50.
Prints requests/s and p50/p99 latency of each (medians over the rounds). With --figures-json, the last line
is the headline figures as JSON, for `python -m tests.bench`.
"""

from __future__ import annotations

import argparse
import http.client
import json
import multiprocessing
import os
import re
import secrets
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.bench import FIGURES_FLAG, print_figures

QUESTIONS = ["上海今天天气", "北京明天会下雨吗", "广州后天多少度", "魔都明天天气", "深圳今天刮风吗", "成都明天冷吗"]
#: Questions the rules leave to the model: each is one call to the fake model, through the service or the peer.
LLM_QUESTIONS = ["帮我写一首关于秋天的短诗", "推荐几本好看的科幻小说", "解释一下什么是量子计算", "给我讲个笑话"]
#: The fake model's streamed answer: its first token after FIRST_TOKEN_S, then one every TOKEN_GAP_S.
STREAM_TOKENS, FIRST_TOKEN_S, TOKEN_GAP_S = 20, 0.05, 0.01
#: Streamed answers each target gets per round, one at a time, for the time to the first token.
STREAMED_ASKS = 20
#: Where --peer auto looks for LiteLLM's proxy after PATH: the venv the docstring's command makes.
LITELLM_VENV = Path("/tmp/litellm/bin/litellm")
_LUA = """
local bodies = {%s}
local headers = {%s}
local i = 0
request = function()
  i = i + 1
  return wrk.format("POST", nil, headers, bodies[(i %% #bodies) + 1])
end
"""
_LITELLM_CONFIG = """model_list:
  - model_name: {model}
    litellm_params:
      model: openai/{model}
      api_base: {base_url}
      api_key: bench-key
"""


def _port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def service_env(home: Path, ledger: str, model_url: str | None = None, key: str | None = None) -> dict[str, str]:
    """The environment of a benchmarked service: the demo provider (no network), HOME, the ledger at LEDGER
    (or "off"), the model at MODEL_URL and the client key KEY if given, and neither API keys nor a rate
    limit from the caller's environment."""
    env = {**os.environ, "HYBRID_WEATHER_PROVIDER": "demo", "HYBRID_WEATHER_HOME": str(home),
           "HYBRID_WEATHER_LEDGER": ledger}  # fmt: skip
    for name in ("HYBRID_WEATHER_API_KEYS", "HYBRID_WEATHER_RATE_LIMIT", "HYBRID_WEATHER_MODEL", "OPENAI_BASE_URL"):
        env.pop(name, None)
    if model_url is not None:
        env |= {"OPENAI_API_KEY": "bench-key", "OPENAI_BASE_URL": model_url}
    if key is not None:
        env["HYBRID_WEATHER_API_KEYS"] = key
    return env


def _wait(
    url: str,
    process: subprocess.Popen[bytes] | None,
    body: dict[str, Any] | None = None,
    seconds: float = 30,
    key: str | None = None,
) -> None:
    """Until URL answers BODY (a rule question by default) with a 2xx: a server is measured once it is up.
    PROCESS, the server's, ends the wait early if it exits."""
    data = json.dumps(body or {"query": "上海今天天气"}).encode()
    headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {key}"} if key else {})}
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise SystemExit(f"the server at {url} exited")
        try:
            urllib.request.urlopen(urllib.request.Request(url, data, headers, method="POST"), timeout=5)
            return
        except OSError:
            time.sleep(0.2)
    raise SystemExit(f"the server at {url} did not start within {seconds:g} s")


def _wrk(
    url: str, bodies: list[dict[str, Any]], connections: int, seconds: int, folder: Path, key: str | None = None
) -> dict[str, float]:
    """wrk's requests/s, p50 and p99 (ms) and non-2xx count for BODIES sent in turn to URL (as KEY if given)."""
    script = folder / "bodies.lua"
    lua_bodies = ", ".join("[[" + json.dumps(b, ensure_ascii=False) + "]]" for b in bodies)
    lua_headers = '["Content-Type"] = "application/json"' + (f', ["Authorization"] = "Bearer {key}"' if key else "")
    script.write_text(_LUA % (lua_bodies, lua_headers), "utf-8")
    threads = min(2, connections)  # wrk needs a connection for each of its threads
    out = subprocess.run(
        ["wrk", f"-t{threads}", f"-c{connections}", f"-d{seconds}s", "--latency", "-s", str(script), url],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]

    def percentile(name: str) -> float:
        value, unit = re.search(rf"\s{name}%\s+([\d.]+)(us|ms|s)", out).groups()  # type: ignore[union-attr]
        return float(value) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]

    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    return {"rps": rate, "p50": percentile("50"), "p99": percentile("99"),
            "non2xx": float(errors.group(1)) if errors else 0.0}  # fmt: skip


def _first_tokens(url: str, body: dict[str, Any], key: str, asks: int) -> dict[str, float]:
    """For ASKS streamed answers to BODY, one at a time on one connection: the p50 time to the first token
    of content and to `data: [DONE]` (ms)."""
    where = urllib.parse.urlsplit(url)
    connection = http.client.HTTPConnection(where.hostname, where.port, timeout=30)
    data = json.dumps({**body, "stream": True}, ensure_ascii=False).encode()
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {key}"}
    firsts, totals = [], []
    try:
        for _ in range(asks):
            started, first = time.perf_counter(), None
            connection.request("POST", where.path, data, headers)
            response = connection.getresponse()
            if response.status != 200:
                raise SystemExit(f"{url} answered {response.status}: {response.read()[:200]!r}")
            for line in response:
                if line.startswith(b"data: [DONE]"):
                    totals.append((time.perf_counter() - started) * 1000)
                    break
                if first is None and line.startswith(b"data: "):
                    choices = json.loads(line[6:]).get("choices")
                    if choices and choices[0]["delta"].get("content"):
                        first = (time.perf_counter() - started) * 1000
            response.read()  # the rest of the body, so the connection serves the next
            if first is None:
                raise SystemExit(f"{url} streamed no content")
            firsts.append(first)
    finally:
        connection.close()
    return {"first": statistics.median(firsts), "done": statistics.median(totals)}


# -- the fake model ---------------------------------------------------------------------------------------


def run_fake_model(port: int, model: str) -> None:
    """The fake model, in a process of its own so its work does not share the service's or the peer's
    interpreter: every chat completion answered at once with the same reply, made once."""
    import asyncio

    import uvicorn
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response, StreamingResponse
    from starlette.routing import Route

    reply = json.dumps({
        "id": "chatcmpl-bench", "object": "chat.completion", "created": int(time.time()), "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "好的。"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 5, "total_tokens": 105},
    }, ensure_ascii=False).encode()  # fmt: skip

    def event(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> bytes:
        chunk = {"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 0, "model": model,
                 "choices": [{"index": 0, "delta": delta, "finish_reason": finish}] if delta is not None else [],
                 **extra}  # fmt: skip
        return b"data: " + json.dumps(chunk, ensure_ascii=False).encode() + b"\n\n"

    async def streamed() -> AsyncIterator[bytes]:
        """STREAM_TOKENS pieces, the first after FIRST_TOKEN_S and each next TOKEN_GAP_S later, as a model
        writes them: the time to the first token is then the model's own plus what is in front of it."""
        yield event({"role": "assistant", "content": ""})
        for n in range(STREAM_TOKENS):
            await asyncio.sleep(FIRST_TOKEN_S if n == 0 else TOKEN_GAP_S)
            yield event({"content": "好"})
        yield event({}, "stop")
        yield event(None, usage={"prompt_tokens": 100, "completion_tokens": STREAM_TOKENS,  # type: ignore[arg-type]
                                 "total_tokens": 100 + STREAM_TOKENS})  # fmt: skip
        yield b"data: [DONE]\n\n"

    async def completions(request: Request) -> Response:
        if json.loads(await request.body()).get("stream"):
            return StreamingResponse(streamed(), media_type="text/event-stream")
        return Response(reply, media_type="application/json")

    app = Starlette(routes=[Route("/v1/chat/completions", completions, methods=["POST"])])
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)


# -- the peer ---------------------------------------------------------------------------------------------


def find_litellm(peer: str, given: str | None) -> tuple[str | None, str]:
    """(LiteLLM's proxy executable, or None; why not) for --peer PEER and --litellm GIVEN."""
    if peer == "none":
        return None, "--peer none"
    candidates = [given] if given else [shutil.which("litellm"), str(LITELLM_VENV)]
    for candidate in candidates:
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return candidate, ""
    why = f"LiteLLM's proxy not found at {given}" if given else "LiteLLM's proxy not found (see bench_serve.py)"
    if peer == "litellm":
        raise SystemExit(f"{why}: python -m venv /tmp/litellm && /tmp/litellm/bin/pip install 'litellm[proxy]'")
    return None, why


def litellm_version(executable: str) -> str:
    """The proxy's version, asked of the Python beside its executable (`litellm --version` first fetches a
    price table from the network, and waits out its retries where there is none)."""
    python = Path(executable).with_name("python")
    done = subprocess.run(
        [str(python), "-c", "import importlib.metadata as m; print(m.version('litellm'))"],
        capture_output=True, text=True,
    )  # fmt: skip
    return done.stdout.strip() if done.returncode == 0 else "version unknown"


def start_litellm(
    executable: str, model: str, model_url: str, port: int, workers: int, folder: Path, key: str
) -> subprocess.Popen[bytes]:
    """LiteLLM's proxy with MODEL, served by the fake model at MODEL_URL, as its only model, and KEY as its
    master key (it refuses to start without one)."""
    config = folder / "litellm.yaml"
    config.write_text(_LITELLM_CONFIG.format(model=model, base_url=model_url), "utf-8")
    # The price table it would fetch at start is not needed for a fake model, and there may be no network.
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_LOG": "ERROR", "LITELLM_MASTER_KEY": key}
    return subprocess.Popen(
        [executable, "--config", str(config), "--host", "127.0.0.1", "--port", str(port),
         "--num_workers", str(workers)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip


# -- the run ----------------------------------------------------------------------------------------------


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--connections", type=int, default=64, help="for the rule questions (default 64)")
    parser.add_argument("--llm-connections", type=int, default=1, help="for the LLM questions (default 1)")
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--peer", choices=("auto", "litellm", "none"), default="auto")
    parser.add_argument("--litellm", metavar="PATH", help="LiteLLM's proxy executable (default: PATH's, then "
                        f"{LITELLM_VENV})")  # fmt: skip
    parser.add_argument(FIGURES_FLAG, action="store_true", help="end with the headline figures as JSON")
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    if not shutil.which("wrk"):
        raise SystemExit("wrk is not installed: apt-get install wrk")
    litellm, not_measured = find_litellm(args.peer, args.litellm)
    peer = f"LiteLLM {litellm_version(litellm)}" if litellm else None
    folder = Path(tempfile.mkdtemp(prefix="hybrid-weather-bench-"))
    try:
        runs = measure(args, folder, litellm)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    median = {name: {k: statistics.median(r[k] for r in results) for k in results[0]} for name, results in runs.items()}
    figures = report(args, median, peer, not_measured)
    if args.figures_json:
        print_figures(figures)


def measure(args: argparse.Namespace, folder: Path, litellm: str | None) -> dict[str, list[dict[str, float]]]:
    """Start the fake model, the service and the peer (when LITELLM), and drive each target ROUNDS times."""
    from hybrid_weather.agent.llm.models import ModelTable

    model = ModelTable().default_model
    ports = {name: _port() for name in ("model", "service", "peer")}
    model_url = f"http://127.0.0.1:{ports['model']}/v1"
    fake = multiprocessing.get_context("spawn").Process(target=run_fake_model, args=(ports["model"], model))
    fake.start()
    # Both behind a key, as each is deployed where others can reach it (LiteLLM will not start without one).
    key = f"sk-{secrets.token_hex(32)}"
    env = service_env(folder / "home", str(folder / "ledger.db"), model_url, key)
    servers = [subprocess.Popen(
        [sys.executable, "-m", "hybrid_weather.router", "serve", "--port", str(ports["service"]),
         "--workers", str(args.workers)], env=env,
    )]  # fmt: skip
    if litellm:
        servers.append(start_litellm(litellm, model, model_url, ports["peer"], args.workers, folder, key))
    try:
        targets = _targets(ports, model, with_peer=litellm is not None)
        chat = targets["model"][1][0]
        _wait(targets["ask"][0], servers[0], key=key)
        _wait(targets["model"][0], None, chat)
        if litellm:
            _wait(targets["peer"][0], servers[1], chat, seconds=180, key=key)  # the proxy takes its time to start
        return _drive(args, targets, folder, key)
    finally:
        for process in servers:
            process.terminate()
            process.wait(timeout=30)
        fake.terminate()
        fake.join(10)


def _targets(ports: dict[str, int], model: str, with_peer: bool) -> dict[str, tuple[str, list[dict[str, Any]]]]:
    """Each measured target: its URL and the bodies wrk sends it in turn."""
    ask = [{"query": q} for q in QUESTIONS]
    chat = [{"model": model, "messages": [{"role": "user", "content": q}]} for q in QUESTIONS]
    llm = [{"model": model, "messages": [{"role": "user", "content": q}]} for q in LLM_QUESTIONS]
    service = f"http://127.0.0.1:{ports['service']}/v1"
    targets = {
        "ask": (f"{service}/ask", ask),
        "chat": (f"{service}/chat/completions", chat),
        "stream": (f"{service}/chat/completions", [{**body, "stream": True} for body in chat]),
        "model": (f"http://127.0.0.1:{ports['model']}/v1/chat/completions", llm),
        "service_llm": (f"{service}/chat/completions", llm),
    }
    if with_peer:
        targets["peer"] = (f"http://127.0.0.1:{ports['peer']}/v1/chat/completions", llm)
    return targets


def _drive(
    args: argparse.Namespace, targets: dict[str, tuple[str, list[dict[str, Any]]]], folder: Path, key: str
) -> dict[str, list[dict[str, float]]]:
    """Each target warmed, then driven once a round, the targets in turn: the machine's drift within a run
    falls on each alike. Every request carries KEY (the fake model ignores it)."""
    for url, bodies in targets.values():  # warm: every forecast cached in every worker, every pool connected
        _wrk(url, bodies, 8, 2, folder, key)
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in targets}
    runs |= {f"{name}_streamed": [] for name in ("model", "service_llm", "peer") if name in targets}
    streamed = [name for name in ("model", "service_llm", "peer") if name in targets]
    for _ in range(args.rounds):
        for name, (url, bodies) in targets.items():
            connections = args.connections if name in ("ask", "chat", "stream") else args.llm_connections
            runs[name].append(_wrk(url, bodies, connections, args.seconds, folder, key))
        for name in streamed:  # an LLM answer streamed: the time to its first token, and to its end
            url, bodies = targets[name]
            runs[f"{name}_streamed"].append(_first_tokens(url, bodies[0], key, STREAMED_ASKS))
    return runs


def report(
    args: argparse.Namespace, median: dict[str, dict[str, float]], peer: str | None, not_measured: str
) -> list[tuple[str, str]]:
    """Print the medians and the targets; return the headline figures."""
    print(f"{args.workers} workers, {args.seconds} s x {args.rounds} rounds (medians), load {os.getloadavg()[0]:.2f}, "
          f"{os.cpu_count()} cores; wrk on the same machine")  # fmt: skip
    labels = {
        "ask": f"POST /v1/ask, rule questions, {args.connections} conn.",
        "chat": f"POST /v1/chat/completions, rule questions, {args.connections} conn.",
        "stream": "the same with stream: true",
        "model": f"LLM questions to the fake model itself, {args.llm_connections} conn.",
        "service_llm": "LLM questions through the service",
        "peer": f"LLM questions through {peer}",
    }
    for name, figures in median.items():
        if name.endswith("_streamed"):
            continue
        failed = f"  ({figures['non2xx']:.0f} non-2xx)" if figures["non2xx"] else ""
        print(f"  {labels[name]:<60} {figures['rps']:9,.0f} req/s  p50 {figures['p50']:6.2f} ms  "
              f"p99 {figures['p99']:6.2f} ms{failed}")  # fmt: skip
    for name in ("ask", "chat", "stream"):
        print(f"target {name}: p99 <= 20 ms -> {'met' if median[name]['p99'] <= 20 else 'MISSED'}")
    own = median["model"]["p50"]
    overhead = median["service_llm"]["p50"] - own
    peer_part = f"{peer} {median['peer']['p50'] - own:+.2f} ms" if peer else f"peer not measured: {not_measured}"
    print(f"overhead per LLM request at p50, over the model's own {own:.2f} ms: service {overhead:+.2f} ms; "
          f"{peer_part}")  # fmt: skip
    first = {name: median[f"{name}_streamed"] for name in ("model", "service_llm", "peer")
             if f"{name}_streamed" in median}  # fmt: skip
    print(f"streamed LLM answers ({STREAMED_ASKS} a round, one at a time; the model's first token after "
          f"{FIRST_TOKEN_S * 1000:.0f} ms, {STREAM_TOKENS} tokens {TOKEN_GAP_S * 1000:.0f} ms apart):")  # fmt: skip
    for name, figures in first.items():
        print(f"  {labels[name]:<60} first token "
              f"{figures['first']:6.2f} ms  whole answer {figures['done']:6.2f} ms")  # fmt: skip
    own_first = first["model"]["first"]
    service_first = first["service_llm"]["first"] - own_first
    peer_first = f"{first['peer']['first'] - own_first:+.2f} ms" if "peer" in first else None
    print(f"time to the first token, over the model's own {own_first:.2f} ms: service {service_first:+.2f} ms; "
          f"{peer or 'peer'} {peer_first or 'not measured'}")  # fmt: skip
    what = f"{args.llm_connections} connection{'s' if args.llm_connections > 1 else ''}, {args.workers} workers"
    ask = median["ask"]
    return [
        (
            f"`serve`, `POST /v1/ask` of rule questions, {args.connections} connections, {args.workers} workers: "
            "p99; req/s (target p99 ≤ 20 ms)",
            f"{ask['p99']:.1f} ms; {ask['rps']:,.0f} req/s",
        ),
        (
            f"`serve`: overhead per LLM request over a fake model's own p50 ({what}); streamed: time to the first "
            "token over the model's own",
            f"{overhead:+.2f} ms; {service_first:+.2f} ms",
        ),
        (
            f"{peer or 'LiteLLM proxy'}, as a peer of `serve`: the same two",
            f"{median['peer']['p50'] - own:+.2f} ms; {peer_first}" if peer else f"not measured: {not_measured}",
        ),
    ]


if __name__ == "__main__":
    main()
