"""What `serve` refuses at start, in one line and exit 2, rather than serving something other than meant
(issue 49, item 9): a CORS origin with a wildcard inside (no browser sends one: it would match no page),
with the line that would work; an encrypted TLS key without its passphrase (never a prompt a server cannot
answer), while with HYBRID_WEATHER_KEYFILE_PASSWORD the same key serves HTTPS."""

import shutil
import subprocess
import sys
import urllib.request

import pytest
from live_server import serving

from hybrid_weather.router.settings import Settings

from support import subprocess_env

PASSPHRASE = "correct horse battery staple"


def _serve(*args, **env):
    """`serve` on a free port with ARGS and ENV, for a start that must fail: (exit code, stderr)."""
    command = [sys.executable, "-m", "hybrid_weather.router", "serve", "--port", "0", *args]
    result = subprocess.run(command, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=30,
                            env=subprocess_env(HYBRID_WEATHER_PROVIDER="demo", **env))  # fmt: skip
    return result.returncode, result.stderr


@pytest.mark.parametrize(
    "value",
    ["https://*.example.com", "http://localhost:3000,https://*.example.com", "https://app.*.com", "https://*"],
)
def test_a_cors_origin_with_a_wildcard_inside_is_refused_with_the_line_that_works(value):
    code, stderr = _serve(HYBRID_WEATHER_CORS_ORIGINS=value)
    assert code == 2 and "Traceback" not in stderr and len(stderr.strip().splitlines()) == 1, stderr
    assert "HYBRID_WEATHER_CORS_ORIGINS" in stderr and "wildcard" in stderr
    line = stderr.split("e.g. ", 1)[1].split(" (or", 1)[0]
    name, _, suggested = line.partition("=")
    assert name == "HYBRID_WEATHER_CORS_ORIGINS" and "*" not in suggested
    origins = Settings.from_env({name: suggested}).cors_origins  # the line given is one that is taken
    assert all(o in origins for o in value.split(",") if "*" not in o)


def _encrypted_certificate(folder):
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("no openssl command to make a test certificate with: apt-get install openssl")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run([openssl, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                    "-passout", f"pass:{PASSPHRASE}", "-days", "1", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True, timeout=30)  # fmt: skip
    assert "ENCRYPTED" in key.read_text()
    return cert, key


def test_an_encrypted_key_without_its_passphrase_is_one_line_and_with_it_serves_https(tmp_path, llm_server):
    cert, key = _encrypted_certificate(tmp_path)
    code, stderr = _serve("--certfile", str(cert), "--keyfile", str(key))
    assert code == 2 and len(stderr.strip().splitlines()) == 1, stderr
    assert "is encrypted" in stderr and "HYBRID_WEATHER_KEYFILE_PASSWORD" in stderr and "serving on" not in stderr
    code, stderr = _serve("--certfile", str(cert), "--keyfile", str(key), HYBRID_WEATHER_KEYFILE_PASSWORD="wrong")
    assert code == 2 and len(stderr.strip().splitlines()) == 1 and "does not decrypt" in stderr, stderr
    with serving(tmp_path, llm_server, tls=(cert, key), workers=2, grace=1,
                 HYBRID_WEATHER_KEYFILE_PASSWORD=PASSPHRASE) as server:  # fmt: skip
        response = urllib.request.urlopen(f"{server.url}/healthz", timeout=5, context=server.context)
        assert response.status == 200 and response.read() == b'{"status":"ok"}'
        response.close()
