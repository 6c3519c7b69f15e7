"""The operator's own words: an overlay of the built-in lexicon, kept in $HYBRID_WEATHER_HOME/overlay/.

Every deployment meets words the package cannot know (its assistant's name, its users' names for places).
`hybrid-weather teach` and `learn --apply` write them to a new numbered version of a small text file, one
entry a line, and the router reads each question through the active version before its rules:

    alias 鹅厂 深圳市南山区     the word is that place (the target must be one the rules read as a place)
    inert 鲲鹏小助手           the word says nothing about the weather: it is taken out of the question
    date 大后儿 大后天          the word is that date (the target must be one the rules read as a date)
    llm 报价                   a question holding the word always goes to the LLM

An overlay changes only questions that hold one of its words: it rewrites them (an alias or a date word
becomes its target, an inert word goes) and the rules read the result, so what they can read of places,
days and aspects is theirs, unchanged. Versions are never edited: each change is a new file, and going
back is choosing an older one (`teach use N`, `learn --undo`).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import logging
import math
import os
import re
import threading
import time
from collections.abc import Callable, Container, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from hybrid_weather.agent.errors import ConfigurationError, LedgerUnavailable

from .decision import Decision

if TYPE_CHECKING:
    from .overlay_postgres import PostgresOverlayStore

logger = logging.getLogger("hybrid_weather")
#: What an entry can say of its word, and whether it names a target.
KINDS = {"alias": True, "inert": False, "date": True, "llm": False}
#: How a version's file is named in the overlay folder: v0001.txt, v0002.txt, …
_VERSION_FILE = re.compile(r"v(\d{4,})\.txt")
#: The first line of a version: its number, the version it was made from, and what made it.
_HEADER = re.compile(r"# hybrid-weather overlay v(\d+)(?: from v(\d+))?(?:: (.*))?")
#: The file naming the version in use (absent: the newest).
ACTIVE_FILE = "active"
#: A word longer than this is no word but a sentence.
MAX_WORD_CHARS = 20
#: The file writers of the overlay folder lock (teach, learn --apply): one writer at a time.
LOCK_FILE = ".lock"
#: Digits enough for any version number: an `active` file holding more is no version.
_MAX_VERSION_DIGITS = 9
#: Seconds between a serving process's reports of the version it serves to a fleet's overlay (overlay status).
REPORT_EVERY = 60.0


@dataclass(frozen=True, slots=True)
class OverlayEntry:
    """One line of an overlay: KIND (alias, inert, date, llm), its WORD and, for alias and date, TARGET."""

    kind: str
    word: str
    target: str = ""

    def line(self) -> str:
        return f"{self.kind} {self.word} {self.target}".rstrip()

    def describe(self) -> str:
        return f"{self.kind} {self.word}" + (f" → {self.target}" if self.target else "")


@dataclass(frozen=True)
class Overlay:
    """One version of the overlay, ready to read questions through."""

    version: int
    entries: tuple[OverlayEntry, ...]
    parent: int | None = None  #: the version it was made from (the canary's other side)
    note: str = ""  #: what made it (the teach or learn command)
    source: str = field(default="", compare=False)  #: the file it was read from, named in its errors
    #: The line of the file each entry is on (parallel to entries; none for a version not read from a file).
    lines: tuple[int, ...] = field(default=(), repr=False, compare=False)
    _by_word: dict[str, OverlayEntry] = field(default_factory=dict, repr=False, compare=False)
    _pattern: re.Pattern[str] | None = field(default=None, repr=False, compare=False)

    @classmethod
    def of(
        cls,
        version: int,
        entries: Iterable[OverlayEntry],
        parent: int | None = None,
        note: str = "",
        source: str = "",
        lines: tuple[int, ...] = (),
    ) -> Overlay:
        kept = tuple(entries)
        by_word = {entry.word: entry for entry in kept}
        # Longest first: 鲲鹏小助手 before 小助手, so a word inside another is not cut out of it.
        words = sorted(by_word, key=len, reverse=True)
        pattern = re.compile("|".join(map(re.escape, words))) if words else None
        return cls(version, kept, parent, note, source, lines, by_word, pattern)

    def where(self, index: int) -> str:
        """Where the entry at INDEX is written, for an error: its file and line, or its version."""
        if self.source and index < len(self.lines):
            return f"{self.source} line {self.lines[index]}"
        return f"overlay v{self.version}"

    def read(self, text: str) -> tuple[str, tuple[OverlayEntry, ...]]:
        """TEXT as the rules should read it, and the entries that changed it (none: TEXT as it came). An llm
        entry found is returned alone, the text unchanged: the question goes to the LLM."""
        if self._pattern is None:
            return text, ()
        used: list[OverlayEntry] = []

        def replaced(match: re.Match[str]) -> str:
            entry = self._by_word[match.group(0)]
            used.append(entry)
            # An inert word becomes a space, not nothing: the words either side of it stay apart.
            return entry.target if entry.kind in ("alias", "date") else " "

        rewritten = self._pattern.sub(replaced, text)
        llm = next((entry for entry in used if entry.kind == "llm"), None)
        if llm is not None:
            return text, (llm,)
        return rewritten, tuple(dict.fromkeys(used))

    def text(self) -> str:
        """The version as its file holds it."""
        head = f"# hybrid-weather overlay v{self.version}" + (f" from v{self.parent}" if self.parent else "")
        lines = [head + (f": {self.note}" if self.note else "")]
        lines += [entry.line() for entry in self.entries]
        return "\n".join(lines) + "\n"


def entries_without(overlay: Overlay | None, words: Container[str]) -> list[OverlayEntry]:
    """OVERLAY's entries but those of WORDS: what a new version keeps of the one it is made from."""
    return [entry for entry in (overlay.entries if overlay else ()) if entry.word not in words]


