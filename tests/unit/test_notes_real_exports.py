"""Real exports (tests/fixtures/exports, from Obsidian's importer's tests): a newer export of
the same pages keeps their ids, and what an export adds about itself is no note."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

from selene_dag.notes.ingest import read_notes

EXPORTS = Path(__file__).resolve().parents[1] / "fixtures" / "exports"


def _renamed(source: Path, target: Path, old: str, new: str) -> Path:
    """``source`` zipped again with ``old`` in its members' names (and in a zip inside it)
    replaced by ``new``: the next export of the same pages."""

    def copy(data: bytes) -> bytes:
        out = io.BytesIO()
        with zipfile.ZipFile(io.BytesIO(data)) as zin, zipfile.ZipFile(out, "w") as zout:
            for info in zin.infolist():
                body = zin.read(info)
                if info.filename.endswith(".zip"):
                    body = copy(body)
                zout.writestr(info.filename.replace(old, new), body)
        return out.getvalue()

    target.write_bytes(copy(source.read_bytes()))
    return target


def _next_export(name: str, old: str, new: str, tmp_path: Path) -> set[str]:
    """The note ids of the fixture ``name`` exported again: ``old`` renamed ``new``."""
    return {n.id for n in read_notes(_renamed(EXPORTS / name, tmp_path / name, old, new)).notes}


def test_a_newer_notion_export_keeps_its_pages_ids_and_its_index_is_no_note(
    tmp_path: Path,
) -> None:
    # Ids held the export's own folder, Export-<uuid>/: a newer export gave every page a
    # new id (279 new, 279 deleted); its index.html (the workspace's details) was a note.
    first = read_notes(EXPORTS / "Notion.Test.Export.zip")
    assert len(first.notes) == 278 and not first.errors
    assert not any("Export-" in n.id or n.id.endswith("index.html") for n in first.notes)
    uuid = "d2b14fbf-86de-4508-a1b2-6515ff8d7aab"
    newer = _next_export(
        "Notion.Test.Export.zip", uuid, "0a1b2c3d-0000-4000-8000-123456789abc", tmp_path
    )
    assert newer == {n.id for n in first.notes}


def test_a_newer_bear_backup_keeps_its_notes_ids(tmp_path: Path) -> None:
    # Ids held the backup's dated folder ("Bear Notes 2023-10-11 at 10.12.bear2bk/").
    first = read_notes(EXPORTS / "backup.bear2bk")
    assert first.notes and not any("Bear Notes" in n.id for n in first.notes)
    newer = _next_export("backup.bear2bk", "2023-10-11 at 10.12", "2024-02-01 at 09.00", tmp_path)
    assert newer == {n.id for n in first.notes}


def test_a_standard_notes_backup_zip_gives_each_note_once(tmp_path: Path) -> None:
    # The zip as downloaded holds the backup file and a plain-text copy of each note under
    # Items/ (every note was stored twice, the copy titled "Ithaka-7e31caac").
    backup = {
        "items": [
            {
                "uuid": "7e31caac-8cc4-4877-8433-ae41cbfcc6be",
                "content_type": "Note",
                "content": {"title": "Ithaka", "text": "As you set out for Ithaka"},
                "created_at": "2023-08-29T15:00:00.000Z",
                "updated_at": "2023-08-29T15:10:00.000Z",
            }
        ]
    }
    archive = tmp_path / "Standard Notes Backup - Tue Aug 29 2023.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.writestr("Standard Notes Backup and Import File.txt", json.dumps(backup))
        zipped.writestr("Items/Note/Ithaka-7e31caac.txt", "As you set out for Ithaka")
    notes = read_notes(archive).notes
    assert [(n.id, n.title) for n in notes] == [("7e31caac-8cc4-4877-8433-ae41cbfcc6be", "Ithaka")]


def test_a_zip_of_utf8_names_without_the_utf8_flag_keeps_them(tmp_path: Path) -> None:
    # macOS writes UTF-8 names without the flag saying so; read as code page 437 they came
    # out as "Search ΓÇô and Find".
    name = "Search – and Find.md".encode()
    placeholder = b"Q" * len(name)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zipped:
        zipped.writestr(placeholder.decode(), "# Search – and Find\nFind text.\n")
    archive = tmp_path / "Ulysses Export.zip"
    archive.write_bytes(out.getvalue().replace(placeholder, name))
    with zipfile.ZipFile(archive) as check:  # the flag is not set: Python reads cp437
        assert check.namelist() == [name.decode("cp437")]
    (note,) = read_notes(archive).notes
    assert note.id == "Search – and Find.md" and note.source.endswith("!/Search – and Find.md")


def test_a_zip_whose_folders_are_parted_by_backslashes_gives_the_usual_ids(tmp_path: Path) -> None:
    # Some Windows tools write "Notes\\Sub\\a.md": its id kept the backslashes, so the same
    # export zipped by another tool gave other notes.
    archive = tmp_path / "winexport.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.writestr("Notes\\Sub\\a note.md", "# A\nalpha\n")
    (note,) = read_notes(archive).notes
    assert note.id == "Notes/Sub/a note.md" and note.source.endswith("!/Notes/Sub/a note.md")


def test_a_bear_notes_tags_are_read_from_its_text() -> None:
    # Bear writes its tags in the text (#Test-Tag): none was read.
    notes = {n.title: n for n in read_notes(EXPORTS / "backup.bear2bk").notes}
    assert notes["File with asset, content, and a tag"].tags == ("Test-Tag",)
    assert notes["Archived File"].tags == ()


def test_a_seleneignore_inside_an_export_folder_still_applies(tmp_path: Path) -> None:
    # Its rules were keyed by the export's folder, which the pages' paths no longer hold.
    export = "Export-0a1b2c3d-0000-4000-8000-123456789abc"
    archive = tmp_path / "export.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.writestr(f"{export}/.seleneignore", "drafts/\n")
        zipped.writestr(f"{export}/Page.md", "# Page\nkept")
        zipped.writestr(f"{export}/drafts/Draft.md", "# Draft\npassed over")
    assert [n.id for n in read_notes(archive).notes] == ["Page.md"]
