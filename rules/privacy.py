"""Personal data in questions: found and masked before a question is stored or leaves the machine.

Masked: mobile numbers (138-1234-5678, 138 1234 5678, +86 138…, full-width digits), Chinese ID numbers
(18 digits, or 18 with X; and the old 15-digit ones), bank card numbers (13-19 digits that pass the Luhn
check, spaced or not) and e-mail addresses, whole: every character RFC 5322 allows in the part before
the @ (o'brien, user!tag, first.last+tag), written in ASCII or full-width letters; a Chinese word glued
in front is not part of the address (邮箱foo@example.com keeps 邮箱). Digits that are none of these (dates,
temperatures, order numbers that fail Luhn) are left alone.
"""

from __future__ import annotations

import re

_SEP = r"[\s\-.]?"
# A mainland mobile number: 1[3-9] and nine more digits, optionally +86/0086 first and spaced 3-4-4.
_PHONE = re.compile(rf"(?<![\dA-Za-z])(?:(?:\+|00)?86{_SEP})?1[3-9]\d{_SEP}\d{{4}}{_SEP}\d{{4}}(?!\d)")
# The X checksum may stand apart: normalize() spaces a letter from the digits before it (the router's
# reasons quote the normalised text, where 11010119900307777X reads 11010119900307777 x).
_ID_18 = re.compile(r"(?<![\dA-Za-z])\d{17}(?:\d|[\s\-]?[Xx])(?![\dA-Za-z])")
_ID_15 = re.compile(r"(?<![\dA-Za-z])\d{15}(?![\dA-Za-z])")
# Card numbers: 13-19 digits, in groups of four or not; checked with Luhn before masking.
_CARD = re.compile(r"(?<![\dA-Za-z])\d(?:[ -]?\d){12,18}(?![\dA-Za-z])")
# The local part is RFC 5322's dot-atom: a pattern that took fewer characters (letters, digits, ._%+-)
# left o' of o'brien@example.com and user! of user!tag@example.com in the stored question.
EMAIL = re.compile(r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~.\-]+@[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)*\.[A-Za-z]{2,}")
# Only text with ten digits in a row (spaces and dashes allowed) or an @ can hold any of these: every
# other text, the common question among them, skips the patterns.
_MAYBE = re.compile(r"[0-9０-９](?:[\s\-.+]?[0-9０-９]){9}|[@＠]")
# Full-width digits, letters and the signs of numbers and addresses count as their ASCII twins (ｚｈａｎｇ＠
# ｑｑ．ｃｏｍ is an address); nothing else in the text is changed (its ，and ： stay Chinese punctuation).
_FULL_WIDTH = str.maketrans(
    {chr(0xFF10 + i): str(i) for i in range(10)}
    | {chr(0xFF21 + i): chr(0x41 + i) for i in range(26)}
    | {chr(0xFF41 + i): chr(0x61 + i) for i in range(26)}
    | {"＠": "@", "＋": "+", "－": "-", "．": ".", "＿": "_"}
)


def mask_personal_data(text: str) -> str:
    """TEXT with phone numbers, ID numbers, bank card numbers and e-mail addresses replaced by [phone],
    [id], [card] and [email]. Full-width forms count (１３８…, ＠)."""
    if not _MAYBE.search(text):
        return text
    ascii_twins = text.translate(_FULL_WIDTH)
    masked = EMAIL.sub("[email]", ascii_twins)
    masked = _ID_18.sub("[id]", masked)
    masked = _PHONE.sub("[phone]", masked)  # before cards: +86 138 1234 5678 would pass for one
    masked = _CARD.sub(_card, masked)
    masked = _ID_15.sub("[id]", masked)
    return text if masked == ascii_twins else masked  # nothing masked: the text as written


def contains_personal_data(text: str) -> bool:
    """Whether TEXT holds anything mask_personal_data() would mask (it must not be sent anywhere)."""
    return mask_personal_data(text) != text


def _card(match: re.Match[str]) -> str:
    digits = re.sub(r"\D", "", match.group(0))
    return "[card]" if len(digits) != 15 and _luhn(digits) else match.group(0)


def _luhn(digits: str) -> bool:
    total = 0
    for position, char in enumerate(reversed(digits)):
        value = int(char)
        if position % 2:
            value *= 2
            if value > 9:
                value -= 9
        total += value
    return total % 10 == 0
