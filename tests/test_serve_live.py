"""The real service: `hybrid-weather serve` in its own process (uvicorn, worker processes), driven over
HTTP by the real openai SDK and by plain clients: rule answers without a model call, open questions
through the fake upstream, typed SDK errors, SIGTERM under load without a lost ledger row, metrics with
one worker and summed over two, a port in use, and clients that are slow or hang up, over real sockets."""

import http.client
import json
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

import pytest
from live_server import KEY, post, serving

from fake_openai import answer, tool_calls

openai = pytest.importorskip("openai")


def test_the_openai_sdk_gets_rule_answers_without_a_model_and_open_ones_through_it(tmp_path, llm_server):
    with serving(tmp_path, llm_server) as server:
        client = openai.OpenAI(base_url=f"{server.url}/v1", api_key="unused", max_retries=0)
        raw = client.chat.completions.with_raw_response.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "上海今天天气"}]
        )
        completion = raw.parse()
        assert raw.headers["x-hybrid-weather-route"] == "rule"
        assert "上海今天" in completion.choices[0].message.content and completion.usage.total_tokens == 0
        stream = client.chat.completions.create(
            model="gpt-4o-mini", stream=True,
            messages=[{"role": "user", "content": "北京明天天气"}, {"role": "assistant", "content": "晴"},
                      {"role": "user", "content": "那广州呢？"}],
        )  # fmt: skip
        text = "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)
        assert "广州明天" in text
        assert llm_server.requests == []  # neither question reached the model
        llm_server.then(
            tool_calls(("get_weather", {"place": "北京", "date": "明天"}), prompt=420, completion=25),
            answer("明天北京多云，适合出游。", prompt=560, completion=30),
        )
        open_ended = client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "北京明天适合出游吗"}]
        )
        assert open_ended.choices[0].message.content == "明天北京多云，适合出游。"
        assert (open_ended.usage.prompt_tokens, open_ended.usage.completion_tokens) == (980, 55)
        assert len(llm_server.requests) == 2
        with pytest.raises(openai.UnprocessableEntityError) as bad:
            client.chat.completions.create(model="gpt-4o-mini", messages=[])
        assert bad.value.status_code == 422 and "messages" in str(bad.value)


def test_the_sdk_sees_missing_keys_and_rate_limits_as_typed_errors(tmp_path, llm_server):
    with serving(tmp_path, llm_server, HYBRID_WEATHER_API_KEYS="team-key", HYBRID_WEATHER_RATE_LIMIT="2/min") as server:
        anonymous = openai.OpenAI(base_url=f"{server.url}/v1", api_key="wrong", max_retries=0)
        with pytest.raises(openai.AuthenticationError):
            anonymous.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "上海天气"}])
        member = openai.OpenAI(base_url=f"{server.url}/v1", api_key="team-key", max_retries=0)
        for _ in range(2):
            member.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "上海今天天气"}])
        with pytest.raises(openai.RateLimitError) as limited:
            member.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "上海今天天气"}])
        assert int(limited.value.response.headers["retry-after"]) >= 1
    assert KEY not in server.process.stderr.read()


def _load(url, stop, counts, lock):
    questions = ["上海今天天气", "北京明天天气", "广州后天会下雨吗", "深圳今天多少度"]
    i = 0
    while not stop.is_set():
        try:
            status, _ = post(f"{url}/v1/ask", {"query": questions[i % 4]})
            with lock:
                counts["ok"] += status == 200
        except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
            with lock:
                counts["refused"] += 1
            time.sleep(0.02)
        i += 1


