"""The hybrid-weather command line. Thin glue: the library decides and raises, this module prints."""

from __future__ import annotations

import datetime as dt
import json
import sys

import click
from click_default_group import DefaultGroup

from ._router import HybridRouter


def _parse_today(ctx: click.Context, param: click.Parameter, value: str | None) -> dt.date | None:
    if value is None:
        return None
    try:
        return dt.date.fromisoformat(value)
    except ValueError:
        raise click.BadParameter(f"'{value}' is not a date; use YYYY-MM-DD, e.g. 2026-11-29") from None


_today_option = click.option(
    "--today", callback=_parse_today, metavar="YYYY-MM-DD",
    help="Resolve 今天/明天/周三 against this date instead of today in China.",
)


@click.group(cls=DefaultGroup, default="ask", default_if_no_args=False)
@click.version_option(package_name="hybrid-weather")
def cli() -> None:
    """Chinese weather answers, most of them without an LLM.

    \b
        hybrid-weather "上海今天天气"
        hybrid-weather route "北京明天适合出游吗"
        hybrid-weather savings --days 30
    """


@cli.command()
@click.argument("queries", nargs=-1)
@_today_option
@click.option("--json", "as_json", is_flag=True, help="One JSON object per query, one per line.")
def route(queries: tuple[str, ...], today: dt.date | None, as_json: bool) -> None:
    """Show what the router would do with each query; never touches the network or an LLM.

    With no QUERY, reads one query per line from standard input, so a whole query log can be
    checked at once:

    \b
        hybrid-weather route "魔都明天会下雨吗"
        hybrid-weather route --json < queries.txt
    """
    router = HybridRouter()
    lines = queries if queries else (line.rstrip("\r\n") for line in sys.stdin)
    for query in lines:
        decision = router.route(query, today=today)
        if as_json:
            click.echo(json.dumps(decision.to_json(query), ensure_ascii=False))
        else:
            days = ",".join(d.isoformat() for d in decision.dates) or "-"
            cities = ",".join(decision.cities) or "-"
            click.echo(f"{decision.route}\t{cities}\t{days}\t{decision.aspect or '-'}\t{query}\t# {decision.reason}")
