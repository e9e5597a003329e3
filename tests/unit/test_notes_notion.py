"""A Notion "Markdown & CSV" export: pages as notes, their property lines as fields, the
export's archive read as downloaded, parts inside it included."""

import io
import zipfile
from datetime import UTC, datetime
from pathlib import Path

from selene_dag.notes.ingest import read_notes
from selene_dag.notes.notion import notion_date, page_properties

EXPORT = "Export-6b1f0c2e-55d4-4a8e-9f3b-2d7c1e0a9b84"
PROJECTS = "Projects 0c9e0f5a7b3d4e1f8a2b6c4d9e7f1a3b"
KICKOFF = "Kickoff with Ana 5d2c8e1f0a9b4c7d6e3f2a1b0c9d8e7f"
KICKOFF_PAGE = """\
# Kickoff with Ana

Created: March 5, 2024 10:15 AM
Last edited time: March 7, 2024 4:02 PM
Status: Done
Due date (UTC): March 9, 2024
Étape: 2
Tags: budget, planning

The kickoff moved to Friday; Ana owns the budget draft.
"""


def _zip(files: dict[str, bytes | str]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zipped:
        for name, data in files.items():
            zipped.writestr(name, data)
    return buffer.getvalue()


def test_a_notion_export_as_downloaded_reads_its_pages_from_every_part(tmp_path: Path) -> None:
    part1 = _zip(
        {
            f"{EXPORT}/{PROJECTS}.md": "# Projects\n\nEverything we run this year.\n",
            f"{EXPORT}/{PROJECTS}/{KICKOFF}.md": KICKOFF_PAGE,
            f"{EXPORT}/{PROJECTS}/Tasks 1f2e3d4c5b6a79880716253443526170.csv": "Name,Tags\n",
        }
    )
    part2 = _zip(
        {
            f"{EXPORT}/Journal 9a8b7c6d5e4f30211203948576a5b4c3.md": "# Journal\n\nQuiet week.\n",
            f"{EXPORT}/photo.png": b"\x89PNG",
        }
    )
    archive = tmp_path / f"{EXPORT}.zip"
    archive.write_bytes(_zip({f"{EXPORT}-Part-1.zip": part1, f"{EXPORT}-Part-2.zip": part2}))
    result = read_notes(archive)
    assert result.errors == []
    notes = {n.id: n for n in result.notes}
    # Ids are paths inside the parts, the export's own folder left out: a page keeps its id
    # when the parts split otherwise, and in the next export (another Export-<uuid>).
    assert set(notes) == {
        f"{PROJECTS}.md",
        f"{PROJECTS}/{KICKOFF}.md",
        "Journal 9a8b7c6d5e4f30211203948576a5b4c3.md",
    }
    kickoff = notes[f"{PROJECTS}/{KICKOFF}.md"]
    assert kickoff.title == "Kickoff with Ana"
    assert kickoff.created_at == datetime(2024, 3, 5, 10, 15, tzinfo=UTC)
    assert kickoff.updated_at == datetime(2024, 3, 7, 16, 2, tzinfo=UTC)
    assert kickoff.tags == ("budget", "planning")
    assert "Status: Done" in kickoff.content  # the property lines stay, as Notion shows them
    assert (
        kickoff.source
        == f"{archive.resolve()}!/{EXPORT}-Part-1.zip!/{EXPORT}/{PROJECTS}/{KICKOFF}.md"
    )
    assert notes[f"{PROJECTS}.md"].created_at is None


def test_a_damaged_part_is_named_and_the_other_parts_still_read(tmp_path: Path) -> None:
    good = _zip({"Page 0123456789abcdef0123456789abcdef.md": "# Page\n\ntext\n"})
    archive = tmp_path / "export.zip"
    archive.write_bytes(_zip({"Part-1.zip": good, "Part-2.zip": b"PK\x03\x04 cut short"}))
    result = read_notes(archive)
    assert [n.title for n in result.notes] == ["Page"]
    (error,) = result.errors
    assert (
        error.source.endswith("export.zip!/Part-2.zip") and "cannot read the archive" in error.error
    )
    # The download itself counts as failed: no note of it is marked deleted on this ingest.
    assert result.files_failed == [str(archive.resolve())]


def test_a_page_name_without_heading_gives_its_title_and_odd_properties_are_said(
    tmp_path: Path,
) -> None:
    (tmp_path / "Loose thought 00112233445566778899aabbccddeeff.md").write_text("just text\n")
    (tmp_path / "Odd 00112233445566778899aabbccddeef0.md").write_text(
        "# Odd\n\nCreated: someday\nTags: \nNote: kept as text\n\nbody\n"
    )
    result = read_notes(tmp_path)
    # A date no form reads was left out without a word: the note kept, the date named.
    assert [(e.kept, e.error) for e in result.errors] == [
        (True, "note kept, Notion property created (unreadable date 'someday') ignored")
    ]
    by_title = {n.title: n for n in result.notes}
    assert set(by_title) == {"Loose thought", "Odd"}
    assert by_title["Odd"].created_at is None and by_title["Odd"].tags == ()


def test_notion_dates_in_the_formats_its_settings_give() -> None:
    assert notion_date("March 5, 2024") == "2024-03-05T00:00:00"
    assert notion_date("2024/03/05 14:30") == "2024-03-05T14:30:00"
    assert notion_date("March 5, 2024 → March 7, 2024") == "2024-03-05T00:00:00"
    assert notion_date("someday") is None
    # The 24-hour clock of each date form (a setting of Notion's).
    assert notion_date("March 8, 2024 14:00") == "2024-03-08T14:00:00"
    assert notion_date("March 5, 2024 10:15 AM (GMT+1)") == "2024-03-05T10:15:00"  # local
    assert notion_date("03/08/2024 14:00") == "2024-03-08T14:00:00"
    # An ISO date is given as written, for the note's reader to read.
    assert page_properties("# T\n\nCreated: 2024-03-08 14:00\n") == {"created": "2024-03-08 14:00"}
    assert page_properties("no heading\nCreated: March 5, 2024\n") == {}


def test_an_export_unzipped_into_a_folder_reads_as_the_archive_does(tmp_path: Path) -> None:
    # Unzipped, the export's own folder stayed in every id (a newer export: every page new,
    # every old one deleted) and its index.html (the workspace's details) was a note.
    def unzip(folder: Path, export: str, text: str) -> None:
        pages = folder / export / PROJECTS
        pages.mkdir(parents=True)
        (folder / export / f"{PROJECTS}.md").write_text("# Projects\n\nEverything we run.\n")
        (pages / f"{KICKOFF}.md").write_text(KICKOFF_PAGE.replace("Friday", text))
        (folder / export / "index.html").write_text("<html><body>Workspace: Acme</body></html>")

    first, second = tmp_path / "notion", tmp_path / "notion-later"
    unzip(first, EXPORT, "Friday")
    unzip(second, "Export-0a1b2c3d-0000-4000-8000-123456789abc", "Monday")
    ids = [sorted(n.id for n in read_notes(folder).notes) for folder in (first, second)]
    assert ids[0] == ids[1] == sorted([f"{PROJECTS}.md", f"{PROJECTS}/{KICKOFF}.md"])
    assert read_notes(first).errors == []
