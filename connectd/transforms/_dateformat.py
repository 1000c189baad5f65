"""``java.text.SimpleDateFormat`` patterns, formatting and parsing in UTC.

Kafka Connect's ``TimestampConverter`` (``format``) and ``TimestampRouter``
(``timestamp.format``) take SimpleDateFormat patterns such as
``yyyy-MM-dd'T'HH:mm:ss.SSSZ``, always in UTC. Python's ``strftime`` codes
differ (and ``%f`` is microseconds where ``S`` is milliseconds), so the
pattern is compiled here, letter by letter, into a formatter and a parser:

====== ============================== ======================================
letter meaning                        example (count → text)
====== ============================== ======================================
G      era                            AD
y      year                           yyyy → 2024, yy → 24
M, L   month                          M → 5, MM → 05, MMM → May, MMMM → May
d      day of month                   dd → 07
D      day of year                    DDD → 128
E      day name                       EEE → Tue, EEEE → Tuesday
u      day number (1 = Monday)        u → 2
F      day of week in month           F → 1
a      AM/PM marker                   PM
H, k   hour 0–23, 1–24                HH → 13
K, h   hour 0–11, 1–12                hh → 01
m, s   minute, second                 mm → 05
S      millisecond                    SSS → 042
z      time zone name                 UTC
Z      RFC 822 zone                   +0000
X      ISO 8601 zone                  Z
====== ============================== ======================================

Text between single quotes is literal (``''`` is a quote). Week-based
letters (``Y``, ``w``, ``W``) depend on a locale and are not supported.

Parsing follows SimpleDateFormat: numbers need not be zero-padded unless
the next field is also a number (``yyyyMMdd``), a two-digit ``yy`` year
lands within 80 years before and 20 after today, and text after the end of
the pattern is ignored. Unlike SimpleDateFormat's default lenient mode,
out-of-range values (``2024-02-30``) are rejected instead of rolling over.
"""

from __future__ import annotations

import datetime
import re
from dataclasses import dataclass

__all__ = ["JavaDateFormat"]

_UTC = datetime.timezone.utc
_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December"]
_DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
_NUMERIC = set("yMLdDuFHkKhmsS")
_SUPPORTED = _NUMERIC | set("GEazZX")
_UNSUPPORTED = set("YwW")
_ZONE = r"(Coordinated Universal Time|Z|[+-][0-9]{2}(?::?[0-9]{2})?|UTC|GMT(?:[+-][0-9]{1,2}(?::?[0-9]{2})?)?)"


@dataclass(frozen=True, slots=True)
class _Field:
    letter: str
    count: int


def _tokenize(pattern: str) -> list[_Field | str]:
    tokens: list[_Field | str] = []
    literal: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        char = pattern[i]
        if char == "'":
            if pattern.startswith("''", i):
                literal.append("'")
                i += 2
                continue
            j = i + 1
            while True:
                if j >= n:
                    raise ValueError(f"expected a SimpleDateFormat pattern, but the quote at position {i} is not closed")
                if pattern[j] == "'":
                    if not pattern.startswith("''", j):
                        break
                    literal.append("'")
                    j += 2
                    continue
                literal.append(pattern[j])
                j += 1
            i = j + 1
            continue
        if ("a" <= char <= "z") or ("A" <= char <= "Z"):
            if char in _UNSUPPORTED:
                raise ValueError(f"expected a SimpleDateFormat pattern without week-based letters, got {char!r}")
            if char not in _SUPPORTED:
                raise ValueError(f"expected a SimpleDateFormat pattern, but {char!r} is not a pattern letter (quote literal text with '...')")
            end = i
            while end < n and pattern[end] == char:
                end += 1
            if literal:
                tokens.append("".join(literal))
                literal = []
            count = end - i
            if char == "X" and count > 3:
                raise ValueError("expected X, XX or XXX for an ISO 8601 zone")
            tokens.append(_Field(char, count))
            i = end
            continue
        literal.append(char)
        i += 1
    if literal:
        tokens.append("".join(literal))
    return tokens


def _pad(number: int, count: int) -> str:
    return str(number).zfill(count)


