"""The savings dashboard at /: one HTML page, its charts drawn as inline SVG on the server, no external
asset (it works offline), readable on a phone. Every figure comes from the /v1/savings and /v1/misses
objects; each chart's marks carry their numbers in data-* attributes."""

from __future__ import annotations

from html import escape
from typing import Any

_COLOURS = {"rule": "#2f9e44", "clarify": "#f59f00", "llm": "#e03131"}
# The charts' coordinates. A chart is drawn as wide as the page up to MAX_CHART_PX, so its user unit is
# about a pixel on a phone (390 px) and at most 1.4 on a desktop: a label of _FONT units stays readable on
# both (12 px or more), where a wider drawing shrank its labels to 6 px on a phone.
_WIDTH, _HEIGHT, _PAD, _FONT = 400, 200, 30, 14
MAX_CHART_PX = 560
#: Days a chart of days has room for at least: one day of data is one bar among slots, not the full width.
_MIN_SLOTS = 7
#: What a section says when its window holds nothing to draw.
NO_DATA = '<p class="empty">no data in this window</p>'


def _usd(value: float) -> str:
    """Money, everywhere on the page, at one precision: a rule answer's baseline is a fraction of a cent."""
    return f"${value:,.6f}"


def _svg(body: str, label: str, height: int = _HEIGHT) -> str:
    return (
        f'<svg viewBox="0 0 {_WIDTH} {height}" role="img" aria-label="{escape(label)}" '
        f'preserveAspectRatio="xMidYMid meet">{body}</svg>'
    )


def _text(x: float, y: float, text: str, anchor: str = "start") -> str:
    return f'<text x="{x:.1f}" y="{y:.1f}" font-size="{_FONT}" text-anchor="{anchor}">{escape(text)}</text>'


