"""Tell file times that a copy gave (a ``git clone``, a ``cp`` without ``-p``) from edits.

A note without an update date in its text is dated by its file's mtime. A folder just
cloned or copied gives every file the same few seconds as its mtime, and every note then
looks edited today: the fidelity tiers, which follow age, would hold every note at full.
When most of a folder's files share one short window of mtimes and the notes among them
that say when they were created were created well before it, that window says when the
files were copied, not when the notes changed: those notes take their creation date as
their update instead. A file edited after the copy has an mtime of its own and keeps it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from statistics import median_low
from typing import Protocol, TypeVar


class _Dated(Protocol):
    """A note record's dates (``ingest.NoteRecord``)."""

    @property
    def created_at(self) -> datetime | None: ...
    @property
    def updated_at(self) -> datetime | None: ...
    @property
    def modified_at(self) -> datetime | None: ...


_Note = TypeVar("_Note", bound=_Dated)

# A copy writes a folder's files within this long of each other (a clone of a large vault
# takes a minute or two).
COPY_WINDOW = timedelta(minutes=3)
# A window holds a copy when it holds this share of the folder's dated files, of at least
# MIN_FILES files (a few notes written in one sitting are not a copy).
COPY_SHARE = 0.9
MIN_FILES = 20
# ... and the notes in it that give their creation date were created this long before it
# (their median): notes written in the window itself are new, not copied.
CREATED_BEFORE = timedelta(days=30)


def copy_window(mtimes: Sequence[datetime]) -> tuple[datetime, datetime] | None:
    """The densest :data:`COPY_WINDOW` of ``mtimes`` as ``(first, last)`` when it holds
    :data:`COPY_SHARE` of them and at least :data:`MIN_FILES`; else None."""
    if len(mtimes) < MIN_FILES:
        return None
    ordered = sorted(mtimes)
    best = (0, 0)
    start = 0
    for end, stamp in enumerate(ordered):
        while stamp - ordered[start] > COPY_WINDOW:
            start += 1
        if end - start > best[1] - best[0]:
            best = (start, end)
    held = best[1] - best[0] + 1
    if held < MIN_FILES or held < COPY_SHARE * len(ordered):
        return None
    return ordered[best[0]], ordered[best[1]]


def dated_by_creation(notes: list[_Note]) -> list[_Note]:
    """``notes`` with the mtime a copy gave replaced by the note's creation date, for the
    notes that give one and no update date; the list as it is when the mtimes are not a
    copy's (see the module's docstring)."""
    window = copy_window([n.modified_at for n in notes if n.modified_at is not None])
    if window is None:
        return notes
    first, last = window

    def copied(note: _Note) -> bool:
        return note.modified_at is not None and first <= note.modified_at <= last

    created = [n.created_at for n in notes if copied(n) and n.created_at is not None]
    if not created or median_low(created) > first - CREATED_BEFORE:
        return notes
    return [
        replace(note, modified_at=note.created_at)  # type: ignore[type-var]
        if copied(note) and note.created_at is not None and note.updated_at is None
        else note
        for note in notes
    ]
