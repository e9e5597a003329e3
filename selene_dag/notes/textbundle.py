"""TextBundles (textbundle.org): a note as a folder, ``Trip.textbundle/``, holding its text
(``text.md``, ``text.markdown`` or ``text.txt``), an ``info.json`` and its ``assets/``.

Bear exports notes so, and its backups (``.bear2bk``, Bear 1's ``.bearbk``) are zip archives
of them; Bear writes its own fields in ``info.json`` under ``net.shinyfrog.bear``:
``creationDate`` and ``modificationDate`` (``2021-01-13T22:22:59+0100``), ``trashed`` and
``archived`` (0 or 1). Bear's tags are written in the text: ``#tag``, ``#parent/child``,
``#two words#`` (:func:`bear_tags`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import PurePosixPath
from typing import Any

import orjson

from selene_dag.config import parse_datetime

BUNDLE_SUFFIX = ".textbundle"
_TEXT_NAMES = {"text.md", "text.markdown", "text.txt"}
_BEAR = "net.shinyfrog.bear"


@dataclass(frozen=True)
class BundleInfo:
    """What a bundle's ``info.json`` says of its note."""

    trashed: bool = False
    created_at: datetime | None = None
    updated_at: datetime | None = None
    bear: bool = False  # Bear's note: its tags are in its text


def bundle_of(rel: str) -> str | None:
    """The bundle folder (its path, as ``rel`` gives it) whose text ``rel`` is; None for any
    other file."""
    path = PurePosixPath(rel)
    if path.name.lower() in _TEXT_NAMES and path.parent.suffix.lower() == BUNDLE_SUFFIX:
        return path.parent.as_posix()
    return None


def _date(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return parse_datetime(value)
    except ValueError:
        return None


def bundle_info(raw: bytes | None) -> BundleInfo:
    """The fields of a bundle's ``info.json`` bytes (None: no such file); a file that
    cannot be read, or holds no Bear fields, says nothing."""
    if raw is None:
        return BundleInfo()
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return BundleInfo()
    bear = data.get(_BEAR) if isinstance(data, dict) else None
    if not isinstance(bear, dict):
        return BundleInfo()
    return BundleInfo(
        trashed=bool(bear.get("trashed")),
        created_at=_date(bear.get("creationDate")),
        updated_at=_date(bear.get("modificationDate")),
        bear=True,
    )


_CODE = re.compile(r"```.*?(?:```|\Z)|~~~.*?(?:~~~|\Z)|`[^`\n]*`", re.DOTALL)
# After a space or a line's start (not "C#", not a link's "#part"), not a heading's "# ":
# "#two words#" (closed by a "#" right after a letter), else "#tag" to the next space.
# A tag starts with a letter or a digit and holds no bracket (a "(#anchor)" link, a
# "[#tag](url)", a "#[[wiki]]"); one that is a number or a date ("#5.00", "#2023-10-01") is
# none.
_BEAR_TAG = re.compile(
    r"(?<!\S)#(?:([^\W_][^#\n\[\]()]{0,60}?[^\s#\\\[\]()])#(?![^\s.,;:!?)\]])"
    r"|([^\W_][^\s#\[\]()]*))"
)
_NUMBER = re.compile(r"^\d[\d.,:/-]*$")


def bear_tags(text: str) -> tuple[str, ...]:
    """The tags a Bear note writes in its text, in order, each once: ``#tag``,
    ``#parent/child``, ``#two words#``; none inside code, none that is a number or a date
    (``#1``, ``#5.00``), none inside a link."""
    found: dict[str, None] = {}
    for match in _BEAR_TAG.finditer(_CODE.sub(" ", text)):
        tag = (match.group(1) or match.group(2)).rstrip(".,;:!?)]/")
        if tag and not _NUMBER.match(tag):
            found[tag] = None
    return tuple(found)
