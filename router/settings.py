"""Settings from the environment (docs/configuration.md), read in this one place and only when asked: each
setting is a field that names its variable and how it is read."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

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


#: How a setting is read: (the environment, the variable's name, the field's default) → its value, or a
#: ConfigurationError naming the variable.
Reader = Callable[[Mapping[str, str], str, Any], Any]


def _text(env: Mapping[str, str], name: str, default: str | None) -> str | None:
    return env.get(name) or default


def _upstream_limit(env: Mapping[str, str], name: str, default: str | None) -> str | None:
    limit = env.get(name) or default
    if limit is not None:
        from hybrid_weather.agent.weather.shared_cache import parse_limit

        # Checked here, where every command reads it, not when the shared cache is first built: that is only
        # with HYBRID_WEATHER_CACHE_URL set and a remote provider, so a typo passed silently.
        parse_limit(limit, name)
    return limit


def _path(env: Mapping[str, str], name: str, default: Path | None) -> Path | None:
    text = env.get(name)
    return Path(text) if text else default


def _provider(env: Mapping[str, str], name: str, default: str) -> str:
    provider = env.get(name) or default
    check_provider(provider, name)
    return provider


def _cache_ttl(env: Mapping[str, str], name: str, default: float) -> float:
    text = env.get(name)
    if not text:
        return default
    try:
        seconds = float(text)
    except ValueError:
        raise ConfigurationError(f"{name}={text!r} is not a number of seconds; use e.g. 600, or 0 to disable") from None
    if seconds < 0:
        raise ConfigurationError(f"{name} must be 0 or more seconds")
    return seconds


def _choice(first: str, second: str) -> Reader:
    """A reader of a variable that is FIRST (its default) or SECOND."""

    def read(env: Mapping[str, str], name: str, default: str) -> str:
        value = (env.get(name) or default).strip().lower()
        if value not in (first, second):
            raise ConfigurationError(f"{name}={value!r}: use '{first}' (default) or '{second}'")
        return value

    return read


def _keep_days(env: Mapping[str, str], name: str, default: float | None) -> float | None:
    text = (env.get(name) or "").strip().lower()
    if not text:
        return default
    try:
        days = float("inf") if text == "forever" else float(text)
    except ValueError:
        days = -1.0
    if not days > 0:
        raise ConfigurationError(f"{name}={text!r}: use a number of days above 0, or 'forever'")
    return days


def _ledger(env: Mapping[str, str], name: str, default: str | None) -> str | None:
    ledger = env.get(name) or default
    if ledger is not None and (problem := ledger_scheme_problem(ledger.strip())):
        raise ConfigurationError(f"{name}={redact(ledger)!r}: {problem}")
    return ledger


def _canary(env: Mapping[str, str], name: str, default: float | None) -> float | None:
    share = canary_share(env.get(name), name)
    return default if share is None else share


def _model_keys(env: Mapping[str, str], name: str, default: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
    """Every variable NAME's pattern (*_API_KEY) matches that holds something."""
    suffix = name.lstrip("*")
    return tuple(sorted((key, value) for key, value in env.items() if key.endswith(suffix) and value)) or default


def overlay_folder(settings: Settings) -> Path:
    """Where the overlay's versions are kept (teach, learn)."""
    return settings.home_dir() / "overlay"


def check_provider(name: str, where: str = "--provider") -> None:
    if name not in PROVIDERS:
        raise ConfigurationError(f"unknown weather provider {name!r} in {where}; choose one of: {', '.join(PROVIDERS)}")


def _switch(env: Mapping[str, str], name: str, default: bool) -> bool:
    """The on/off variable NAME: 1, true, on or yes; 0, false, off or no; DEFAULT when unset."""
    value = (env.get(name) or "").strip().lower()
    if not value:
        return default
    if value in ("0", "false", "off", "no"):
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


def _origins(env: Mapping[str, str], name: str, default: tuple[str, ...]) -> tuple[str, ...]:
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
    return tuple(origins) or default


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


def _base_url(env: Mapping[str, str], name: str, default: str | None) -> str | None:
    """The http(s) base URL in variable NAME, or DEFAULT; one that is not scheme://host… is an error naming NAME."""
    return _url(env, name, ("http", "https")) or default


def _redis_url(env: Mapping[str, str], name: str, default: str | None) -> str | None:
    """The redis:// or rediss:// URL in variable NAME, or DEFAULT."""
    return _url(env, name, ("redis", "rediss")) or default


def _url(env: Mapping[str, str], name: str, schemes: tuple[str, ...]) -> str | None:
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


def _setting(variable: str, read: Reader, default: Any = None, *, shown: bool = True) -> Any:
    """A field of Settings, read from the environment VARIABLE by READ(env, VARIABLE, DEFAULT): the one place
    each variable is named (docs/configuration.md's table is held to these by tests/test_docs.py)."""
    return field(default=default, repr=shown, metadata={"variable": variable, "read": read})


