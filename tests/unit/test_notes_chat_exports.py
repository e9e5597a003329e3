"""Conversations of ChatGPT and Claude.ai data exports read as notes, and JSON files that
hold a list of notes; other JSON files in a folder are passed over."""

import json
import shutil
from datetime import UTC, datetime
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from selene_dag.notes.chat_exports import export_kind, exported_chats
from selene_dag.notes.ingest import read_notes
from selene_dag.notes.listing import other_files

EXPORTS = Path(__file__).resolve().parents[1] / "fixtures" / "chat_exports"


def test_a_chatgpt_export_gives_the_branch_shown_one_note_per_conversation() -> None:
    result = read_notes(EXPORTS / "chatgpt")  # also user.json and message_feedback.json
    notes = {n.id: n for n in result.notes}
    assert set(notes) == {
        "6650a1b2-0000-4000-8000-00000000c0de",
        "6650a1b2-0000-4000-8000-00000000b00c",  # "New chat" without a message is left out
    }
    airflow = notes["6650a1b2-0000-4000-8000-00000000c0de"]
    assert airflow.title == "Airflow S3 sensor timeouts"
    assert airflow.created_at == datetime.fromtimestamp(1717400000.0, tz=UTC)
    assert airflow.updated_at == datetime.fromtimestamp(1717400060.0, tz=UTC)
    text = airflow.content
    assert text.startswith("User: Our nightly Airflow DAG keeps timing out")
    assert "User: [image]\n\nHere is the task log. The timeout is 3600 seconds." in text
    assert "deferrable operators?" not in text  # the branch the user edited away from
    assert "data engineer" not in text and "Search results" not in text  # context, tool
    assert "search(" not in text and "poking every 60 s" not in text  # tool call, reasoning
    # The answer given in two messages around a tool call is one turn.
    assert text.count("Assistant:") == 2
    assert text.endswith("so a missing file skips the run instead of failing it.")
    untitled = notes["6650a1b2-0000-4000-8000-00000000b00c"]
    assert untitled.title == "Suggest a name for a DuckDB extension that …"
    # The one entry that is no conversation is named; user.json and the feedback list are
    # not note files and say nothing.
    assert [e.error for e in result.errors] == [
        "conversation 4: expected a conversation object, got str"
    ]


def test_a_claude_export_keeps_attachments_and_skips_empty_chats() -> None:
    result = read_notes(EXPORTS / "claude")
    assert not result.errors
    (note,) = result.notes
    assert (note.id, note.title) == (
        "0b7e5c2a-1111-4222-8333-444455556666",
        "Postgres vacuum settings",
    )
    assert note.created_at == datetime(2025, 3, 2, 9, 15, 4, 112345, tzinfo=UTC)
    assert "[attachment postgresql.conf]\nautovacuum_vacuum_scale_factor = 0.2" in note.content
    assert "Assistant: Set a per-table `autovacuum_vacuum_scale_factor = 0.01`" in note.content


def test_a_claude_branch_follows_the_current_leaf() -> None:
    def message(uuid: str, parent: str, sender: str, text: str) -> dict:
        return {"uuid": uuid, "parent_message_uuid": parent, "sender": sender, "text": text}

    data = [
        {
            "uuid": "c1",
            "name": "Branches",
            "current_leaf_message_uuid": "a2",
            "chat_messages": [
                message("u1", "root", "human", "First question about caching"),
                message("a1", "u1", "assistant", "An answer I regenerated"),
                message("a2", "u1", "assistant", "The answer I kept: use an LRU cache"),
            ],
        }
    ]
    chats, problems = exported_chats(data, "claude")
    assert not problems
    assert chats[0].turns == (
        ("User", "First question about caching"),
        ("Assistant", "The answer I kept: use an LRU cache"),
    )


def test_export_kind_looks_at_the_shape_only() -> None:
    assert export_kind([{"mapping": {}, "title": "x"}]) == "chatgpt"
    assert export_kind([{"chat_messages": []}]) == "claude"
    for other in ([], {"mapping": {}}, [1], [{"content": "a note"}]):
        assert export_kind(other) is None


