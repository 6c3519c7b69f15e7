"""The hybrid-weather command line. Thin glue: the library decides and raises, this module prints."""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import logging
import os
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, BinaryIO

import click
from click_default_group import DefaultGroup

from hybrid_weather.agent.errors import (
    ConfigurationError,
    HybridWeatherError,
    LLMUnavailable,
    UpstreamConnectError,
    WeatherUnavailable,
)
from hybrid_weather.agent.weather import PROVIDERS
from hybrid_weather.rules import FIRST_DAY, LAST_DAY, in_supported_range

from .answer import Answer, TextPiece, explanation, explanation_json
from .cli_input import check_utf8, decoded_lines, join_words, meant_command, read_stdin, stdin_lines, stdin_question
from .facade import HybridRouter
from .session import Session

if TYPE_CHECKING:
    from .ledger import Ledger, SpoolLedger


def _parse_today(ctx: click.Context, param: click.Parameter, value: str | None) -> dt.date | None:
    if value is None:
        return None
    try:
        day = dt.date.fromisoformat(value)
    except ValueError:
        raise click.BadParameter(f"'{value}' is not a date; use YYYY-MM-DD, e.g. 2026-11-29") from None
    if not in_supported_range(day):
        raise click.BadParameter(f"'{value}' is outside {FIRST_DAY} to {LAST_DAY}, the days questions can be asked on")
    return day


_provider_option = click.option(
    "--provider",
    type=click.Choice(PROVIDERS),
    default=None,
    help="Weather source (default: $HYBRID_WEATHER_PROVIDER or open-meteo). demo is offline synthetic data.",
)
_today_option = click.option(
    "--today",
    callback=_parse_today,
    metavar="YYYY-MM-DD",
    help="Resolve 今天/明天/周三 against this date instead of today in China.",
)
_include_demo_option = click.option(
    "--include-demo",
    is_flag=True,
    help="Count the requests a router on the demo provider answered (synthetic weather); left out by default.",
)


def _usage_error_json(error: click.ClickException) -> dict[str, Any]:
    """The --json object of a usage error: {"error": {"type", "message"}}, and for a question the words of it
    read so far as "query" (null when none were), as every answer and error of `ask` has one."""
    payload: dict[str, Any] = {"error": {"type": type(error).__name__, "message": error.format_message()}}
    ctx = getattr(error, "ctx", None)
    if ctx is None or ctx.command.name == "ask":
        words = ctx.params.get("words") if ctx is not None else None
        payload = {"query": join_words(tuple(words)) if words else None, **payload}
    return payload


def _print_version(ctx: click.Context) -> None:
    """The version, and whether the reading of questions runs compiled (mypyc, a regular install with a C
    compiler) or as Python (an editable install, HYBRID_WEATHER_PURE_PYTHON=1, no compiler); then exit 0."""
    import importlib.metadata  # here, not at the top: with the email package it loads, 18 M instructions a cold run

    from hybrid_weather.router.understand import parser
    from hybrid_weather.rules import reader

    compiled = [module.__file__.endswith((".so", ".pyd")) for module in (reader, parser) if module.__file__]
    path = "compiled" if all(compiled) else "pure Python" if not any(compiled) else "partly compiled"
    click.echo(f"{ctx.command_path}, version {importlib.metadata.version('hybrid-weather')} (rule path: {path})")
    ctx.exit(0)


