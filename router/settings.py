"""Settings from the environment (docs/contracts.md), read in this one place and only when asked."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from hybrid_weather.agent.errors import ConfigurationError
from hybrid_weather.agent.weather import DEFAULT_CACHE_TTL, DEFAULT_PROVIDER, PROVIDERS

if TYPE_CHECKING:
    from urllib.parse import SplitResult

#: How a PostgreSQL ledger's location starts (HYBRID_WEATHER_LEDGER=postgresql://…).
POSTGRES_SCHEMES = ("postgresql://", "postgres://")
#: Days a PostgreSQL ledger keeps its rows unless HYBRID_WEATHER_LEDGER_KEEP_DAYS says otherwise (a SQLite
#: ledger keeps them all): a busy service's month is ten million rows; the hourly rollup keeps the sums.
POSTGRES_KEEP_DAYS = 90.0
#: Seconds `serve` gives a client to send a request's head, then its body: a real client sends either in
#: milliseconds; a slow-loris one, dribbling bytes to hold a connection open, is cut off.
DEFAULT_HEADER_TIMEOUT = 10.0
DEFAULT_BODY_TIMEOUT = 30.0


def is_postgres(location: str) -> bool:
    return location.startswith(POSTGRES_SCHEMES)


def ledger_scheme_problem(location: str) -> str | None:
    """What is wrong with LOCATION's scheme, or None: a ledger is a path, ":memory:", "off" or a
    postgresql:// URL, and `postgresq://…` or `bogus://…` is a typo, not a file to create."""
    scheme = re.match(r"([A-Za-z][A-Za-z0-9+.-]*)://", location)
    if scheme is None or is_postgres(location):
        return None
    return (
        f"{scheme.group(1)}:// is not a ledger this can keep; use a file path, :memory:, off, "
        "or postgresql://user@host:5432/db"
    )


def redact(location: str) -> str:
    """LOCATION without a password in it, for messages."""
    location = re.sub(r"(://[^:/@]*:)[^@]*@", r"\1***@", location)
    return re.sub(r"(password=)[^&\s]*", r"\1***", location)


