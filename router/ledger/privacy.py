"""Personal data in questions: what is masked before a query is stored."""

from __future__ import annotations

import re

_PHONE = re.compile(r"(?<!\d)(?:\+?86[- ]?)?1[3-9]\d{9}(?!\d)")
_ID_NUMBER = re.compile(r"(?<![\dA-Za-z])\d{17}[\dXx](?![\dA-Za-z])")
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")


def mask_personal_data(text: str) -> str:
    """Replace phone numbers, Chinese ID numbers and e-mail addresses (kept out of logs and the ledger)."""
    return _PHONE.sub("[phone]", _ID_NUMBER.sub("[id]", _EMAIL.sub("[email]", text)))