class _Group(DefaultGroup):  # type: ignore[misc]  # click-default-group is untyped
    """The command group, with its errors kept to one line and its exit codes as docs/contracts.md says:
    click's usage errors (exit 2) print `Error: …` and where to look, Ctrl-C anywhere exits 130 quietly."""

    def main(self, *args: Any, standalone_mode: bool = True, **extra: Any) -> Any:
        given = extra.get("args", args[0] if args else None)
        words = list(sys.argv[1:] if given is None else given)
        try:
            for word in words:
                check_utf8(word, "an argument")
            return super().main(*args, standalone_mode=False, **extra)
        except click.exceptions.Exit as done:
            code = done.exit_code
        except click.ClickException as error:
            if "--json" in words[: words.index("--") if "--" in words else None]:
                # --json is one object whatever happens, a usage error too (a bad --today, stdin that is
                # not text): a script reads stdout, and found nothing there.
                click.echo(json.dumps(_usage_error_json(error), ensure_ascii=False))
            else:
                where = error.ctx if isinstance(error, click.UsageError) else None
                hint = f" (see: {where.command_path} -h)" if where is not None else ""
                click.echo(f"Error: {error.format_message()}{hint}", err=True)
            code = error.exit_code
        except (click.Abort, KeyboardInterrupt):
            click.echo(err=True)  # end the line the ^C was echoed on
            code = 130
        if not standalone_mode:
            return code
        sys.exit(code)

    def resolve_command(self, ctx: click.Context, args: list[str]) -> Any:
        # `hybrid-weather help` is a request for help, not a question for the LLM; `version`, for the version.
        if args and args[0] in ("help", "帮助"):
            click.echo(ctx.get_help())
            ctx.exit(0)
        if args and args[0] == "version":
            _print_version(ctx)
        if args and args[0] not in self.commands:
            meant = meant_command(self, args)
            if meant is not None:
                raise click.UsageError(f"{args[0]!r} is not a command; did you mean '{ctx.command_path} {meant}'?", ctx)
        return super().resolve_command(ctx, args)


@click.group(
    cls=_Group,
    default="ask",
    default_if_no_args=False,
    invoke_without_command=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=lambda ctx, _, given: _print_version(ctx) if given else None,
    help="Show the version and which rule path runs (compiled or pure Python), and exit.",
)
@click.option("--debug", is_flag=True, help="Show the traceback of an unexpected error (as HYBRID_WEATHER_DEBUG=1).")
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """Chinese weather answers, most of them without an LLM.

    \b
        hybrid-weather "上海今天天气"
        echo "魔都明天会下雨吗" | hybrid-weather
        hybrid-weather route "北京明天适合出游吗"
        hybrid-weather savings --days 30

    A command's name mistyped (savigns; teech list, before one of its subcommands) is "did you mean", exit 2,
    never a question; a question that starts with a word close to a name (what is the weather …) is asked.
    """
    # The library logs; the CLI speaks for itself in one line per problem, so Python's last-resort
    # handler must not print the same warning a second time.
    logger = logging.getLogger("hybrid_weather")
    if not logger.handlers:
        logger.addHandler(logging.NullHandler())
    ctx.meta["hybrid_weather.debug"] = debug or os.environ.get("HYBRID_WEATHER_DEBUG") == "1"
    if ctx.invoked_subcommand is None:
        question = stdin_question()
        if question:  # `echo 上海今天天气 | hybrid-weather`
            ctx.invoke(ask, words=(question,))
            return
        click.echo(ctx.get_help())  # bare `hybrid-weather`: what it can do, and exit 0


@cli.command()
@click.argument("words", nargs=-1)
@click.option("--json", "as_json", is_flag=True, help="Print exactly one JSON object, answer or error.")
@click.option("--explain", is_flag=True, help="Also show the decision, its reason, cache hit or miss and timings.")
@_provider_option
@_today_option
@click.option("--no-emoji", is_flag=True, help="Plain text without weather emoji (also when NO_COLOR is set).")
@click.option("--no-cache", is_flag=True, help="Skip the on-disk forecast cache: ask the weather service now.")
def ask(
    words: tuple[str, ...] = (),
    as_json: bool = False,
    explain: bool = False,
    provider: str | None = None,
    today: dt.date | None = None,
    no_emoji: bool = False,
    no_cache: bool = False,
) -> None:
    """Answer a weather question (the default command).

    The question is the words given, joined (quotes are optional), or standard input when there are none.

    \b
        hybrid-weather "上海今天天气"
        hybrid-weather 北京和上海明天哪个冷 --explain
        hybrid-weather "魔都明天会下雨吗" --json
        echo "广州后天天气" | hybrid-weather --provider demo    # offline, synthetic data
    """
    if words:
        query = join_words(words)  # given, even if blank: the router answers that (and the ledger counts it)
    elif not (query := stdin_question() or ""):
        raise click.UsageError('no question given; try hybrid-weather "上海今天天气"')
    emoji = _emoji(no_emoji, as_json)
    extra: dict[str, Any] | None = {} if as_json else None
    with _errors_as_exit_codes(query, extra), _open_router(provider=provider, disk_cache=not no_cache) as router:
        printer = None if as_json else _Printer()
        answer = _ask_or_degrade(router, query, today=today, emoji=emoji, json_extra=extra, printer=printer)
        _print_answer(answer, query, as_json=as_json, explain=explain, printed=printer is not None)