def parse_overlay(text: str, source: str, version: int | None = None) -> Overlay:
    """The overlay in TEXT (a version's file, named SOURCE in errors; VERSION, its number, over the one its
    header says); ConfigurationError naming the line of the first thing wrong in it."""
    said, version, parent, note = version, 0, None, ""
    entries: list[OverlayEntry] = []
    numbers: list[int] = []
    seen: dict[str, int] = {}
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if number == 1 and (header := _HEADER.fullmatch(line)):
            version, parent, note = int(header[1]), int(header[2]) if header[2] else None, header[3] or ""
            continue
        if not line or line.startswith("#"):
            continue
        entry = _entry(line.split(), f"{source} line {number}")
        if entry.word in seen:
            raise ConfigurationError(
                f"{source} line {number}: {entry.word!r} is already given on line {seen[entry.word]}; "
                "keep one entry a word"
            )
        seen[entry.word] = number
        entries.append(entry)
        numbers.append(number)
    return Overlay.of(version if said is None else said, entries, parent, note, source, tuple(numbers))


def _entry(parts: list[str], where: str) -> OverlayEntry:
    kind = parts[0]
    if kind not in KINDS:
        raise ConfigurationError(f"{where}: {kind!r} is not a kind of entry; use one of {', '.join(KINDS)}")
    wanted = 3 if KINDS[kind] else 2
    if len(parts) != wanted:
        shape = f"{kind} WORD TARGET" if KINDS[kind] else f"{kind} WORD"
        raise ConfigurationError(f"{where}: write it as `{shape}` (words without spaces)")
    word = parts[1]
    if len(word) > MAX_WORD_CHARS:
        raise ConfigurationError(f"{where}: {word[:MAX_WORD_CHARS]}… is longer than {MAX_WORD_CHARS} characters")
    return OverlayEntry(kind, word, parts[2] if wanted == 3 else "")


