"""Starting `hybrid-weather serve`: the settings checked once, the socket bound, TLS loaded, Prometheus's
multiprocess folder named, then uvicorn with one HybridRouter per worker (app.py).

It imports nothing of the server at its top, so the CLI can import it without loading Starlette or
prometheus_client: the metrics folder must be named before prometheus_client is first imported.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from hybrid_weather.agent.errors import ConfigurationError, install_hint

if TYPE_CHECKING:
    import socket

    from ..settings import Settings


def _to_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def run(
    host: str,
    port: int,
    *,
    workers: int = 1,
    grace: int = 10,
    certfile: str | None = None,
    keyfile: str | None = None,
    canary: str | None = None,
    say: Callable[[str], None] = _to_stderr,
) -> bool:
    """Serve until SIGTERM or Ctrl-C; False when the app could not start (uvicorn logged why). A setting,
    an option or a port that cannot be used is a ConfigurationError before anything listens. SAY gets the
    lines an operator should read at start (where it serves, who can reach it)."""
    import gc
    import shutil
    import tempfile

    # A server lives long enough to make garbage: with the collector paused (entry.py) a single worker, which
    # uvicorn runs in this process, would keep every reference cycle it made (a streamed chat completion
    # leaves some), and grow without end under load.
    gc.enable()
    if canary is not None:  # every worker process reads it from the environment, as the variable
        from ..settings import canary_share

        canary_share(canary, "--canary")
        os.environ["HYBRID_WEATHER_CANARY"] = canary
    # Metrics of every worker, summed: prometheus_client's multiprocess mode keeps them in files here. It
    # picks that mode when it is first imported, so the folder is named before anything imports it (the
    # serve package's app does): named after, one worker counted in memory and /metrics read the empty folder.
    # One worker has nothing to sum and counts in memory: a file write per count costs it twice the time.
    metrics_dir = None
    if workers > 1 and not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        metrics_dir = tempfile.mkdtemp(prefix="hybrid-weather-metrics-")
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = metrics_dir
    try:
        return _run(host, port, workers, grace, (certfile, keyfile), say)
    finally:
        if metrics_dir:
            shutil.rmtree(metrics_dir, ignore_errors=True)


def _run(
    host: str, port: int, workers: int, grace: int, pair: tuple[str | None, str | None], say: Callable[[str], None]
) -> bool:
    try:
        import starlette  # noqa: F401  # the workers' framework: missing, it is this one line, not one a worker
        import uvicorn
        from uvicorn.supervisors import Multiprocess

        from .access import load_keys
        from .connection import HeadDeadlineProtocol
    except ImportError:
        raise ConfigurationError(f"serve needs its server: {install_hint('serve')}") from None
    from ..settings import Settings

    settings = Settings.from_env()  # a setting that is wrong fails here, once, not in every worker
    tls = _tls(*pair, settings.keyfile_password)
    keys = load_keys(settings.api_keys, settings.api_keys_file)
    _check(settings, keys)
    sock = _listen(host, port)  # before saying "serving on": a port in use is an error, not a server
    bound = sock.getsockname()[1]
    if not keys and not _is_loopback(host):
        spend = "spend the model key (OPENAI_API_KEY) and " if settings.openai_api_key else ""
        say(
            f"warning: no API keys and --host {host}: anyone who can reach port {bound} can {spend}read the "
            "ledger's reports; set HYBRID_WEATHER_API_KEYS"
        )
    scheme = "https" if tls else "http"
    say(f"hybrid-weather serving on {scheme}://{host}:{bound} ({workers} worker{'s' * (workers > 1)})")
    config = uvicorn.Config(
        "hybrid_weather.router.serve:create_app",
        factory=True,
        workers=workers,
        timeout_graceful_shutdown=grace,
        access_log=False,
        log_level="warning",
        lifespan="on",
        http=HeadDeadlineProtocol,
        log_config=_log_config(uvicorn.config.LOGGING_CONFIG),
        ssl_certfile=tls[0] if tls else None,
        ssl_keyfile=tls[1] if tls else None,
        ssl_keyfile_password=settings.keyfile_password if tls else None,
    )
    with contextlib.closing(sock):
        if workers > 1:
            Multiprocess(config, sockets=[sock]).run()
            return True
        server = uvicorn.Server(config)
        server.run(sockets=[sock])
    return bool(server.started)


def _check(settings: Settings, keys: frozenset[str]) -> None:
    """What the workers will read, checked here, once: a limit that does not parse fails at start, and an
    overlay that cannot be served stops the start in one line, as it stops `route` and `ask`, rather than
    making every answer a 503 (understand/overlay_check.py)."""
    from ..facade import HybridRouter
    from .access import Rate, cookie_secret
    from .budgets import Budgets

    if keys:  # made here, once, before the workers read it
        cookie_secret(settings.cookie_secret, settings.home_dir())
    Rate.parse(settings.rate_limit)
    Budgets.parse(settings.key_budgets)
    with HybridRouter(settings=settings, ledger="off") as probe:
        probe.parts.overlays.choose("")


def _log_config(uvicorn_default: dict[str, Any]) -> dict[str, Any]:
    """uvicorn's logging, with the service's own warnings (a client cut off or gone, an unexpected error)
    going where uvicorn's go, in every worker: the one-shot commands' silencing of the library (cli()) is
    not for a server."""
    import copy

    config = copy.deepcopy(uvicorn_default)
    config["loggers"]["hybrid_weather"] = {"handlers": ["default"], "level": "WARNING", "propagate": False}
    return config


class _KeyIsEncrypted(Exception):
    """OpenSSL asked for the passphrase of a key given none: a prompt on the terminal, were it let."""


def _tls(certfile: str | None, keyfile: str | None, password: str | None) -> tuple[str, str] | None:
    """uvicorn's TLS settings for --certfile and --keyfile (PASSWORD: an encrypted key's passphrase,
    HYBRID_WEATHER_KEYFILE_PASSWORD), checked here, once: a pair that does not load is an error naming the
    option, not a traceback in every worker, nor a passphrase prompt a server never answers."""
    if certfile is None and keyfile is None:
        return None
    if certfile is None or keyfile is None:
        raise ConfigurationError("HTTPS needs both --certfile and --keyfile (PEM files)")
    import ssl

    def passphrase() -> str:
        if password is None:
            raise _KeyIsEncrypted
        return password

    try:
        ssl.create_default_context(ssl.Purpose.CLIENT_AUTH).load_cert_chain(certfile, keyfile, password=passphrase)
    except _KeyIsEncrypted:
        raise ConfigurationError(
            f"--keyfile {keyfile} is encrypted; give its passphrase in HYBRID_WEATHER_KEYFILE_PASSWORD, or "
            "decrypt it: openssl pkey -in KEY -out PLAIN"
        ) from None
    except (OSError, ssl.SSLError) as error:
        reason = getattr(error, "strerror", None) or getattr(error, "reason", None) or str(error)
        if password is not None and isinstance(error, ssl.SSLError) and error.reason in (None, "PEM lib"):
            reason = "the passphrase in HYBRID_WEATHER_KEYFILE_PASSWORD does not decrypt the key"
        raise ConfigurationError(
            f"cannot use --certfile {certfile} with --keyfile {keyfile}: {reason}; both must be readable PEM "
            "files, the key matching the certificate"
        ) from None
    return certfile, keyfile


def _listen(host: str, port: int) -> socket.socket:
    """A socket bound to HOST:PORT as uvicorn binds one (so its workers share it); ConfigurationError
    naming --port or --host when it cannot be had."""
    import errno
    import socket

    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except (OSError, OverflowError) as error:
        sock.close()
        reason = getattr(error, "strerror", None) or str(error)
        if getattr(error, "errno", None) == errno.EADDRINUSE:
            raise ConfigurationError(f"port {port} is in use on {host}; choose another with --port") from None
        if getattr(error, "errno", None) == errno.EACCES:
            raise ConfigurationError(
                f"port {port} needs privileges here ({reason}); choose one above 1023 with --port"
            ) from None
        raise ConfigurationError(f"cannot listen on {host}:{port} ({reason}); check --host and --port") from None
    sock.set_inheritable(True)
    return sock


def _is_loopback(host: str) -> bool:
    import ipaddress

    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