def _emoji(no_emoji: bool, as_json: bool) -> bool:
    """Weather emoji in answers: not when asked not to (--no-emoji, NO_COLOR), nor in JSON (it is for programs)."""
    return not no_emoji and not os.environ.get("NO_COLOR") and not as_json


def _print_answer(answer: Answer, query: str, *, as_json: bool, explain: bool, printed: bool = False) -> None:
    """ANSWER as JSON or text; PRINTED: its text is on the screen already (_Printer), but for its line's end."""
    if as_json:
        payload = answer.to_json(query)
        if explain:
            payload["explain"] = explanation_json(answer)
        click.echo(json.dumps(payload, ensure_ascii=False))
        return
    click.echo("" if printed else answer.text)
    if explain:
        click.echo(explanation(answer))


@contextlib.contextmanager
def _open_router(**options: Any) -> Iterator[HybridRouter]:
    """A router closed on the way out (its ledger flushed, bounded), then one line on what went wrong with
    the shared cache and one on the ledger, if anything did: the answer stands either way, and so does its
    exit code."""
    router = HybridRouter(**options)
    try:
        yield router
    finally:
        router.close()
        for problem in (router.cache_problem, router.ledger_problem):
            if problem:
                click.echo(f"Warning: {problem}", err=True)


def _ask_or_degrade(
    router: HybridRouter,
    query: str,
    *,
    today: dt.date | None = None,
    session: Session | None = None,
    emoji: bool,
    json_extra: dict[str, Any] | None = None,
    printer: _Printer | None = None,
) -> Answer:
    """router.ask(); when the LLM it needs is unavailable, give the plain weather part first, then raise
    (as text before the error line, or, given JSON_EXTRA, as its `partial` for the one JSON object).
    PRINTER shows the answer's text as it comes: a model's answer as the model writes it."""
    if router.route(query, today=today, session=session).route == "llm":
        router.connect_llm()  # the `openai` import before the answer's clock starts: model time is model time
    try:
        return router.ask(query, today=today, session=session, emoji=emoji, on_text=printer)
    except LLMUnavailable:
        if printer is not None and printer.printed:
            click.echo()  # the answer broke off midway: its line ends before anything else is said
        partial = router.weather_part(query, today=today, emoji=emoji)
        if partial is not None and json_extra is not None:
            json_extra["partial"] = partial.to_json(query)
        elif partial is not None:
            click.echo(partial.text)
        raise


class _Printer:
    """Prints an answer's text as it comes (ask(on_text=...)), so a model's answer shows as it is written,
    not seconds later all at once; the output is the same text either way."""

    def __init__(self) -> None:
        self.printed = False

    def __call__(self, piece: TextPiece) -> None:
        click.echo(piece.text, nl=False)  # click flushes each write
        self.printed = True


@contextlib.contextmanager
def _errors_as_exit_codes(query: str | None = None, json_extra: dict[str, Any] | None = None) -> Iterator[None]:
    """Turn the library's typed errors into one line on stderr and the documented exit code; given
    JSON_EXTRA (--json), into the one JSON object on stdout instead: {"query", "error": {"type", "message"}}
    and what JSON_EXTRA holds (the weather part answered without the LLM, as `partial`)."""
    try:
        yield
    except (click.exceptions.Exit, click.ClickException, click.Abort, KeyboardInterrupt):
        raise
    except Exception as error:
        _report(error, query, json_extra)
        raise SystemExit(error.exit_code if isinstance(error, HybridWeatherError) else 1) from None


