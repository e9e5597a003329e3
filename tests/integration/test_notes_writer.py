"""write_notes stages a note whose content hash is unchanged without its title and content:
what else the source carries still reaches the row, and the stored text stays whole. Real
files, a real migrated DuckDB store."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path

from selene_dag.notes.folders import ingest_scope
from selene_dag.notes.ingest import read_notes
from selene_dag.notes.writer import NotesWriteStats, write_notes
from selene_dag.store import open_store

NOW = datetime(2026, 7, 15, tzinfo=UTC)
BODY = "# Paella\nSoak the saffron in warm stock first.\n"


def _note(folder: Path, tags: str, title: str = "Paella", body: str = BODY) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    front = f"---\ntitle: {title}\ntags: [{tags}]\n---\n"
    (folder / "paella.md").write_text(front + body)


def _ingest(db: Path, folder: Path) -> tuple[NotesWriteStats, tuple]:
    with open_store(db) as conn:
        scope = ingest_scope(conn, folder)
        stats = write_notes(conn, read_notes(folder, scope), scope, NOW)
        rows = conn.execute(
            "SELECT title, content, tags, deleted_at IS NOT NULL FROM notes "
            "WHERE id LIKE '%paella.md'"
        ).fetchall()
    assert len(rows) == 1
    return stats, rows[0]


def test_unchanged_text_with_new_tags_keeps_the_text_and_takes_the_tags(tmp_path: Path) -> None:
    db, folder = tmp_path / "selene.duckdb", tmp_path / "recipes"
    _note(folder, "cooking")
    stats, row = _ingest(db, folder)
    assert stats.inserted == 1 and row == ("Paella", BODY, ["cooking"], False)

    _note(folder, "cooking, spain")
    stats, row = _ingest(db, folder)
    assert (stats.inserted, stats.changed, stats.unchanged) == (0, 1, 0)  # its thread moves
    assert row == ("Paella", BODY, ["cooking", "spain"], False)

    _note(folder, "cooking, spain", title="Paella valenciana")
    stats, row = _ingest(db, folder)
    assert stats.changed == 1 and row == ("Paella valenciana", BODY, ["cooking", "spain"], False)


def test_a_deleted_note_that_comes_back_unchanged_is_restored_whole(tmp_path: Path) -> None:
    db, folder = tmp_path / "selene.duckdb", tmp_path / "recipes"
    _note(folder, "cooking")
    _ingest(db, folder)
    (folder / "paella.md").unlink()
    (folder / "other.md").write_text("# Other\nkeeps the folder non-empty\n")
    with open_store(db) as conn:
        scope = ingest_scope(conn, folder)
        stats = write_notes(conn, read_notes(folder, scope), scope, NOW)
        gone = conn.execute(
            "SELECT deleted_at IS NOT NULL FROM notes WHERE id LIKE '%paella.md'"
        ).fetchone()
    assert stats.deleted == 1 and gone == (True,)

    (folder / "other.md").unlink()
    _note(folder, "cooking")
    stats, row = _ingest(db, folder)
    # It came back: restored, not counted as changed.
    assert (stats.changed, stats.restored) == (0, 1) and row == ("Paella", BODY, ["cooking"], False)


def test_only_notes_that_differ_are_staged_and_unseen_ones_are_marked_deleted(
    tmp_path: Path, monkeypatch
) -> None:
    # A note equal to its stored row in every field is not staged; the others are (new
    # text, a new date, a deleted note back), and a note no longer read is marked deleted
    # even though the notes left unstaged were not in the staged relation.
    from selene_dag.notes import writer

    db, folder = tmp_path / "selene.duckdb", tmp_path / "recipes"
    folder.mkdir()
    for k in range(6):
        (folder / f"r{k}.md").write_text(
            f"---\nupdated: 2026-0{k + 1}-02\n---\n# R{k}\nStep {k}.\n"
        )
    staged: list[int] = []
    frame = writer._incoming_frame
    monkeypatch.setattr(
        writer, "_incoming_frame", lambda n, s: staged.append(len(n)) or frame(n, s)
    )

    def ingest() -> NotesWriteStats:
        with open_store(db) as conn:
            scope = ingest_scope(conn, folder)
            return write_notes(conn, read_notes(folder, scope), scope, NOW)

    assert ingest().inserted == 6 and staged[-1] == 6
    assert (ingest().unchanged, staged[-1]) == (6, 0)
    (folder / "r1.md").write_text("# R1\nStep one, rewritten.\n")
    (folder / "r2.md").write_text("---\nupdated: 2026-09-09\n---\n# R2\nStep 2.\n")
    (folder / "r3.md").unlink()
    stats = ingest()
    assert (stats.changed, stats.unchanged, stats.deleted, staged[-1]) == (2, 3, 1, 2)
    with open_store(db) as conn:
        rows = dict(
            conn.execute(
                "SELECT split_part(id, '/', -1), (deleted_at IS NOT NULL, updated_at::DATE::VARCHAR) "
                "FROM notes"
            ).fetchall()
        )
    assert rows["r3.md"][0] and not any(v[0] for k, v in rows.items() if k != "r3.md")
    assert rows["r2.md"][1] == "2026-09-09"
    (folder / "r3.md").write_text("---\nupdated: 2026-03-02\n---\n# R3\nStep 3.\n")
    stats = ingest()
    assert (stats.changed, stats.restored, stats.unchanged, staged[-1]) == (0, 1, 5, 1)


def test_a_jsonl_note_without_dates_is_dated_when_first_seen(tmp_path: Path) -> None:
    # A line without created_at loses nothing: the note is created at the ingest that
    # first reads it, keeps that date while unchanged, and is updated at the ingest that
    # first reads its new content. Only the undated lines take the ingest's clock.
    db, folder = tmp_path / "selene.duckdb", tmp_path / "export"
    folder.mkdir()
    lines = {
        "plain": {"id": "plain", "content": "No dates at all."},
        "dated": {"id": "dated", "content": "Dated.", "created_at": "2024-05-01"},
        "updated": {"id": "updated", "content": "Only updated.", "updated_at": "2024-06-01"},
    }

    def ingest(now: datetime) -> tuple[NotesWriteStats, dict[str, tuple[str, str]]]:
        (folder / "notes.jsonl").write_text("\n".join(json.dumps(v) for v in lines.values()))
        with open_store(db) as conn:
            scope = ingest_scope(conn, folder)
            result = read_notes(folder, scope)
            assert result.errors == []
            stats = write_notes(conn, result, scope, now)
            rows = conn.execute(
                "SELECT split_part(id, '/', -1), created_at::DATE::VARCHAR, "
                "updated_at::DATE::VARCHAR FROM notes"
            ).fetchall()
        return stats, {r[0]: (r[1], r[2]) for r in rows}

    first = datetime(2026, 7, 1, tzinfo=UTC)
    stats, rows = ingest(first)
    assert stats.inserted == 3
    assert rows == {
        "plain": ("2026-07-01", "2026-07-01"),
        "dated": ("2024-05-01", "2024-05-01"),
        "updated": ("2024-06-01", "2024-06-01"),
    }

    stats, again = ingest(datetime(2026, 7, 2, tzinfo=UTC))
    assert (stats.unchanged, again) == (3, rows)

    lines["plain"]["content"] = "No dates at all, one more sentence."
    stats, edited = ingest(datetime(2026, 7, 3, tzinfo=UTC))
    assert stats.changed == 1
    assert edited == {**rows, "plain": ("2026-07-01", "2026-07-03")}


def test_a_markdown_note_without_dates_keeps_the_creation_date_it_was_first_stored_with(
    tmp_path: Path,
) -> None:
    # The file's mtime dates a note without front-matter dates when it is first stored;
    # an edit (a new mtime) moves its update date only, and an mtime moved without a
    # change in the text (a checkout, a sync) moves nothing. A front-matter date wins.
    db, folder = tmp_path / "selene.duckdb", tmp_path / "vault"
    folder.mkdir()
    plain, dated = folder / "plain.md", folder / "dated.md"

    def write(path: Path, text: str, day: int) -> None:
        path.write_text(text)
        moment = datetime(2025, 3, day, 12, tzinfo=UTC).timestamp()
        os.utime(path, (moment, moment))

    def ingest() -> dict[str, tuple[str, str]]:
        with open_store(db) as conn:
            scope = ingest_scope(conn, folder)
            write_notes(conn, read_notes(folder, scope), scope, NOW)
            rows = conn.execute(
                "SELECT split_part(id, '/', -1), created_at::DATE::VARCHAR, "
                "updated_at::DATE::VARCHAR FROM notes"
            ).fetchall()
        return {r[0]: (r[1], r[2]) for r in rows}

    write(plain, "# Plain\nFirst draft.\n", 1)
    write(dated, "---\ncreated: 2024-12-24\n---\n# Dated\nText.\n", 1)
    assert ingest() == {
        "plain.md": ("2025-03-01", "2025-03-01"),
        "dated.md": ("2024-12-24", "2025-03-01"),
    }
    write(plain, "# Plain\nSecond draft.\n", 9)
    write(dated, "---\ncreated: 2024-12-24\n---\n# Dated\nText.\n", 9)
    assert ingest() == {
        "plain.md": ("2025-03-01", "2025-03-09"),
        "dated.md": ("2024-12-24", "2025-03-01"),
    }
    write(dated, "---\ncreated: 2024-12-24\n---\n# Dated\nText, edited.\n", 20)
    assert ingest()["dated.md"] == ("2024-12-24", "2025-03-20")


def test_a_file_whose_problems_cost_no_note_still_tracks_deletions(tmp_path: Path) -> None:
    # A line kept without its unreadable date loses nothing, so a note removed from the
    # same file is marked deleted; a line that cannot be read at all still protects the
    # file's notes from deletion (one of them may be on that line).
    db, folder = tmp_path / "selene.duckdb", tmp_path / "export"
    folder.mkdir()
    odd = {"id": "odd", "content": "A date nobody reads.", "created_at": "someday"}
    gone = {"id": "gone", "content": "Removed next time.", "created_at": "2024-01-01"}

    def ingest(*lines: str) -> int:
        (folder / "notes.jsonl").write_text("\n".join(lines))
        with open_store(db) as conn:
            scope = ingest_scope(conn, folder)
            return write_notes(conn, read_notes(folder, scope), scope, NOW).deleted

    assert ingest(json.dumps(odd), json.dumps(gone)) == 0
    assert ingest(json.dumps(odd), "{broken") == 0
    assert ingest(json.dumps(odd)) == 1


def test_a_cloned_vault_dates_its_notes_by_creation_not_by_the_clone(tmp_path: Path) -> None:
    # A clone gives every file the same mtime: notes that say when they were created and
    # not when they were updated looked edited today (every tier full). The copy's window
    # is told from edits; a note edited after the clone keeps its own mtime.
    db, folder = tmp_path / "selene.duckdb", tmp_path / "vault"
    folder.mkdir()
    clone = datetime(2026, 7, 1, 9, tzinfo=UTC).timestamp()
    for i in range(24):
        path = folder / f"note-{i:02d}.md"
        path.write_text(f"---\ncreated: 2024-{i % 12 + 1:02d}-10\n---\n# Note {i}\nText {i}.\n")
        os.utime(path, (clone + i, clone + i))
    (folder / "undated.md").write_text("# Undated\nNo dates.\n")
    os.utime(folder / "undated.md", (clone, clone))
    (folder / "edited.md").write_text("---\ncreated: 2024-02-02\n---\n# Edited\nLater.\n")
    edited = datetime(2026, 7, 20, 9, tzinfo=UTC).timestamp()
    os.utime(folder / "edited.md", (edited, edited))

    def updated() -> dict[str, str]:
        with open_store(db) as conn:
            scope = ingest_scope(conn, folder)
            write_notes(conn, read_notes(folder, scope), scope, NOW)
            rows = conn.execute(
                "SELECT split_part(id, '/', -1), updated_at::DATE::VARCHAR FROM notes"
            ).fetchall()
        return dict(rows)

    rows = updated()
    assert rows["note-00.md"] == "2024-01-10"
    assert rows["note-13.md"] == "2024-02-10"
    assert rows["edited.md"] == "2026-07-20"  # an edit after the clone
    assert rows["undated.md"] == "2026-07-01"  # nothing better than the file's time

    # Edited, then copied again (every mtime moved at once): the edit is not dated back to
    # the note's creation (it went back to 2024-01-10), nor the others moved.
    note = folder / "note-00.md"
    note.write_text(note.read_text() + "An edit.\n")
    again = datetime(2026, 7, 25, 9, tzinfo=UTC).timestamp()
    for path in folder.iterdir():
        os.utime(path, (again, again))
    rows = updated()
    assert rows["note-00.md"] == NOW.date().isoformat()  # the ingest that read the edit
    assert rows["note-13.md"] == "2024-02-10"


def test_a_folder_that_cannot_be_listed_is_reported_and_its_notes_are_kept(
    tmp_path: Path,
) -> None:
    # A sub-folder this user may not enter (permissions changed, a mount that failed) was
    # passed over in silence, and its notes, not seen, were marked deleted.
    import shutil
    import tempfile

    # Somewhere another user may enter: the test reads as "nobody" when run as root.
    base = Path(tempfile.mkdtemp(dir="/tmp", prefix="selene-unlisted-"))
    try:
        base.chmod(0o755)
        folder = base / "vault"
        (folder / "locked").mkdir(parents=True)
        (folder / "open.md").write_text("# Open\nreadable\n")
        (folder / "locked" / "hidden.md").write_text("# Hidden\nbehind a lock\n")
        db = tmp_path / "selene.duckdb"
        with open_store(db) as conn:
            scope = ingest_scope(conn, folder)
            write_notes(conn, read_notes(folder, scope), scope, NOW)
            scope = ingest_scope(conn, folder)
        (folder / "locked").chmod(0)
        try:
            if os.geteuid() == 0:  # root enters any folder: read as another user
                os.seteuid(65534)
            result = read_notes(folder, scope)
        finally:
            if os.getuid() == 0:
                os.seteuid(0)
            (folder / "locked").chmod(0o755)
        problems = [(e.source, e.error) for e in result.errors]
        assert problems == [
            (
                str(folder / "locked"),
                "cannot list this folder (Permission denied): its notes are kept as they were",
            )
        ]
        with open_store(db) as conn:
            stats = write_notes(conn, result, scope, NOW)
            live = conn.execute(
                "SELECT split_part(id, '/', -1) FROM notes WHERE deleted_at IS NULL ORDER BY 1"
            ).fetchall()
        assert stats.deleted == 0
        assert live == [("hidden.md",), ("open.md",)]
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_a_page_emptied_leaves_ask_and_context(tmp_path: Path) -> None:
    # A page emptied (to take a secret out of it) counted as a file that failed to read:
    # its note was never marked deleted, and ask, context and show served the old text.
    db, folder = tmp_path / "selene.duckdb", tmp_path / "vault"
    folder.mkdir()
    (folder / "keep.md").write_text("# Keep\nStays.\n")
    page = folder / "codename.md"
    page.write_text("# Codename\nThe launch codename is OSPREY-ALPHA.\n")

    def ingest() -> tuple[int, list[str]]:
        with open_store(db) as conn:
            scope = ingest_scope(conn, folder)
            read = read_notes(folder, scope)
            deleted = write_notes(conn, read, scope, NOW).deleted
            live = conn.execute("SELECT id FROM notes WHERE deleted_at IS NULL ORDER BY id")
            return deleted, [row[0] for row in live.fetchall()]

    assert ingest()[0] == 0
    page.write_text("")
    deleted, live = ingest()
    assert deleted == 1 and live == ["vault/keep.md"]
    page.write_text("---\ntitle: only a header\n---\n")
    assert ingest() == (0, ["vault/keep.md"])
    # An entry of a JSONL file emptied: the same, and the file's other notes still track
    # their deletions (the empty entry counted as a line that failed to read).
    lines = folder / "more.jsonl"
    lines.write_text('{"id": "a", "content": "Alpha."}\n{"id": "b", "content": "Beta."}\n')
    assert ingest() == (0, ["vault/a", "vault/b", "vault/keep.md"])
    lines.write_text('{"id": "a", "content": ""}\n')
    assert ingest() == (2, ["vault/keep.md"])