def test_a_json_list_of_notes_is_read_and_a_json_file_named_alone_says_why_not(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "exported"
    folder.mkdir()
    notes = [
        {"id": "n1", "title": "Kafka retention", "content": "retention.ms is per topic"},
        {"text": "a note without id", "created": "2024-05-01"},
        {"title": "no text"},
    ]
    (folder / "notes.json").write_text(json.dumps(notes))
    (folder / "package.json").write_text('{"name": "site", "version": "1.0.0"}')
    (folder / "broken.json").write_text('[{"content": "cut off')
    result = read_notes(folder)
    assert sorted(n.id for n in result.notes) == ["n1", "notes.json:2"]
    reasons = sorted(e.error for e in result.errors)
    assert reasons[0].startswith("bad JSON")
    assert reasons[1].startswith("entry 3: missing 'content'")
    assert "1 entry without an 'id' named by place ('notes.json:<entry>')" in reasons[2]
    assert str(folder / "broken.json") in result.files_failed  # its notes are never deleted
    alone = read_notes(folder / "package.json")
    assert not alone.notes
    assert "not a note file: a JSON file is read when it is a list of notes" in (
        alone.errors[0].error
    )


def test_an_export_without_ids_names_its_conversations_by_place(tmp_path: Path) -> None:
    data = json.loads((EXPORTS / "claude" / "conversations.json").read_text())
    for chat in data:
        del chat["uuid"]
    shutil.copytree(EXPORTS / "claude", tmp_path / "claude")
    (tmp_path / "claude" / "conversations.json").write_text(json.dumps(data))
    result = read_notes(tmp_path / "claude")
    assert [n.id for n in result.notes] == ["conversations.json:1"]
    assert "1 conversation without an 'id'" in result.errors[0].error


def test_an_export_named_as_downloaded_a_zip_is_read_inside(tmp_path: Path) -> None:
    import zipfile

    archive = tmp_path / "chatgpt-export.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        for name in ("conversations.json", "user.json", "message_feedback.json"):
            zipped.write(EXPORTS / "chatgpt" / name, name)
        zipped.writestr("notes/reading-list.md", "# Reading list\nDesigning Data-Intensive Apps")
        zipped.writestr("__MACOSX/._conversations.json", "resource fork")
        zipped.writestr(".hidden.md", "# hidden")
        zipped.writestr("chat.html", "<html></html>")
    result = read_notes(archive)
    ids = sorted(n.id for n in result.notes)
    assert ids == [
        "6650a1b2-0000-4000-8000-00000000b00c",
        "6650a1b2-0000-4000-8000-00000000c0de",
        "notes/reading-list.md",
    ]
    sources = {n.source for n in result.notes}
    assert sources == {f"{archive}!/conversations.json", f"{archive}!/notes/reading-list.md"}
    assert [e.error for e in result.errors] == [
        "conversation 4: expected a conversation object, got str"
    ]

    fake = tmp_path / "fake.zip"
    fake.write_text("not an archive")
    assert "cannot read the archive" in read_notes(fake).errors[0].error
    empty = tmp_path / "images.zip"
    with zipfile.ZipFile(empty, "w") as zipped:
        zipped.writestr("a.png", b"\x89PNG")
    broken = read_notes(empty)
    assert not broken.notes and broken.errors[0].error == "the archive holds no note file"
    assert broken.files_failed == [str(empty)]
    # An archive inside a notes folder is an attachment, not opened.
    assert [n.id for n in read_notes(tmp_path).notes] == []


def test_unreadable_dates_and_ids_cost_the_value_not_the_conversation() -> None:
    turns = {
        "a": {
            "id": "a",
            "parent": None,
            "children": [],
            "message": {
                "author": {"role": "user"},
                "content": {"content_type": "text", "parts": ["hi there"]},
            },
        },
    }
    data = [
        {
            "mapping": turns,
            "current_node": "a",
            "id": True,
            "create_time": 1e300,
            "update_time": float("nan"),
            "title": "Dates",
        }
    ]
    chats, problems = exported_chats(data, "chatgpt")
    assert not problems
    assert (chats[0].id, chats[0].created_at, chats[0].updated_at) == (None, None, None)


def test_google_keep_and_day_one_exports_are_notes(tmp_path: Path) -> None:
    keep = tmp_path / "Takeout" / "Keep"
    keep.mkdir(parents=True)
    (keep / "Boiler service.json").write_text(
        json.dumps(
            {
                "color": "DEFAULT",
                "isTrashed": False,
                "isPinned": False,
                "isArchived": False,
                "textContent": "Boiler pressure should read 1.2 bar when cold.",
                "title": "Boiler service",
                "userEditedTimestampUsec": 1700000000000000,
                "createdTimestampUsec": 1690000000000000,
                "labels": [{"name": "house"}],
            }
        )
    )
    (keep / "Boiler service.html").write_text("<html>the same note</html>")
    (keep / "Groceries.json").write_text(
        json.dumps(
            {
                "title": "",
                "listContent": [
                    {"text": "oat milk", "isChecked": True},
                    {"text": "rye bread", "isChecked": False},
                ],
                "createdTimestampUsec": "1690000000000000",
                "isTrashed": False,
            }
        )
    )
    (keep / "Old.json").write_text(json.dumps({"textContent": "gone", "isTrashed": True}))
    # A title and an image, no text: dropped without a word before.
    photo = {"title": "Whiteboard\nafter the retro", "textContent": "", "isTrashed": False}
    (keep / "Whiteboard.json").write_text(json.dumps(photo))
    (keep / "Image.json").write_text(json.dumps({"textContent": "", "isTrashed": False}))
    (keep / "Xmas.json").write_text(json.dumps({"textContent": "xylophone lesson at six"}))
    (keep / "Labels.txt").write_text("house\n")
    journal = tmp_path / "Journal.json"
    journal.write_text(
        json.dumps(
            {
                "metadata": {"version": "1.0"},
                "entries": [
                    {
                        "uuid": "D1E2",
                        "text": "# Lisbon\n\nThe tram 28 queue was an hour at nine.",
                        "creationDate": "2024-04-02T08:10:00Z",
                        "modifiedDate": "2024-04-02T09:00:00Z",
                        "tags": ["travel"],
                    },
                    {"uuid": "EMPTY", "creationDate": "2024-04-03T08:10:00Z"},
                ],
            }
        )
    )
    result = read_notes(tmp_path)
    notes = {n.id: n for n in result.notes}
    assert set(notes) == {
        "Takeout/Keep/Boiler service.json",
        "Takeout/Keep/Groceries.json",
        "Takeout/Keep/Whiteboard.json",
        "Takeout/Keep/Xmas.json",
        "D1E2",
    }
    # The label list is no note, and a note's .html copy beside its .json is not left out.
    assert other_files(tmp_path / "Takeout") == {}
    boiler = notes["Takeout/Keep/Boiler service.json"]
    assert (boiler.title, boiler.tags) == ("Boiler service", ("house",))
    assert boiler.created_at == datetime.fromtimestamp(1690000000, tz=UTC)
    assert boiler.updated_at == datetime.fromtimestamp(1700000000, tz=UTC)
    assert notes["Takeout/Keep/Groceries.json"].content == "- [x] oat milk\n- [ ] rye bread"
    # Untitled: its first line (it was titled by its file's name); a title on two lines.
    assert notes["Takeout/Keep/Groceries.json"].title == "oat milk"
    assert notes["Takeout/Keep/Xmas.json"].title == "xylophone lesson at six"  # its x kept
    whiteboard = notes["Takeout/Keep/Whiteboard.json"]
    assert (whiteboard.title, whiteboard.content) == ("Whiteboard after the retro",) * 2
    lisbon = notes["D1E2"]
    assert (lisbon.title, lisbon.tags) == ("Lisbon", ("travel",))
    assert lisbon.created_at == datetime(2024, 4, 2, 8, 10, tzinfo=UTC)
    # A Day One entry without text (photos alone) is no note and no problem, as a Keep
    # note of an image alone (it was "missing 'content'", which said nothing of Day One).
    assert result.errors == []


_KEYS = st.sampled_from(
    [
        "mapping",
        "current_node",
        "chat_messages",
        "message",
        "author",
        "role",
        "content",
        "content_type",
        "parts",
        "text",
        "sender",
        "uuid",
        "id",
        "title",
        "name",
        "create_time",
        "textContent",
        "listContent",
        "isTrashed",
        "labels",
        "entries",
        "metadata",
        "parent",
        "current_leaf_message_uuid",
        "parent_message_uuid",
        "attachments",
        "extracted_content",
        "recipient",
        "isChecked",
        "createdTimestampUsec",
        "creationDate",
        "tags",
        "body",
        "children",
        "string",
        "create-time",
        "edit-time",
    ]
)
_LEAF = (
    st.none() | st.booleans() | st.integers(-(10**20), 10**20) | st.floats() | st.text(max_size=6)
)
_JSON = st.recursive(
    _LEAF,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_KEYS, inner, max_size=6),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=_JSON)