def _report(error: Exception, query: str | None, json_extra: dict[str, Any] | None) -> None:
    if not isinstance(error, HybridWeatherError) and click.get_current_context().meta.get("hybrid_weather.debug"):
        import traceback  # only here: the one-shot run does not pay for it

        traceback.print_exc()
    if json_extra is None and not click.get_current_context().params.get("as_json"):
        click.echo(f"Error: {_message(error)}", err=True)
        return
    if json_extra is None:  # a command's --json (savings, misses, status, …): one object, the error
        click.echo(
            json.dumps({"error": {"type": type(error).__name__, "message": _message(error)}}, ensure_ascii=False)
        )
        return
    payload = {"query": query, "error": {"type": type(error).__name__, "message": _message(error)}, **json_extra}
    click.echo(json.dumps(payload, ensure_ascii=False))


def _message(error: Exception) -> str:
    if isinstance(error, WeatherUnavailable):
        # Only a connection that could not be made suggests being offline; an HTTP error or a refusal does not.
        hint = " (offline? try --provider demo for demo data)" if isinstance(error, UpstreamConnectError) else ""
        return f"weather service unavailable: {error}{hint}"
    if isinstance(error, HybridWeatherError):
        return str(error)
    return f"internal error ({type(error).__name__}: {error}); please report it (HYBRID_WEATHER_DEBUG=1 shows where)"


_EXIT_WORDS = ("quit", "exit", "退出", "q")


@cli.command()
@_provider_option
@_today_option
@click.option("--json", "as_json", is_flag=True, help="One JSON object per turn, answer or error.")
@click.option("--no-emoji", is_flag=True, help="Plain text without weather emoji.")
@click.option("--explain", is_flag=True, help="Show each answer's decision and timings.")
def chat(provider: str | None, today: dt.date | None, as_json: bool, no_emoji: bool, explain: bool) -> None:
    """Talk it through: one conversation across rule and LLM answers.

    Follow-ups the rules can answer from context stay off the LLM: 那上海呢？ (same day and
    question, new place), 后天呢？ (same place), 这两个城市哪个更热？ (the last places).
    Type quit, exit or 退出 (or press Ctrl-D) to leave. Prompts go to stderr, answers to stdout.
    """
    import gc

    gc.enable()  # a conversation lives long enough to make garbage; the one-shot commands do not
    emoji = _emoji(no_emoji, as_json)
    session = Session()
    with _errors_as_exit_codes(), _open_router(provider=provider) as router:
        click.echo("hybrid-weather chat · 问天气，或输入 quit / 退出（Ctrl-D）离开", err=True)
        while True:
            # Not click.prompt: it turns Ctrl-D into the same Abort as Ctrl-C, and they end differently
            # (Ctrl-D: exit 0; Ctrl-C: KeyboardInterrupt, exit 130 by the group).
            click.echo("你> ", nl=False, err=True)
            try:
                line = check_utf8(read_stdin(sys.stdin.readline, "that line"), "that line")
            except click.UsageError as error:  # one turn's typing: said, and the conversation goes on
                click.echo(f"Error: {error.format_message()}", err=True)
                continue
            if not line:
                click.echo(err=True)  # the prompt's line ends before the shell's does
                break
            query = line.strip()
            if query.lower() in _EXIT_WORDS:
                break
            if not query:
                continue
            extra: dict[str, Any] | None = {} if as_json else None
            printer = None if as_json else _Printer()
            try:
                answer = _ask_or_degrade(
                    router, query, today=today, session=session, emoji=emoji, json_extra=extra, printer=printer
                )
            except HybridWeatherError as error:
                _report(error, query, extra)
                continue
            _print_answer(answer, query, as_json=as_json, explain=explain, printed=printer is not None)


