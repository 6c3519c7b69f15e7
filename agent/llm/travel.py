"""Travel time between two places from AMap's route planning (with AMAP_KEY): the LLM's travel_time tool.

    GET {AMAP}/v3/direction/driving?origin=LNG,LAT&destination=LNG,LAT&key=…
        → {"status": "1", "route": {"paths": [{"distance": metres, "duration": seconds, …}]}}
    GET {AMAP}/v3/direction/transit/integrated?origin=…&destination=…&city=ADCODE&cityd=ADCODE&key=…
        → {"status": "1", "route": {"transits": [{"duration": seconds, "distance": metres,
           "walking_distance": metres, "cost": yuan, …}]}}

Every value AMap sends is a string; a body without the envelope, or without a path, is no answer. The
places come from the gazetteer, whose coordinates are WGS-84 where AMap reads GCJ-02: a few hundred metres
apart, nothing to a trip between places. The same resilient client as the weather providers: a deadline
over the whole body, a size cap, retries and a circuit breaker; every failure is a message for the model.
"""

from __future__ import annotations

from typing import Any

from hybrid_weather.rules import Place

from ..errors import WeatherUnavailable
from ..weather.http import ResilientClient
from ..weather.providers import AMAP_URL
from .registry import ToolError

#: How the tool names the two ways of travelling, and AMap's path for each.
MODES = {"driving": "/v3/direction/driving", "transit": "/v3/direction/transit/integrated"}


class TravelTimes:
    """AMap's driving and transit route planning, for the LLM's travel_time tool. Thread-safe."""

    def __init__(self, key: str, base_url: str | None = None, **http: Any) -> None:
        self.key = key
        self.base = (base_url or AMAP_URL).rstrip("/")
        self.http = ResilientClient("amap-route", **http)

    def plan(self, origin: Place, destination: Place, mode: str, deadline: float) -> dict[str, Any]:
        """Duration (minutes) and distance (km) of the first route AMap plans by MODE; ToolError otherwise."""
        if mode not in MODES:
            raise ToolError(f"mode must be one of {', '.join(MODES)}")
        if not (origin.adcode and destination.adcode):
            raise ToolError("AMap plans routes within China only")
        params = {"key": self.key, "origin": _point(origin), "destination": _point(destination), "output": "JSON"}
        if mode == "transit":
            params |= {"city": origin.adcode, "cityd": destination.adcode}
        try:
            body = self.http.get_json(self.base + MODES[mode], params, deadline=deadline)
        except WeatherUnavailable as error:
            raise ToolError(f"AMap route planning is unavailable: {error}") from None
        if not isinstance(body, dict) or "status" not in body:
            raise ToolError("AMap sent a route body without its status envelope")
        if body["status"] != "1":
            raise ToolError(f"AMap refused the route request ({str(body.get('infocode', ''))[:12]} "
                            f"{str(body.get('info', ''))[:60]})")  # fmt: skip
        route = body.get("route")
        options = route.get("paths" if mode == "driving" else "transits") if isinstance(route, dict) else None
        first = options[0] if isinstance(options, list) and options and isinstance(options[0], dict) else None
        seconds, metres = _number(first, "duration"), _number(first, "distance")
        if seconds is None or metres is None:
            raise ToolError(f"AMap found no {mode} route from {origin.display} to {destination.display}")
        result = {"from": origin.name, "to": destination.name, "mode": mode, "source": "amap",
                  "duration_minutes": round(seconds / 60), "distance_km": round(metres / 1000, 1)}  # fmt: skip
        walking = _number(first, "walking_distance")
        if mode == "transit" and walking is not None:
            result["walking_km"] = round(walking / 1000, 1)
        return result

    def close(self) -> None:
        self.http.close()


def _point(place: Place) -> str:
    return f"{place.longitude:.6f},{place.latitude:.6f}"


def _number(item: dict[str, Any] | None, field: str) -> float | None:
    """ITEM's FIELD as a number 0 or more (AMap sends strings), or None."""
    try:
        value = float((item or {}).get(field))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return value if 0 <= value < 1e9 else None