@dataclass(frozen=True, slots=True)
class Settings:
    """Every setting hybrid-weather reads; `from_env()` builds one from the environment."""

    provider: str = DEFAULT_PROVIDER
    open_meteo_url: str | None = None
    amap_key: str | None = None
    amap_url: str | None = None
    cache_ttl: float = DEFAULT_CACHE_TTL
    cache_url: str | None = None  #: redis:// or rediss:// for a forecast cache the fleet shares
    cache_prefix: str = "hybrid-weather:"  #: key prefix in that Redis (deployments sharing one Redis differ)
    upstream_limit: str | None = None  #: the fleet's upstream budget, e.g. 600/min,5000/h (None: the provider's)
    home: Path | None = None
    ledger: str | None = None
    ledger_queries: str = "masked"
    ledger_keep_days: float | None = None  #: days rows are kept; None: the backend's default; inf: forever
    llm_sees: str = "masked"  #: what the LLM receives of a question holding personal data: masked or raw
    model: str | None = None
    openai_api_key: str | None = None
    openai_base_url: str | None = None
    api_keys: str | None = None  #: keys `serve` accepts (comma-separated), or None
    api_keys_file: str | None = None  #: a file of SHA-256 hex digests of accepted keys, one per line
    #: The key the dashboard's cookies are signed with (None: one made at first start in the home folder).
    cookie_secret: str | None = field(default=None, repr=False)
    #: The passphrase of an encrypted TLS key (`serve --keyfile`); None: the key must be unencrypted.
    keyfile_password: str | None = field(default=None, repr=False)
    admin_keys: str | None = None  #: SHA-256 hex digests of accepted keys that see every key's rows (comma-separated)
    rate_limit: str | None = None  #: per-key (or per-address) rate of `serve`, e.g. 20/s; None: none
    key_budgets: str | None = None  #: daily LLM budgets per key of `serve`, e.g. 5usd,team=20usd (budgets.py)
    key_concurrency: str | None = None  #: requests to the model a key of `serve` may have in flight, or off
    #: `serve` sends chat requests it does not answer (their own tools) to the model as they came: off
    #: unless the operator says so, as each one spends the service's model key on a client's behalf.
    pass_through: bool = False
    header_timeout: float = DEFAULT_HEADER_TIMEOUT  #: seconds `serve` waits for a request's head
    body_timeout: float = DEFAULT_BODY_TIMEOUT  #: seconds `serve` waits for a request's body, after its head
    #: Every *_API_KEY variable, for the models of models.json whose api_key_env names their own key.
    model_keys: tuple[tuple[str, str], ...] = field(default=(), repr=False)
    #: Web origins whose pages may call `serve` from a browser (CORS); none unless the operator names them.
    cors_origins: tuple[str, ...] = ()
    #: The share of sessions (0 to 1) the newest overlay version answers while the rest keep the one it was
    #: made from (teach, learn); None: the active version answers every question.
    canary: float | None = None

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if env is None else env
        provider = env.get("HYBRID_WEATHER_PROVIDER") or DEFAULT_PROVIDER
        check_provider(provider, "HYBRID_WEATHER_PROVIDER")
        ttl_text = env.get("HYBRID_WEATHER_CACHE_TTL")
        cache_ttl = DEFAULT_CACHE_TTL
        if ttl_text:
            try:
                cache_ttl = float(ttl_text)
            except ValueError:
                raise ConfigurationError(
                    f"HYBRID_WEATHER_CACHE_TTL={ttl_text!r} is not a number of seconds; use e.g. 600, or 0 to disable"
                ) from None
            if cache_ttl < 0:
                raise ConfigurationError("HYBRID_WEATHER_CACHE_TTL must be 0 or more seconds")
        home = env.get("HYBRID_WEATHER_HOME")
        ledger_queries = env.get("HYBRID_WEATHER_LEDGER_QUERIES") or "masked"
        if ledger_queries not in ("masked", "hash"):
            raise ConfigurationError(
                f"HYBRID_WEATHER_LEDGER_QUERIES={ledger_queries!r}: use 'masked' (default) or 'hash'"
            )
        keep_text = (env.get("HYBRID_WEATHER_LEDGER_KEEP_DAYS") or "").strip().lower()
        keep_days = None
        if keep_text:
            try:
                keep_days = float("inf") if keep_text == "forever" else float(keep_text)
            except ValueError:
                keep_days = -1.0
            if not keep_days > 0:
                raise ConfigurationError(
                    f"HYBRID_WEATHER_LEDGER_KEEP_DAYS={keep_text!r}: use a number of days above 0, or 'forever'"
                )
        ledger = env.get("HYBRID_WEATHER_LEDGER") or None
        if ledger is not None and (problem := ledger_scheme_problem(ledger.strip())):
            raise ConfigurationError(f"HYBRID_WEATHER_LEDGER={redact(ledger)!r}: {problem}")
        upstream_limit = env.get("HYBRID_WEATHER_UPSTREAM_LIMIT") or None
        if upstream_limit is not None:
            from hybrid_weather.agent.weather.shared_cache import parse_limit

            # Checked here, where every command reads it, not when the shared cache is first built: that
            # is only with HYBRID_WEATHER_CACHE_URL set and a remote provider, so a typo passed silently.
            parse_limit(upstream_limit)
        llm_sees = (env.get("HYBRID_WEATHER_LLM_SEES") or "masked").strip().lower()
        if llm_sees not in ("masked", "raw"):
            raise ConfigurationError(f"HYBRID_WEATHER_LLM_SEES={llm_sees!r}: use 'masked' (default) or 'raw'")
        return cls(
            llm_sees=llm_sees,
            provider=provider,
            open_meteo_url=_base_url(env, "HYBRID_WEATHER_OPEN_METEO_URL"),
            amap_key=env.get("AMAP_KEY") or None,
            amap_url=_base_url(env, "HYBRID_WEATHER_AMAP_URL"),
            cache_ttl=cache_ttl,
            cache_url=_base_url(env, "HYBRID_WEATHER_CACHE_URL", schemes=("redis", "rediss")),
            cache_prefix=env.get("HYBRID_WEATHER_CACHE_PREFIX") or "hybrid-weather:",
            upstream_limit=upstream_limit,
            home=Path(home) if home else None,
            ledger=ledger,
            ledger_queries=ledger_queries,
            ledger_keep_days=keep_days,
            model=env.get("HYBRID_WEATHER_MODEL") or None,
            openai_api_key=env.get("OPENAI_API_KEY") or None,
            openai_base_url=_base_url(env, "OPENAI_BASE_URL"),
            api_keys=env.get("HYBRID_WEATHER_API_KEYS") or None,
            api_keys_file=env.get("HYBRID_WEATHER_API_KEYS_FILE") or None,
            cookie_secret=env.get("HYBRID_WEATHER_COOKIE_SECRET") or None,
            keyfile_password=env.get("HYBRID_WEATHER_KEYFILE_PASSWORD") or None,
            admin_keys=env.get("HYBRID_WEATHER_ADMIN_KEYS") or None,
            rate_limit=env.get("HYBRID_WEATHER_RATE_LIMIT") or None,
            key_budgets=env.get("HYBRID_WEATHER_KEY_BUDGETS") or None,
            key_concurrency=env.get("HYBRID_WEATHER_KEY_CONCURRENCY") or None,
            pass_through=_switch(env, "HYBRID_WEATHER_PASS_THROUGH"),
            header_timeout=_seconds(env, "HYBRID_WEATHER_HEADER_TIMEOUT", DEFAULT_HEADER_TIMEOUT),
            body_timeout=_seconds(env, "HYBRID_WEATHER_BODY_TIMEOUT", DEFAULT_BODY_TIMEOUT),
            cors_origins=_origins(env, "HYBRID_WEATHER_CORS_ORIGINS"),
            canary=canary_share(env.get("HYBRID_WEATHER_CANARY"), "HYBRID_WEATHER_CANARY"),
            model_keys=tuple(
                sorted((name, value) for name, value in env.items() if name.endswith("_API_KEY") and value)
            ),
        )

    def models(self) -> list[str]:
        """HYBRID_WEATHER_MODEL as a list: the primary model, then its fallbacks in order (empty: unset)."""
        return [name.strip() for name in (self.model or "").split(",") if name.strip()]

    def api_key(self, variable: str | None) -> str | None:
        """The key in VARIABLE (one of model_keys), or OPENAI_API_KEY's for None."""
        return self.openai_api_key if variable is None else dict(self.model_keys).get(variable)

    def ledger_location(self) -> str | None:
        """Where the ledger lives: a path, ":memory:", or None for "off" (any case)."""
        if self.ledger is not None and self.ledger.strip().lower() == "off":
            return None
        if self.ledger:
            return self.ledger
        return str(self.home_dir() / "ledger.db")

    def keep_days(self, location: str) -> float | None:
        """Days the ledger at LOCATION keeps its rows; None: forever."""
        days = self.ledger_keep_days
        if days is None:
            days = POSTGRES_KEEP_DAYS if is_postgres(location) else float("inf")
        return None if days == float("inf") else days

    def spool_for(self, location: str) -> Path | None:
        """Where rows wait when a PostgreSQL ledger at LOCATION cannot take them: in the home folder (None
        for a SQLite ledger: beside its file)."""
        if not is_postgres(location):
            return None
        from .ledger.store.spool import spool_path

        return spool_path(location, self.home_dir())

    def ledger_setting(self) -> str:
        """The variable that moves the ledger, for messages: HYBRID_WEATHER_LEDGER, or the home folder."""
        return "HYBRID_WEATHER_LEDGER" if self.ledger else "HYBRID_WEATHER_LEDGER (or HYBRID_WEATHER_HOME)"

    def home_dir(self) -> Path:
        """The data directory: HYBRID_WEATHER_HOME, else the platform's app directory."""
        if self.home is not None:
            return self.home
        import click

        return Path(click.get_app_dir("hybrid-weather"))