def test_any_json_file_is_read_without_raising(tmp_path_factory, data) -> None:
    """read_notes never raises for what a file holds: any JSON, shaped like the exports or
    not, gives notes, named problems or nothing ({"listContent": 1} once raised); so do
    canvases, Standard Notes backups and .txt files of any JSON."""
    folder = tmp_path_factory.mktemp("json")
    for name, value in (
        ("a.json", data),
        ("b.json", [data]),
        ("c.json", {"entries": [data], "metadata": {}}),
        ("d.canvas", {"nodes": [data, {"type": "text", "text": "t"}], "edges": [data]}),
        ("e.txt", {"items": [data, {"content_type": "Note", "content": data}]}),
        ("f.txt", data),
    ):
        (folder / name).write_text(json.dumps(value))
    # Any value in a Joplin item's properties or an HTML page's <meta>: a date or tags that
    # cannot be read are named, never raised.
    text = json.dumps(data).replace("\n", " ")[:80]
    (folder / ("a" * 32 + ".md")).write_text(
        f"Title\n\nBody\n\nid: {'a' * 32}\nuser_created_time: {text}\ntype_: 1"
    )
    (folder / "g.html").write_text(
        f'<meta name="created" content="{text.replace(chr(34), "")}"><p>{text}</p>'
    )
    result = read_notes(folder)
    assert all(n.content is not None for n in result.notes)


