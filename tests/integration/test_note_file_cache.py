"""The note file cache: a file whose stat is unchanged is not read again, any write makes it
read again, and a broken cache costs nothing but speed.

Files must be older than the racy window (``file_cache.RACY_SECONDS``) to be kept, so one
module fixture writes every test's folder, then waits that long once.
"""

from __future__ import annotations

import os
import pickle
import sqlite3
import time
from pathlib import Path

import pytest

from selene_dag import service
from selene_dag.config import load_settings
from selene_dag.notes.file_cache import CACHE_FOLDER, RACY_SECONDS
from selene_dag.notes.ingest import read_notes, source_version
from selene_dag.store import connect

FOLDERS = ("reuse", "same_stat", "gone", "code", "torn", "version", "ingest", "young")


def _write(folder: Path) -> None:
    (folder / "topic").mkdir(parents=True)
    (folder / "alpha.md").write_text(
        "---\ntitle: Alpha\ncreated: 2024-03-05\ntags: [one, two]\n---\nAlpha body words.\n",
        encoding="utf-8",
    )
    (folder / "topic" / "beta.md").write_text("# Beta\n\nBeta body words.\n", encoding="utf-8")
    (folder / "broken.md").write_text("---\n: [\n---\nKept despite it.\n", encoding="utf-8")
    (folder / "settings.json").write_text('{"theme": "dark"}', encoding="utf-8")
    # A name that is not UTF-8: its notice is added after parsing, and must not pile up.
    (folder / os.fsdecode(b"caf\xe9.md")).write_text("Latin-1 name.\n", encoding="utf-8")


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("old")
    made = {name: root / name for name in FOLDERS if name != "young"}
    for folder in made.values():
        _write(folder)
    time.sleep(RACY_SECONDS + 0.2)
    return made


def _cache_file(home: Path) -> Path:
    (found,) = (home / CACHE_FOLDER).glob("notes-*.sqlite")
    return found


def _summary(result) -> list[tuple]:
    notes = sorted((n.id, n.title, n.content, n.created_at, n.tags) for n in result.notes)
    errors = sorted((e.source, e.line, e.error) for e in result.errors)
    return [notes, errors]


def test_an_unchanged_file_comes_from_the_cache(folders: dict[str, Path], tmp_path: Path) -> None:
    folder, home = folders["reuse"], tmp_path / "home"
    first = read_notes(folder, home=home)
    assert _summary(first) == _summary(read_notes(folder))  # the same notes as without it
    assert len(first.notes) == 4 and any("not UTF-8" in e.error for e in first.errors)
    # Change what the cache holds for alpha.md: the next read gives it back, which shows
    # the file itself was not read again.
    with sqlite3.connect(_cache_file(home)) as db:
        source = os.fsencode(folder / "alpha.md")
        (payload,) = db.execute(
            "SELECT parsed FROM files WHERE kind = 'parsed' AND source = ?", (source,)
        ).fetchone()
        notes, errors = pickle.loads(payload)
        changed = [(n[0], "From the cache", *n[2:]) for n in notes]
        db.execute(
            "UPDATE files SET parsed = ? WHERE kind = 'parsed' AND source = ?",
            (pickle.dumps((changed, errors)), source),
        )
    second = read_notes(folder, home=home)
    titles = {n.id: n.title for n in second.notes}
    assert titles["alpha.md"] == "From the cache"
    assert [e for e in second.errors] == [e for e in first.errors]  # no notice twice


def test_a_write_that_keeps_size_and_mtime_is_read_again(
    folders: dict[str, Path], tmp_path: Path
) -> None:
    folder, home = folders["same_stat"], tmp_path / "home"
    read_notes(folder, home=home)
    before_version = source_version(folder, home)
    path = folder / "topic" / "beta.md"
    st = path.stat()
    path.write_text("# Beta\n\nBETA body words.\n", encoding="utf-8")  # same length
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # mtime set back: ctime moved
    assert path.stat().st_size == st.st_size and path.stat().st_mtime_ns == st.st_mtime_ns
    contents = {n.id: n.content for n in read_notes(folder, home=home).notes}
    assert "BETA body words." in contents["topic/beta.md"]
    assert source_version(folder, home) != before_version
    assert source_version(folder, home) == source_version(folder)


