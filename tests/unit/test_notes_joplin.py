"""Joplin's own exports: a JEX file (a tar of items) named alone, and a RAW export folder.
Notes get their title, text, dates, notebook and tags; notebooks, tags, links and notes in
the trash are no notes; a markdown file that only looks like an item stays a note."""

import io
import tarfile
from datetime import UTC, datetime
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from selene_dag.notes.ingest import read_notes
from selene_dag.notes.joplin import parse_item

WORK, MEETINGS = "a" * 31 + "1", "b" * 31 + "2"
KICKOFF, TODO, TRASHED, PLAIN = "c" * 31 + "3", "d" * 31 + "4", "e" * 31 + "5", "f" * 31 + "6"
TAG, LINK = "0" * 31 + "7", "1" * 31 + "8"


def _item(item_id: str, kind: int, title: str, body: str = "", **props: str) -> str:
    # Joplin's BaseItem.serialize: title, body and properties joined by a blank line.
    lines = [f"id: {item_id}", *(f"{k}: {v}" for k, v in props.items()), f"type_: {kind}"]
    return "\n\n".join(part for part in (title, body, "\n".join(lines)) if part != "")


def _export() -> dict[str, str]:
    note_times = {
        "created_time": "2024-03-05T10:15:00.000Z",
        "updated_time": "2024-03-07T16:02:00.000Z",
        "user_created_time": "2024-03-04T09:00:00.000Z",
        "user_updated_time": "2024-03-07T16:02:00.000Z",
        "is_conflict": "0",
        "latitude": "0.00000000",
        "author": "",
        "source_url": "",
        "is_todo": "0",
        "encryption_applied": "0",
        "markup_language": "1",
        "deleted_time": "0",
    }
    return {
        f"{WORK}.md": _item(WORK, 2, "Work", created_time="2024-01-01T00:00:00.000Z", parent_id=""),
        f"{MEETINGS}.md": _item(MEETINGS, 2, "Meetings", parent_id=WORK),
        f"{KICKOFF}.md": _item(
            KICKOFF,
            1,
            "Kickoff with Ana",
            "The kickoff moved to Friday.\n\nAna owns the budget draft: key: value lines stay.",
            parent_id=MEETINGS,
            **note_times,
        ),
        f"{TODO}.md": _item(
            TODO, 1, "Renew the passport", parent_id=WORK, **{**note_times, "is_todo": "1"}
        ),
        f"{TRASHED}.md": _item(
            TRASHED,
            1,
            "Old draft",
            "Gone.",
            parent_id=WORK,
            **{**note_times, "deleted_time": "2024-04-01T00:00:00.000Z"},
        ),
        f"{TAG}.md": _item(TAG, 5, "budget"),
        f"{LINK}.md": _item(LINK, 6, "", note_id=KICKOFF, tag_id=TAG),
        f"{PLAIN}.md": "# Not an item\n\nJust a note whose name looks like one.\n\nid: 42\n",
        "resources/" + "9" * 32 + ".png": "\x89PNG",
    }


def _check(notes: dict, prefix: str = "") -> None:
    assert set(notes) == {f"{prefix}{KICKOFF}.md", f"{prefix}{TODO}.md", f"{prefix}{PLAIN}.md"}
    kickoff = notes[f"{prefix}{KICKOFF}.md"]
    assert kickoff.title == "Kickoff with Ana"
    assert kickoff.content.startswith("The kickoff moved to Friday.\n\nAna owns")
    assert "type_" not in kickoff.content and "user_created_time" not in kickoff.content
    assert kickoff.created_at == datetime(2024, 3, 4, 9, 0, tzinfo=UTC)  # the user's time
    assert kickoff.updated_at == datetime(2024, 3, 7, 16, 2, tzinfo=UTC)
    assert kickoff.topic == "Work / Meetings" and kickoff.tags == ("budget",)
    todo = notes[f"{prefix}{TODO}.md"]
    assert todo.title == todo.content == "Renew the passport" and todo.topic == "Work"
    assert notes[f"{prefix}{PLAIN}.md"].title == "Not an item"


def test_a_jex_export_named_alone(tmp_path: Path) -> None:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tarred:
        for name, text in _export().items():
            data = text.encode("utf-8")
            info = tarfile.TarInfo(name)
            info.size, info.mtime = len(data), 1_700_000_000
            tarred.addfile(info, io.BytesIO(data))
    archive = tmp_path / "joplin.jex"
    archive.write_bytes(buffer.getvalue())
    result = read_notes(archive)
    assert result.errors == [] and result.files_failed == []
    _check({note.id: note for note in result.notes})
    assert all(note.source.startswith(f"{archive.resolve()}!/") for note in result.notes)


def test_a_raw_export_folder(tmp_path: Path) -> None:
    folder = tmp_path / "raw"
    for name, text in _export().items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    result = read_notes(folder)
    assert result.errors == []
    _check({note.id: note for note in result.notes})
    # Every item file was read whole (the trashed note's too): none is ever taken for lost.
    assert len(result.files_ok) == 8


def test_a_broken_jex_is_named(tmp_path: Path) -> None:
    archive = tmp_path / "broken.jex"
    archive.write_bytes(b"not a tar archive at all" * 40)
    result = read_notes(archive)
    assert result.notes == []
    assert [e.error.split(":")[0] for e in result.errors] == ["cannot read the archive"]


def test_an_encrypted_item_is_named_not_stored(tmp_path: Path) -> None:
    folder = tmp_path / "raw"
    folder.mkdir()
    (folder / f"{KICKOFF}.md").write_text(
        _item(KICKOFF, 1, "", encryption_cipher_text="JED01…", encryption_applied="1")
    )
    result = read_notes(folder)
    assert result.notes == [] and "encrypted by Joplin" in result.errors[0].error


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from("ab:_ \n1id.type"), max_size=80))
def test_parse_item_never_raises(text: str) -> None:
    item = parse_item(text)
    assert item is None or item.type >= 0


def test_a_tar_of_notes_named_alone_is_read_inside(tmp_path: Path) -> None:
    # The same reading as a JEX for any tar, plain or compressed (a backup of a notes
    # folder): ids are paths inside it.
    folder = tmp_path / "notes"
    (folder / "work").mkdir(parents=True)
    (folder / "a.md").write_text("# Boiler\n\nServiced in May.\n")
    (folder / "work" / "b.md").write_text("# Standup\n\nMoved to ten.\n")
    (folder / "work" / "photo.png").write_bytes(b"\x89PNG")
    for name, mode in (("backup.tar", "w"), ("backup.tar.gz", "w:gz"), ("backup.tgz", "w:gz")):
        with tarfile.open(tmp_path / name, mode) as tarred:
            tarred.add(folder, arcname="notes")
        result = read_notes(tmp_path / name)
        assert result.errors == []
        assert sorted(n.id for n in result.notes) == ["notes/a.md", "notes/work/b.md"]