ENEX = Path(__file__).resolve().parents[1] / "fixtures" / "enex"


def test_an_evernote_export_gives_its_notes_as_text(tmp_path: Path) -> None:
    result = read_notes(ENEX / "Recipes.enex")
    assert not result.errors
    notes = {n.id: n for n in result.notes}
    assert set(notes) == {"Recipes.enex:20240305T101500Z", "Recipes.enex:20240307T140000Z"}
    starter = notes["Recipes.enex:20240305T101500Z"]
    assert (starter.title, starter.tags) == ("Sourdough starter", ("baking", "kitchen"))
    assert starter.created_at == datetime(2024, 3, 5, 10, 15, tzinfo=UTC)
    assert starter.updated_at == datetime(2024, 3, 6, 8, 10, tzinfo=UTC)
    assert starter.content == (
        "Feed the starter 1:1:1 by weight every 12 hours.\n\n"
        "- Rye flour makes it faster\n"
        "- Keep it at 24 °C\n\n"
        "[x] bought rye\n"
        "[ ] new jar"
    )
    # A note with a title and an image only is its title; one with neither is no note.
    assert notes["Recipes.enex:20240307T140000Z"].content == "Call the bakery about the oven"

    cut = tmp_path / "cut.enex"
    raw = (ENEX / "Recipes.enex").read_bytes()
    cut.write_bytes(raw[: raw.index(b"<note>", raw.index(b"</note>")) + 40])
    partial = read_notes(cut)
    assert [n.title for n in partial.notes] == ["Sourdough starter"]
    assert partial.errors[0].error.startswith("not valid XML after note 1")
    assert str(cut) in partial.files_failed  # the notes past the break are not deleted