@cli.command()
@click.option("--days", type=click.IntRange(1, 3650), default=30, show_default=True, help="How many days back to look.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as one JSON object.")
@click.option(
    "--by",
    type=click.Choice(["day", "route", "aspect", "model", "overlay"]),
    default="day",
    show_default=True,
    help="How to group the table and chart.",
)
@_include_demo_option
def savings(days: int, as_json: bool, by: str, include_demo: bool) -> None:
    """Show what the routing saved, from the request ledger.

    Spend is what the LLM calls cost (tokens × the price table); the baseline is what an all-LLM
    design would have spent on the same requests, and the report says how it was estimated.

    \b
        hybrid-weather savings --days 30
        hybrid-weather savings --json --by route
    """
    from .ledger import render_report, savings_report

    with _errors_as_exit_codes(), HybridRouter() as router:
        store = _ledger_of(router)
        report = store.report(lambda db: savings_report(db, days, by=by, include_demo=include_demo))
        if report["requests"] == 0 and not as_json:
            demo = report["demo_rows"]
            click.echo(
                f"No requests in the last {days} days in the ledger at {store.location}"
                + (
                    f" but {demo} answered from synthetic demo weather, left out: --include-demo counts them."
                    if demo
                    else '. Ask something first, e.g. hybrid-weather "上海今天天气".'
                )
            )
            return
        click.echo(json.dumps(report, ensure_ascii=False) if as_json else render_report(report))


@cli.command()
@click.option("--days", type=click.IntRange(1, 3650), default=30, show_default=True, help="How many days back to look.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as one JSON object.")
@_include_demo_option
def misses(days: int, as_json: bool, include_demo: bool) -> None:
    """Show what to teach the router next, from the request ledger.

    Lists the questions that went to the LLM but turned out to be plain lookups (the model only called
    the weather tools, about one place and one set of days, and answered), grouped by the words the
    router did not understand, with how many there were and what they cost; and the rule answers that
    shadow runs judged as disagreeing with the LLM.

    \b
        hybrid-weather misses --days 30
        hybrid-weather misses --json
    """
    from .ledger import misses_report, render_misses

    with _errors_as_exit_codes(), HybridRouter() as router:
        report = _ledger_of(router).report(lambda db: misses_report(db, days, include_demo=include_demo))
        click.echo(json.dumps(report, ensure_ascii=False) if as_json else render_misses(report))


@cli.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on (0.0.0.0: every one).")
@click.option("--port", default=8080, show_default=True, type=click.IntRange(0, 65535), help="Port to listen on.")
@click.option("--workers", default=1, show_default=True, type=click.IntRange(1, 64), help="Worker processes.")
@click.option(
    "--grace",
    default=10,
    show_default=True,
    type=click.IntRange(0, 600),
    help="Seconds in-flight requests get to finish at shutdown (SIGTERM, Ctrl-C).",
)
@click.option("--certfile", type=click.Path(dir_okay=False), help="Serve HTTPS: the certificate chain (PEM).")
@click.option("--keyfile", type=click.Path(dir_okay=False), help="Serve HTTPS: the certificate's private key (PEM).")
@click.option(
    "--canary",
    metavar="SHARE",
    help="Share of sessions for the newest overlay version: 0.1 or 10% (HYBRID_WEATHER_CANARY).",
)
def serve(
    host: str, port: int, workers: int, grace: int, certfile: str | None, keyfile: str | None, canary: str | None
) -> None:
    """Serve the router over HTTP, with an OpenAI-compatible endpoint (README: "Serving over HTTP").

    \b
        hybrid-weather serve --port 8080 --workers 2
        curl -s localhost:8080/v1/ask -d '{"query": "上海今天天气"}'
        hybrid-weather serve --host 0.0.0.0 --port 8443 --certfile cert.pem --keyfile key.pem

    Each worker process keeps one router. SIGTERM or Ctrl-C stops accepting, lets requests in flight
    finish (up to --grace seconds) and flushes the ledger.
    """
    from .serve.run import run

    with _errors_as_exit_codes():
        started = run(
            host,
            port,
            workers=workers,
            grace=grace,
            certfile=certfile,
            keyfile=keyfile,
            canary=canary,
            say=lambda line: click.echo(line, err=True),
        )
    if not started:  # the app could not start (uvicorn logged why)
        raise SystemExit(1)


