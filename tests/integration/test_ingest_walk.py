"""One ingest lists its notes folder once: the folder's version (has anything changed?),
the notes the run reads and the report all rest on one walk of it. Counted with Python's
audit event for ``os.scandir`` on the folder itself."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from selene_dag import service
from selene_dag.config import load_settings
from selene_dag.store import connect

_WATCHED: set[str] = set()
_LISTED: list[str] = []


def _count_listings(event: str, args: tuple) -> None:
    if event == "os.scandir" and args and isinstance(args[0], str) and args[0] in _WATCHED:
        _LISTED.append(args[0])


sys.addaudithook(_count_listings)


def _listings_of(folder: Path, settings, path: Path) -> tuple[int, service.IngestReport]:
    _WATCHED.clear()
    _WATCHED.add(str(folder))
    _LISTED.clear()
    try:
        report = service.ingest(settings, path)
    finally:
        _WATCHED.clear()
    return len(_LISTED), report


def test_an_ingest_of_an_edit_lists_the_folder_once(tmp_path: Path) -> None:
    folder = (tmp_path / "notes").resolve()
    (folder / "topic").mkdir(parents=True)
    (folder / "alpha.md").write_text("# Alpha\n\nAlpha body.\n", encoding="utf-8")
    (folder / "topic" / "beta.md").write_text("# Beta\n\nBeta body.\n", encoding="utf-8")
    (folder / "paper.pdf").write_bytes(b"%PDF-1.4")
    settings = load_settings(home=tmp_path / "home", now_override="2026-07-15")
    service.ingest(settings, folder)
    os.utime(folder / "alpha.md", (1, 1))  # older than the racy window of the file cache
    (folder / "alpha.md").write_text("# Alpha\n\nAlpha, edited.\n", encoding="utf-8")
    (folder / "gamma.md").write_text("# Gamma\n\nNew.\n", encoding="utf-8")

    listed, report = _listings_of(folder, settings, folder)

    assert "raw_notes" in report.ran and report.inserted == 1 and report.changed == 1
    assert report.documents_left_out == {".pdf": 1}
    assert listed == 1
    conn = connect(settings.db_path)
    try:
        rows = conn.execute("SELECT id, content FROM notes WHERE deleted_at IS NULL").fetchall()
    finally:
        conn.close()
    stored = {note_id.split("/", 1)[1]: content for note_id, content in rows}
    assert sorted(stored) == ["alpha.md", "gamma.md", "topic/beta.md"]
    assert "Alpha, edited." in stored["alpha.md"]


def test_an_unchanged_ingest_lists_the_folder_once(tmp_path: Path) -> None:
    folder = (tmp_path / "notes").resolve()
    folder.mkdir()
    (folder / "alpha.md").write_text("# Alpha\n\nAlpha body.\n", encoding="utf-8")
    settings = load_settings(home=tmp_path / "home", now_override="2026-07-15")
    service.ingest(settings, folder)
    service.ingest(settings, folder)  # Dagster finds nothing to run: its verdict is kept

    listed, report = _listings_of(folder, settings, folder)

    assert report.ran == () and report.notes == 1
    assert listed == 1
