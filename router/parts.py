"""What a HybridRouter is made of: its parts, each built on first use and closed with it."""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from hybrid_weather.agent.errors import ConfigurationError, LedgerUnavailable
from hybrid_weather.agent.llm.models import ModelTable
from hybrid_weather.agent.weather import (
    DEFAULT_MAX_STALE_AGE,
    PROVIDER_CLASSES,
    AMapProvider,
    DemoProvider,
    OpenMeteoProvider,
    WeatherProvider,
    WeatherService,
)
from hybrid_weather.rules import Reader, today_in_china

from ._lazy import built, lazy_part
from .answer import RuleAnswerer
from .outgoing import Outgoing
from .settings import Settings, is_postgres, overlay_folder
from .understand import QueryParser
from .understand.overlay import Overlays, OverlayStore

if TYPE_CHECKING:  # the LLM loop, the ledger (sqlite3) and shadow runs load when first used
    from opentelemetry.trace import Tracer

    from hybrid_weather.agent.llm import LLMAgent
    from hybrid_weather.agent.llm.travel import TravelTimes

    from .answer.shadow import ShadowRunner
    from .ledger import Ledger, Recorder, SpoolLedger
    from .understand.overlay_postgres import PostgresOverlayStore

logger = logging.getLogger("hybrid_weather")
#: Seconds one ask may take for its weather, retries included (the LLM loop has its own, longer one).
DEFAULT_DEADLINE = 5.0
#: Seconds a worker keeps its own copy of a fetch when the fleet shares a cache: how much older than the
#: fleet's its answers can be, and how often (at most) it asks Redis about one place.
SHARED_LOCAL_TTL = 5.0