def overlay_folder(settings: Settings) -> Path:
    """Where the overlay's versions are kept (teach, learn)."""
    return settings.home_dir() / "overlay"


def check_provider(name: str, where: str = "--provider") -> None:
    if name not in PROVIDERS:
        raise ConfigurationError(f"unknown weather provider {name!r} in {where}; choose one of: {', '.join(PROVIDERS)}")


def _switch(env: Mapping[str, str], name: str) -> bool:
    """The on/off variable NAME: 1, true, on or yes; 0, false, off, no or unset."""
    value = (env.get(name) or "").strip().lower()
    if value in ("", "0", "false", "off", "no"):
        return False
    if value in ("1", "true", "on", "yes"):
        return True
    raise ConfigurationError(f"{name}={value!r}: use 1 (on) or 0 (off)")


def _seconds(env: Mapping[str, str], name: str, default: float) -> float:
    """The number of seconds in variable NAME (above 0, at most a day), or DEFAULT when unset."""
    text = (env.get(name) or "").strip()
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value <= 86_400:
        raise ConfigurationError(f"{name}={text!r}: use a number of seconds above 0, e.g. {default:g}")
    return value


def canary_share(text: str | None, name: str) -> float | None:
    """The canary share in TEXT (0 to 1, or a percentage: 0.1, 10%), None when unset; an error naming NAME."""
    text = (text or "").strip()
    if not text:
        return None
    try:
        value = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value <= 1:
        raise ConfigurationError(f"{name}={text!r}: give the share of sessions for the newest overlay, e.g. 0.1 or 10%")
    return value