def test_sigterm_under_load_loses_no_ledger_row(tmp_path, llm_server):
    with serving(tmp_path, llm_server, workers=2) as server:
        stop, lock, counts = threading.Event(), threading.Lock(), {"ok": 0, "refused": 0}
        clients = [threading.Thread(target=_load, args=(server.url, stop, counts, lock)) for _ in range(8)]
        for thread in clients:
            thread.start()
        time.sleep(2.0)
        server.process.send_signal(signal.SIGTERM)  # while requests are in flight
        assert server.process.wait(timeout=30) == 0
        stop.set()
        for thread in clients:
            thread.join()
    with sqlite3.connect(server.ledger) as db:
        rows = db.execute("SELECT count(*) FROM requests").fetchone()[0]
    assert counts["ok"] > 100, counts
    # Every answered request has its row; a request the server finished as the client gave up may add one.
    assert counts["ok"] <= rows <= counts["ok"] + 8, (counts, rows)
    assert not list(tmp_path.glob("*.spool.jsonl"))


@pytest.mark.parametrize("workers", [1, 2])
def test_metrics_are_summed_over_the_workers(tmp_path, llm_server, workers):
    with serving(tmp_path, llm_server, workers=workers) as server:
        for i in range(40):
            assert post(f"{server.url}/v1/ask", {"query": ["上海今天天气", "北京明天天气"][i % 2]})[0] == 200
        pids = set()
        for _ in range(10):  # any worker answers /metrics, for all of them
            with urllib.request.urlopen(f"{server.url}/metrics", timeout=5) as response:
                text = response.read().decode()
            total = sum(
                float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                if line.startswith('hybrid_weather_requests_total{endpoint="ask"')
            )  # fmt: skip
            assert total == 40, text
            pids.add(text)


def test_the_readme_serving_examples_work_as_written(tmp_path, llm_server):
    from readme_examples import SERVED

    assert len(SERVED) == 2
    llm_server.then({**answer("明天北京晴，适合出游。"), "token_gap": 0.01})  # the streamed example's
    with serving(tmp_path, llm_server) as server:
        port = server.url.rsplit(":", 1)[1]
        for example in SERVED:
            code = example.replace("127.0.0.1:8080", f"127.0.0.1:{port}")
            if "import " in code:
                result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
                assert result.returncode == 0, result.stderr
                assert result.stdout.startswith("rule 【演示数据】") and "上海明天" in result.stdout
                assert result.stdout.endswith("\n明天北京晴，适合出游。")
                continue
            for line in code.splitlines():
                if line.startswith("$ curl"):
                    result = subprocess.run(["bash", "-c", line[2:]], capture_output=True, text=True, timeout=60)
                    assert result.returncode == 0 and json.loads(result.stdout)["route"] == "rule", result
    # Only the open question reached the model, streamed, with the temperature the example passes on.
    assert [(request["stream"], request["temperature"]) for request in llm_server.requests] == [(True, 0.3)]


@pytest.mark.parametrize(
    ("setting", "value"),
    [("HYBRID_WEATHER_RATE_LIMIT", "fast"), ("HYBRID_WEATHER_API_KEYS_FILE", "/nonexistent/keys")],
)
def test_serve_refuses_a_bad_setting_once_and_clearly(setting, value):
    from support import subprocess_env

    command = [sys.executable, "-m", "hybrid_weather.router", "serve", "--port", "0"]
    result = subprocess.run(command, capture_output=True, text=True, env=subprocess_env(**{setting: value}), timeout=30)
    assert result.returncode == 2 and setting in result.stderr and "Traceback" not in result.stderr


def test_follow_ups_work_whichever_worker_answers(tmp_path, llm_server):
    with serving(tmp_path, llm_server, workers=2) as server:
        first = post(f"{server.url}/v1/ask", {"query": "广州后天天气", "session_id": "live-conversation-1"})[1]
        replies = [
            post(f"{server.url}/v1/ask", {"query": f"那{place}呢？", "session_id": "live-conversation-1"})[
                1
            ]  # a new connection each
            for place in ["北京", "上海", "成都", "深圳"] * 3
        ]
    assert all(r["route"] == "rule" and r["decision"]["dates"] == first["decision"]["dates"] for r in replies), replies