def _routes_over_time(timeline: dict[str, dict[str, int]]) -> str:
    """Stacked bars: requests per day by route."""
    days = list(timeline)
    if not days:
        return NO_DATA
    peak = max(sum(v.values()) for v in timeline.values()) or 1
    slot = (_WIDTH - 2 * _PAD) / max(len(days), _MIN_SLOTS)
    marks = []
    for i, day in enumerate(days):
        y = float(_HEIGHT - _PAD)
        for route, colour in _COLOURS.items():
            count = timeline[day].get(route, 0)
            height = (_HEIGHT - 2 * _PAD) * count / peak
            y -= height
            marks.append(
                f'<rect class="bar route-{route}" data-day="{day}" data-route="{route}" data-value="{count}" '
                f'x="{_PAD + i * slot + 1:.1f}" y="{y:.1f}" width="{max(1.0, slot - 2):.1f}" height="{height:.1f}" '
                f'fill="{colour}"><title>{day} {route}: {count}</title></rect>'
            )
        if i % max(1, -(-len(days) // 5)) == 0:  # at most five dates, each about 40 units wide
            marks.append(_text(_PAD + (i + 0.5) * slot, _HEIGHT - 10, day[5:], "middle"))
    marks.append(_text(_PAD, 16, f"peak {peak} requests/day"))
    return _svg("".join(marks), "requests per day by route")


def _spend(rows: dict[str, dict[str, float]]) -> str:
    """Per day: what was spent (solid) against what an all-LLM design would have (outline)."""
    days = list(rows)
    if not days:
        return NO_DATA
    peak = max(max(v["baseline_cost_usd"], v["actual_cost_usd"]) for v in rows.values()) or 1.0
    slot = (_WIDTH - 2 * _PAD) / max(len(days), _MIN_SLOTS)
    marks = []
    for i, day in enumerate(days):
        for kind, offset, style in (("baseline_cost_usd", 0.0, 'fill="none" stroke="#495057"'),
                                    ("actual_cost_usd", 0.5, 'fill="#1c7ed6"')):  # fmt: skip
            value = rows[day][kind]
            height = (_HEIGHT - 2 * _PAD) * value / peak
            marks.append(
                f'<rect class="spend {kind}" data-day="{day}" data-value="{value}" '
                f'x="{_PAD + (i + offset) * slot + 1:.1f}" y="{_HEIGHT - _PAD - height:.1f}" '
                f'width="{max(1.0, slot / 2 - 2):.1f}" height="{height:.1f}" {style}>'
                f"<title>{day} {kind.replace('_cost_usd', '')}: {_usd(value)}</title></rect>"
            )
    marks.append(_text(_PAD, 16, f"peak {_usd(peak)}/day"))
    return _svg("".join(marks), "spend against the all-LLM baseline per day")


def _latency(latency: dict[str, dict[str, float | None]]) -> str:
    rows = [(route, v["p50"] or 0.0, v["p95"] or 0.0) for route, v in latency.items()]
    if not rows:
        return NO_DATA
    peak = max(p95 for _, _, p95 in rows) or 1.0
    # Each route: its name and figures on one line, its bars on the next (a phone has no room for both).
    height = 44 * len(rows) + 6
    marks = []
    for i, (route, p50, p95) in enumerate(rows):
        y = 4 + i * 44
        marks.append(_text(4, y + 14, f"{route}: p50 {p50:g} · p95 {p95:g} ms"))
        for kind, value, opacity in (("p95", p95, "0.35"), ("p50", p50, "1")):
            width = (_WIDTH - 8) * value / peak
            marks.append(
                f'<rect class="latency {kind}" data-route="{route}" data-value="{value}" x="4" y="{y + 20}" '
                f'width="{max(1.0, width):.1f}" height="16" fill="{_COLOURS.get(route, "#868e96")}" '
                f'fill-opacity="{opacity}"><title>{route} {kind}: {value} ms</title></rect>'
            )
    return _svg("".join(marks), "latency per route", height)


def _demo_note(savings: dict[str, Any]) -> str:
    """What the page did with the window's demo rows (synthetic weather), with the link that does the other."""
    rows, days = savings["demo_rows"], savings["days"]
    if not rows:
        return ""
    if savings["include_demo"]:
        said, link = "are included", f'<a href="?days={days}">leave them out</a>'
    else:
        said, link = "are left out", f'<a href="?days={days}&amp;include_demo=1">include them</a>'
    note = f"{rows} requests answered from synthetic demo weather {said} ({link})."
    return f'<p id="demo" data-value="{rows}">{note}</p>\n'


def render(savings: dict[str, Any], misses: dict[str, Any]) -> str:
    """The page for one window (SAVINGS and MISSES: the /v1/savings and /v1/misses objects)."""
    saved_pct = savings["saved_pct"]
    headline = f"{saved_pct:.1f}%" if saved_pct is not None else "–"
    words = "".join(
        f'<tr class="miss"><td>{escape(w["word"])}</td><td data-value="{w["count"]}">{w["count"]}</td>'
        f"<td>{_usd(w['cost_usd'])}</td><td>{escape(' | '.join(w['examples']))}</td></tr>"
        for w in misses["words"][:10]
    )
    misses_table = (
        f"<table><tr><th>word</th><th>requests</th><th>cost</th><th>examples</th></tr>{words}</table>"
        if words
        else NO_DATA
    )
    wrong = "".join(
        f'<tr class="wrong"><td>{escape(m["datetime_utc"][:16])}</td><td>{escape(m["query"] or "(not kept)")}</td>'
        f"<td>{escape(m['comment'] or '')}</td></tr>"
        for m in misses.get("marked_wrong", [])
    )
    marked = savings.get("feedback", {})
    wrong_section = (
        f"<h2>Rule answers users marked wrong ({marked.get('rule_marked_wrong', 0)} of "
        f"{marked.get('rule_answers', 0)})</h2><table><tr><th>when</th><th>question</th><th>comment</th></tr>"
        f"{wrong}</table>\n"
        if wrong
        else ""
    )
    spend = _spend(savings["groups"]["rows"]) if savings["groups"]["by"] == "day" else NO_DATA
    by_route = " · ".join(f"{route} {n}" for route, n in savings["by_route"].items())
    legend = " ".join(f'<span style="color:{c}">■</span> {r}' for r, c in _COLOURS.items())
    query = f"days={savings['days']}" + ("&amp;include_demo=1" if savings["include_demo"] else "")
    return f"""<!doctype html>
<html lang="zh-CN"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>hybrid-weather · savings</title>
<style>
body {{ font: 15px/1.45 system-ui, sans-serif; margin: 0 auto; max-width: 720px; padding: 12px; color: #212529; }}
h1 {{ font-size: 1.3em; }} h2 {{ font-size: 1.05em; margin-top: 1.6em; }}
.figures {{ display: flex; flex-wrap: wrap; gap: 12px; }}
.figure {{ flex: 1 1 140px; background: #f1f3f5; border-radius: 8px; padding: 10px; }}
.figure b {{ display: block; font-size: 1.5em; }}
svg {{ display: block; width: 100%; max-width: {MAX_CHART_PX}px; height: auto; background: #fff; }}
.empty {{ color: #868e96; }}
table {{ border-collapse: collapse; width: 100%; font-size: .9em; }} td, th {{ border-bottom: 1px solid #dee2e6;
padding: 4px; text-align: left; vertical-align: top; }}
</style></head><body>
<h1>What routing saved · last {savings["days"]} days</h1>
<div class="figures">
<div class="figure">saved<b id="saved-pct">{headline}</b>{_usd(savings["saved_usd"])}</div>
<div class="figure">spent<b id="spent">{_usd(savings["actual_cost_usd"])}</b>all-LLM
<span id="baseline">{_usd(savings["baseline_cost_usd"])}</span></div>
<div class="figure">requests<b id="requests">{savings["requests"]}</b>{by_route}</div>
</div>
{_demo_note(savings)}{wrong_section}<h2>Requests by route, per day</h2><p>{legend}</p>
{_routes_over_time(savings["timeline"])}
<h2>Spend against the all-LLM baseline, per day</h2>
<p><span style="color:#1c7ed6">■</span> spent <span>□</span> all-LLM baseline</p>
{spend}
<h2>Latency per route</h2>
{_latency(savings["latency_ms"])}
<h2>Top misses: plain lookups the LLM answered</h2>
{misses_table}
<p><small>Baseline: {escape(savings["baseline_method"])}. Data: <a href="v1/savings?{query}">
/v1/savings</a>, <a href="v1/misses?{query}">/v1/misses</a>.</small></p>
</body></html>"""


def login_page(problem: str = "", root: str = "") -> str:
    """The form a browser gets in place of the dashboard when it holds no key's cookie: the key goes to
    POST /login (under ROOT, the app's mount path), which sets the cookie and sends the browser to /."""
    note = f'<p id="problem" role="alert">{escape(problem)}</p>' if problem else ""
    return f"""<!doctype html>
<html lang="zh-CN"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>hybrid-weather · sign in</title>
<style>
body {{ font: 15px/1.45 system-ui, sans-serif; margin: 0 auto; max-width: 420px; padding: 12px; color: #212529; }}
input {{ font: inherit; width: 100%; box-sizing: border-box; padding: 6px; margin: 6px 0; }}
#problem {{ color: #c92a2a; }}
</style></head><body>
<h1>hybrid-weather · savings</h1>
<p>This service needs an API key (one of HYBRID_WEATHER_API_KEYS).</p>{note}
<form method="post" action="{escape(root)}/login">
<label for="key">API key</label>
<input id="key" name="key" type="password" autocomplete="current-password" required autofocus>
<input id="sign-in" type="submit" value="Sign in">
</form>
</body></html>"""
