"""A note whose file is renamed or moved: its id is its path, so it comes back as a new
note and the old one is marked deleted. The new one keeps the analysis and last use
of the old one (a reorganized vault keeps its context), and ``show`` of the old citation
says where the text went."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from selene_dag import service
from selene_dag.cli import app
from selene_dag.errors import NotFoundError
from selene_dag.store import connect
from tests.support.ask import ingested_folder

TEMPLATE = "# Daily log\n\n## Standup notes\n\n- [ ] review the staging database tickets\n"
BODY = "The staging database listens on port 6543 behind the bastion host cobalt."


def _row(settings, note_id: str) -> tuple | None:
    conn = connect(settings.db_path)
    try:
        return conn.execute(
            "SELECT p.essence, p.essence_at, p.last_accessed_at, p.source_hash, n.content_hash "
            "FROM processed_notes p JOIN notes n ON n.id = p.note_id WHERE p.note_id = ?",
            [note_id],
        ).fetchone()
    finally:
        conn.close()


def test_a_moved_note_keeps_its_analysis_and_last_use(tmp_path: Path) -> None:
    settings = ingested_folder(
        tmp_path,
        {
            "staging.md": f"# Staging database\n\n{BODY}\n",
            "named by file.md": f"{BODY} Its replica is on port 6544.\n",
            "short.md": "Port 6543.\n",
            "other.md": "# Other\n\nNothing about databases here at all, only tomatoes.\n",
            "day one.md": f"---\ncreated: 2026-01-01\n---\n{TEMPLATE}",
        },
    )
    service.ask(settings, "staging database port bastion", 2000)
    service.ask(settings, "short port 6543", 2000)
    service.ask(settings, "daily standup tickets", 2000)
    before = _row(settings, "notes/staging.md")
    named = _row(settings, "notes/named by file.md")
    short = _row(settings, "notes/short.md")
    assert before[2] is not None and named[2] is not None and short[2] is not None
    assert _row(settings, "notes/day one.md")[2] is not None

    folder = tmp_path / "notes"
    (folder / "archive").mkdir()
    (folder / "staging.md").rename(folder / "archive" / "staging.md")
    (folder / "named by file.md").rename(folder / "renamed by file.md")
    (folder / "short.md").rename(folder / "tiny.md")
    # A new note of a template's text (title too), the old one deleted: another note.
    (folder / "day one.md").unlink()
    (folder / "day two.md").write_text(f"---\ncreated: 2099-01-02\n---\n{TEMPLATE}")
    outcome = CliRunner().invoke(
        app, ["ingest", str(folder)], env={"SELENE_HOME": str(settings.home)}
    )
    assert outcome.exit_code == 0, outcome.output
    assert "2 notes renamed or moved (the same text under a new path): each keeps" in (
        outcome.output
    )
    assert "(4 new, 0 changed" in outcome.output

    moved = _row(settings, "notes/archive/staging.md")
    # Same title and body: the analysis is the old one (not made again), and its last use.
    assert moved[:3] == before[:3] and moved[3] == moved[4]
    # The title came from the file's name: analysed again, its last use kept.
    renamed = _row(settings, "notes/renamed by file.md")
    assert renamed[2] == named[2] and renamed[3] == renamed[4] != named[3]
    # A body this short tells one note from another too seldom: nothing carried.
    assert _row(settings, "notes/tiny.md")[2] is None
    assert _row(settings, "notes/day two.md")[2] is None
    # The old citation shows the same lines of the note that holds its text now.
    shown = service.show(settings, "note notes/staging.md lines 3")
    assert shown.text == f"[note notes/archive/staging.md line 3] Staging database\n{BODY}"
    assert shown.note == (
        "note notes/staging.md is gone; note notes/archive/staging.md holds its text "
        "(renamed, moved or copied)"
    )
    with pytest.raises(NotFoundError, match=r"short\.md is gone: deleted, or renamed or moved"):
        service.show(settings, "note notes/short.md")


def test_an_undated_note_touched_then_renamed_keeps_its_dates_and_analysis(
    tmp_path: Path,
) -> None:
    # A note dated by its file's mtime came back new and fresh when the file was touched
    # (a sync, a copy) before its folder was renamed: its creation date no longer matched.
    import os

    old = 1_735_725_600  # 2025-01-01 10:00 UTC
    folder = tmp_path / "notes"
    (folder / "sub").mkdir(parents=True)
    for i in range(3):
        path = folder / "sub" / f"n{i}.md"
        path.write_text(
            f"# Note {i}\n\nUndated note {i} on the kestrel migration and its rollback.\n"
        )
        os.utime(path, (old, old))
    settings = ingested_folder(tmp_path, {}, exist_ok=True)
    service.ask(settings, "kestrel migration rollback", 2000)
    before = _row(settings, "notes/sub/n1.md")
    for path in (folder / "sub").iterdir():
        os.utime(path)  # now
    assert service.ingest(settings, folder).changed == 0
    (folder / "sub").rename(folder / "sub2")
    report = service.ingest(settings, folder)
    assert (report.inserted, report.deleted, report.moved_notes) == (3, 3, 3)
    assert _row(settings, "notes/sub2/n1.md")[:3] == before[:3]
    conn = connect(settings.db_path)
    try:
        dates = conn.execute(
            "SELECT DISTINCT epoch(created_at), epoch(updated_at) FROM notes "
            "WHERE deleted_at IS NULL"
        ).fetchall()
    finally:
        conn.close()
    assert dates == [(old, old)]


def test_an_undated_note_written_from_a_deleted_notes_text_is_new(tmp_path: Path) -> None:
    # A template's text written again today took the dates of a note deleted earlier.
    import os

    old = 1_735_725_600  # 2025-01-01 10:00 UTC
    body = "## Meeting notes\n\nAttendees:\n\nAgenda:\n\nAction items and owners for next week:\n"
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "day1.md").write_text(body)
    os.utime(folder / "day1.md", (old, old))
    settings = ingested_folder(tmp_path, {}, exist_ok=True)
    (folder / "day1.md").unlink()
    service.ingest(settings, folder)
    (folder / "day2.md").write_text(body)
    report = service.ingest(settings, folder)
    assert (report.inserted, report.moved_notes) == (1, 0)
    conn = connect(settings.db_path)
    try:
        created = conn.execute("SELECT epoch(created_at) FROM notes WHERE id = 'notes/day2.md'")
        assert created.fetchone()[0] > old
    finally:
        conn.close()
