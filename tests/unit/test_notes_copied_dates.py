"""The window of mtimes a copy gives a folder, told from a folder edited over time."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from selene_dag.notes.copied_dates import copy_window, dated_by_creation

CLONE = datetime(2026, 7, 1, 9, tzinfo=UTC)


@dataclass(frozen=True)
class Note:
    created_at: datetime | None
    updated_at: datetime | None
    modified_at: datetime | None


def test_a_copy_is_most_files_within_minutes() -> None:
    copied = [CLONE + timedelta(seconds=i) for i in range(30)]
    assert copy_window(copied) == (copied[0], copied[-1])
    # Fewer than 20 files, or files edited over weeks, are no copy.
    assert copy_window(copied[:19]) is None
    assert copy_window([CLONE + timedelta(days=i) for i in range(30)]) is None
    # Edits after the copy are left out of its window while the copy holds 90 %.
    edits = [CLONE + timedelta(days=3 + i) for i in range(3)]
    assert copy_window(copied + edits) == (copied[0], copied[-1])
    assert copy_window(copied + edits * 2) is None


def test_only_notes_created_well_before_the_copy_take_their_creation_date() -> None:
    old = datetime(2024, 5, 1, tzinfo=UTC)
    notes = [Note(old, None, CLONE + timedelta(seconds=i)) for i in range(25)]
    notes.append(Note(old, datetime(2025, 1, 1, tzinfo=UTC), CLONE))  # says its update
    notes.append(Note(None, None, CLONE))  # says nothing
    dated = dated_by_creation(notes)
    assert [n.modified_at for n in dated[:25]] == [old] * 25
    assert dated[25:] == notes[25:]
    # Notes written in one sitting (created in the window itself) are new, not copied.
    fresh = [Note(CLONE, None, CLONE + timedelta(seconds=i)) for i in range(25)]
    assert dated_by_creation(fresh) is fresh