def _enex_note(title: str, created: str, enml: str) -> str:
    return (
        f"<note><title>{title}</title><created>{created}</created>"
        f"<content><![CDATA[<en-note>{enml}</en-note>]]></content><tag>t</tag></note>"
    )


def test_an_evernote_date_that_cannot_be_read_is_said(tmp_path: Path) -> None:
    # The note was dated when first ingested, in silence.
    export = tmp_path / "odd.enex"
    export.write_text(
        '<?xml version="1.0" encoding="UTF-8"?>\n<en-export>'
        + _enex_note("Odd", "2016-07-30 11:17", "<div>one</div>")
        + _enex_note("Fine", "20160730T111759Z", "<div>two</div>")
        + "</en-export>"
    )
    result = read_notes(export)
    assert [n.title for n in result.notes] == ["Odd", "Fine"]
    assert result.notes[0].created_at is None
    said = (
        True,
        "note kept, note 'Odd': its date '2016-07-30 11:17' is not Evernote's "
        "20240305T101500Z; dated when first ingested",
    )
    assert said in [(e.kept, e.error) for e in result.errors]  # beside its id by place
    assert str(export) in result.files_ok


def test_evernote_notes_of_one_second_and_a_note_whose_xml_breaks_are_all_kept(
    tmp_path: Path,
) -> None:
    # Notes imported in bulk share their creation second: each keeps its own id, by its
    # place among them. A note whose ENML holds a CDATA section of its own (Evernote has
    # exported such) ends the content's early: the XML breaks, and that note and the ones
    # after it are read field by field instead of lost.
    same = "20160730T111759Z"
    broken = (
        "<note><title>Scan</title><created>20130228T193612Z</created><content><![CDATA["
        "<en-note><div>Receipt &amp; scan</div><![CDATA[DSCN0716.JPG]]></en-note>]]>"
        "</content><tag>paper</tag></note>"
    )
    export = tmp_path / "bulk.enex"
    export.write_text(
        '<?xml version="1.0" encoding="UTF-8"?>\n<en-export>'
        + _enex_note("First", same, "<div>one</div>")
        + _enex_note("Second", same, "<div>two</div>")
        + broken
        + _enex_note("Third", same, "<div>three</div>")
        + "</en-export>"
    )
    result = read_notes(export)
    notes = {n.id: n for n in result.notes}
    assert list(notes) == [
        f"bulk.enex:{same}",
        f"bulk.enex:{same}#2",
        "bulk.enex:20130228T193612Z",
        f"bulk.enex:{same}#3",
    ]
    scan = notes["bulk.enex:20130228T193612Z"]
    assert (scan.title, scan.content, scan.tags) == (
        "Scan",
        "Receipt & scan\nDSCN0716.JPG",
        ("paper",),
    )
    assert notes[f"bulk.enex:{same}#3"].content == "three"
    assert [(e.kept, e.error) for e in result.errors] == [
        (True, "note kept, 1 of its notes' XML did not parse; read field by field")
    ]
    assert str(export) in result.files_ok