class OverlayStore:
    """The overlay's versions in FOLDER: v0001.txt, v0002.txt, …, and `active`, the one in use. A fleet
    whose ledger is PostgreSQL keeps them there instead (overlay_postgres.PostgresOverlayStore, alike)."""

    #: Its versions are local files: a router looks at them from the question that comes a second after.
    remote = False

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.where = str(folder)

    def versions(self) -> list[int]:
        """Every version kept, oldest first."""
        try:
            names = os.listdir(self.folder)
        except OSError:
            return []
        return sorted(int(m[1]) for name in names if (m := _VERSION_FILE.fullmatch(name)))

    def active_version(self) -> int | None:
        """The version in use: the one `active` names, else the newest; None when there is none."""
        try:
            said = (self.folder / ACTIVE_FILE).read_text("utf-8").strip()
        except (FileNotFoundError, NotADirectoryError):  # no folder (or a home that is a file): none chosen
            versions = self.versions()
            return versions[-1] if versions else None
        except OSError as error:
            raise ConfigurationError(f"cannot read {self.folder / ACTIVE_FILE}: {error.strerror}") from None
        # ASCII digits, few of them: int() refuses 5,000 digits (and ² is a digit to isdigit()) with a ValueError.
        number = said.isascii() and said.isdigit() and len(said) <= _MAX_VERSION_DIGITS
        if not number or int(said) not in self.versions():
            raise ConfigurationError(
                f"{self.folder / ACTIVE_FILE} names version {said[:20]!r}, which is not kept there; "
                "choose one with `hybrid-weather teach use N` (`teach list --all` shows them)"
            )
        return int(said)

    def load(self, version: int) -> Overlay:
        path = self._path(version)
        try:
            text = path.read_text("utf-8")
        except OSError as error:
            raise ConfigurationError(f"cannot read the overlay {path}: {error.strerror}") from None
        except UnicodeDecodeError:
            raise ConfigurationError(f"{path} is not UTF-8 text") from None
        return parse_overlay(text, str(path), version)

    def active(self) -> Overlay | None:
        version = self.active_version()
        return None if version is None else self.load(version)

    @contextlib.contextmanager
    def writing(self) -> Iterator[None]:
        """Hold the folder's lock while reading the active version and writing the next: two writers at once
        (two `teach`, a `learn --apply`) would both make the same next version from the same parent, and one's
        entry would be lost. An advisory lock (flock), released by the system when a writer dies."""
        self.folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.folder / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing releases the lock

    def write(self, entries: Iterable[OverlayEntry], note: str) -> Overlay:
        """ENTRIES as a new version made from the active one, and made active (under writing())."""
        parent = self.active_version()
        versions = self.versions()
        overlay = Overlay.of((versions[-1] if versions else 0) + 1, entries, parent, note)
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self._path(overlay.version)
        with open(path, "x", encoding="utf-8") as file:  # a version is never written over
            file.write(overlay.text())
        self.use(overlay.version)
        return overlay

    def use(self, version: int) -> None:
        """Make VERSION the one in use; a running `serve` reads it at its next question."""
        if version not in self.versions():
            raise ConfigurationError(f"there is no overlay version {version} in {self.folder}")
        temporary = self.folder / f".{ACTIVE_FILE}.{os.getpid()}"
        temporary.write_text(f"{version}\n", "utf-8")
        os.replace(temporary, self.folder / ACTIVE_FILE)  # whole or not at all, for a reader at any moment

    def stamp(self) -> tuple[str | None, tuple[int, ...]]:
        """What changes when a version is written or chosen: what `active` says and the versions kept (a
        version is never written over). Serve reads the overlay again when it changes. Not the files' times:
        two changes within one tick of the file system's clock would leave the second unseen."""
        try:
            said: str | None = (self.folder / ACTIVE_FILE).read_text("utf-8")
        except (OSError, UnicodeDecodeError):
            said = None
        return said, tuple(self.versions())

    def report(self, version: int | None, canary: float | None) -> None:
        """Nothing: the files are one host's, which has no fleet to tell what it serves."""

    def close(self) -> None:
        """Nothing to close: each read opens and closes its file."""

    def _path(self, version: int) -> Path:
        return self.folder / f"v{version:04d}.txt"