@cli.group()
def ledger() -> None:
    """Look after the request ledger.

    \b
        hybrid-weather ledger status
        hybrid-weather ledger status --json
        hybrid-weather ledger migrate --to postgresql://user@host/db
    """


@ledger.command()
@click.option("--json", "as_json", is_flag=True, help="Print the status as one JSON object.")
def status(as_json: bool) -> None:
    """Where the ledger is, how many rows it holds, and how many wait in memory and in its spool file.

    Rows wait in the spool when the ledger could not take them (locked, unwritable, away); the next
    process that opens the ledger, or this one when the ledger answers again, writes them in, once each.
    """
    from .ledger.reports.status import ledger_status, render_status

    with _errors_as_exit_codes(), HybridRouter() as router:
        report = ledger_status(_ledger_of(router))
        click.echo(json.dumps(report, ensure_ascii=False) if as_json else render_status(report))


@ledger.command()
@click.option("--to", "target", required=True, metavar="URL", help="The PostgreSQL ledger: postgresql://…")
@click.option(
    "--from",
    "source",
    metavar="PATH",
    help="The SQLite ledger to copy (default: the one HYBRID_WEATHER_LEDGER or the home folder names).",
)
@click.option("--json", "as_json", is_flag=True, help="Print what was copied as one JSON object.")
def migrate(target: str, source: str | None, as_json: bool) -> None:
    """Copy a SQLite ledger into PostgreSQL, so a team that started on one machine keeps its history.

    Rows PostgreSQL already holds (same id) are skipped: running it again copies nothing twice. Then set
    HYBRID_WEATHER_LEDGER to the same URL.
    """
    from pathlib import Path

    from .ledger.store.transfer import copy_to_postgres
    from .settings import Settings, is_postgres

    with _errors_as_exit_codes():
        if not is_postgres(target):
            raise ConfigurationError(f"--to {target!r} is not a PostgreSQL URL; use postgresql://user@host:5432/db")
        if source is None:
            source = Settings.from_env().ledger_location()
            if source is None or is_postgres(source) or source == ":memory:":
                raise ConfigurationError("the configured ledger is not a SQLite file; give one with --from PATH")
        done = copy_to_postgres(Path(source), target)
        click.echo(json.dumps(done.to_json(), ensure_ascii=False) if as_json else done.summary())


def _ledger_of(router: HybridRouter) -> Ledger | SpoolLedger:
    """ROUTER's ledger, for a command that reads it; a clear error when it is off."""
    if router.ledger is None:
        raise ConfigurationError("the ledger is off (HYBRID_WEATHER_LEDGER=off), so nothing was recorded; unset it")
    return router.ledger


