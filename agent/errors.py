"""Every error hybrid-weather raises, in one place. The library raises these; only the CLI prints them.

    HybridWeatherError
    ├── ConfigurationError          a setting is missing or wrong (exit 2)
    ├── InvalidQuestion             a question that cannot be asked as given: too long (exit 2)
    │   └── RequestNotFound         feedback names a request id the ledger does not hold
    ├── WeatherUnavailable          the weather service could not answer (exit 3)
    │   ├── UpstreamTimeout         no answer within the timeout or the deadline
    │   ├── UpstreamConnectError    connection refused or failed
    │   ├── UpstreamHTTPError       HTTP 429/5xx after retries, or another 4xx at once
    │   ├── UpstreamRejected        the service refused the request (AMap 10001 bad key, 10003 daily limit …)
    │   ├── MalformedResponse       a body that is not the documented shape
    │   ├── CircuitOpen             too many recent failures; not asking again for a while
    │   ├── BudgetExhausted         the fleet's upstream budget is spent for now (retry_after_s says when)
    │   └── NotCovered              the provider cannot answer this (AMap abroad, air quality)
    ├── LLMUnavailable              an LLM is needed but none is configured or reachable (exit 4)
    └── LedgerUnavailable           the ledger's location cannot hold one (never stops an answer; exit 2
                                    only for the reports that read it)

Messages are one line and say how to fix the problem.
"""

from __future__ import annotations


class HybridWeatherError(Exception):
    """Base class of every error hybrid-weather raises on purpose."""

    exit_code = 1


class ConfigurationError(HybridWeatherError):
    """A setting is missing or has a value hybrid-weather cannot use."""

    exit_code = 2


class InvalidQuestion(HybridWeatherError):
    """The question cannot be asked as given (longer than rules.MAX_QUESTION_CHARS); nothing was asked."""

    exit_code = 2


class RequestNotFound(InvalidQuestion):
    """Feedback names a request id the ledger does not hold."""


class WeatherUnavailable(HybridWeatherError):
    """The weather provider could not give an answer."""

    exit_code = 3

    def __init__(self, message: str, *, provider: str = "") -> None:
        super().__init__(message)
        self.provider = provider


class UpstreamTimeout(WeatherUnavailable):
    """The provider did not answer within the timeout or the request deadline."""


class UpstreamConnectError(WeatherUnavailable):
    """The connection to the provider was refused or failed."""


class UpstreamHTTPError(WeatherUnavailable):
    """The provider answered with an HTTP error status."""

    def __init__(self, message: str, *, provider: str = "", status_code: int = 0) -> None:
        super().__init__(message, provider=provider)
        self.status_code = status_code


class UpstreamRejected(WeatherUnavailable):
    """The provider refused the request for a reason retrying cannot fix (bad key, quota)."""


class MalformedResponse(WeatherUnavailable):
    """The provider's body is not the documented shape (not JSON, truncated, fields missing)."""


class CircuitOpen(WeatherUnavailable):
    """Recent requests to the provider failed; it is left alone until the cool-down ends."""


class BudgetExhausted(WeatherUnavailable):
    """The fleet has made all the upstream requests its budget allows for now (HYBRID_WEATHER_UPSTREAM_LIMIT)."""

    def __init__(self, message: str, *, provider: str = "", retry_after_s: float = 0.0) -> None:
        super().__init__(message, provider=provider)
        self.retry_after_s = retry_after_s


class NotCovered(WeatherUnavailable):
    """The provider has no data for this place, date or aspect."""


class LLMUnavailable(HybridWeatherError):
    """The question needs an LLM, but none is configured or reachable.

    It carries no answer: a caller that wants the plain weather part of the question asks
    `HybridRouter.weather_part()` for it. `attempts` counts the HTTP attempts made before giving up.
    """

    exit_code = 4

    def __init__(self, message: str, *, attempts: int = 0) -> None:
        super().__init__(message)
        self.attempts = attempts


class LedgerUnavailable(HybridWeatherError):
    """The ledger's location cannot hold a ledger (a folder, a read-only or corrupt file, no room).

    Asking still answers: the rows go to a spool file instead, and the CLI says so in one line.
    """

    exit_code = 2


def install_hint(extra: str) -> str:
    """The pip command that adds EXTRA to this installation, as part of a message: from a checkout
    (an editable or local-directory install) it names the checkout, since `hybrid-weather[extra]` from an
    index would replace the checkout's code with the released one, or fail where the index has no copy."""
    import importlib.metadata  # deferred: only a message about a missing extra needs it
    import json
    from urllib.parse import unquote, urlparse

    # The first copy an installer wrote: run from a checkout, the path finds the checkout's own build
    # metadata first, which no installer wrote and which records no origin.
    copies = importlib.metadata.distributions(name="hybrid-weather")
    installed = next((copy for copy in copies if copy.read_text("INSTALLER") is not None), None)
    origin = installed.read_text("direct_url.json") if installed else None
    try:
        source = json.loads(origin) if origin else {}
    except ValueError:
        source = {}
    url = source.get("url", "") if isinstance(source, dict) else ""
    if url.startswith("file://") and "dir_info" in source:
        checkout = unquote(urlparse(url).path)
        editable = "-e " if source["dir_info"].get("editable") else ""
        return f"pip install {editable}'{checkout}[{extra}]'"
    return f"pip install 'hybrid-weather[{extra}]'"
