"""`hybrid-weather serve` in its own process, for the tests that need the real server."""

import contextlib
import json
import signal
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request

from fake_weather import free_port
from support import subprocess_env

KEY = "sk-test-upstream-live-42"


@contextlib.contextmanager
def serving(tmp_path, llm_server, workers=1, tls=None, grace=None, stderr=None, **env):
    """The server on a free port of 127.0.0.1 with a demo provider and a fresh ledger; TLS, a (certfile,
    keyfile) pair, serves HTTPS (the server's `context` then trusts that certificate); GRACE, serve's --grace;
    STDERR, a file its standard error goes to (a pipe nobody reads fills up under a chatty exporter)."""
    port = free_port()
    ledger = tmp_path / "ledger.db"
    values = {"HYBRID_WEATHER_PROVIDER": "demo", "HYBRID_WEATHER_LEDGER": str(ledger), "OPENAI_API_KEY": KEY,
              "OPENAI_BASE_URL": llm_server.base_url, "HYBRID_WEATHER_MODEL": "gpt-4o-mini", **env}  # fmt: skip
    process = subprocess.Popen(
        [sys.executable, "-m", "hybrid_weather.router", "serve", "--port", str(port), "--workers", str(workers),
         *(["--certfile", str(tls[0]), "--keyfile", str(tls[1])] if tls else []),
         *(["--grace", str(grace)] if grace is not None else [])],
        stdout=subprocess.PIPE, stderr=stderr or subprocess.PIPE, text=True, env=subprocess_env(**values),
    )  # fmt: skip
    url = f"{'https' if tls else 'http'}://127.0.0.1:{port}"
    context = ssl.create_default_context(cafile=str(tls[0])) if tls else None
    deadline = time.monotonic() + 30
    while True:
        try:
            with urllib.request.urlopen(f"{url}/healthz", timeout=1, context=context) as response:
                if response.status == 200:
                    break
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            raise AssertionError(f"the server did not start: {(process.communicate()[1] or '')[-2000:]}")
        time.sleep(0.1)
    server = type("Server", (), {"url": url, "process": process, "ledger": ledger, "context": context})
    try:
        yield server
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()


def post(url, body, headers=None):
    request = urllib.request.Request(url, json.dumps(body).encode(), {"content-type": "application/json",
                                                                       **(headers or {})})  # fmt: skip
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.status, json.loads(response.read())