@dataclass(frozen=True, slots=True)
class Settings:
    """Every setting hybrid-weather reads; `from_env()` builds one from the environment."""

    provider: str = _setting("HYBRID_WEATHER_PROVIDER", _provider, DEFAULT_PROVIDER)
    open_meteo_url: str | None = _setting("HYBRID_WEATHER_OPEN_METEO_URL", _base_url)
    amap_key: str | None = _setting("AMAP_KEY", _text)
    amap_url: str | None = _setting("HYBRID_WEATHER_AMAP_URL", _base_url)
    cache_ttl: float = _setting("HYBRID_WEATHER_CACHE_TTL", _cache_ttl, DEFAULT_CACHE_TTL)
    #: redis:// or rediss:// for a forecast cache the fleet shares
    cache_url: str | None = _setting("HYBRID_WEATHER_CACHE_URL", _redis_url)
    #: key prefix in that Redis (deployments sharing one Redis differ)
    cache_prefix: str = _setting("HYBRID_WEATHER_CACHE_PREFIX", _text, "hybrid-weather:")
    #: the fleet's upstream budget, e.g. 600/min,5000/h (None: the provider's)
    upstream_limit: str | None = _setting("HYBRID_WEATHER_UPSTREAM_LIMIT", _upstream_limit)
    home: Path | None = _setting("HYBRID_WEATHER_HOME", _path)
    ledger: str | None = _setting("HYBRID_WEATHER_LEDGER", _ledger)
    ledger_queries: str = _setting("HYBRID_WEATHER_LEDGER_QUERIES", _choice("masked", "hash"), "masked")
    #: days rows are kept; None: the backend's default; inf: forever
    ledger_keep_days: float | None = _setting("HYBRID_WEATHER_LEDGER_KEEP_DAYS", _keep_days)
    #: what the LLM receives of a question holding personal data: masked or raw
    llm_sees: str = _setting("HYBRID_WEATHER_LLM_SEES", _choice("masked", "raw"), "masked")
    model: str | None = _setting("HYBRID_WEATHER_MODEL", _text)
    openai_api_key: str | None = _setting("OPENAI_API_KEY", _text)
    openai_base_url: str | None = _setting("OPENAI_BASE_URL", _base_url)
    #: keys `serve` accepts (comma-separated), or None
    api_keys: str | None = _setting("HYBRID_WEATHER_API_KEYS", _text)
    #: a file of SHA-256 hex digests of accepted keys, one per line
    api_keys_file: str | None = _setting("HYBRID_WEATHER_API_KEYS_FILE", _text)
    #: The key the dashboard's cookies are signed with (None: one made at first start in the home folder).
    cookie_secret: str | None = _setting("HYBRID_WEATHER_COOKIE_SECRET", _text, shown=False)
    #: The passphrase of an encrypted TLS key (`serve --keyfile`); None: the key must be unencrypted.
    keyfile_password: str | None = _setting("HYBRID_WEATHER_KEYFILE_PASSWORD", _text, shown=False)
    #: SHA-256 hex digests of accepted keys that see every key's rows (comma-separated)
    admin_keys: str | None = _setting("HYBRID_WEATHER_ADMIN_KEYS", _text)
    #: per-key (or per-address) rate of `serve`, e.g. 20/s; None: none
    rate_limit: str | None = _setting("HYBRID_WEATHER_RATE_LIMIT", _text)
    #: daily LLM budgets per key of `serve`, e.g. 5usd,team=20usd (budgets.py)
    key_budgets: str | None = _setting("HYBRID_WEATHER_KEY_BUDGETS", _text)
    #: requests to the model a key of `serve` may have in flight, or off
    key_concurrency: str | None = _setting("HYBRID_WEATHER_KEY_CONCURRENCY", _text)
    #: `serve` sends chat requests it does not answer (their own tools) to the model as they came: off
    #: unless the operator says so, as each one spends the service's model key on a client's behalf.
    pass_through: bool = _setting("HYBRID_WEATHER_PASS_THROUGH", _switch, False)
    #: seconds `serve` waits for a request's head
    header_timeout: float = _setting("HYBRID_WEATHER_HEADER_TIMEOUT", _seconds, DEFAULT_HEADER_TIMEOUT)
    #: seconds `serve` waits for a request's body, after its head
    body_timeout: float = _setting("HYBRID_WEATHER_BODY_TIMEOUT", _seconds, DEFAULT_BODY_TIMEOUT)
    #: Every *_API_KEY variable, for the models of models.json whose api_key_env names their own key.
    model_keys: tuple[tuple[str, str], ...] = _setting("*_API_KEY", _model_keys, (), shown=False)
    #: Web origins whose pages may call `serve` from a browser (CORS); none unless the operator names them.
    cors_origins: tuple[str, ...] = _setting("HYBRID_WEATHER_CORS_ORIGINS", _origins, ())
    #: The share of sessions (0 to 1) the newest overlay version answers while the rest keep the one it was
    #: made from (teach, learn); None: the active version answers every question.
    canary: float | None = _setting("HYBRID_WEATHER_CANARY", _canary)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        """The settings ENV (os.environ) holds; a ConfigurationError naming the variable for one that
        cannot be used."""
        env = os.environ if env is None else env
        values = {}
        for each in fields(cls):
            values[each.name] = each.metadata["read"](env, each.metadata["variable"], each.default)
        return cls(**values)

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
