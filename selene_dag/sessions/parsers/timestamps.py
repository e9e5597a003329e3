"""Timestamps of session records, normalized to ISO-8601 UTC (``2025-10-31T17:00:00.000Z``).

Agents write times in several shapes: ISO-8601 with or without an offset, slash-dated
(``2025/10/31 17:00:00``), epoch seconds or milliseconds (numbers or digit strings). A value
that is none of these, or lies outside 1990–2200, gives None: the caller falls back to the
file's modification time instead of letting junk sort after real dates.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

_SLASH_DATE = re.compile(
    r"^(\d{4})/(\d{1,2})/(\d{1,2})(?:[ T](\d{1,2}):(\d{2})(?::(\d{2})(\.\d+)?)?)?$"
)
_EPOCH = re.compile(r"^\d{9,13}(?:\.\d+)?$")
_LOW = datetime(1990, 1, 1, tzinfo=UTC)
_HIGH = datetime(2200, 1, 1, tzinfo=UTC)


def format_utc(moment: datetime) -> str:
    """``moment`` as ``YYYY-MM-DDTHH:MM:SS.mmmZ`` in UTC (naive datetimes are taken as UTC)."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def _from_epoch(value: float) -> datetime | None:
    seconds = value / 1000 if value > 1e11 else value  # milliseconds from 1973 on
    try:
        return datetime.fromtimestamp(seconds, tz=UTC)
    except (OverflowError, OSError, ValueError):
        return None


def _parse(value: object) -> datetime | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return _from_epoch(float(value))
    if not isinstance(value, str):
        return None
    text = value.strip()
    if not text:
        return None
    if _EPOCH.match(text):
        return _from_epoch(float(text))
    if found := _SLASH_DATE.match(text):
        y, mo, d, h, mi, s, frac = found.groups()
        try:
            return datetime(
                int(y),
                int(mo),
                int(d),
                int(h or 0),
                int(mi or 0),
                int(s or 0),
                int(float(frac) * 1_000_000) if frac else 0,
                tzinfo=UTC,
            )
        except ValueError:
            return None
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        return None


def normalize_timestamp(value: object) -> str | None:
    """ISO-8601 UTC text of a record's time, or None when ``value`` is not a plausible time.

    Accepts ISO-8601 strings (any offset, ``Z``, naive = UTC), slash-dated strings and epoch
    seconds or milliseconds (numbers or digit strings).
    """
    moment = _parse(value)
    if moment is None:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    if not _LOW <= moment < _HIGH:
        return None
    return format_utc(moment)