def test_a_port_in_use_is_one_line_and_exit_2_before_any_serving_line():
    from support import subprocess_env

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        command = [sys.executable, "-m", "hybrid_weather.router", "serve", "--port", str(port)]
        result = subprocess.run(command, capture_output=True, text=True, timeout=30,
                                env=subprocess_env(HYBRID_WEATHER_PROVIDER="demo"))  # fmt: skip
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and str(port) in lines[0] and "--port" in lines[0], result.stderr
    assert "serving on" not in result.stderr and result.stdout == ""


#: Seconds the slow-client tests give a request's head and body (the defaults are 10 and 30).
SLOW = "1"


def _connect(server):
    host, port = server.url.rsplit("/", 1)[1].split(":")
    return socket.create_connection((host, int(port)), timeout=10)


def _closed_within(sock, seconds, dribble=b""):
    """Seconds until the server closed SOCK (what it sent meanwhile), sending DRIBBLE a byte at a time
    every 0.1 s until then; AssertionError past SECONDS."""
    started, received = time.monotonic(), b""
    sock.settimeout(0.1)
    for i in range(int(seconds * 10)):
        if i < len(dribble):
            try:
                sock.sendall(dribble[i : i + 1])
            except OSError:  # the server closed it while we wrote
                return time.monotonic() - started, received
        try:
            piece = sock.recv(4096)
        except TimeoutError:
            continue
        except OSError:
            return time.monotonic() - started, received
        if not piece:
            return time.monotonic() - started, received
        received += piece
    raise AssertionError(f"the connection was still open after {seconds} s; it sent {received!r}")


def test_slow_clients_are_cut_off_and_a_hang_up_is_one_line(tmp_path, llm_server):
    slow = {"HYBRID_WEATHER_HEADER_TIMEOUT": SLOW, "HYBRID_WEATHER_BODY_TIMEOUT": SLOW}
    with serving(tmp_path, llm_server, **slow) as server:
        # Slow loris: a request head dribbled a byte every 0.1 s, long past the header timeout.
        with _connect(server) as sock:
            head = b"POST /v1/ask HTTP/1.1\r\nhost: x\r\n" + b"x-slow: " + b"a" * 200
            took, sent = _closed_within(sock, 6, dribble=head)
        assert 0.9 < took < 3 and (sent == b"" or sent.startswith(b"HTTP/1.1 408")), (took, sent)
        # The same on a kept-alive connection, after a request answered on it: the next head has its deadline.
        with _connect(server) as sock:
            body = json.dumps({"query": "上海今天天气"}).encode()
            sock.sendall(b"POST /v1/ask HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
                         b"content-length: %d\r\n\r\n%s" % (len(body), body))  # fmt: skip
            answered = b""
            while b"\r\n\r\n" not in answered or len(answered.partition(b"\r\n\r\n")[2]) < int(
                re.search(rb"content-length: (\d+)", answered, re.IGNORECASE).group(1)
            ):
                answered += sock.recv(65536)
            assert answered.startswith(b"HTTP/1.1 200"), answered
            took, sent = _closed_within(sock, 6, dribble=head)
        assert 0.9 < took < 3 and (sent == b"" or sent.startswith(b"HTTP/1.1 408")), (took, sent)
        # A connection that never says anything.
        with _connect(server) as sock:
            took, sent = _closed_within(sock, 6)
        assert 0.9 < took < 3, took
        # A body that never comes whole: 408, and the connection closed.
        with _connect(server) as sock:
            sock.sendall(b"POST /v1/ask HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
                         b"content-length: 100\r\n\r\n" + b'{"query": "')  # fmt: skip
            took, sent = _closed_within(sock, 6)
        assert 0.9 < took < 3 and sent.startswith(b"HTTP/1.1 408"), (took, sent)
        assert b'"code":"body_timeout"' in sent
        # A body dribbled a byte every 0.1 s: each piece is a receive() of its own, and the deadline is the
        # whole body's, not one a piece.
        with _connect(server) as sock:
            sock.sendall(b"POST /v1/ask HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
                         b"content-length: 100\r\n\r\n")  # fmt: skip
            took, sent = _closed_within(sock, 6, dribble=b'{"query": "' + b"a" * 89)
        assert 0.9 < took < 3 and sent.startswith(b"HTTP/1.1 408"), (took, sent)
        assert b'"code":"body_timeout"' in sent
        # Clients that are not slow are not hurt: a kept-alive connection asks twice (http.client reads each
        # response whole, however the server's bytes arrive, and keeps the connection).
        kept = http.client.HTTPConnection(server.url.rsplit("/", 1)[1], timeout=10)
        try:
            for _ in range(2):
                kept.request("POST", "/v1/ask", body=json.dumps({"query": "上海今天天气"}).encode())
                response = kept.getresponse()
                assert response.status == 200 and json.loads(response.read())["route"] == "rule"
        finally:
            kept.close()
        # A client that hangs up halfway through its body.
        with _connect(server) as sock:
            sock.sendall(b"POST /v1/ask HTTP/1.1\r\nhost: x\r\ncontent-length: 100\r\n\r\n" + b'{"query"')
            time.sleep(0.2)
        time.sleep(0.5)
        assert post(f"{server.url}/v1/ask", {"query": "北京明天天气"})[0] == 200  # the server is fine
    log = server.process.stderr.read()
    assert "Traceback" not in log and "Exception in ASGI application" not in log, log
    assert len([line for line in log.splitlines() if "went away" in line]) == 1, log


