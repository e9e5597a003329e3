"""Which homes the demo takes: its own (marked, or a store of the bundled corpus only),
never one holding other notes or sessions, whatever file names the home happens to hold."""

from __future__ import annotations

from pathlib import Path

import pytest

from selene_dag import service
from selene_dag.config import DEMO_MARKER_TEXT, load_settings
from selene_dag.errors import UsageError
from selene_dag.paths import bundled_notes
from selene_dag.store import open_store


def _store_with_note(db: Path, source: str) -> None:
    with open_store(db) as conn:
        conn.execute(
            "INSERT INTO notes (id, title, content, content_hash, created_at, updated_at, source)"
            " VALUES ('n/a', 'Boiler', 'Serviced in May.', 'h', now(), now(), ?)",
            [source],
        )


def _demo(home: Path, **env: str) -> service.Settings:
    return service.demo_settings(load_settings(env, home=home), home)


def test_the_demos_own_home_is_taken(tmp_path: Path) -> None:
    home = tmp_path / "demo-home"
    service.check_demo_home(_demo(home))  # a new home
    home.mkdir()
    (home / "demo").write_text(DEMO_MARKER_TEXT)
    _store_with_note(home / "selene.duckdb", "/elsewhere/notes/a.md")  # marked: not opened
    service.check_demo_home(_demo(home))
    older = tmp_path / "older"  # a demo home from before the marker: the corpus only
    older.mkdir()
    _store_with_note(older / "selene.duckdb", str(bundled_notes()))
    service.check_demo_home(_demo(older))


@pytest.mark.parametrize("marker", ["my own script\n", None, "folder"])
def test_a_home_of_other_notes_is_refused_whatever_files_it_holds(
    tmp_path: Path, marker: str | None
) -> None:
    # A file named "demo" with other text, or a pinned day ("now"), made it the demo's.
    home = tmp_path / "home"
    home.mkdir()
    (home / "now").write_text("2026-01-01T00:00:00+00:00\n")
    if marker == "folder":
        (home / "demo").mkdir()
    elif marker is not None:
        (home / "demo").write_text(marker)
    _store_with_note(home / "selene.duckdb", "/elsewhere/notes/a.md")
    with pytest.raises(UsageError, match=r"selene-dag demo --home \.selene-demo"):
        service.check_demo_home(_demo(home))
    # Such a home reads its own notes folder, not the bundled corpus.
    assert load_settings({}, home=home).notes_dir == home / "notes"


def test_a_store_named_by_selene_db_is_looked_into(tmp_path: Path) -> None:
    home = tmp_path / "demo-home"
    home.mkdir()
    (home / "demo").write_text(DEMO_MARKER_TEXT)
    real = tmp_path / "real.duckdb"
    _store_with_note(real, "/elsewhere/notes/a.md")
    with pytest.raises(
        UsageError, match=r"real\.duckdb holds 1 note from outside the demo's corpus"
    ):
        service.check_demo_home(_demo(home, SELENE_DB=str(real)))
    # Deleted notes are counted apart: "holds 24 notes" was said of a home showing 22.
    with open_store(real) as conn:
        conn.execute(
            "INSERT INTO notes (id, title, content, content_hash, created_at, updated_at, source,"
            " deleted_at) VALUES ('n/b', 'Old', 'Gone.', 'h2', now(), now(), '/e/b.md', now())"
        )
    with pytest.raises(UsageError, match=r"holds 1 note \(1 more deleted\) from outside"):
        service.check_demo_home(_demo(home, SELENE_DB=str(real)))
    with open_store(real) as conn:
        conn.execute("UPDATE notes SET deleted_at = now()")
    with pytest.raises(UsageError, match=r"holds 2 deleted notes from outside"):
        service.check_demo_home(_demo(home, SELENE_DB=str(real)))


def test_a_home_with_notes_of_its_own_and_no_store_yet_is_refused(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / "notes").mkdir(parents=True)
    (home / "notes" / "boiler.md").write_text("# Boiler\n\nServiced in May.\n")
    with pytest.raises(UsageError, match="has notes of its own"):
        service.check_demo_home(_demo(home))


def test_a_marker_with_windows_line_ends_is_the_demos(tmp_path: Path) -> None:
    from selene_dag.config import is_demo_home

    (tmp_path / "demo").write_bytes(DEMO_MARKER_TEXT.replace("\n", "\r\n").encode())
    assert is_demo_home(tmp_path)
    (tmp_path / "demo").write_bytes(b"my own notes\r\n")
    assert not is_demo_home(tmp_path)


def test_the_demos_home_takes_no_other_notes(tmp_path: Path) -> None:
    # Notes ingested into the demo's home were mixed in, and the next demo took them as
    # its own (its documented figures moved): the ingest is refused, saying where to go.
    home = tmp_path / "demo-home"
    home.mkdir()
    (home / "demo").write_text(DEMO_MARKER_TEXT)
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "boiler.md").write_text("# Boiler\nServiced in May.\n")
    with pytest.raises(UsageError, match=r"is the demo's home .* a home of your own"):
        service.ingest(load_settings(home=home), mine)
    assert not (home / "selene.duckdb").exists()


def test_a_demo_home_built_from_another_installations_corpus_is_refused(tmp_path: Path) -> None:
    # A checkout's `make demo`, then a pip-installed `selene-dag demo` in the same folder:
    # the second corpus was registered beside the first (1,154 notes, every item twice).
    import shutil

    other = tmp_path / "other-install" / "assets" / "demo" / "notes"
    shutil.copytree(bundled_notes().parent, other)
    home = tmp_path / "demo-home"
    home.mkdir()
    (home / "demo").write_text(DEMO_MARKER_TEXT)
    (home / service.DEMO_CORPUS_FILE).write_text(f"{other / 'til.jsonl'}\n")
    with pytest.raises(UsageError, match=r"another installation's corpus .*other-install"):
        service.check_demo_home(_demo(home))
    # That installation gone, its corpus is read here as a folder that moved.
    shutil.rmtree(tmp_path / "other-install")
    service.check_demo_home(_demo(home))
    (home / service.DEMO_CORPUS_FILE).write_text(f"{bundled_notes()}\n")
    service.check_demo_home(_demo(home))
