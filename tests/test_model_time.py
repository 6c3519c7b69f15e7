"""Model time is model time (issue 52, item 4): `serve` builds the LLM client at start and the CLI before an
LLM answer's clock starts, so the first answer does not carry the `openai` import; the ledger keeps the
model's own time apart from the whole answer's, and `savings` shows both."""

import json
import sqlite3
import subprocess
import sys
import urllib.request

from live_server import KEY, post, serving

from fake_openai import answer
from support import subprocess_env

#: Seconds the fake model takes to answer: the model time a row must show, well above a request's own work.
MODEL_S = 0.3


def test_serve_builds_the_llm_client_at_start_and_only_when_one_is_configured(tmp_path, llm_server):
    # In a fresh process: after the app's startup and before any request, `openai` is loaded when a key is
    # configured (the first LLM answer does not pay the import), and not for a rule-only service.
    code = (
        "import sys\n"
        "from starlette.testclient import TestClient\n"
        "from hybrid_weather.router import HybridRouter, Settings\n"
        "from hybrid_weather.router.serve import create_app\n"
        "key = sys.argv[1] if len(sys.argv) > 1 else None\n"
        f"settings = Settings(provider='demo', openai_api_key=key, openai_base_url={llm_server.base_url!r})\n"
        f"router = HybridRouter(settings=settings, ledger={str(tmp_path / 'ledger.db')!r})\n"
        "assert 'openai' not in sys.modules\n"
        "with TestClient(create_app(router)):\n"
        "    print('openai' in sys.modules)\n"
        "router.close()\n"
    )
    with_key = subprocess.run([sys.executable, "-c", code, KEY], capture_output=True, text=True, timeout=120)
    without = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                             env=subprocess_env(OPENAI_API_KEY=""))  # fmt: skip
    assert with_key.returncode == 0 and without.returncode == 0, with_key.stderr + without.stderr
    assert with_key.stdout.split() == ["True"] and without.stdout.split() == ["False"]


def test_the_cli_imports_the_llm_client_before_the_clock_of_an_llm_answer(tmp_path, llm_server):
    # The answer's clock starts in HybridRouter._begin: by then `openai` is loaded for an LLM question, and
    # never for a rule question (a rule answer's cold start stays without it).
    llm_server.then(answer("适合，多云。"))
    code = (
        "import sys\n"
        "from hybrid_weather.router import facade\n"
        "from hybrid_weather.router.cli import cli\n"
        "seen = []\n"
        "begin = facade.HybridRouter._begin\n"
        "def spy(self, *args, **kwargs):\n"
        "    seen.append('openai' in sys.modules)\n"
        "    return begin(self, *args, **kwargs)\n"
        "facade.HybridRouter._begin = spy\n"
        "try:\n"
        "    cli([sys.argv[1], '--json', '--today', '2026-11-29'])\n"
        "except SystemExit as exit_:\n"
        "    assert not exit_.code, exit_.code\n"
        "print('SEEN', seen, 'openai' in sys.modules)\n"
    )
    env = {
        "HYBRID_WEATHER_PROVIDER": "demo",
        "HYBRID_WEATHER_LEDGER": str(tmp_path / "ledger.db"),
        "OPENAI_API_KEY": KEY,
        "OPENAI_BASE_URL": llm_server.base_url,
        "HYBRID_WEATHER_HOME": str(tmp_path),
    }
    llm = subprocess.run([sys.executable, "-c", code, "上海明天适合去爬山吗"], capture_output=True, text=True,
                         timeout=120, env=subprocess_env(**env))  # fmt: skip
    rule = subprocess.run([sys.executable, "-c", code, "上海明天天气"], capture_output=True, text=True,
                          timeout=120, env=subprocess_env(**env))  # fmt: skip
    assert llm.returncode == 0 and rule.returncode == 0, llm.stderr + rule.stderr
    assert llm.stdout.splitlines()[-1] == "SEEN [True] True"
    assert rule.stdout.splitlines()[-1] == "SEEN [False] False"
    assert len(llm_server.requests) == 1  # the LLM question was answered by the model


def test_the_ledger_and_savings_keep_the_models_time_apart_from_the_answers(tmp_path, llm_server):
    # A model that takes MODEL_S to answer, over a real server: the row's model time is that, within its
    # latency; GET /v1/savings shows both.
    llm_server.then({"sleep": MODEL_S, "then": answer("适合，多云。")})
    with serving(tmp_path, llm_server) as server:
        status, body = post(
            f"{server.url}/v1/chat/completions",
            {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "上海明天适合去爬山吗"}]},
        )
        assert status == 200 and body["choices"][0]["message"]["content"] == "适合，多云。"
        with urllib.request.urlopen(f"{server.url}/v1/savings?days=1&include_demo=1", timeout=10) as response:
            report = json.loads(response.read())
    rows = sqlite3.connect(server.ledger).execute("SELECT latency_ms, model_ms FROM requests WHERE route = 'llm'")
    ((latency_ms, model_ms),) = rows.fetchall()
    assert MODEL_S * 1000 <= model_ms <= latency_ms
    assert set(report["model_ms"]) == {"llm"}
    assert model_ms <= report["model_ms"]["llm"]["p50"] <= model_ms * 1.05
    assert latency_ms <= report["latency_ms"]["llm"]["p50"] <= latency_ms * 1.05