def _certificate(folder):
    """A self-signed certificate for 127.0.0.1 and its key, made with the openssl command for this test."""
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("no openssl command to make a test certificate with: apt-get install openssl")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run([openssl, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                    "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                    "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True, timeout=30)  # fmt: skip
    return cert, key


def test_serve_speaks_https_with_the_operators_certificate(tmp_path, llm_server):
    import httpx2 as httpx  # the HTTP client the openai SDK is built on

    cert, key = _certificate(tmp_path)
    # --grace 1: the plain-HTTP probe below leaves a TLS handshake open, which a stop waits its grace out for.
    with serving(tmp_path, llm_server, tls=(cert, key), workers=2, grace=1) as server:
        assert server.url.startswith("https://")
        client = openai.OpenAI(base_url=f"{server.url}/v1", api_key="unused", max_retries=0,
                               http_client=httpx.Client(verify=server.context))  # fmt: skip
        completion = client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "上海今天天气"}]
        )
        assert "上海今天" in completion.choices[0].message.content
        # The certificate is what keeps the key private: a client that does not trust it is refused, and
        # plain HTTP on the same port gets no answer.
        untrusting = openai.OpenAI(base_url=f"{server.url}/v1", api_key="unused", max_retries=0)
        with pytest.raises(openai.APIConnectionError):
            untrusting.models.list()
        with pytest.raises((urllib.error.URLError, ConnectionError, http.client.HTTPException)):
            urllib.request.urlopen(server.url.replace("https://", "http://") + "/healthz", timeout=1)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--certfile", "CERT"], "both --certfile and --keyfile"),
        (["--certfile", "CERT", "--keyfile", "CERT"], "cannot use --certfile"),  # a certificate is no key
        (["--certfile", "/nonexistent/cert.pem", "--keyfile", "KEY"], "/nonexistent/cert.pem"),
    ],
)
def test_a_certificate_that_does_not_load_is_one_clear_error(tmp_path, args, message):
    from support import subprocess_env

    cert, key = _certificate(tmp_path)
    args = [{"CERT": str(cert), "KEY": str(key)}.get(arg, arg) for arg in args]
    command = [sys.executable, "-m", "hybrid_weather.router", "serve", "--port", "0", *args]
    result = subprocess.run(command, capture_output=True, text=True, env=subprocess_env(), timeout=30)
    assert result.returncode == 2 and message in result.stderr and "Traceback" not in result.stderr
    assert "serving on" not in result.stderr