def _format_field(field: _Field, moment: datetime.datetime) -> str:
    letter, count = field.letter, field.count
    if letter == "G":
        return "AD"
    if letter == "y":
        return _pad(moment.year % 100, 2) if count == 2 else _pad(moment.year, count)
    if letter in "ML":
        if count >= 4:
            return _MONTHS[moment.month - 1]
        if count == 3:
            return _MONTHS[moment.month - 1][:3]
        return _pad(moment.month, count)
    if letter == "d":
        return _pad(moment.day, count)
    if letter == "D":
        return _pad(moment.timetuple().tm_yday, count)
    if letter == "E":
        name = _DAYS[moment.weekday()]
        return name if count >= 4 else name[:3]
    if letter == "u":
        return _pad(moment.isoweekday(), count)
    if letter == "F":
        return _pad((moment.day - 1) // 7 + 1, count)
    if letter == "a":
        return "AM" if moment.hour < 12 else "PM"
    if letter == "H":
        return _pad(moment.hour, count)
    if letter == "k":
        return _pad(moment.hour or 24, count)
    if letter == "K":
        return _pad(moment.hour % 12, count)
    if letter == "h":
        return _pad(moment.hour % 12 or 12, count)
    if letter == "m":
        return _pad(moment.minute, count)
    if letter == "s":
        return _pad(moment.second, count)
    if letter == "S":
        return _pad(moment.microsecond // 1000, count)
    if letter == "z":
        return "Coordinated Universal Time" if count >= 4 else "UTC"
    if letter == "Z":
        return "+0000"
    return "Z"  # X: the zone is always UTC


def _field_regex(field: _Field, abutting: bool) -> str:
    letter = field.letter
    if letter in _NUMERIC and not (letter in "ML" and field.count >= 3):
        return f"([0-9]{{{field.count}}})" if abutting else "([0-9]+)"
    if letter in "ML":
        names = sorted([m for m in _MONTHS] + [m[:3] for m in _MONTHS], key=len, reverse=True)
        return "(" + "|".join(names) + ")"
    if letter == "E":
        names = sorted(_DAYS + [d[:3] for d in _DAYS], key=len, reverse=True)
        return "(" + "|".join(names) + ")"
    if letter == "G":
        return "(AD|BC)"
    if letter == "a":
        return "(AM|PM)"
    return _ZONE


def _zone_offset(text: str) -> datetime.timedelta:
    upper = text.upper()
    if upper in ("Z", "UTC", "GMT", "COORDINATED UNIVERSAL TIME"):
        return datetime.timedelta(0)
    if upper.startswith("GMT"):
        upper = upper[3:]
    sign = -1 if upper[0] == "-" else 1
    digits = upper[1:].replace(":", "")
    if len(digits) <= 2:
        hours, minutes = int(digits), 0
    else:
        hours, minutes = int(digits[:-2]), int(digits[-2:])
    return sign * datetime.timedelta(hours=hours, minutes=minutes)


class JavaDateFormat:
    """A compiled SimpleDateFormat pattern, working in UTC.

    :param pattern: e.g. ``yyyy-MM-dd HH:mm:ss.SSS``.
    :raises ValueError: ``expected …`` for a pattern SimpleDateFormat rejects (or week-based letters).
    """

    __slots__ = ("pattern", "_tokens", "_regex", "_fields")

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        self._tokens = _tokenize(pattern)
        parts: list[str] = []
        fields: list[_Field] = []
        for index, token in enumerate(self._tokens):
            if isinstance(token, str):
                parts.append(re.escape(token))
                continue
            following = self._tokens[index + 1] if index + 1 < len(self._tokens) else None
            abutting = (
                isinstance(following, _Field)
                and following.letter in _NUMERIC
                and not (following.letter in "ML" and following.count >= 3)
            )
            parts.append(_field_regex(token, abutting))
            fields.append(token)
        self._regex = re.compile("".join(parts), re.IGNORECASE)
        self._fields = tuple(fields)

    def format(self, moment: datetime.datetime | datetime.date) -> str:
        """*moment* as text; an aware datetime is first taken to UTC, a naive one is UTC already."""
        if not isinstance(moment, datetime.datetime):
            moment = datetime.datetime.combine(moment, datetime.time(0))
        elif moment.tzinfo is not None:
            moment = moment.astimezone(_UTC)
        return "".join(token if isinstance(token, str) else _format_field(token, moment) for token in self._tokens)

    def parse(self, text: str) -> datetime.datetime:
        """The UTC instant *text* stands for (fields it lacks are those of 1970-01-01T00:00:00.000).

        :raises ValueError: when *text* does not match the pattern.
        """
        match = self._regex.match(text)
        if match is None:
            raise ValueError(f"value ({text}) does not match pattern ({self.pattern})")
        year, month, day, day_of_year = 1970, 1, 1, None
        hour, minute, second, millis = 0, 0, 0, 0
        half: int | None = None
        offset = datetime.timedelta(0)
        for field, raw in zip(self._fields, match.groups()):
            letter = field.letter
            if letter == "y":
                year = int(raw)
                if field.count <= 2 and len(raw) == 2 and raw.isdigit():
                    year = _two_digit_year(year)
            elif letter in "ML":
                month = int(raw) if raw.isdigit() else _month_number(raw)
            elif letter == "d":
                day = int(raw)
            elif letter == "D":
                day_of_year = int(raw)
            elif letter in "Hk":
                hour = int(raw) % 24 if letter == "k" else int(raw)
            elif letter in "Kh":
                hour = int(raw) % 12
            elif letter == "a":
                half = 0 if raw.upper() == "AM" else 12
            elif letter == "m":
                minute = int(raw)
            elif letter == "s":
                second = int(raw)
            elif letter == "S":
                millis = int(raw)
            elif letter in "zZX":
                offset = _zone_offset(raw)
            # G, E, u and F are read but, as in SimpleDateFormat, decide nothing here.
        if half is not None and hour < 12:
            hour += half
        try:
            if day_of_year is not None and not any(f.letter in "MLd" for f in self._fields):
                base = datetime.datetime(year, 1, 1, tzinfo=_UTC) + datetime.timedelta(days=day_of_year - 1)
            else:
                base = datetime.datetime(year, month, day, tzinfo=_UTC)
            moment = base.replace(hour=hour, minute=minute, second=second)
        except (ValueError, OverflowError) as exc:
            raise ValueError(f"value ({text}) is not a valid date for pattern ({self.pattern}): {exc}") from None
        return moment + datetime.timedelta(milliseconds=millis) - offset

    def __repr__(self) -> str:
        return f"JavaDateFormat({self.pattern!r})"

    def __reduce__(self):
        return (JavaDateFormat, (self.pattern,))


def _month_number(name: str) -> int:
    lowered = name.lower()
    for index, month in enumerate(_MONTHS):
        if month.lower().startswith(lowered[:3]):
            return index + 1
    raise ValueError(f"unknown month {name!r}")


def _two_digit_year(two_digits: int) -> int:
    # SimpleDateFormat's default century: from 80 years ago to 20 years ahead.
    start = datetime.datetime.now(_UTC).year - 80
    year = start - start % 100 + two_digits
    return year if year >= start else year + 100
