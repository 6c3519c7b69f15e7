"""What a key may see in a service many keys share: its own conversations, verdicts and reports; an admin key
(HYBRID_WEATHER_ADMIN_KEYS) sees every key's. Without keys there is one tenant, as there always was.

A conversation is stored under its key and its id, so a key that sends another's session id begins a new
conversation and writes into none of the other's. An id is the client's secret among the clients of one
key: the service makes one (SESSION_ID_BYTES of randomness) when a request names none, and refuses one too
short to be hard to guess, so two honest clients of one key do not share a conversation by chance.
"""

from __future__ import annotations

import re
import secrets
from typing import Any

from hybrid_weather.agent.errors import ConfigurationError

from .access import caller_of
from .errors import invalid

#: Characters of a session id: at least MIN_SESSION_CHARS, so an id is not `1` that every client sends.
MIN_SESSION_CHARS = 16
MAX_SESSION_CHARS = 128
_SESSION_ID = re.compile(rf"[A-Za-z0-9._:-]{{{MIN_SESSION_CHARS},{MAX_SESSION_CHARS}}}")
#: Random bytes of a session id the service makes: 22 characters of base64url.
SESSION_ID_BYTES = 16
#: The owner of every conversation when the service takes no keys.
OPEN = "-"


def admins(setting: str | None, keys: frozenset[str]) -> frozenset[str]:
    """The callers (access.caller_of) of the keys SETTING names (HYBRID_WEATHER_ADMIN_KEYS: SHA-256 hex
    digests, comma-separated), each one of KEYS (the accepted ones); ConfigurationError for one that is not."""
    found = set()
    for given in (setting or "").split(","):
        digest = given.strip().lower()
        if not digest:
            continue
        if digest not in keys:
            shown = digest[:12] + "…" if len(digest) > 12 else digest
            raise ConfigurationError(
                f"HYBRID_WEATHER_ADMIN_KEYS names {shown!r}, which is not the SHA-256 of an accepted key; give "
                "the digest of a key of HYBRID_WEATHER_API_KEYS or _FILE: printf %s KEY | sha256sum"
            )
        found.add(caller_of(digest))
    return frozenset(found)


def owner(caller: str | None) -> str | None:
    """The key of CALLER (app._caller: a key's caller_of, or the address without keys), kept on its ledger
    row; None without keys."""
    return caller if caller is not None and caller.startswith("key:") else None


def scope(caller: str | None, admin_callers: frozenset[str]) -> str | None:
    """Whose rows CALLER may see and mark: its key's, or None (every row) for an admin key or without keys."""
    mine = owner(caller)
    return None if mine is None or mine in admin_callers else mine


def session_id(given: Any) -> str:
    """The session id GIVEN, or a new one when it is None; 400 for one that is not text of the form."""
    if given is None:
        return secrets.token_urlsafe(SESSION_ID_BYTES)
    if not isinstance(given, str) or not _SESSION_ID.fullmatch(given):
        raise invalid(
            f"'session_id' must be {MIN_SESSION_CHARS} to {MAX_SESSION_CHARS} letters, digits or . _ : - (a short "
            "id is shared by chance); send none and use the session_id the answer returns",
            "invalid_session_id",
            status=400,
        )
    return given