def test_a_roam_research_export_gives_one_outline_per_page(tmp_path: Path) -> None:
    pages = [
        {
            "title": "Postgres",
            "children": [
                {
                    "string": "VACUUM FULL locks the table",
                    "uid": "a1",
                    "create-time": 1700000000000,
                    "edit-time": 1700000500000,
                    "children": [{"string": "use pg_repack instead", "uid": "a2"}],
                },
                {"string": "", "uid": "a3"},
            ],
            "create-time": 1699999000000,
        },
        {"title": "Empty page", "children": []},
        {"title": "March 5th, 2024", "children": [{"string": "met [[Ana]] about [[Postgres]]"}]},
    ]
    (tmp_path / "graph.json").write_text(json.dumps(pages))
    result = read_notes(tmp_path)
    assert not result.errors
    notes = {n.id: n for n in result.notes}
    assert set(notes) == {"Postgres", "March 5th, 2024"}
    postgres = notes["Postgres"]
    assert postgres.content == "- VACUUM FULL locks the table\n  - use pg_repack instead"
    assert postgres.created_at == datetime.fromtimestamp(1699999000, tz=UTC)
    assert postgres.updated_at == datetime.fromtimestamp(1700000500, tz=UTC)
    # The page's own edit time counts too (a block removed leaves no block's time).
    pages[0]["edit-time"] = 1700000900000
    (tmp_path / "graph.json").write_text(json.dumps(pages))
    edited = {n.id: n for n in read_notes(tmp_path).notes}["Postgres"]
    assert edited.updated_at == datetime.fromtimestamp(1700000900, tz=UTC)


def test_two_roam_exports_side_by_side_keep_each_pages_latest_edit(tmp_path: Path) -> None:
    # The second export's pages were dropped as duplicates of the first's: a newer export
    # read after an older one lost its edits.
    def page(text: str, edited: int) -> dict:
        block = {"string": text, "uid": "b1", "create-time": 1, "edit-time": edited}
        return {"title": "Postgres", "children": [block], "create-time": 1}

    newer = [page("VACUUM FULL locks the table; use pg_repack", 1_700_000_900_000)]
    older = [page("VACUUM FULL locks the table", 1_700_000_500_000)]
    for first, second in ((older, newer), (newer, older)):  # whichever is read first
        folder = tmp_path / str(len(list(tmp_path.iterdir())))
        folder.mkdir()
        (folder / "roam-a.json").write_text(json.dumps(first))
        (folder / "roam-b.json").write_text(json.dumps(second))
        result = read_notes(folder)
        (note,) = result.notes
        assert note.content == "- VACUUM FULL locks the table; use pg_repack"
        (error,) = result.errors
        assert "duplicate note id 'Postgres'" in error.error


def test_a_standard_notes_backup_is_read_and_a_json_txt_file_is_no_note(tmp_path: Path) -> None:
    # Standard Notes names its decrypted backup as a .txt file holding JSON: its notes are
    # read (trash left out, tags from Tag items); any other .txt of JSON is data, not a note.
    backup = {
        "version": "004",
        "items": [
            {"uuid": "n1", "content_type": "Note", "created_at": "2024-03-05T10:15:00.000Z",
             "updated_at": "2024-03-06T08:00:00.000Z",
             "content": {"title": "Boiler", "text": "Service due in May", "references": []}},
            {"uuid": "n2", "content_type": "Note", "created_at": "2024-01-01T00:00:00.000Z",
             "content": {"title": "Old", "text": "gone", "trashed": True}},
            {"uuid": "t1", "content_type": "Tag",
             "content": {"title": "house", "references": [{"uuid": "n1", "content_type": "Note"}]}},
            {"uuid": "c1", "content_type": "SN|Component", "content": {"name": "editor"}},
        ],
    }  # fmt: skip
    (tmp_path / "Standard Notes Backup and Import File.txt").write_text(json.dumps(backup))
    (tmp_path / "settings.txt").write_text('{"theme": "dark"}')
    (tmp_path / "shopping.txt").write_text("[ ] milk\n[ ] bread\n")  # starts with [, no JSON
    result = read_notes(tmp_path)
    assert result.errors == []
    notes = {n.id: n for n in result.notes}
    assert set(notes) == {"n1", "shopping.txt"}
    boiler = notes["n1"]
    assert (boiler.title, boiler.content, boiler.tags) == (
        "Boiler",
        "Service due in May",
        ("house",),
    )
    assert boiler.created_at == datetime(2024, 3, 5, 10, 15, tzinfo=UTC)
    named = read_notes(tmp_path / "settings.txt")
    assert named.notes == [] and "not a note file" in named.errors[0].error
