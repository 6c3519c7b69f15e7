"""How a labelled set's cities are matched to a decision's places (tests/data/holdout, leftover, assistant):
a label names a city in plain Chinese (上海 for 上海市), and a district, town or landmark inside it is in it."""

from __future__ import annotations

from hybrid_weather.rules import Place
from hybrid_weather.rules.gazetteer import Gazetteer

#: Suffixes a label leaves off a city's name (上海 for 上海市).
_SUFFIXES = ("特别行政区", "自治州", "地区", "盟", "市", "省", "县", "区")
#: Municipalities and SARs: any district inside is the city (the first two digits of the adcode).
_PROVINCE_LEVEL_CITIES = ("11", "12", "31", "50", "81", "82")


def _bare(name: str) -> str:
    for suffix in _SUFFIXES:
        if name.endswith(suffix) and len(name) > len(suffix) + 1:
            return name[: -len(suffix)]
    return name


def _without_parents_suffixes(name: str) -> str:
    """NAME without the 市 and 省 its parents' names end with (北京市朝阳区 → 北京朝阳区), as a label writes a
    place with its city."""
    return name[:-1].replace("市", "").replace("省", "") + name[-1:]


def _prefecture(code: str | None) -> str | None:
    if not code:
        return None
    return code[:2] if code[:2] in _PROVINCE_LEVEL_CITIES else code[:4]


def same_city(gazetteer: Gazetteer, label: str, place: Place) -> bool:
    """Whether PLACE lies in the city a label names: by name, or by the prefecture part of the adcode."""
    if _bare(place.display) == label or _bare(place.name) == label or place.name.startswith(label):
        return True
    if place.level == "township" and place.name.endswith(label):  # 下塘镇, 长丰县下塘镇: 合肥市长丰县下塘镇
        return True
    if _without_parents_suffixes(place.name) == _without_parents_suffixes(label):  # 北京朝阳区: 北京市朝阳区
        return True
    match = gazetteer.lookup(label)
    if match is None:
        return False
    want = {_prefecture(candidate.adcode) for candidate in match.candidates} - {None}
    return bool(want) and _prefecture(place.adcode or place.parent) in want