def _origins(env: Mapping[str, str], name: str) -> tuple[str, ...]:
    """The web origins in variable NAME (comma-separated), each scheme://host[:port] as a browser sends it
    in its Origin header, or * for any page; an error naming NAME for anything else (a path, a typo)."""
    origins = []
    texts = [text.strip().rstrip("/") for text in (env.get(name) or "").split(",")]
    for origin in filter(None, texts):
        if origin != "*" and "*" in origin:
            # A browser sends one origin, never a pattern, and the allowed list is matched whole: a wildcard
            # inside would match nothing (or, matched loosely, pages nobody meant). Say the line that works.
            named = [text for text in texts if text and "*" not in text] + _spelled_out(origin)
            raise ConfigurationError(
                f"{name}: {origin!r} has a wildcard inside, which no browser sends; name each origin, e.g. "
                f"{name}={','.join(dict.fromkeys(named))} (or * for any page)"
            )
        if origin != "*":
            parts = _url_parts(origin, ("http", "https"))
            if parts is None or parts.path or parts.query or parts.fragment or "@" in parts.netloc:
                raise ConfigurationError(
                    f"{name}: {origin!r} is not a web origin; use scheme://host[:port] as the browser shows it, "
                    "e.g. https://app.example.com,http://localhost:3000 (or * for any page)"
                )
        origins.append(origin)
    return tuple(origins)


def _spelled_out(pattern: str) -> list[str]:
    """Origins a PATTERN with a wildcard (https://*.example.com) may have meant, each one a browser sends:
    its domain without the wildcard's labels, and one host under it."""
    scheme, _, rest = pattern.rpartition("://")
    host, colon, port = rest.partition(":")
    labels = [label for label in host.split(".") if label and "*" not in label]
    domain = ".".join(labels) if len(labels) >= 2 else "example.com"
    scheme = scheme if scheme in ("http", "https") else "https"
    port = colon + port if port.isdigit() else ""
    return [f"{scheme}://{domain}{port}", f"{scheme}://app.{domain}{port}"]


def _base_url(env: Mapping[str, str], name: str, schemes: tuple[str, ...] = ("http", "https")) -> str | None:
    """The base URL in variable NAME, or None; one that is not scheme://host… is an error naming NAME."""
    value = (env.get(name) or "").strip()
    if not value:
        return None
    if _url_parts(value, schemes) is None:
        shape = "http(s)://host[:port][/path]" if schemes[0] == "http" else f"{schemes[0]}://host[:port][/db]"
        raise ConfigurationError(f"{name} is not a usable URL; use {shape}")
    return value


def _url_parts(value: str, schemes: tuple[str, ...]) -> SplitResult | None:
    """VALUE split, when it is scheme://host… with one of SCHEMES and a port that is a number; else None."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(value)
        _ = parts.port  # raises ValueError for a port that is not a number
    except ValueError:
        return None
    return parts if parts.scheme in schemes and parts.hostname else None