@cli.command()
@click.argument("log", type=click.File("rb"))
@click.option("--encoding", default="utf-8", show_default=True, help="The log's text encoding, e.g. gbk or gb18030.")
@click.option(
    "--model",
    default=None,
    help="Price the LLM calls as this model (default: $HYBRID_WEATHER_MODEL or the table's default).",
)
@click.option(
    "--per-day", type=click.IntRange(1), default=None, help="Queries per day to project for (default: the log's size)."
)
@click.option("--json", "as_json", is_flag=True, help="Print the projection as one JSON object.")
@_today_option
def simulate(
    log: BinaryIO, encoding: str, model: str | None, per_day: int | None, as_json: bool, today: dt.date | None
) -> None:
    """Project what routing would save on your own traffic, offline.

    Routes every line of LOG (one query per line, or JSON Lines with a "query" field; '-' for stdin; UTF-8
    unless --encoding says otherwise, and bytes that are not refused) without touching the network, then
    projects daily and monthly LLM spend for an all-LLM design and for hybrid-weather. An LLM answer is
    priced at the published estimate (~500 tokens for one place, +1,000 per extra place) on MODEL.

    \b
        hybrid-weather simulate queries.txt --per-day 100000
        hybrid-weather simulate queries.txt --model deepseek-v4-flash --json
    """
    from .ledger import default_baseline_cost, render_simulation, simulate_log

    with _errors_as_exit_codes(), HybridRouter(ledger="off") as router:
        chosen = model or router.parts.model
        if router.models.get(chosen) is None:
            raise click.BadParameter(
                f"no price for model {chosen!r}; add it to {router.settings.home_dir() / 'models.json'}",
                param_hint="--model",
            )
        name = "standard input" if log.name == "<stdin>" else str(log.name)
        result = simulate_log(
            decoded_lines(log, encoding, name),
            lambda query: router.route(query, today=today),
            name=name,
            per_day=per_day,
            model_cost=lambda n: default_baseline_cost(router.models, chosen, n) or 0.0,
        )
        result["model"] = chosen
        if as_json:
            click.echo(json.dumps(result, ensure_ascii=False))
            return
        click.echo(render_simulation(result))


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
    lines = queries if queries else stdin_lines()
    for query in lines:
        with _errors_as_exit_codes():  # an overlay that cannot be served is one line, as in `ask`
            decision = router.route(query, today=today)
        if as_json:
            click.echo(json.dumps(decision.to_json(query), ensure_ascii=False))
        else:
            days = ",".join(d.isoformat() for d in decision.dates) or "-"
            cities = ",".join(decision.cities) or "-"
            click.echo(f"{decision.route}\t{cities}\t{days}\t{decision.aspect or '-'}\t{query}\t# {decision.reason}")


@cli.group()
def teach() -> None:
    """Teach the router this installation's own words (in $HYBRID_WEATHER_HOME/overlay/, or the PostgreSQL ledger).

    \b
        hybrid-weather teach alias 鹅厂 深圳市南山区
        hybrid-weather teach inert 鲲鹏小助手
        hybrid-weather teach date 大后儿 大后天
        hybrid-weather teach llm 报价
        hybrid-weather teach list
        hybrid-weather teach remove 鹅厂
        hybrid-weather teach use 3

    Each change is checked, written as a new numbered version and says what it changes; `serve` reads it
    within a second (with a PostgreSQL ledger, every host of the fleet). `teach use N` goes back to any
    earlier version.
    """


def _teach_command(kind: str, with_target: bool, help_text: str) -> None:
    def command(word: str, target: str = "") -> None:
        from .learn import teach as teach_entry

        with _errors_as_exit_codes(), HybridRouter() as router:
            click.echo(teach_entry(router, kind, word, target).summary())

    params: list[click.Parameter] = [click.Argument(["word"])]
    if with_target:
        params.append(click.Argument(["target"]))
    teach.add_command(click.Command(kind, callback=command, params=params, help=help_text))


_teach_command("alias", True, "WORD is the place TARGET (one the rules read as a place): teach alias 鹅厂 深圳市南山区")
_teach_command("inert", False, "WORD says nothing about the weather (an assistant's name): teach inert 鲲鹏小助手")
_teach_command("date", True, "WORD is the date TARGET (one the rules read as a date): teach date 大后儿 大后天")
_teach_command("llm", False, "Questions holding WORD always go to the LLM: teach llm 报价")


@teach.command("list")
@click.option("--all", "every", is_flag=True, help="List every version kept, not only the active one.")
def teach_list(every: bool) -> None:
    """Show the overlay in use (and with --all, every version kept)."""
    from .learn.status import overlay_listing
    from .learn.teach import store_of

    with _errors_as_exit_codes(), HybridRouter() as router, contextlib.closing(store_of(router)) as store:
        click.echo(overlay_listing(store, every=every))


@teach.command("remove")
@click.argument("word")
def teach_remove(word: str) -> None:
    """Take WORD out of the overlay (a new version without it)."""
    from .learn import teach_remove as remove

    with _errors_as_exit_codes(), HybridRouter() as router:
        click.echo(remove(router, word).summary())