def test_the_drop_in_answers_with_the_model_the_client_names_or_says_it_has_none(tmp_path, llm_server):
    with serving(tmp_path, llm_server) as server:  # configured: gpt-4o-mini
        client = openai.OpenAI(base_url=f"{server.url}/v1", api_key="unused", max_retries=0)
        llm_server.then(answer("北京明天多云，适合出游。", prompt=500, completion=20))
        named = client.chat.completions.create(
            model="qwen-plus", messages=[{"role": "user", "content": "北京明天适合出游吗"}]
        )
        assert named.model == "qwen-plus" and llm_server.requests[-1]["model"] == "qwen-plus"
        llm_server.then(answer("适合。", prompt=500, completion=20))
        configured = client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "上海明天适合跑步吗"}]
        )
        assert configured.model == "gpt-4o-mini" and llm_server.requests[-1]["model"] == "gpt-4o-mini"
        # A rule question needs no model, whichever the client names; the rules' own name is the default.
        rule = client.chat.completions.create(model="qwen-plus", messages=[{"role": "user", "content": "上海今天天气"}])
        assert rule.model == "hybrid-weather-rules"
        llm_server.then(answer("适合。", prompt=500, completion=20))
        rules_name = client.chat.completions.create(
            model="hybrid-weather-rules", messages=[{"role": "user", "content": "广州明天适合爬山吗"}]
        )
        assert rules_name.model == "gpt-4o-mini"
        asked = len(llm_server.requests)
        question = [{"role": "user", "content": "北京明天适合出游吗"}]
        for unknown in ("gpt-9-imaginary", "m", "qwen-plus "):
            with pytest.raises(openai.NotFoundError) as missing:
                client.chat.completions.create(model=unknown, messages=question)
            assert missing.value.code == "model_not_found" and "gpt-4o-mini" in missing.value.message
        assert len(llm_server.requests) == asked  # nothing was sent on to any model
    with sqlite3.connect(server.ledger) as db:
        models = [row[0] for row in db.execute("SELECT model FROM requests WHERE route = 'llm' ORDER BY id")]
    assert models == ["qwen-plus", "gpt-4o-mini", "gpt-4o-mini"]


def test_the_drop_in_passes_temperature_and_max_tokens_within_bounds(tmp_path, llm_server):
    with serving(tmp_path, llm_server) as server:
        client = openai.OpenAI(base_url=f"{server.url}/v1", api_key="unused", max_retries=0)
        question = [{"role": "user", "content": "北京明天适合出游吗"}]
        llm_server.then(answer("适合。"), answer("适合。"), answer("适合。"))
        client.chat.completions.create(model="gpt-4o-mini", messages=question, temperature=0.3, max_tokens=120)
        assert (llm_server.requests[-1]["temperature"], llm_server.requests[-1]["max_tokens"]) == (0.3, 120)
        client.chat.completions.create(model="gpt-4o-mini", messages=question, max_completion_tokens=90)
        assert llm_server.requests[-1]["max_tokens"] == 90 and "temperature" not in llm_server.requests[-1]
        # 64.0 is a whole number as JSON (and JSON Schema's integer) means it: sent on as 64.
        client.chat.completions.create(model="gpt-4o-mini", messages=question, max_tokens=64.0)  # type: ignore[arg-type]
        assert repr(llm_server.requests[-1]["max_tokens"]) == "64"
        for wrong in ({"temperature": 2.5}, {"max_tokens": 0}, {"max_tokens": 1.5}, {"max_completion_tokens": 10**6}):
            with pytest.raises(openai.UnprocessableEntityError) as refused:
                client.chat.completions.create(model="gpt-4o-mini", messages=question, **wrong)
            assert next(iter(wrong)) in refused.value.message
        assert len(llm_server.requests) == 3
