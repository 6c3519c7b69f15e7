"""What the command line reads before a command runs: its words as one question or as a mistyped command,
and standard input, with bytes that are not UTF-8 text refused as a usage error (exit 2)."""

from __future__ import annotations

import codecs
import re
import sys
from collections.abc import Callable, Iterable, Iterator
from typing import IO

import click


def meant_command(group: click.Group, args: list[str]) -> str | None:
    """The command ARGS' first word is a near miss of (savigns, migrte, servee; status for `ledger status`), as
    its path under GROUP; None when the words are a question. Only a word of Latin letters can be a mistyped
    command, and only if the gazetteer does not know it as a place (beijing, shanghai, paris). Followed by
    nothing but options it is one; followed by words, only when it is near a command that has subcommands and
    the next word is one of them, or one letter off one (`teech list`, `ledgr status`): a question may start
    with a word close to a command's name (`what is the weather in beijing`: what is one letter from chat)."""
    word = args[0].lower()
    if not _COMMAND_WORD.fullmatch(word):
        return None
    paths: dict[str, tuple[str, click.Command | None]] = {"help": ("help", None), "version": ("version", None)}
    for name, command in group.commands.items():
        paths.setdefault(name, (name, command))
        for sub, subcommand in getattr(command, "commands", {}).items():
            paths.setdefault(sub, (f"{name} {sub}", subcommand))  # `status` is `ledger status`
    near = [
        (distance, path, command)
        for name, (path, command) in paths.items()
        if (distance := _edits(word, name)) is not None
    ]
    if len(args) > 1 and not args[1].startswith("-"):
        groups = [(distance, path, command) for distance, path, command in near if isinstance(command, click.Group)]
        near = [
            (distance, f"{path} {sub}", command)
            for distance, path, command in groups
            if (sub := _nearest(args[1].lower(), command.commands)) is not None
        ]
    if not near:
        return None
    from hybrid_weather.rules import Reader

    if Reader().resolve_place(word) is not None:
        return None
    return min(near, key=lambda found: found[:2])[1]


def _edits(word: str, name: str) -> int | None:
    """The edits from WORD to the command name NAME, when few enough to be a slip; else None. A short word is
    close to too much at two edits (ask: asks, ash; chat: cat): one for up to seven letters."""
    from rapidfuzz.distance import OSA  # a transposition (savigns) is one edit, as a person counts it

    distance = OSA.distance(word, name)
    return distance if distance <= (1 if len(name) <= 7 else 2) else None


def _nearest(word: str, names: Iterable[str]) -> str | None:
    """The name among NAMES that WORD is, or is one slip from; None for none."""
    found = sorted((distance, name) for name in names if (distance := _edits(word, name)) is not None)
    return found[0][1] if found else None


#: A word that could be a command's name: Latin letters and hyphens, as every command is named.
_COMMAND_WORD = re.compile(r"[a-z][a-z\-]{1,30}")


def stdin_question() -> str | None:
    """The question piped in on stdin, or None when stdin is a terminal or holds nothing."""
    if sys.stdin is None or sys.stdin.isatty():
        return None
    return check_utf8(read_stdin(sys.stdin.read), "standard input").strip() or None


def read_stdin(read: Callable[[], str], what: str = "standard input") -> str:
    """READ()'s text from stdin; bytes its encoding refuses are a usage error, not an internal one."""
    try:
        return read()
    except UnicodeDecodeError as error:
        bad = error.object[error.start : error.end]
        raise click.UsageError(_NOT_UTF8.format(what=what, bytes=bad)) from None


#: What a question that is not text gets: it is refused, never asked as what is left of it (an empty question).
_NOT_UTF8 = "{what} is not UTF-8 text (it holds the bytes {bytes!r}); give the question in UTF-8, e.g. 上海今天天气"


def check_utf8(text: str, what: str) -> str:
    """TEXT, if it is text: Python hands bytes that are not UTF-8 (in arguments, and on stdin with a C locale)
    over as lone surrogates (PEP 383), which no question holds; they are a usage error (exit 2)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        bad = bytes(ord(char) - 0xDC00 for char in text if "\udc80" <= char <= "\udcff")  # PEP 383's escapes
        raise click.UsageError(_NOT_UTF8.format(what=what, bytes=bad)) from None
    return text


def join_words(words: tuple[str, ...]) -> str:
    """Words given unquoted (上海 今天 天气) as one question: no space between Chinese words."""
    out = ""
    for word in words:
        if out and not (_is_han(out[-1]) and _is_han(word[:1])):
            out += " "
        out += word
    return out


def _is_han(char: str) -> bool:
    return bool(char) and "\u3400" <= char <= "\u9fff"


def stdin_lines() -> Iterator[str]:
    """The lines of stdin without their line ends, each checked to be text (a usage error names the line)."""
    number = 0
    while line := read_stdin(sys.stdin.readline):
        number += 1
        yield check_utf8(line.rstrip("\r\n"), f"line {number} of standard input")


def decoded_lines(raw: IO[bytes], encoding: str, what: str) -> Iterator[str]:
    """The lines of RAW decoded as ENCODING (any Python knows: utf-8, gbk, gb18030, utf-16 …), without their
    line ends; bytes it cannot decode are a usage error naming the line, never read as what is left of them
    (a GBK log read as UTF-8 with the bad bytes replaced was every question unknown: "saved 80 %")."""
    try:
        decoder = codecs.getincrementaldecoder(encoding)(errors="strict")
    except LookupError:
        raise click.BadParameter(
            f"{encoding!r} is not an encoding Python knows; e.g. utf-8, gbk, gb18030", param_hint="--encoding"
        ) from None
    number, pending = 0, ""
    try:
        for chunk in raw:  # split at b"\n": whole lines in ASCII-compatible encodings, pieces in utf-16
            pending += decoder.decode(chunk)
            *lines, pending = pending.split("\n")
            for line in lines:
                number += 1
                yield line.rstrip("\r")
        pending += decoder.decode(b"", final=True)
    except UnicodeDecodeError as error:
        bad = error.object[error.start : error.end]
        raise click.UsageError(
            f"line {number + pending.count(chr(10)) + 1} of {what} is not {encoding} text (it holds the bytes "
            f"{bad!r}); give the log's encoding, e.g. --encoding gbk"
        ) from None
    if pending:
        yield pending.rstrip("\r")