class Overlays:
    """The overlay a router reads each question through: the active version, or with a CANARY share (0 to
    1) the active version for that share of sessions and the version it was made from for the rest, each
    session always on the same side (a hash of its id, or of the question when it has none: the same on
    every host). A version written or chosen while the router runs is read at the first question CHECK_EVERY
    seconds after; from a fleet's store (remote), by a thread of its own every CHECK_EVERY seconds, so no
    question waits on the database, and the version it read last serves on while the database is away.

    Each version read is held to CHECK (the checks `teach` makes of an entry: overlay_check.py), as a file
    written by hand is: one that fails is never served. At the first read that is a ConfigurationError naming
    the line; later, the version in use keeps serving and `problem` (logged once) says why the new one is not."""

    def __init__(
        self,
        store: OverlayStore | PostgresOverlayStore,
        canary: float | None = None,
        check_every: float = 1.0,
        check: Callable[[Overlay], str | None] | None = None,
    ) -> None:
        self.store, self.canary, self.check_every, self.check = store, canary, check_every, check
        #: Why the overlay on disk is not the one served (None: it is).
        self.problem: str | None = None
        self._checked_at = -math.inf
        self._reported_at = -math.inf
        self._stamp: object = None
        self._away = False  #: the fleet's store did not answer the last poll (said once, in a warning)
        self._active: Overlay | None = None
        self._parent: Overlay | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._refresh(first=True)
        if store.remote:
            threading.Thread(target=self._poll, name="hybrid-weather-overlay", daemon=True).start()

    def choose(self, key: str) -> Overlay | None:
        """The overlay for the session or question KEY; None when this installation has none."""
        if not self.store.remote and time.monotonic() - self._checked_at >= self.check_every:
            self._refresh()
        active = self._active
        if active is None or self.canary is None or self._parent is None:
            return active
        return active if _share(key) < self.canary else self._parent

    def close(self) -> None:
        """Stop polling a fleet's store, and close its connection."""
        self._stop.set()
        self.store.close()

    def _poll(self) -> None:
        while not self._stop.wait(self.check_every):
            try:
                self._refresh()
            except Exception:  # a poll that fails in a way nobody foresaw must not end the polling
                logger.exception("overlay: the poll of %s failed", self.store.where)

    def _refresh(self, *, first: bool = False) -> None:
        with self._lock:
            self._checked_at = time.monotonic()
            try:
                self._read(first)
            except LedgerUnavailable as error:
                # Never an error for a question: the version read last serves on, and the store is polled on.
                if not self._away:
                    logger.warning("overlay not reloaded: %s; v%s serves still", error, self._version())
                self._away = True

    def _read(self, first: bool) -> None:
        stamp = self.store.stamp()
        if self._away:
            logger.warning("overlay: %s answers again", self.store.where)
            self._away = False
        if stamp == self._stamp:
            if self.store.remote and time.monotonic() - self._reported_at >= REPORT_EVERY:
                self._report()
            return
        try:
            active = self.store.active()
            parent = None
            if active is not None and active.parent is not None and self.canary is not None:
                parent = self.store.load(active.parent)
            for overlay in (active, parent):
                if overlay is not None and self.check is not None and (problem := self.check(overlay)):
                    raise ConfigurationError(f"overlay v{overlay.version} not used: {problem}")
        except ConfigurationError as error:
            if first:
                raise
            # A running service keeps answering with the overlay it has: a bad edit is logged, not served.
            self._stamp, self.problem = stamp, f"{error}; v{self._version()} serves still"
            logger.warning("overlay not reloaded: %s", self.problem)
            return
        self._active, self._parent, self._stamp, self.problem = active, parent, stamp, None
        if self.store.remote and not first:  # the poller reports a serving process; a one-shot `ask` never
            self._report()

    def _report(self) -> None:
        self._reported_at = time.monotonic()
        self.store.report(self._active.version if self._active else None, self.canary)

    def _version(self) -> str:
        return str(self._active.version) if self._active is not None else "none (the built-in rules alone)"


def _share(key: str) -> float:
    """Where KEY falls in [0, 1): the same for the same key in every process (not Python's salted hash)."""
    digest = hashlib.blake2b(key.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64


def llm_decision(reason: str, words: tuple[str, ...]) -> Decision:
    """A question the overlay sends to the LLM (an llm entry's word is in it), with REASON saying so."""
    return Decision("llm", [], [], None, reason, [], unknown_words=words, reason_code="overlay")


def read_through(overlay: Overlay | None, text: str, parse: Callable[[str], Decision]) -> Decision:
    """The Decision PARSE makes of TEXT read through OVERLAY: rewritten where one of its words is in it
    (the reason then says which entries changed it), sent to the LLM for an llm entry's word."""
    if overlay is None:
        return parse(text)
    rewritten, used = overlay.read(text)
    if not used:
        return parse(text)
    said = f"overlay v{overlay.version}: {', '.join(entry.describe() for entry in used)}"
    if used[0].kind == "llm":
        return llm_decision(said, (used[0].word,))
    decision = parse(rewritten)
    return decision.with_reason(f"{decision.reason}; {said}")
