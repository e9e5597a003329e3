"""Note ids are unique across every folder ingested into one home (DESIGN.md, Interfaces;
issue 17 item 1): two folders that both hold `todo.md` give two notes, and ingesting one
folder never changes or deletes another's notes. Real files, real DuckDB, the real
definitions through `service.ingest` and `dagster.materialize`; the migration test builds a
home with the old schema (migrations 001–005) and rows as the old ingest wrote them."""

from __future__ import annotations

import json
from pathlib import Path

import dagster as dg
import duckdb
import pytest

from selene_dag import service
from selene_dag.config import load_settings
from selene_dag.defs.runs import materialize
from selene_dag.errors import UsageError
from selene_dag.notes.file_cache import cache_path
from selene_dag.notes.folders import ingest_scope
from selene_dag.notes.ingest import content_hash, read_notes
from selene_dag.retrieval.evaluate import Question, applicable
from selene_dag.store import connect, discover_migrations, migrate, open_store
from tests.conftest import DEMO_NOTES


def _write(folder: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return folder


def _zip(path: Path, members: dict[str, str], when: int | None = None) -> Path:
    """An archive at ``path`` holding ``members`` (path inside → text), its modification
    time set to ``when`` (seconds) when given: an export as downloaded."""
    import os
    import zipfile

    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as zipped:
        for member, text in members.items():
            zipped.writestr(member, text)
    if when is not None:
        os.utime(path, (when, when))
    return path


def _rows(db: Path) -> dict[str, tuple]:
    with open_store(db) as conn:
        rows = conn.execute(
            "SELECT id, source, content, deleted_at IS NOT NULL, ingested_at FROM notes"
        ).fetchall()
    return {r[0]: r[1:] for r in rows}


def _raw_notes(monkeypatch: pytest.MonkeyPatch, path: Path) -> dict:
    monkeypatch.setenv("SELENE_NOTES_DIR", str(path))
    result = materialize(["raw_notes"], dg.DagsterInstance.ephemeral())
    mat = result.asset_materializations_for_node("raw_notes")[0]
    return {k: getattr(v, "value", v) for k, v in mat.metadata.items()}


def test_two_folders_with_the_same_file_names_keep_both_notes(tmp_path: Path, home: Path) -> None:
    settings = load_settings(home=home, now_override="2026-07-15")
    a = _write(tmp_path / "a", {"todo.md": "# Todo A\nbuy saffron for the paella"})
    b = _write(tmp_path / "b", {"todo.md": "# Todo B\nrenew the kayak permit"})

    first = service.ingest(settings, a)
    assert (first.notes, first.inserted, first.id_prefix) == (1, 1, "a/")
    before = _rows(settings.db_path)
    second = service.ingest(settings, b)
    assert (second.notes, second.inserted, second.home_notes) == (1, 1, 2)
    after = _rows(settings.db_path)
    assert set(after) == {"a/todo.md", "b/todo.md"}
    assert after["a/todo.md"] == before["a/todo.md"]  # untouched, not even re-stamped
    assert "saffron" in after["a/todo.md"][1] and "kayak" in after["b/todo.md"][1]

    # Ingesting the unchanged folders in turn reads each again, and nothing else runs: the
    # observed folder changes each time, but no note does.
    assert service.ingest(settings, a).ran == ("raw_notes",)
    assert service.ingest(settings, b).ran == ("raw_notes",)
    assert service.ingest(settings, b).ran == ()

    # Each note is found and cited under its own id.
    saffron = service.ask(settings, "saffron paella", 200)
    kayak = service.ask(settings, "kayak permit", 200)
    assert saffron.items[0].citation.startswith("note a/todo.md")
    assert kayak.items[0].citation.startswith("note b/todo.md")

    # Deleting a's file marks only a's note deleted; b's note stays live and unchanged.
    (a / "todo.md").unlink()
    (a / "other.md").write_text("# Other\nsomething else")
    third = service.ingest(settings, a)
    assert (third.deleted, third.inserted) == (1, 1)
    final = _rows(settings.db_path)
    assert final["a/todo.md"][2] is True
    assert final["b/todo.md"] == after["b/todo.md"]


def test_a_moved_folder_keeps_its_key_and_its_notes_ids(tmp_path: Path, home: Path) -> None:
    from typer.testing import CliRunner

    from selene_dag.cli import app

    settings = load_settings(home=home, now_override="2026-07-15")
    files = {f"n{i}.md": f"# Note {i}\nthe otter count of pond {i}" for i in range(4)}
    old = _write(tmp_path / "old" / "notes", {**files, "sub/s.md": "# Sub\nheron nests"})
    assert service.ingest(settings, old / "sub").id_prefix == "sub/"  # registered inside it
    assert service.ingest(settings, old).inserted == 4
    with open_store(settings.db_path) as conn:
        conn.execute("INSERT INTO ingest_errors VALUES (?, NULL, 'x', now())", [f"{old}/bad.md"])
    before = _rows(settings.db_path)

    # Moved (and edited on the way: one note gone, one new): the same key, not notes-2, and
    # the home does not hold each note twice.
    new = tmp_path / "new" / "notes"
    new.parent.mkdir()
    old.rename(new)
    (new / "n3.md").unlink()
    (new / "n4.md").write_text("# Note 4\nthe otter count of pond 4")
    outcome = CliRunner().invoke(app, ["ingest", str(new)], env={"SELENE_HOME": str(home)})
    assert outcome.exit_code == 0, outcome.output
    assert f"moved: {old} is now {new}; its notes keep their ids" in outcome.output
    after = _rows(settings.db_path)
    assert set(after) == set(before) | {"notes/n4.md"}
    live = {i for i, row in after.items() if not row[2]}
    assert live == {"notes/n0.md", "notes/n1.md", "notes/n2.md", "notes/n4.md", "sub/s.md"}
    assert all(row[0].startswith(f"{new}/") for row in after.values())
    assert after["notes/n0.md"][3] == before["notes/n0.md"][3]  # unchanged: not rewritten
    with open_store(settings.db_path) as conn:
        # The folder registered inside it moved with it, and keeps its own notes.
        assert sorted(conn.execute("SELECT key, path FROM note_folders").fetchall()) == [
            ("notes", str(new)),
            ("sub", str(new / "sub")),
        ]
        assert conn.execute(
            "SELECT count(*) FROM ingest_errors WHERE source LIKE ?", [f"{old}/%"]
        ).fetchone() == (0,)
    assert service.ask(settings, "heron nests", 200).items[0].citation.startswith("note sub/s.md")
    assert service.ingest(settings, new / "sub").inserted == 0

    # Another folder of that name is a folder of its own: the registered one exists, or
    # (gone) it held other files.
    other = _write(tmp_path / "elsewhere" / "notes", {"a.md": "# A\nunrelated"})
    assert service.ingest(settings, other).id_prefix == "notes-2/"
    new.rename(tmp_path / "gone")
    third = _write(tmp_path / "third" / "notes", {"b.md": "# B\nunrelated too"})
    assert service.ingest(settings, third).id_prefix == "notes-3/"


def test_a_folder_renamed_as_it_moved_keeps_its_key(tmp_path: Path, home: Path) -> None:
    # vault → MyVault: every note was held twice, ask and context returned both copies.
    settings = load_settings(home=home, now_override="2026-07-15")
    files = {f"n{i}.md": f"# Note {i}\nthe otter count of pond {i}" for i in range(4)}
    vault = _write(tmp_path / "vault", files)
    assert service.ingest(settings, vault).inserted == 4
    renamed = tmp_path / "MyVault"
    vault.rename(renamed)
    report = service.ingest(settings, renamed)
    assert (report.id_prefix, report.inserted, report.home_notes) == ("vault/", 0, 4)
    # A small new folder sharing a name or two with a gone one is a folder of its own.
    small = _write(tmp_path / "small", {"a.md": "# A\nalpha", "b.md": "# B\nbeta"})
    assert service.ingest(settings, small).inserted == 2
    small.rename(tmp_path / "gone-small")
    other = _write(tmp_path / "other", {"a.md": "# A\nanother alpha", "b.md": "# B\nbeta"})
    assert service.ingest(settings, other).id_prefix == "other/"
    # Two gone folders holding the same names: which one this is cannot be told.
    names = {f"{n}.md": f"# {n}\n{n} text" for n in "cdef"}
    for twin in ("x", "y"):
        service.ingest(settings, _write(tmp_path / twin, names))
    (tmp_path / "x").rename(tmp_path / "gone-x")
    (tmp_path / "y").rename(tmp_path / "z")
    assert service.ingest(settings, tmp_path / "z").id_prefix == "z/"
    # A drive unplugged, then a journal holding files of the same names (todo.md, inbox.md,
    # ideas.md) but other notes: it took the drive's ids and rewrote its notes.
    usb = _write(
        tmp_path / "usb" / "drive", {f"{n}.md": f"# {n}\nUSB {n} cassowary" for n in "ghi"}
    )
    service.ingest(settings, usb)
    usb.parent.rename(tmp_path / "unplugged")
    journal = {f"{n}.md": f"# {n}\nJournal {n} dugong" for n in "ghi"}
    report = service.ingest(settings, _write(tmp_path / "journal", journal))
    assert (report.id_prefix, report.inserted, report.moved_from) == ("journal/", 3, "")


def test_a_forgotten_folder_leaves_the_home_and_comes_back_when_ingested(
    tmp_path: Path, home: Path
) -> None:
    from typer.testing import CliRunner

    from selene_dag.cli import app

    settings = load_settings(home=home, now_override="2026-07-15")
    a = _write(tmp_path / "a", {"pie.md": "# Pie\nrhubarb pie with ginger", "bad.jsonl": "{"})
    inner = _write(a / "inner", {"tea.md": "# Tea\noolong at ninety degrees"})
    b = _write(tmp_path / "b", {"kayak.md": "# Kayak\nrenew the kayak permit"})
    service.ingest(settings, inner)  # registered on its own: a's ingest leaves it alone
    service.ingest(settings, a)
    service.ingest(settings, b)
    assert service.ask(settings, "rhubarb pie", 200).items[0].citation.startswith("note a/pie.md")

    runner = CliRunner()
    env = {"SELENE_HOME": str(home)}
    kept = cache_path(home, a.resolve())  # what was read from its files, by their stat
    assert kept.is_file()
    outcome = runner.invoke(app, ["forget", "a"], env=env)
    assert outcome.exit_code == 0, outcome.output
    assert not kept.exists() and cache_path(home, b.resolve()).is_file()
    assert (
        f"forgot {a} (note ids a/…): 1 note marked deleted; the home holds 2 notes"
        in outcome.output
    )
    rows = _rows(settings.db_path)
    assert rows["a/pie.md"][2] is True and rows["b/kayak.md"][2] is False
    assert rows["inner/tea.md"][2] is False  # a folder registered inside it keeps its notes
    with open_store(settings.db_path) as conn:
        assert {k for (k,) in conn.execute("SELECT key FROM note_folders").fetchall()} == {
            "b",
            "inner",
        }
        sources = [s for (s,) in conn.execute("SELECT source FROM ingest_errors").fetchall()]
        assert not any(s.startswith(f"{a}/") for s in sources)
    pack = service.ask(settings, "rhubarb pie ginger", 200)
    assert all(not item.citation.startswith("note a/") for item in pack.items)
    assert "rhubarb" not in service.context(settings, 2000).text

    # Ingested again, its notes come back under the same ids.
    again = service.ingest(settings, a)
    assert again.id_prefix == "a/" and again.notes == 1
    assert (again.inserted, again.changed, again.restored) == (0, 0, 1)  # not "1 changed"
    assert service.ask(settings, "rhubarb pie", 200).items[0].citation.startswith("note a/pie.md")

    # Forgotten by a run launched as the UI launches it (raw_notes alone, with its config),
    # the next ingest of the folder reads it again too.
    from selene_dag.defs.runs import instance_for

    config = {"ops": {"raw_notes": {"config": {"forget": "a"}}}}
    assert materialize(
        ["raw_notes"], instance_for(settings), settings=settings, run_config=config
    ).success
    assert _rows(settings.db_path)["a/pie.md"][2] is True
    assert service.ingest(settings, a).notes == 1
    assert _rows(settings.db_path)["a/pie.md"][2] is False

    # A folder gone from the disk is forgotten by its path; a name that is no ingested
    # folder is one line naming those that are.
    import shutil

    shutil.rmtree(b)
    health = runner.invoke(app, ["health"], env=env).output
    assert f"notes folder b: {b}, 1 note; the folder is gone (`selene-dag forget` it)" in health
    assert runner.invoke(app, ["forget", str(b)], env=env).exit_code == 0
    assert [f["key"] for f in service.health(settings)["noteFolders"]] == ["a", "inner"]
    assert _rows(settings.db_path)["b/kayak.md"][2] is True
    # Forgotten again, by its key or its path: said so, with the command that brings its
    # notes back (it said no folder had this key or path).
    for target in ("b", str(b)):
        outcome = runner.invoke(app, ["forget", target], env=env)
        assert outcome.exit_code == 1
        assert f"{target}: forgotten already (1 note marked deleted);" in outcome.output
        assert f"`selene-dag ingest {b}` brings them back" in outcome.output
    outcome = runner.invoke(app, ["forget", "nope"], env=env)
    assert outcome.exit_code == 1
    assert "nope: no ingested folder has this key or path; the home holds a (" in outcome.output
    outcome = runner.invoke(app, ["forget", " "], env=env)  # it said ": no ingested folder"
    assert outcome.exit_code == 1 and "give the key or path of an ingested folder" in outcome.output
    # A file of an ingested folder (an archive ingested alone) is named as one.
    pie = next(p for p in tmp_path.rglob("pie.md"))
    outcome = runner.invoke(app, ["forget", str(pie)], env=env)
    assert outcome.exit_code == 1
    assert f"{pie}: a file of the ingested folder a (" in outcome.output
    assert "`selene-dag forget a` forgets every note of a" in outcome.output


def test_forgotten_folders_of_one_name_come_back_under_their_own_keys(
    tmp_path: Path, home: Path
) -> None:
    # Two folders named "mix" forgotten, then ingested in the other order: each took the
    # other's key, and one's notes came back with the other's text under its ids.
    settings = load_settings(home=home, now_override="2026-07-15")
    first = _write(tmp_path / "mix", {"win.md": "# Windows note\nfirst folder"})
    second = _write(tmp_path / "other" / "mix", {"win.md": "# Other mix\nsecond folder"})
    assert service.ingest(settings, first).id_prefix == "mix/"
    assert service.ingest(settings, second).id_prefix == "mix-2/"
    for key in ("mix-2", "mix"):
        service.forget(settings, key)
    back = service.ingest(settings, second)
    assert (back.id_prefix, back.restored) == ("mix-2/", 1)
    assert service.ingest(settings, first).id_prefix == "mix/"
    rows = _rows(settings.db_path)
    assert rows["mix/win.md"][1].startswith("# Windows") or "first folder" in rows["mix/win.md"][1]
    assert "second folder" in rows["mix-2/win.md"][1]
    # A third folder of that name takes neither key, forgotten or not.
    third = _write(tmp_path / "x" / "mix", {"b.md": "# Third\nthird folder"})
    assert service.ingest(settings, third).id_prefix == "mix-3/"


def test_two_archives_in_one_folder_keep_their_notes(tmp_path: Path, home: Path) -> None:
    # Two vaults zipped side by side hold notes of the same path: the second overwrote
    # the first's. A newer download of an export, the older one gone, updates its notes.
    import zipfile

    settings = load_settings(home=home, now_override="2026-07-15")
    downloads = tmp_path / "downloads"
    downloads.mkdir()

    def archive(name: str, text: str) -> Path:
        path = downloads / name
        with zipfile.ZipFile(path, "w") as zipped:
            zipped.writestr("n1.md", text)
            zipped.writestr("only.md", f"# Only in {name}\nits own note")
        return path

    v1 = archive("v1.zip", "# Note 1\nthe first vault")
    v2 = archive("v2.zip", "# N1 clash\nthe second vault")
    assert service.ingest(settings, v1).id_prefix == "downloads/"
    report = service.ingest(settings, v2)
    assert (report.id_prefix, report.inserted, report.changed) == ("downloads/v2.zip/", 2, 0)
    assert service.ingest(settings, v2).id_prefix == "downloads/v2.zip/"  # kept once decided
    rows = _rows(settings.db_path)
    assert "the first vault" in rows["downloads/n1.md"][1]
    assert "the second vault" in rows["downloads/v2.zip/n1.md"][1]
    # A newer download of v1's export, v1 cleared away: the same notes, updated.
    v1.rename(tmp_path / "v1-old.zip")
    newer = archive("v1 (1).zip", "# Note 1\nthe first vault, edited")
    report = service.ingest(settings, newer)
    assert (report.id_prefix, report.inserted, report.changed) == ("downloads/", 0, 2)
    assert "edited" in _rows(settings.db_path)["downloads/n1.md"][1]
    # v2 renamed (v1's newer download still there): its notes keep their ids, not two copies.
    renamed = downloads / "v2-renamed.zip"
    v2.rename(renamed)
    report = service.ingest(settings, renamed)
    assert (report.id_prefix, report.inserted) == ("downloads/v2.zip/", 0)
    rows = _rows(settings.db_path)
    assert rows["downloads/v2.zip/n1.md"][0] == f"{renamed.resolve()}!/n1.md"
    assert service.ingest(settings, renamed).id_prefix == "downloads/v2.zip/"  # and it stays
    # An archive holding a path a plain file of the folder has: never an older copy of it.
    # (A folder under "downloads", which holds only the files right in it, is its own.)
    loose = downloads / "loose"
    _write(loose, {"n1.md": "# Loose\na plain file"})
    assert service.ingest(settings, loose / "n1.md").id_prefix == "loose/"
    with zipfile.ZipFile(loose / "packed.zip", "w") as zipped:
        zipped.writestr("n1.md", "# Packed\nan archived note")
    assert service.ingest(settings, loose / "packed.zip").id_prefix == "loose/packed.zip/"
    assert "a plain file" in _rows(settings.db_path)["loose/n1.md"][1]


def test_a_newer_export_beside_the_older_one_updates_its_notes(tmp_path: Path, home: Path) -> None:
    # Takeout names each download by its time: the newer beside the older one stored every
    # note twice (own ids, as for two different vaults zipped side by side).
    import os

    settings = load_settings(home=home, now_override="2026-07-15")
    downloads = tmp_path / "downloads"
    notes = {f"Takeout/Keep/n{i}.md": f"# Note {i}\nkept item {i}" for i in range(4)}
    older = _zip(downloads / "takeout-20240101T000000Z-001.zip", notes)
    assert service.ingest(settings, older).inserted == 4
    edited = {**notes, "Takeout/Keep/n0.md": "# Note 0\nkept item 0, edited"}
    newer = _zip(downloads / "takeout-20240601T000000Z-001.zip", edited)
    os.utime(older, (1_700_000_000, 1_700_000_000))  # downloaded before the newer one
    report = service.ingest(settings, newer)
    assert (report.id_prefix, report.inserted, report.changed) == ("downloads/", 0, 1)
    live = [i for i, row in _rows(settings.db_path).items() if not row[2]]
    assert len(live) == 4
    # The older one ingested again does not take its notes back (its text would overwrite
    # the newer edit), nor store them under ids of its own (every page held twice, ask
    # answering with the old text first): it is left out, and the ingest says why.
    again = service.ingest(settings, older)
    assert (again.inserted, again.changed, again.deleted) == (0, 0, 0)
    assert [reason for _, _, reason in again.skipped] == [
        f"an older export of the pages {newer} holds (written after it): left out; "
        "ingest the newer one for the current pages"
    ]
    rows = _rows(settings.db_path)
    assert len([i for i, row in rows.items() if not row[2]]) == 4
    assert "edited" in rows["downloads/Takeout/Keep/n0.md"][1]
    # A page the newer export no longer holds was deleted since: marked deleted, not live
    # for good.
    kept = {member: text for member, text in edited.items() if member != "Takeout/Keep/n3.md"}
    newest = _zip(downloads / "takeout-20241201T000000Z-001.zip", kept)
    newer.unlink()
    assert service.ingest(settings, newest).deleted == 1
    live = {i for i, row in _rows(settings.db_path).items() if not row[2]}
    assert live == {f"downloads/Takeout/Keep/n{i}.md" for i in range(3)}


def test_a_newer_notion_export_with_most_pages_edited_updates_them(
    tmp_path: Path, home: Path
) -> None:
    # A Notion page's id in its file's name names the page: a newer export with most pages
    # edited took ids of its own, and every page was held twice (ask showed the old first).
    settings = load_settings(home=home, now_override="2026-07-15")
    page = "0123456789abcdef0123456789abcde"

    def export(name: str, pages: dict[str, str], when: int) -> Path:
        members = {f"{t} {page}{len(t)}.md": f"# {t}\n\n{text}\n" for t, text in pages.items()}
        return _zip(tmp_path / "exports" / name, members, when)

    old = export("Export-old.zip", {"Alpha": "budget draft", "Beta": "offsite"}, 1_700_000_000)
    new = export(
        "Export-new.zip", {"Alpha": "budget approved", "Beta": "offsite in June"}, 1_710_000_000
    )
    service.ingest(settings, old)
    report = service.ingest(settings, new)
    assert (report.inserted, report.changed, report.home_notes) == (0, 2, 2)
    assert "approved" in service.ask(settings, "Alpha budget", 200).text


def test_another_vault_zipped_beside_one_loses_none_of_its_notes(
    tmp_path: Path, home: Path
) -> None:
    # Two vaults sharing Obsidian's welcome page and an empty note: the second was taken
    # for a newer export of the first, which then lost its own note (marked deleted), and
    # ingesting the first again was refused as an older export.
    settings = load_settings(home=home, now_override="2026-07-15")
    shared = {"Welcome.md": "This is your new *vault*.\n", "Untitled 1.md": "Daily standup\n"}

    def vault(name: str, own: dict[str, str], when: int) -> Path:
        return _zip(tmp_path / "zips" / name, {**shared, **own}, when)

    work = vault("work-vault.zip", {"work.md": "WORK: the Falcon launch plan\n"}, 1_700_000_000)
    home_vault = vault("home-vault.zip", {"home.md": "HOME: the plumber\n"}, 1_710_000_000)
    service.ingest(settings, work)
    assert service.ingest(settings, home_vault).deleted == 0
    assert service.ingest(settings, work).skipped == ()
    live = {i for i, row in _rows(settings.db_path).items() if not row[2]}
    assert {"zips/work.md", "zips/home.md"} <= live
    assert (
        service.ask(settings, "Falcon launch plan", 200)
        .items[0]
        .citation.startswith("note zips/work.md")
    )


def test_same_folder_name_and_same_content_get_a_suffixed_key(tmp_path: Path, home: Path) -> None:
    settings = load_settings(home=home, now_override="2026-07-15")
    files = {"todo.md": "# Todo\nthe same words", "sub/idea.md": "# Idea\nthe same idea"}
    first = _write(tmp_path / "x" / "notes", files)
    second = _write(tmp_path / "y" / "notes", files)
    assert service.ingest(settings, first).inserted == 2
    # Identical files in another folder are still new notes (the folder is part of what
    # Dagster sees as the notes source's version), under the key "notes-2".
    report = service.ingest(settings, second)
    assert (report.inserted, report.id_prefix) == (2, "notes-2/")
    assert set(_rows(settings.db_path)) == {
        "notes/todo.md",
        "notes/sub/idea.md",
        "notes-2/todo.md",
        "notes-2/sub/idea.md",
    }
    with open_store(settings.db_path) as conn:
        folders = dict(conn.execute("SELECT key, path FROM note_folders").fetchall())
    assert folders == {"notes": str(first.resolve()), "notes-2": str(second.resolve())}
    # Keys are stable: ingesting the first folder again keeps "notes" and changes nothing.
    again = service.ingest(settings, first)
    assert (again.id_prefix, again.inserted, again.changed, again.deleted) == ("notes/", 0, 0, 0)


def test_a_file_or_sub_folder_of_a_registered_folder_keeps_its_ids(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = _write(
        tmp_path / "notes",
        {"todo.md": "# Todo\nfirst", "work/plan.md": "# Plan\nq3", "work/log.md": "# Log\nmon"},
    )
    assert _raw_notes(monkeypatch, folder)["inserted"] == 3
    before = _rows(load_settings().db_path)
    # One file, then one sub-folder: same ids as from the whole folder, nothing new.
    one = _raw_notes(monkeypatch, folder / "work" / "plan.md")
    assert (one["inserted"], one["unchanged"], one["marked_deleted"]) == (0, 1, 0)
    (folder / "work" / "log.md").unlink()
    sub = _raw_notes(monkeypatch, folder / "work")
    assert (sub["inserted"], sub["marked_deleted"]) == (0, 1)
    after = _rows(load_settings().db_path)
    assert set(after) == {"notes/todo.md", "notes/work/plan.md", "notes/work/log.md"}
    assert after["notes/todo.md"] == before["notes/todo.md"]  # outside the sub-folder
    assert after["notes/work/log.md"][2] is True


def test_a_folder_registered_for_a_download_in_it_holds_no_folder_below_it(
    tmp_path: Path, home: Path
) -> None:
    # A zip ingested from ~/Downloads registered ~/Downloads, and every folder under it
    # became one of its sub-folders: a vault moved there was stored twice (not seen as
    # moved), a new one got "Downloads/vault/…" ids. Such a folder holds only the files
    # right in it, until it is ingested whole.
    import zipfile

    settings = load_settings(home=home, now_override="2026-07-15")
    downloads = tmp_path / "Downloads"
    downloads.mkdir()
    with zipfile.ZipFile(downloads / "export.zip", "w") as zipped:
        zipped.writestr("todo.md", "# Todo\nbuy otter food")
    assert service.ingest(settings, downloads / "export.zip").id_prefix == "Downloads/"
    _write(downloads, {"loose.md": "# Loose\na loose note"})
    assert service.ingest(settings, downloads / "loose.md").id_prefix == "Downloads/"

    files = {f"n{i}.md": f"# Note {i}\nthe heron count of pond {i}" for i in range(4)}
    vault = _write(tmp_path / "vault", files)
    assert service.ingest(settings, vault).inserted == 4
    vault.rename(downloads / "vault")
    moved = service.ingest(settings, downloads / "vault")
    assert (moved.id_prefix, moved.inserted, moved.moved_from) == ("vault/", 0, str(vault))
    fresh = _write(downloads / "fresh", {"f.md": "# Fresh\nnew"})
    assert service.ingest(settings, fresh).id_prefix == "fresh/"
    assert len([r for r in _rows(settings.db_path).values() if not r[2]]) == 7

    # Ingested whole, it holds its sub-folders (those registered keep their own notes).
    assert service.ingest(settings, downloads).notes == 2
    _write(downloads, {"later/l.md": "# Later\nsub-folder of a whole folder"})
    assert service.ingest(settings, downloads / "later").id_prefix == "Downloads/"


def test_a_folder_registered_for_a_file_inside_a_whole_folder_holds_its_sub_folders(
    tmp_path: Path, home: Path
) -> None:
    # x/sub registered for one file, then x ingested whole (passing over all of sub): a
    # note of x/sub/deeper was stored under x, then again under sub once sub was ingested.
    settings = load_settings(home=home, now_override="2026-07-15")
    x = _write(
        tmp_path / "x", {"a.md": "# A\na", "sub/b.md": "# B\nb", "sub/deeper/c.md": "# C\nc"}
    )
    service.ingest(settings, x / "sub" / "b.md")
    assert service.ingest(settings, x).notes == 1
    assert service.ingest(settings, x / "sub" / "deeper" / "c.md").id_prefix == "sub/"
    service.ingest(settings, x / "sub")
    live = sorted(i for i, row in _rows(settings.db_path).items() if not row[2])
    assert live == ["sub/b.md", "sub/deeper/c.md", "x/a.md"]
    # The whole folder forgotten, sub holds the note it took below it (it was stored again
    # as deeper/c.md under a folder of its own).
    service.forget(settings, "x")
    assert service.ingest(settings, x / "sub" / "deeper" / "c.md").id_prefix == "sub/"
    live = sorted(i for i, row in _rows(settings.db_path).items() if not row[2])
    assert live == ["sub/b.md", "sub/deeper/c.md"]


def test_a_folder_whose_notes_are_its_nested_folders_says_so(tmp_path: Path, home: Path) -> None:
    # "the folder holds no file" when all its files were a folder's ingested on its own.
    settings = load_settings(home=home, now_override="2026-07-15")
    top = _write(tmp_path / "P", {"dl/a.md": "# A\na", "dl/vault/v.md": "# V\nv"})
    service.ingest(settings, top / "dl" / "a.md")
    report = service.ingest(settings, top)
    assert report.notes == 0 and report.nested == (str(top / "dl"),)
    hint = service.unread_files_hint(report)
    assert hint.startswith(f"no note file of its own in {top}: the folders inside it")
    assert str(top / "dl") in hint
    assert service.ingest(settings, top / "dl").notes == 2  # read again, below it included


def test_an_ingest_says_which_folders_inside_it_it_passed_over(tmp_path: Path, home: Path) -> None:
    # An edit in a folder ingested on its own was "0 changed" for its parent, without a word.
    settings = load_settings(home=home, now_override="2026-07-15")
    top = _write(tmp_path / "p3", {"a/x.md": "# A\nalpha", "y.md": "# B\nbeta"})
    service.ingest(settings, top / "a")
    report = service.ingest(settings, top)
    assert report.notes == 1 and report.nested == (str(top / "a"),)
    hint = service.nested_folders_hint(report)
    assert hint == (
        f"passed over: 1 folder inside it ingested on its own ({top / 'a'}), which keeps its "
        "notes; ingest it by its path to read its changes"
    )


def test_a_registered_folder_inside_a_new_one_keeps_its_notes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    outer = _write(tmp_path / "all", {"top.md": "# Top\nt", "inner/deep.md": "# Deep\nd"})
    inner = outer / "inner"
    assert _raw_notes(monkeypatch, inner)["inserted"] == 1  # key "inner"
    meta = _raw_notes(monkeypatch, outer)  # key "all": leaves inner's note to inner
    assert meta["inserted"] == 1
    rows = _rows(load_settings().db_path)
    assert set(rows) == {"inner/deep.md", "all/top.md"}
    (inner / "deep.md").unlink()
    assert _raw_notes(monkeypatch, outer)["marked_deleted"] == 0
    assert _raw_notes(monkeypatch, inner)["marked_deleted"] == 1


def test_ingest_scope_names_keys_without_writing(tmp_path: Path) -> None:
    conn = connect(tmp_path / "s.duckdb")
    (tmp_path / "p" / "notes").mkdir(parents=True)
    (tmp_path / "q" / "notes").mkdir(parents=True)
    scope = ingest_scope(conn, tmp_path / "p" / "notes")
    assert (scope.key, scope.new) == ("notes", True)
    assert conn.execute("SELECT count(*) FROM note_folders").fetchone()[0] == 0
    conn.execute(
        "INSERT INTO note_folders (key, path) VALUES ('notes', ?), ('notes-2', ?)",
        [str(tmp_path / "p" / "notes"), str(tmp_path / "elsewhere" / "notes")],
    )
    assert ingest_scope(conn, tmp_path / "q" / "notes").key == "notes-3"
    inside = ingest_scope(conn, tmp_path / "p" / "notes")
    assert (inside.key, inside.new, inside.note_id("a.md")) == ("notes", False, "notes/a.md")
    conn.close()


def test_eval_questions_match_notes_by_their_id_inside_the_folder(
    tmp_path: Path, home: Path
) -> None:
    """The shipped question sets name notes by their corpus id (``note:gpt3/chatgpt-api.md``);
    they still apply once the ids carry the folder's key."""
    rows = [json.loads(line) for line in DEMO_NOTES.read_text().splitlines()[:15]]
    folder = tmp_path / "til"
    folder.mkdir()
    (folder / "til.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    settings = load_settings(home=home, now_override="2026-07-15")
    service.ingest(settings, folder)
    questions = [
        Question("q1", ("x",), f"note:{rows[0]['id']}"),
        Question("q2", ("x",), f"note:til/{rows[1]['id']}"),
        Question("q3", ("x",), "note:not/in/corpus.md"),
        Question("q4", ("x",), f"note:{rows[2]['id'].split('/')[-1]}"),  # a bare file name
    ]
    with open_store(settings.db_path) as conn:
        kept = applicable(conn, questions)
    assert [q.question for q in kept] == ["q1", "q2"]
    # A note whose file was renamed since the question was written: its text lives on under
    # the new name, as `show` follows it (it was left out as "not in this home").
    notes = _write(tmp_path / "md", {"plan.md": "# Plan\n" + "The launch moves to Friday. " * 3})
    service.ingest(settings, notes)
    (notes / "plan.md").rename(notes / "launch-plan.md")
    service.ingest(settings, notes)
    renamed = Question("q5", ("Friday",), "note:plan.md")
    with open_store(settings.db_path) as conn:
        assert [q.question for q in applicable(conn, [renamed])] == ["q5"]
    # A file name stored decomposed (macOS) named composed, with or without its folder.
    _write(tmp_path / "md", {"Ko\u0308ln.md": "# Köln\nDer Dom öffnet um sechs.\n"})
    service.ingest(settings, notes)
    typed = [
        Question(f"q{i}", ("sechs",), ref)
        for i, ref in enumerate(("note:Köln.md", "note:md/Köln.md"))
    ]
    with open_store(settings.db_path) as conn:
        assert [q.question for q in applicable(conn, typed)] == ["q0", "q1"]


# --- migration 006 on a home built with the old schema --------------------------------


def _old_home(db: Path) -> duckdb.DuckDBPyConnection:
    conn = duckdb.connect(str(db))
    migrate(conn, [m for m in discover_migrations() if m.version <= 5])
    return conn


def _insert_old(conn, note_id: str, source: Path, title: str, content: str, **extra) -> None:
    conn.execute(
        "INSERT INTO notes (id, title, content, content_hash, created_at, updated_at, source, "
        "topic, deleted_at, ingested_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            note_id,
            title,
            content,
            content_hash(title, content),
            extra.get("created", "2024-01-01T00:00:00Z"),
            extra.get("updated", "2024-01-01T00:00:00Z"),
            str(source),
            extra.get("topic"),
            extra.get("deleted"),
            extra.get("ingested", "2024-06-01T00:00:00Z"),
        ],
    )


def test_migration_moves_legacy_ids_to_the_ids_a_new_ingest_gives(tmp_path: Path) -> None:
    folder = _write(
        tmp_path / "notes",
        {"todo.md": "# Todo\nwater the plants", "work/plan.md": "# Plan\nship the q3 report"},
    )
    other = _write(tmp_path / "elsewhere" / "notes", {"call.md": "# Call\ncall the plumber"})
    til = tmp_path / "til"
    til.mkdir()
    rows = [json.loads(line) for line in DEMO_NOTES.read_text().splitlines()[:3]]
    (til / "til.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))

    db = tmp_path / "home" / "selene.duckdb"
    db.parent.mkdir()
    conn = _old_home(db)
    # As the old ingest wrote them: ids relative to the folder given to `ingest`, the
    # JSONL's own ids, and the same file once more from a sub-folder ingest.
    for note in read_notes(folder).notes:
        _insert_old(conn, note.id, folder / note.id, note.title, note.content)
    _insert_old(conn, "plan.md", folder / "work" / "plan.md", "Plan", "ship the q3 report",
                ingested="2024-07-01T00:00:00Z")  # fmt: skip
    # Another folder named "notes", ingested later; its note was deleted since.
    _insert_old(conn, "call.md", other / "call.md", "Call", "call the plumber",
                ingested="2024-06-02T00:00:00Z", deleted="2024-06-03T00:00:00Z")  # fmt: skip
    for row in rows:
        _insert_old(conn, row["id"], til / "til.jsonl", row["title"], row["content"])
    conn.execute(
        "INSERT INTO processed_notes (note_id, essence, fidelity_tier) "
        "SELECT id, 'essence of ' || id, 'high' FROM notes"
    )
    conn.execute("INSERT INTO thread_notes VALUES ('topic:chores', 'todo.md'), ('t2', 'plan.md')")
    conn.execute(
        "INSERT INTO daily_summaries (day, summary, note_count, note_ids) "
        "VALUES ('2024-01-01', 'a day', 2, ['todo.md', ?])",
        [rows[0]["id"]],
    )
    conn.close()

    conn = connect(db)  # applies 006
    notes = dict(conn.execute("SELECT id, deleted_at IS NOT NULL FROM notes").fetchall())
    assert notes == {
        "notes/todo.md": False,
        "notes/work/plan.md": False,  # two old rows of one file: one note
        "notes-2/call.md": True,
        **{f"til/{r['id']}": False for r in rows},
    }
    folders = dict(conn.execute("SELECT path, key FROM note_folders").fetchall())
    assert folders == {str(folder): "notes", str(other): "notes-2", str(til): "til"}
    essences = dict(conn.execute("SELECT note_id, essence FROM processed_notes").fetchall())
    assert essences["notes/todo.md"] == "essence of todo.md"
    assert essences["notes/work/plan.md"] == "essence of plan.md"  # the newest ingest's row
    assert set(essences) == set(notes)
    assert sorted(conn.execute("SELECT * FROM thread_notes").fetchall()) == [
        ("t2", "notes/work/plan.md"),
        ("topic:chores", "notes/todo.md"),
    ]
    assert conn.execute("SELECT note_ids FROM daily_summaries").fetchone()[0] == [
        "notes/todo.md",
        f"til/{rows[0]['id']}",
    ]
    conn.close()

    # ask works on the upgraded home at once: the index sees the new ids and is rebuilt.
    settings = load_settings(home=db.parent, now_override="2026-07-15")
    upgraded = service.ask(settings, "ship the q3 report", 200)
    assert upgraded.stats["index_refreshed"]
    assert upgraded.items[0].citation.startswith("note notes/work/plan.md")
    # A new ingest of each folder finds every note already there under the same id.
    for path in (folder, til):
        report = service.ingest(settings, path)
        assert (report.inserted, report.deleted) == (0, 0), path
    report = service.ingest(settings, other)
    assert (report.inserted, report.id_prefix) == (0, "notes-2/")  # restored, not new
    assert set(_rows(db)) == set(notes)
    assert (
        service.ask(settings, "water the plants", 200)
        .items[0]
        .citation.startswith("note notes/todo.md")
    )


def test_a_path_starting_with_a_tilde_is_in_the_users_home(
    tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # "~/notes" reaches ingest unexpanded from a script or a config that quoted it.
    monkeypatch.setenv("HOME", str(tmp_path))
    _write(tmp_path / "jots", {"a.md": "# A\nthe tilde note"})
    report = service.ingest(load_settings(), Path("~/jots"))
    assert (report.notes, report.id_prefix) == (1, "jots/")
    conversation = tmp_path / "chat.json"
    conversation.write_text('[{"role": "user", "content": "hi"}]')
    assert len(service.read_conversation(Path("~/chat.json")).messages) == 1


def test_ingest_names_the_files_it_does_not_read(tmp_path: Path, home: Path) -> None:
    from typer.testing import CliRunner

    from selene_dag.cli import app

    folder = _write(
        tmp_path / "jots",
        {"a.rst": "Title\n=====", "sub/b.rst": "More", "c.rtf": "{\\rtf1 x}", ".DS_Store": "x"},
    )
    _write(tmp_path / "jots", {".hidden/d.rst": "hidden folder"})
    # A new folder without a note file is refused before any run: registered, it stayed
    # in `health` as "0 notes" until forgotten.
    with pytest.raises(UsageError, match="; nothing ingested") as refused:
        service.ingest(load_settings(), folder)
    hint = str(refused.value)
    assert ".md" in hint and ".txt" in hint and ".org" in hint and ".jsonl" in hint
    assert "3 other files (2 .rst, 1 .rtf)" in hint

    outcome = CliRunner().invoke(app, ["ingest", str(folder)])
    assert outcome.exit_code == 1, outcome.output
    assert "no note file in" in outcome.output and "2 .rst" in outcome.output
    assert not load_settings().db_path.exists()  # no folder registered, no run
    # Named alone, such a file is refused as the folder passes it over (a PDF's bytes were
    # stored as a note, then marked deleted by the folder's next ingest).
    docs = _write(tmp_path / "docs", {"manual.pdf": "%PDF-1.4 x", "data.csv": "a,b\n1,2\n"})
    for name, kind in (("manual.pdf", ".pdf files"), ("data.csv", ".csv files")):
        outcome = CliRunner().invoke(app, ["ingest", str(docs / name)])
        assert outcome.exit_code == 1, outcome.output
        assert f"ingest does not read {kind}; it reads markdown" in outcome.output
    # A file named alone that gives no note fails (exit 0 with "0 notes" before).
    (docs / "fake.zip").write_text("not a zip")
    outcome = CliRunner().invoke(app, ["ingest", str(docs / "fake.zip")])
    assert outcome.exit_code == 1, outcome.output
    assert "cannot read the archive" in outcome.output
    assert "fake.zip: no note could be read from it" in outcome.output
    # An empty folder says so too (it said only "0 notes").
    empty = tmp_path / "nothing"
    empty.mkdir()
    said = CliRunner().invoke(app, ["ingest", str(empty)])
    assert said.exit_code == 1
    # Inside a folder registered for one file ingested alone, a folder is a new one.
    downloads = _write(tmp_path / "dl", {"one.md": "# One\n\ntext", "pdfs/manual.pdf": "%PDF"})
    service.ingest(load_settings(), downloads / "one.md")
    with pytest.raises(UsageError, match=r"1 \.pdf\); nothing ingested"):
        service.ingest(load_settings(), downloads / "pdfs")
    # Notes .seleneignore passes over: said so, not "the folder holds no file".
    ignored = _write(tmp_path / "ignored", {"a.md": "# A", ".seleneignore": "a.md\n"})
    with pytest.raises(UsageError, match=r"no note file in .*: \.seleneignore passes over 1 file"):
        service.ingest(load_settings(), ignored)
    # A folder of archives (downloaded exports): an archive is read when named alone.
    exports = _write(tmp_path / "exports", {"notion.zip": "PK not really"})
    with pytest.raises(UsageError, match=r"1 \.zip\); an archive in a folder is read when"):
        service.ingest(load_settings(), exports)
    assert f"no note file in {empty}: the folder holds no file" in " ".join(said.output.split())
    # A folder of the home that lost its notes is ingested: they are marked deleted.
    kept = _write(tmp_path / "kept", {"a.md": "# A\n\ntext"})
    assert service.ingest(load_settings(), kept).notes == 1
    (kept / "a.md").unlink()
    emptied = service.ingest(load_settings(), kept)
    assert emptied.notes == 0 and emptied.deleted == 1 and emptied.empty_folder

    # A folder that gives notes is not listed; its documents of kinds ingest does not read
    # are named once per ingest that ran, not on one that changed nothing.
    _write(
        folder,
        {
            "e.md": "# A note\n\ntext",
            "paper.pdf": "%PDF-1.4",
            "img.png": "x",
            "e.html": "<p>the note's copy</p>",  # beside its note: a copy, not left out
            "node_modules/pkg/index.html": "<p>not the user's</p>",  # a folder passed over
            "export.zip": "PK",  # an archive a folder's ingest does not open: said too
        },
    )
    report = service.ingest(load_settings(), folder)
    assert report.other_files == {} and report.documents_left_out == {
        ".rst": 2,
        ".rtf": 1,
        ".pdf": 1,
    }
    assert service.documents_left_out_hint(report).startswith(
        "left out: 4 files of kinds ingest does not read (2 .rst, 1 .pdf, 1 .rtf)"
    )
    assert report.archives_left_out == {".zip": 1}
    assert service.archives_left_out_hint(report).startswith("left out: 1 archive (1 .zip)")
    outcome = CliRunner().invoke(app, ["ingest", str(folder)])
    assert outcome.exit_code == 0 and "no step ran" in outcome.output
    assert "left out" not in outcome.output


def test_names_that_are_not_utf8_neither_stop_an_ingest_nor_lose_a_note(
    tmp_path: Path, home: Path
) -> None:
    # A latin-1 file name among good notes does not stop the run at the database (which
    # takes UTF-8 only): every note is stored, the odd one under an id that shows its
    # bytes, and the folder sensor's fingerprint takes the name too. A folder whose own
    # path is not UTF-8 is refused with one line that says so.
    import os

    from selene_dag.defs.notes import folder_fingerprint
    from selene_dag.errors import UsageError

    folder = _write(tmp_path / "vault", {"good.md": "# Good\n\nplain name"})
    with open(os.path.join(os.fsencode(folder), b"r\xe9sum\xe9.md"), "wb") as handle:
        handle.write(b"# Resume\n\nlatin-1 name")
    report = service.ingest(load_settings(), folder)
    assert (report.notes, report.bad_inputs) == (2, 1)
    assert sorted(_rows(home / "selene.duckdb")) == ["vault/good.md", "vault/r\\xe9sum\\xe9.md"]
    assert len(folder_fingerprint(folder)) == 32

    odd = os.path.join(os.fsencode(tmp_path), b"not\xffutf8")
    os.mkdir(odd)
    with pytest.raises(UsageError, match=r"not\\xffutf8: the path is not UTF-8"):
        service.ingest(load_settings(), Path(os.fsdecode(odd)))


def test_a_seleneignore_file_passes_over_what_it_lists(tmp_path: Path, home: Path) -> None:
    folder = tmp_path / "vault"
    _write(
        folder,
        {
            ".seleneignore": "# a site built from the notes, scratch files, one draft\n"
            "site/\n*.tmp.md\n/drafts/secret*.md\n!keep.md\n",
            "a.md": "# Kept\n\nThe boiler is serviced in May.",
            "b.tmp.md": "# Scratch\n\ntext",
            "site/index.html": "<p>the built site</p>",
            "drafts/secret-plan.md": "# Secret\n\ntext",
            "drafts/open.md": "# Open draft\n\ntext",
            "deep/drafts/secret-other.md": "# Not under /drafts\n\ntext",
            "deep/site": "a file named site: only folders are passed over by 'site/'",
            "deep/.seleneignore": "*.md\n",  # applies in deep/ and below only
            "deep/n.md": "# Deep\n\ntext",
        },
    )
    ids = sorted(n.id for n in read_notes(folder).notes)
    assert ids == ["a.md", "drafts/open.md"]
    report = service.ingest(load_settings(), folder)
    assert report.notes == 2 and report.other_files == {}
    # site/, b.tmp.md, drafts/secret-plan.md, and in deep/ n.md and drafts/secret-other.md.
    assert service.passed_over_hint(report) == (
        "passed over: 5 files or folders listed in .seleneignore"
    )
    # Listing a note file later takes its note out of the home at the next ingest.
    (folder / ".seleneignore").write_text("site/\n*.tmp.md\ndrafts/\n")
    report = service.ingest(load_settings(), folder)
    assert (report.notes, report.deleted) == (1, 1)


@pytest.mark.parametrize("encoding", ["utf-8-sig", "utf-16"])
def test_a_seleneignore_file_saved_with_a_byte_order_mark_keeps_its_first_pattern(
    tmp_path: Path, encoding: str
) -> None:
    # Notepad and PowerShell write a byte order mark: it was read as part of 'private/',
    # so the private folder was ingested.
    folder = _write(
        tmp_path / "vault",
        {"public.md": "# Public\n\nthe fig harvest", "private/diary.md": "# Secret\n\ntext"},
    )
    (folder / ".seleneignore").write_text("private/\n", encoding=encoding)
    assert [n.id for n in read_notes(folder).notes] == ["public.md"]


@pytest.mark.parametrize("kind", ["zip", "tgz"])
def test_a_seleneignore_file_inside_an_archive_passes_over_what_it_lists(
    tmp_path: Path, kind: str
) -> None:
    # A zipped vault read every file, its drafts too, whatever its .seleneignore said.
    import shutil

    vault = _write(
        tmp_path / "vault",
        {
            ".seleneignore": "site/\n*.tmp.md\n/drafts/secret*.md\n",
            "a.md": "# A\nkept",
            "drafts/secret1.md": "# Secret\nleft out",
            "drafts/ok.md": "# Draft\nkept",
            "x.tmp.md": "# Tmp\nleft out",
            "site/index.md": "# Site\nleft out",
            "sub/.seleneignore": "local.md\n",
            "sub/local.md": "# Local\nleft out",
            "local.md": "# Top local\nkept: the rule is sub/'s",
        },
    )
    archive = shutil.make_archive(
        str(tmp_path / "vault"), "zip" if kind == "zip" else "gztar", vault
    )
    ids = {n.id for n in read_notes(archive).notes}
    assert ids == {"a.md", "drafts/ok.md", "local.md"}
    assert ids == {n.id for n in read_notes(vault).notes}  # as the folder is read


def _vault_linking_out(tmp_path: Path, elsewhere: str) -> tuple[Path, Path]:
    """A vault of one note and a link ``linked.md`` to a note in the folder ``elsewhere``."""
    folder = _write(tmp_path / "vault", {"a.md": "# A\n\nalpha"})
    outside = _write(tmp_path / elsewhere, {"o.md": "# Shared\n\nomega lives elsewhere"})
    (folder / "linked.md").symlink_to(outside / "o.md")
    return folder, outside


def test_a_linked_note_belongs_to_its_folder_and_leaves_with_its_link(
    tmp_path: Path, home: Path
) -> None:
    # A file that is a link to a note kept elsewhere (a shared folder linked into a vault)
    # was stored under its target's path: the folder's count left it out, and deleting the
    # link never deleted the note.
    folder, _ = _vault_linking_out(tmp_path, "shared")
    settings = load_settings()
    first = service.ingest(settings, folder)
    assert (first.notes, first.inserted, first.home_notes) == (2, 2, 2)
    with duckdb.connect(str(settings.db_path), read_only=True) as conn:
        source = conn.execute("SELECT source FROM notes WHERE id = 'vault/linked.md'").fetchone()
    assert source == (str(folder.resolve() / "linked.md"),)
    (folder / "linked.md").unlink()
    second = service.ingest(settings, folder)
    assert (second.notes, second.deleted, second.home_notes) == (1, 1, 1)


def test_a_link_to_a_missing_file_is_reported_and_keeps_its_note_until_removed(
    tmp_path: Path, home: Path
) -> None:
    # A link into a drive not mounted was passed over without a word, and its note deleted.
    folder, elsewhere = _vault_linking_out(tmp_path, "drive")
    (folder / "never.md").symlink_to(tmp_path / "nowhere.md")
    settings = load_settings()
    first = service.ingest(settings, folder)
    assert (first.notes, first.inserted, first.bad_inputs) == (2, 2, 1)
    assert [(Path(s).name, "nowhere.md" in why) for s, _, why in first.skipped] == [
        ("never.md", True)
    ]
    elsewhere.rename(tmp_path / "unmounted")
    second = service.ingest(settings, folder)
    assert (second.deleted, second.home_notes, second.bad_inputs) == (0, 2, 2)
    assert any("leads to no file (to " in why and "o.md)" in why for _, _, why in second.skipped)
    (folder / "linked.md").unlink()
    third = service.ingest(settings, folder)
    assert (third.deleted, third.home_notes, third.bad_inputs) == (1, 1, 1)


def test_line_ends_and_encodings_of_other_systems_keep_lines_where_an_editor_shows_them(
    tmp_path: Path, home: Path
) -> None:
    # show split lines at a form feed or U+2028 too (every line after one moved), an old
    # Mac's CR-only file was one line (its front matter lost), a UTF-16 file's front-matter
    # offset was not told, and a JSON note kept its "\r\n".
    folder = tmp_path / "vault"
    folder.mkdir()
    (folder / "ff.md").write_text("# FF\nl2\nl3 \x0c page\nsep\u2028inside\nline five wallaby\n")
    front = "---\ntitle: Old Mac\ntags: [retro]\n---\n# Heading\n\nbody of the note\n"
    (folder / "cr.md").write_bytes(front.replace("\n", "\r").encode())
    front16 = "---\ntitle: Wide\ncreated: 2024-01-02\n---\n\nwide body line\n"
    (folder / "utf16.md").write_bytes(front16.replace("\n", "\r\n").encode("utf-16"))
    (folder / "n.jsonl").write_text('{"id": "j", "content": "first\\r\\nsecond\\rthird"}\n')
    settings = load_settings()
    service.ingest(settings, folder)
    assert service.show(settings, "note vault/ff.md lines 5").text.endswith("\nline five wallaby")
    shown = service.show(settings, "note vault/cr.md lines 3")
    assert shown.text == "[note vault/cr.md line 3] Old Mac\nbody of the note"
    assert shown.file_line_offset == 4
    wide = service.show(settings, "note vault/utf16.md lines 2")
    assert wide.text.endswith("\nwide body line") and wide.file_line_offset == 4
    with duckdb.connect(str(settings.db_path), read_only=True) as conn:
        rows = dict(conn.execute("SELECT id, content FROM notes").fetchall())
        tags = conn.execute("SELECT tags FROM notes WHERE id = 'vault/cr.md'").fetchone()[0]
    assert rows["vault/j"] == "first\nsecond\nthird" and list(tags) == ["retro"]


def test_notes_that_share_a_title_are_told_apart_in_the_context(tmp_path: Path, home: Path) -> None:
    settings = load_settings(home=home, now_override="2026-07-15")
    folder = _write(
        tmp_path / "vault",
        {
            "p1/todo.md": "# TODO\nbuy saffron",
            "p2/todo.md": "# todo\nrenew the kayak permit",
            "other.md": "# Other\nsomething else",
        },
    )
    service.ingest(settings, folder)
    text = service.context(settings, 2000).text
    assert "TODO (vault/p1/todo.md)" in text and "todo (vault/p2/todo.md)" in text
    assert "Other (" not in text  # a title of its own stays as it is


def test_show_says_which_line_of_the_file_a_note_starts_at(tmp_path: Path, home: Path) -> None:
    # A note's lines are those of its text as stored: front matter left out. The file's
    # own line numbers differ by its length, which show tells.
    settings = load_settings(home=home, now_override="2026-07-15")
    folder = _write(
        tmp_path / "vault",
        {
            "a.md": "---\ntitle: Dataclasses\ntags: [python]\n---\n# Annotated\n\nThe key trick.\n",
            "b.md": "# Plain\n\nNo front matter.\n",
        },
    )
    service.ingest(settings, folder)
    shown = service.show(settings, "note vault/a.md lines 3")
    assert shown.text.endswith("The key trick.") and shown.file_line_offset == 4
    assert shown.to_json("x")["file_line_offset"] == 4
    assert service.show(settings, "note vault/b.md").file_line_offset == 0
    from typer.testing import CliRunner

    from selene_dag.cli import app

    outcome = CliRunner().invoke(
        app, ["show", "note vault/a.md lines 3"], env={"SELENE_HOME": str(home)}
    )
    assert "line 1 is the file's line 5" in outcome.stderr


def test_a_note_id_typed_with_composed_accents_finds_a_decomposed_file_name(
    tmp_path: Path, home: Path
) -> None:
    # macOS stores file names decomposed (é as e + U+0301); a user types them composed.
    import unicodedata

    settings = load_settings(home=home, now_override="2026-07-15")
    name = unicodedata.normalize("NFD", "résumé.md")
    folder = _write(tmp_path / "cv", {name: "# CV\nTen years of DuckDB.\n"})
    service.ingest(settings, folder)
    typed = unicodedata.normalize("NFC", "note cv/résumé.md")
    assert "Ten years of DuckDB." in service.show(settings, typed).text


def test_a_folder_that_cannot_be_listed_is_a_one_line_error(tmp_path: Path, home: Path) -> None:
    # It gave "0 notes, 0 inputs with problems" (or kept its stored notes) in silence.
    import os
    import shutil
    import tempfile

    from selene_dag.errors import UsageError

    base = Path(tempfile.mkdtemp(dir="/tmp", prefix="selene-unlisted-"))
    try:
        base.chmod(0o755)
        locked = _write(base / "locked", {"n.md": "# N\nhidden"})
        locked.chmod(0)
        settings = load_settings(home=home)
        try:
            if os.geteuid() == 0:  # root lists any folder: look as another user
                os.seteuid(65534)
            with pytest.raises(UsageError, match="locked cannot be listed \\(Permission denied\\)"):
                service.ingest(settings, locked)
        finally:
            if os.getuid() == 0:
                os.seteuid(0)
            locked.chmod(0o755)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_a_front_matter_id_two_notes_claim_stays_with_the_note_that_held_it(
    tmp_path: Path, home: Path
) -> None:
    # Two files giving one front-matter id to two notes (a template's id): the note the
    # store held under it keeps it, whichever file name sorts first, and a sub-folder's
    # ingest does not hand it to a note of that sub-folder (it overwrote the other note).
    settings = load_settings(home=home, now_override="2026-07-15")
    retry = "---\nid: retry-policy\n---\n# Retry policy\n\nWe retry with backoff.\n"
    vault = _write(
        tmp_path / "vault",
        {"projects/alpha/retry-policy.md": retry, "other.md": "# Other\n\nSomething else.\n"},
    )
    service.ingest(settings, vault)
    _write(vault, {"aa-duplicate.md": "---\nid: retry-policy\n---\n# Umbrellas\n\nBring one.\n"})
    report = service.ingest(settings, vault)
    assert (report.inserted, report.changed, report.deleted) == (1, 0, 0)
    live = {k: v[1] for k, v in _rows(settings.db_path).items() if not v[2]}
    assert sorted(live) == ["vault/aa-duplicate.md", "vault/other.md", "vault/retry-policy"]
    assert "backoff" in live["vault/retry-policy"] and "Bring one" in live["vault/aa-duplicate.md"]
    assert [r for f, _, r in report.skipped if f.endswith("aa-duplicate.md")] == [
        "note kept, its id 'vault/retry-policy' is "
        f"{vault / 'projects/alpha/retry-policy.md'}'s, another note: its path "
        "'vault/aa-duplicate.md' is its id; give it an id of its own"
    ]

    # Both new in a fresh home: the first read keeps it; the other file's sub-folder,
    # ingested alone, keeps its note under its path.
    other_home = load_settings(home=tmp_path / "home2", now_override="2026-07-15")
    service.ingest(other_home, vault)
    before = _rows(other_home.db_path)
    assert "Bring one" in before["vault/retry-policy"][1]
    assert "backoff" in before["vault/projects/alpha/retry-policy.md"][1]
    sub = service.ingest(other_home, vault / "projects")
    assert (sub.inserted, sub.changed, sub.deleted) == (0, 0, 0)
    assert _rows(other_home.db_path) == before


def test_dev_watches_every_folder_ingested_whole_and_names_the_others(
    tmp_path: Path, home: Path
) -> None:
    # `selene-dag dev` watched SELENE_NOTES_DIR only: a newcomer who ingested two folders
    # saw its sensor skip with "does not exist". Every folder ingested whole is watched; a
    # folder registered for a file ingested alone, or gone, is named as not watched.
    settings = load_settings(home=home, now_override="2026-07-15")
    assert service.unwatched_folders(settings) == {}  # no database yet
    assert service.watched_folders(settings) == {}
    a = _write(tmp_path / "a", {"pie.md": "# Pie\nrhubarb pie"})
    b = _write(tmp_path / "b", {"kayak.md": "# Kayak\nrenew the permit"})
    c = _write(tmp_path / "c", {"one.md": "# One\nthe note ingested alone", "two.md": "# Two\nx"})
    for path in (a, b, c / "one.md"):
        service.ingest(settings, path)
    assert service.watched_folders(settings) == {a.resolve(): "a", b.resolve(): "b"}
    assert service.unwatched_folders(settings) == {c.resolve(): "c"}
    watching_b = load_settings({"SELENE_NOTES_DIR": str(b)}, home=home)
    assert service.watched_folders(watching_b) == {a.resolve(): "a"}
    (a / "pie.md").unlink()
    a.rmdir()
    assert service.watched_folders(settings) == {b.resolve(): "b"}
    assert service.unwatched_folders(settings) == {a.resolve(): "a", c.resolve(): "c"}


def test_the_notes_sensor_ingests_each_changed_folder_ingested_whole(
    tmp_path: Path, home: Path
) -> None:
    """The sensor requests one run per changed folder, its path given through the
    resource's config; the run, executed with the real definitions, reads that folder."""
    from selene_dag.definitions import defs
    from selene_dag.defs.notes import notes_folder_sensor
    from selene_dag.defs.resources import SeleneResource

    settings = load_settings(home=home, now_override="2026-07-15")
    a = _write(tmp_path / "a", {"pie.md": "# Pie\nrhubarb pie"})
    b = _write(tmp_path / "b", {"kayak.md": "# Kayak\nrenew the permit"})
    c = _write(tmp_path / "c", {"one.md": "# One\nthe note ingested alone"})
    for path in (a, b, c / "one.md"):
        service.ingest(settings, path)
    instance = dg.DagsterInstance.ephemeral()

    def tick(cursor):
        context = dg.build_sensor_context(
            instance=instance, cursor=cursor, resources={"selene": SeleneResource()}
        )
        return notes_folder_sensor(context)

    first = tick(None)  # SELENE_NOTES_DIR (home/notes) does not exist: a and b only
    assert sorted(r.tags["selene/folder"] for r in first.run_requests) == [
        str(a.resolve()),
        str(b.resolve()),
    ]
    idle = tick(first.cursor)
    assert not idle.run_requests and "does not exist" in idle.skip_reason.skip_message
    _write(a, {"tart.md": "# Tart\napricot tart"})
    _write(c, {"two.md": "# Two\nnot asked for"})  # beside a file ingested alone: not watched
    changed = tick(first.cursor)
    (request,) = changed.run_requests
    assert request.tags["selene/folder"] == str(a.resolve())
    job = defs.resolve_implicit_global_asset_job_def()
    result = job.execute_in_process(
        run_config=request.run_config,
        instance=instance,
        asset_selection=[dg.AssetKey("raw_notes")],
    )
    assert result.success
    with open_store(settings.db_path) as conn:
        ids = {
            r[0] for r in conn.execute("SELECT id FROM notes WHERE deleted_at IS NULL").fetchall()
        }
    assert ids == {"a/pie.md", "a/tart.md", "b/kayak.md", "c/one.md"}
    assert not tick(changed.cursor).run_requests


def test_the_library_takes_a_path_as_a_string(tmp_path: Path, home: Path) -> None:
    # service.ingest(settings, "/notes") raised AttributeError ('str' has no expanduser);
    # service.compact(settings, "conv.json", …) read the string as its characters.
    settings = load_settings(home=home, now_override="2026-07-15")
    folder = _write(tmp_path / "n", {"pie.md": "# Pie\nrhubarb pie"})
    assert service.ingest(settings, str(folder)).notes == 1
    conversation = tmp_path / "c.json"
    conversation.write_text('[{"role": "user", "content": "hello there"}]')
    report = service.compact(settings, str(conversation), 100)
    assert report.messages == [{"role": "user", "content": "hello there"}]
    as_object = {"messages": [{"role": "user", "content": "hi"}]}
    assert service.compact(settings, as_object, 100).messages == as_object["messages"]
    with pytest.raises(TypeError, match="path"):
        service.ingest(settings, None)
    with pytest.raises(TypeError, match="messages must be"):
        service.compact(settings, None, 100)
