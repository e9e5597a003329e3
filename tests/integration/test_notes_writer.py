"""write_notes stages a note whose content hash is unchanged without its title and content:
what else the source carries still reaches the row, and the stored text stays whole. Real
files, a real migrated DuckDB store."""

from __future__ import annotations

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
    assert (stats.inserted, stats.changed, stats.unchanged) == (0, 0, 1)
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
    assert stats.changed == 1 and row == ("Paella", BODY, ["cooking"], False)