class Parts:
    """The expensive things, built lazily from the router's arguments and the environment. Thread-safe."""

    def __init__(
        self,
        *,
        settings: Settings | None,
        provider: str | None,
        ledger: str | None,
        cache_ttl: float | None,
        deadline: float,
        shadow_rate: float,
        http_options: dict[str, Any],
        llm_options: dict[str, Any],
        disk_cache: bool = False,
        cache_url: str | None = None,
        ledger_queue: int | None = None,
        tools: Sequence[Any] = (),
    ) -> None:
        self._settings, self._provider, self._ledger, self._cache_ttl = settings, provider, ledger, cache_ttl
        self._cache_url = cache_url
        self._ledger_queue = ledger_queue
        self._tools = tuple(tools)  #: the library user's own tools, for the LLM loop
        #: Keep fetched forecasts in $HYBRID_WEATHER_HOME/forecast-cache.db too (for one-shot processes).
        self.disk_cache = disk_cache
        self.deadline = deadline
        #: Fraction of rule answers also sent through the LLM in the background (a measured baseline).
        self.shadow_rate = shadow_rate
        self._http_options, self._llm_options = http_options, llm_options
        self._agents: dict[str, LLMAgent] = {}  #: the loops of models callers named, besides the configured one
        self._agents_lock = threading.Lock()

    @lazy_part
    def settings(self) -> Settings:
        return self._settings or Settings.from_env()

    @lazy_part
    def provider_name(self) -> str:
        return self._provider or self.settings.provider

    @lazy_part
    def parser(self) -> QueryParser:
        provider = PROVIDER_CLASSES[self.provider_name]
        return QueryParser(Reader(), provider.horizon, provider.label)

    @lazy_part
    def outgoing(self) -> Outgoing:
        """The boundary this router's spans take their text through, as its ledger's rows do (router/outgoing.py)."""
        return Outgoing(self.settings.ledger_queries)

    @lazy_part
    def tracing(self) -> tuple[Tracer | None, Any]:
        """OpenTelemetry's tracer for this router's requests, and the provider it made (router/tracing.py)."""
        import os

        from .tracing import configured_tracer

        return configured_tracer(os.environ)

    @lazy_part
    def overlays(self) -> Overlays:
        """The installation's overlay (teach, learn), read again when it changes; a canary share from
        HYBRID_WEATHER_CANARY."""
        from .understand.overlay_check import overlay_problem

        parser = self.parser  # each version read is held to the checks teach makes (a hand may have written it)
        return Overlays(
            self.overlay_store(), canary=self.settings.canary, check=lambda overlay: overlay_problem(parser, overlay)
        )

    def overlay_store(self) -> OverlayStore | PostgresOverlayStore:
        """A store of the overlay's versions, its own (a writer's lock and connection are not shared): the
        fleet's, in the ledger, when the ledger is PostgreSQL; else $HYBRID_WEATHER_HOME/overlay/'s files."""
        location = self._ledger or self.settings.ledger_location()
        if location and is_postgres(location):
            from .understand.overlay_postgres import PostgresOverlayStore

            return PostgresOverlayStore(location)
        return OverlayStore(overlay_folder(self.settings))

    @lazy_part
    def weather(self) -> WeatherService:
        settings = self.settings
        ttl = settings.cache_ttl if self._cache_ttl is None else self._cache_ttl
        provider, disk, shared = self._make_provider(), None, None
        remote = not isinstance(provider, DemoProvider)  # demo data costs no request: nothing to share or keep
        cache_url = self._cache_url or settings.cache_url
        limit: tuple[tuple[int, int], ...] = ()
        if cache_url and ttl > 0 and remote:
            from hybrid_weather.agent.weather.shared_cache import SharedCache, parse_limit

            shared = SharedCache(cache_url, keep_s=DEFAULT_MAX_STALE_AGE, prefix=settings.cache_prefix)
            limit = parse_limit(settings.upstream_limit or provider.default_upstream_limit or "off")
        elif self.disk_cache and ttl > 0 and remote:
            from hybrid_weather.agent.weather.disk_cache import DiskCache

            disk = DiskCache(settings.home_dir() / "forecast-cache.db")
        local_ttl = SHARED_LOCAL_TTL if shared is not None else None
        return WeatherService(
            provider, cache_ttl=ttl, disk=disk, shared=shared, local_ttl=local_ttl, upstream_limit=limit
        )

    @lazy_part
    def rule_answers(self) -> RuleAnswerer:
        return RuleAnswerer(self.weather)

    @lazy_part
    def models(self) -> ModelTable:
        return ModelTable(self.settings.home_dir() / "models.json")

    @property
    def model(self) -> str:
        """The model LLM answers use and the all-LLM baseline is priced on: HYBRID_WEATHER_MODEL's first,
        else the price table's default."""
        return self.model_chain[0]

    @property
    def model_chain(self) -> list[str]:
        """The configured model, then the fallbacks HYBRID_WEATHER_MODEL=primary,fallback,… names."""
        return self.settings.models() or [self.models.default_model]

    @property
    def request_tokens(self) -> int:
        """The most tokens the LLM loop lets one request spend, prompt and completion of every call: its
        token budget (the loop stops a request once it has used that many)."""
        from hybrid_weather.agent.llm.loop import DEFAULT_TOKEN_BUDGET

        return int(self._llm_options.get("token_budget", DEFAULT_TOKEN_BUDGET))

    @lazy_part
    def ledger(self) -> Ledger | SpoolLedger | None:
        """The request ledger, or None when it is off (ledger="off" or HYBRID_WEATHER_LEDGER=off, any case).

        A location that cannot hold a ledger never stops an answer: the rows go to a spool file instead,
        and `problem` says so (logged, and printed once by the CLI).
        """
        location = self._ledger or self.settings.ledger_location()
        if not location or location.lower() == "off":
            return None
        from .ledger import Ledger, SpoolLedger

        models, model, queries = self.models, self.model, self.settings.ledger_queries
        setting = "the ledger= argument" if self._ledger else self.settings.ledger_setting()
        spool, keep_days = self.settings.spool_for(location), self.settings.keep_days(location)
        sizing = {"queue_size": self._ledger_queue} if self._ledger_queue else {}
        try:
            return Ledger(
                location,
                setting=setting,
                models=models,
                model=model,
                store_queries=queries,
                spool=spool,
                keep_days=keep_days,
                **sizing,
            )
        except LedgerUnavailable as error:
            logger.warning("%s", error)
            return SpoolLedger(location, str(error), models=models, model=model, store_queries=queries, spool=spool)

    @lazy_part
    def recorder(self) -> Recorder | None:
        from .ledger import Recorder

        if self.ledger is None:
            return None
        return Recorder(self.ledger, demo=self.provider_name == DemoProvider.name)

    @lazy_part
    def agent(self) -> LLMAgent:
        """The LLM loop of the configured model; raises LLMUnavailable when no API key is configured."""
        return self._make_agent(self.model)

    def agent_for(self, model: str | None) -> LLMAgent:
        """The LLM loop of MODEL, a model of the price table a caller named (the drop-in endpoint's
        `model`), made on first use and kept; the configured one for None or the configured name."""
        if model is None or model == self.model:
            return self.agent
        with self._agents_lock:
            agent = self._agents.get(model)
            if agent is None:
                agent = self._agents[model] = self._make_agent(model)
            return agent

    @lazy_part
    def travel(self) -> TravelTimes | None:
        """AMap's route planning for the LLM's travel_time tool, one client for every model's loop; None
        without AMAP_KEY (then the tool is absent)."""
        if not self.settings.amap_key:
            return None
        from hybrid_weather.agent.llm.travel import TravelTimes

        return TravelTimes(self.settings.amap_key, self.settings.amap_url, **self._http_options)

    def _make_agent(self, model: str) -> LLMAgent:
        from hybrid_weather.agent.llm import LLMAgent, ToolBox

        settings = self.settings
        if self.models.problem:
            raise ConfigurationError(self.models.problem)
        facts = self.models.get(model)
        if facts and facts.retires_on and facts.retires_on <= today_in_china().isoformat():
            logger.warning(
                "model %s was retired on %s; set HYBRID_WEATHER_MODEL to a current one", model, facts.retires_on
            )
        tools = ToolBox(
            self.weather, self.parser.reader, deadline_s=self.deadline, extra=self._tools, travel=self.travel
        )
        return LLMAgent(
            tools,
            model=model,
            api_key=settings.api_key(facts.api_key_env if facts else None),
            base_url=(facts.base_url if facts else None) or settings.openai_base_url,
            facts=facts,
            **self._llm_options,
        )

    @lazy_part
    def shadow(self) -> ShadowRunner | None:
        """Shadow runs of rule answers through the LLM, when shadow_rate > 0 and the ledger is on."""
        if self.shadow_rate <= 0 or self.recorder is None:
            return None
        from .answer.shadow import ShadowRunner

        return ShadowRunner(
            self.shadow_rate,
            agent=lambda: self.agent,
            models=self.models,
            recorder=self.recorder,
            mask=self.settings.llm_sees == "masked",
        )

    def _make_provider(self) -> WeatherProvider:
        settings, name = self.settings, self.provider_name
        if name == AMapProvider.name:
            return AMapProvider(settings.amap_key, settings.amap_url, **self._http_options)
        if name == OpenMeteoProvider.name:
            return OpenMeteoProvider(settings.open_meteo_url, **self._http_options)
        return DemoProvider()

    def close(self) -> None:
        """Close the parts that were built, in the order that loses nothing: shadow runs, ledger, clients."""
        parts = [
            built(self, "shadow"),
            built(self, "ledger"),
            built(self, "agent"),
            *self._agents.values(),
            built(self, "travel"),
            built(self, "weather"),
            built(self, "overlays"),
        ]
        for part in parts:
            if part is not None:
                part.close()
        tracing = built(self, "tracing")
        if tracing is not None and tracing[1] is not None:
            tracing[1].shutdown()  # the provider this router made: its last spans exported
