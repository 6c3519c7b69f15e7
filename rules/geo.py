"""Distances on the Earth's surface, from the gazetteer's coordinates."""

from __future__ import annotations

import math

#: The Earth's mean radius (IUGG), km: the sphere great-circle distances are measured on.
EARTH_RADIUS_KM = 6371.0088


def great_circle_km(lat1: float, lon1: float, lat2: float, lon2: float) -> float:
    """The great-circle (straight-line over the surface) distance in km between two points, by the
    haversine formula: within about 0.5 % of the distance on the ellipsoid, and no road or rail distance."""
    p1, p2 = math.radians(lat1), math.radians(lat2)
    a = math.sin((p2 - p1) / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(math.radians(lon2 - lon1) / 2) ** 2
    return EARTH_RADIUS_KM * 2 * math.asin(min(1.0, math.sqrt(a)))