def test_a_file_gone_is_forgotten(folders: dict[str, Path], tmp_path: Path) -> None:
    folder, home = folders["gone"], tmp_path / "home"
    read_notes(folder, home=home)
    (folder / "alpha.md").unlink()
    ids = {n.id for n in read_notes(folder, home=home).notes}
    assert "alpha.md" not in ids and "topic/beta.md" in ids
    with sqlite3.connect(_cache_file(home)) as db:
        sources = {
            os.fsdecode(r[0]) for r in db.execute("SELECT source FROM files WHERE kind = 'parsed'")
        }
    assert str(folder / "alpha.md") not in sources and str(folder / "topic" / "beta.md") in sources


def test_a_cache_of_other_code_is_not_used(folders: dict[str, Path], tmp_path: Path) -> None:
    folder, home = folders["code"], tmp_path / "home"
    read_notes(folder, home=home)
    with sqlite3.connect(_cache_file(home)) as db:
        db.execute("UPDATE files SET parsed = ? WHERE kind = 'parsed'", (pickle.dumps(None),))
        db.execute("UPDATE code SET code = 'other'")
    # Entries of other code are dropped: every file is parsed again.
    assert _summary(read_notes(folder, home=home)) == _summary(read_notes(folder))


def test_a_torn_cache_costs_only_speed(folders: dict[str, Path], tmp_path: Path) -> None:
    folder, home = folders["torn"], tmp_path / "home"
    read_notes(folder, home=home)
    _cache_file(home).write_bytes(b"not a database" * 100)
    assert _summary(read_notes(folder, home=home)) == _summary(read_notes(folder))
    assert source_version(folder, home) == source_version(folder)


def test_the_folder_version_is_the_same_with_the_cache(
    folders: dict[str, Path], tmp_path: Path
) -> None:
    folder, home = folders["version"], tmp_path / "home"
    plain = source_version(folder)
    assert source_version(folder, home) == plain  # filled
    assert source_version(folder, home) == plain  # from the cache
    with sqlite3.connect(_cache_file(home)) as db:
        kept = db.execute("SELECT count(*) FROM files WHERE kind = 'digests'").fetchone()[0]
    assert kept == 5


def test_a_file_written_just_now_is_not_kept(tmp_path: Path) -> None:
    folder, home = tmp_path / "young", tmp_path / "home"
    _write(folder)
    read_notes(folder, home=home)
    with sqlite3.connect(_cache_file(home)) as db:
        kept = db.execute("SELECT count(*) FROM files").fetchone()[0]
    assert kept == 0


def test_ingest_with_the_cache_stores_what_the_files_hold(
    folders: dict[str, Path], tmp_path: Path
) -> None:
    folder = folders["ingest"]
    settings = load_settings(home=tmp_path / "home", now_override="2026-07-15")
    service.ingest(settings, folder)
    (folder / "topic" / "beta.md").write_text("# Beta\n\nBeta, edited.\n", encoding="utf-8")
    (folder / "alpha.md").unlink()
    report = service.ingest(settings, folder)
    assert "raw_notes" in report.ran
    conn = connect(settings.db_path)
    try:
        rows = conn.execute("SELECT id, content FROM notes WHERE deleted_at IS NULL").fetchall()
    finally:
        conn.close()
    stored = {note_id.split("/", 1)[1]: content for note_id, content in rows}  # key/id
    assert stored == {n.id: n.content for n in read_notes(folder).notes}
    assert "Beta, edited." in stored["topic/beta.md"] and "alpha.md" not in stored