@teach.command("use")
@click.argument("version", type=click.IntRange(1))
def teach_use(version: int) -> None:
    """Make VERSION the overlay in use (a rollback, or forward again)."""
    from .learn import teach_use as use

    with _errors_as_exit_codes(), HybridRouter() as router:
        overlay = use(router, version)
        click.echo(f"overlay v{overlay.version} in use: {len(overlay.entries)} entries")


@cli.group()
def overlay() -> None:
    """The overlay's versions and, in a fleet, which hosts serve which.

    \b
        hybrid-weather overlay status
    """


@overlay.command("status")
@click.option("--json", "as_json", is_flag=True, help="Print the status as one JSON object.")
def overlay_status(as_json: bool) -> None:
    """Show each overlay version (* the active one) and, with a PostgreSQL ledger, the hosts that loaded it.

    A serving process reports the version it serves when it loads one, and every minute after; with a
    SQLite ledger the overlay is this host's files, and no other host reads them.
    """
    from .learn.status import overlay_status
    from .learn.teach import store_of

    with _errors_as_exit_codes(), HybridRouter() as router, contextlib.closing(store_of(router)) as store:
        status = overlay_status(store)
    click.echo(json.dumps(status.to_json(), ensure_ascii=False) if as_json else status.render())


@cli.command()
@click.option("--days", type=click.IntRange(1, 3650), default=30, show_default=True, help="How many days back to look.")
@click.option("--json", "as_json", is_flag=True, help="Print the proposals as one JSON object.")
@click.option("--apply", "apply_", is_flag=True, help="Write the accepted proposals as a new overlay version.")
@click.option("--undo", is_flag=True, help="Go back to the overlay version before the active one.")
def learn(days: int, as_json: bool, apply_: bool, undo: bool) -> None:
    """Propose overlay entries from the LLM's own answers to questions the rules missed.

    For each LLM question that was a plain lookup (weather tools only, one place, one date), learn tries
    reading the words that sent it to the LLM as nothing (inert) or as the place the model looked up
    (alias); a proposal is accepted only when at least two questions support it, none contradicts it, it
    turns no other LLM question into a rule answer and the word does not change what is asked.

    \b
        hybrid-weather learn --days 30
        hybrid-weather learn --apply
        hybrid-weather learn --undo
    """
    from .learn import Learned, apply_proposals, step_back
    from .learn import learn as propose

    with _errors_as_exit_codes(), HybridRouter() as router:
        if undo:
            left = step_back(router)
            click.echo(f"overlay v{left.parent} in use again (v{left.version} is kept: teach use {left.version})")
            return
        _ledger_of(router)  # learning reads it
        proposals = propose(router, days)
        done = Learned(days, proposals, apply_, apply_proposals(router, proposals) if apply_ else None)
        click.echo(json.dumps(done.to_json(), ensure_ascii=False) if as_json else done.render())


@cli.command()
@click.argument("request_id")
@click.argument("verdict", type=click.Choice(["wrong", "right"]))
@click.option("--comment", help="What was wrong (personal data is masked before it is kept).")
def feedback(request_id: str, verdict: str, comment: str | None) -> None:
    """Mark an answer wrong (or right) by the request id it carried (--json, --explain, x-request-id).

    \b
        hybrid-weather feedback 0193a1b2c3d4e5f6a7b8c9 wrong --comment "明天是晴天"

    `misses` and the dashboard list rule answers marked wrong first; `savings` gives their share.
    """
    with _errors_as_exit_codes(), HybridRouter() as router:
        if router.feedback(request_id, verdict, comment):
            click.echo(f"kept: {request_id} marked {verdict}")
        else:
            from .ledger.store.feedback import PENDING_FEEDBACK_S

            click.echo(
                f"kept: {request_id} marked {verdict} once its answer's row is stored (another process "
                f"holds it; given up after {PENDING_FEEDBACK_S / 60:g} minutes)"
            )
