import json
import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from selene_dag.notes.ingest import read_notes
from selene_dag.notes.listing import note_files


def test_bundled_corpus_reads_577_notes_equal_to_source(demo_notes):
    result = read_notes(demo_notes)
    assert result.errors == []
    assert len(result.notes) == 577
    source = [json.loads(line) for line in demo_notes.read_text().splitlines()]
    by_id = {n.id: n for n in result.notes}
    for row in source:
        note = by_id[row["id"]]
        assert note.title == row["title"]
        assert note.content == row["content"]
        assert note.topic == row["topic"]
        assert note.created_at == datetime.fromisoformat(row["created_at"])
        assert note.updated_at == datetime.fromisoformat(row["updated_at"])


def test_markdown_front_matter_and_fallbacks(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "a.md").write_text(
        "---\ntitle: Front title\ncreated: 2024-01-02\ntags: [x, y]\ntheme: cooking\n---\n# Heading\nBody"
    )
    (tmp_path / "sub" / "b.md").write_text("Intro line\n\n# The Heading\n\ntext")
    (tmp_path / "c.md").write_text("no heading at all")
    (tmp_path / ".hidden.md").write_text("# skipped")
    result = read_notes(tmp_path)
    by_id = {n.id: n for n in result.notes}
    assert set(by_id) == {"a.md", "sub/b.md", "c.md"}
    a = by_id["a.md"]
    assert (a.title, a.topic, a.tags) == ("Front title", "cooking", ("x", "y"))
    assert a.created_at == datetime(2024, 1, 2, tzinfo=UTC)
    assert a.content.startswith("# Heading")
    assert by_id["sub/b.md"].title == "The Heading"
    assert by_id["c.md"].title == "c"
    # Without front-matter dates the writer finds them (the stored ones, or this mtime
    # when the note is first stored or its text changed).
    mtime = datetime.fromtimestamp((tmp_path / "c.md").stat().st_mtime, tz=UTC)
    c = by_id["c.md"]
    assert (c.created_at, c.updated_at, c.modified_at) == (None, None, mtime)


def test_plain_text_and_other_markdown_suffixes_are_notes(tmp_path):
    (tmp_path / "Groceries.txt").write_text("milk\neggs\nthe good bread from the corner shop\n")
    (tmp_path / "page.mdx").write_text("---\ntitle: Component docs\n---\n<Button /> takes a size.")
    (tmp_path / "old.markdown").write_text("# Old post\n\ntext")
    (tmp_path / "draft.mdown").write_text("draft text")
    (tmp_path / "photo.png").write_bytes(b"\x89PNG\r\n")
    (tmp_path / "notes.org").write_text("* org heading")
    (tmp_path / "letter.rtf").write_text("{\\rtf1 not read}")
    result = read_notes(tmp_path)
    titles = {n.id: n.title for n in result.notes}
    assert titles == {
        "Groceries.txt": "Groceries",
        "page.mdx": "Component docs",
        "old.markdown": "Old post",
        "draft.mdown": "draft",
        "notes.org": "org heading",
    }
    assert not result.errors
    assert next(n for n in result.notes if n.id == "Groceries.txt").content.startswith("milk\n")


def test_a_comment_in_a_code_block_is_no_title(tmp_path):
    # "# install deps" in a bash block titled the note "install deps".
    fence = "`" * 3
    (tmp_path / "build-box.md").write_text(
        f"How I set up the build box.\n\n{fence}bash\n# install deps\nsudo apt install gcc\n"
        f"{fence}\n\n# Build box setup\nDone.\n"
    )
    (tmp_path / "only-code.md").write_text(f"{fence}sh\n# comment line\nls\n{fence}\n")
    # A fence of four holds one of three; an HTML comment holds a heading too.
    (tmp_path / "nested.md").write_text(
        f"````md\n{fence}\n# inner\n{fence}\n# still inside\n````\nBody.\n"
    )
    (tmp_path / "commented.md").write_text("<!--\n# html comment -->\n# Real title\n")
    titles = {n.id: n.title for n in read_notes(tmp_path).notes}
    assert titles == {
        "build-box.md": "Build box setup",
        "only-code.md": "only-code",
        "nested.md": "nested",
        "commented.md": "Real title",
    }


def test_a_textbundle_is_titled_by_its_name(tmp_path):
    # Bear and Ulysses export a note as a folder: text.md (or .markdown), info.json, assets.
    bundle = tmp_path / "Trip to Lisbon.textbundle"
    (bundle / "assets").mkdir(parents=True)
    (bundle / "text.markdown").write_text("Tram 28 before nine; the castle after lunch.")
    (bundle / "info.json").write_text('{"version": 2, "type": "net.daringfireball.markdown"}')
    (bundle / "assets" / "tram.jpg").write_bytes(b"\xff\xd8")
    result = read_notes(tmp_path)
    assert [(n.id, n.title) for n in result.notes] == [
        ("Trip to Lisbon.textbundle/text.markdown", "Trip to Lisbon")
    ]
    assert result.errors == []


def _bear_info(created: str, trashed: int = 0) -> str:
    # The info.json Bear writes beside each note's text (its backups and exports).
    bear = {"creationDate": created, "modificationDate": "2024-03-06T09:00:00+0100",
            "trashed": trashed, "archived": 0, "uniqueIdentifier": "AB0089B3-24F7"}  # fmt: skip
    return json.dumps({"net.shinyfrog.bear": bear, "type": "net.daringfireball.markdown"})


def test_a_bear_backup_is_read_as_downloaded_with_bears_dates_and_no_trash(tmp_path):
    import zipfile

    backup = tmp_path / "Bear Notes 2024-03-07.bear2bk"
    with zipfile.ZipFile(backup, "w") as zipped:
        zipped.writestr("Bear Notes/Trip.textbundle/text.markdown", "# Trip\nTram 28 at nine")
        zipped.writestr(
            "Bear Notes/Trip.textbundle/info.json", _bear_info("2024-03-05T10:15:00+0100")
        )
        zipped.writestr("Bear Notes/Trip.textbundle/assets/tram.jpg", b"\xff\xd8")
        zipped.writestr("Bear Notes/Old.textbundle/text.markdown", "# Old\nthrown away")
        zipped.writestr(
            "Bear Notes/Old.textbundle/info.json", _bear_info("2020-01-01T00:00:00Z", 1)
        )
        zipped.writestr("Bear Notes/Bare.textbundle/text.markdown", "no info.json here")
    result = read_notes(backup)
    assert result.errors == []
    notes = {n.title: n for n in result.notes}
    assert set(notes) == {"Trip", "Bare"}  # the trashed note is left out
    assert notes["Trip"].created_at == datetime(2024, 3, 5, 9, 15, tzinfo=UTC)
    assert notes["Trip"].updated_at == datetime(2024, 3, 6, 8, tzinfo=UTC)
    assert notes["Bare"].created_at is None

    # The same bundles unzipped into a folder read the same way.
    folder = tmp_path / "unzipped"
    with zipfile.ZipFile(backup) as zipped:
        zipped.extractall(folder)
    again = {n.title: n.created_at for n in read_notes(folder).notes}
    assert again == {n.title: n.created_at for n in result.notes}


def test_a_home_inside_the_notes_folder_is_not_read_as_notes(tmp_path):
    (tmp_path / "ideas.md").write_text("# Ideas\nwrite less")
    home = tmp_path / "selene"  # SELENE_HOME set to a folder inside the notes
    (home / "distilled").mkdir(parents=True)
    (home / "selene.duckdb").write_bytes(b"")
    (home / "distilled" / "session.md").write_text("# A distilled session")
    (home / "distilled" / "session.jsonl").write_text('{"type": "user"}\n')
    other = tmp_path / "projects" / "old-home"  # another home, its database elsewhere
    (other / "dagster").mkdir(parents=True)
    (other / "dagster" / "dagster.yaml").write_text("storage: {}")
    (other / "distilled.md").write_text("# distilled")
    (tmp_path / "projects" / "plan.md").write_text("# Plan")
    (tmp_path / "gone.md").symlink_to(tmp_path / "missing.md")  # a broken link
    os.mkfifo(tmp_path / "pipe.md")  # reading it would wait forever
    graph = tmp_path / "graph"  # a Logseq graph: its pages, and its app folder's backups
    (graph / "pages").mkdir(parents=True)
    (graph / "pages" / "kafka.md").write_text("- retention is per topic")
    (graph / "logseq" / "bak" / "pages" / "kafka").mkdir(parents=True)
    (graph / "logseq" / "config.edn").write_text("{:meta/version 1}")
    (graph / "logseq" / "bak" / "pages" / "kafka" / "2024-05-01.md").write_text("- old copy")
    site = tmp_path / "projects" / "site"  # a notes site's repository: packages inside
    (site / "node_modules" / "left-pad").mkdir(parents=True)
    (site / "node_modules" / "left-pad" / "README.md").write_text("# left-pad")
    (site / "venv" / "lib").mkdir(parents=True)
    (site / "venv" / "pyvenv.cfg").write_text("home = /usr/bin")
    (site / "venv" / "lib" / "LICENSE.txt").write_text("MIT")
    (site / "index.md").write_text("# Home")
    (tmp_path / "elsewhere").symlink_to(graph / "pages")  # a link to a folder: not entered
    (tmp_path / "linked.md").symlink_to(tmp_path / "ideas.md")  # a link to a file: read
    files = note_files(tmp_path)
    assert [f.relative_to(tmp_path).as_posix() for f in files] == [
        "graph/pages/kafka.md",
        "ideas.md",
        "linked.md",
        "projects/plan.md",
        "projects/site/index.md",
    ]
    assert note_files(home / "distilled") == sorted((home / "distilled").iterdir())  # asked for


def test_logseq_page_properties_give_title_and_tags(tmp_path):
    (tmp_path / "pages").mkdir()
    (tmp_path / "pages" / "kafka___retention.md").write_text(
        "title:: Kafka/Retention\ntags:: [[kafka]], ops\n\n- retention.ms is per topic\n"
    )
    (tmp_path / "pages" / "plain.md").write_text("- a block\ntitle:: not a property here\n")
    notes = {n.id: n for n in read_notes(tmp_path).notes}
    kafka = notes["pages/kafka___retention.md"]
    assert (kafka.title, kafka.tags) == ("Kafka/Retention", ("kafka", "ops"))
    # Metadata, as front matter is: it would open every essence and excerpt of the page.
    assert kafka.content == "- retention.ms is per topic\n"
    assert notes["pages/plain.md"].title == "plain"
    assert "title:: not a property here" in notes["pages/plain.md"].content


def test_logseq_block_ids_and_folding_are_not_the_notes_text(tmp_path):
    # Logseq writes `id:: <uuid>` under a block another references and `collapsed:: true`
    # under one folded in its editor: 43% of an outline page's tokens, in excerpts and
    # themes, and folding a block was an edit of the note.
    (tmp_path / "pages").mkdir()
    uuid = "6556a1f2-0c11-4b7e-9d2a-111111111111"
    (tmp_path / "pages" / "servers.md").write_text(
        f"- db-17\n  id:: {uuid}\n  collapsed:: true\n\t- ip 10.1.1.117\n"
        "\t  mood:: calm\n- ```\n  id:: 6556a1f2-0c11-4b7e-9d2a-222222222222\n  ```\n"
        "- id:: not-a-uuid, a sentence of the author's\n"
    )
    content = read_notes(tmp_path).notes[0].content
    assert "collapsed::" not in content and uuid not in content
    assert "- db-17\n\t- ip 10.1.1.117\n\t  mood:: calm\n" in content  # the author's property
    assert "id:: 6556a1f2-0c11-4b7e-9d2a-222222222222" in content  # inside a code block
    assert "- id:: not-a-uuid, a sentence of the author's" in content


def test_bad_files_and_lines_are_counted_not_raised(tmp_path):
    (tmp_path / "good.md").write_text("# Good\nfine")
    (tmp_path / "latin1.md").write_bytes("# Caf\xe9 \u2013 cr\xe8me\n".encode("cp1252"))
    (tmp_path / "bad-byte.md").write_bytes("# Na\xefve \xe9t\xe9\n".encode() + b"\xff")
    # Windows-1252 ending in an accent, a short one; Russian in Windows-1251: replaced,
    # not misread as Latin.
    (tmp_path / "cut.md").write_bytes("# Menu: caf\xe9".encode("cp1252"))
    (tmp_path / "short.md").write_bytes("# \xc0 c\xf4t\xe9".encode("cp1252"))
    (tmp_path / "russian.md").write_bytes(
        "# \u041f\u0440\u0438\u0432\u0435\u0442 \u043c\u0438\u0440".encode("cp1251")
    )
    (tmp_path / "broken.md").write_text("---\ntitle: [unclosed\n---\nbody")
    (tmp_path / "unclosed.md").write_text("---\ntitle: x\nbody without end")
    lines = [
        json.dumps(
            {"id": "j1", "title": "J1", "content": "c", "created_at": "2024-01-01T00:00:00Z"}
        ),
        "{not json",
        json.dumps(["a list"]),
        json.dumps({"id": "j2", "content": 5, "created_at": "2024-01-01"}),
        json.dumps({"id": "j3", "title": "J3", "content": "c3", "created_at": "2024-01-03"}),
    ]
    (tmp_path / "notes.jsonl").write_text("\n".join(lines))
    (tmp_path / "empty.md").write_text("---\ntitle: Nothing\n---\n\n")
    result = read_notes(tmp_path)
    # A broken front-matter or a bad byte costs the metadata or the byte, not the note;
    # an empty note is skipped. Every problem is recorded with its reason.
    kept = sorted(n.id for n in result.notes)
    assert kept == [
        "bad-byte.md",
        "broken.md",
        "cut.md",
        "good.md",
        "j1",
        "j3",
        "latin1.md",
        "russian.md",
        "short.md",
        "unclosed.md",
    ]
    by_id = {n.id: n for n in result.notes}
    assert by_id["broken.md"].content.strip() == "body"
    # A file in a one-byte encoding is read as Windows-1252 (its bytes were replaced:
    # "Caf\ufffd"); a UTF-8 file with a bad byte keeps its UTF-8, the byte replaced.
    assert by_id["latin1.md"].title == "Caf\xe9 \u2013 cr\xe8me"
    assert by_id["bad-byte.md"].content.endswith("\ufffd")
    assert by_id["cut.md"].title == "Menu: caf\xe9"
    assert by_id["short.md"].title == "\xc0 c\xf4t\xe9"
    assert by_id["russian.md"].title == "\ufffd" * 6 + " " + "\ufffd" * 3
    assert "body without end" in by_id["unclosed.md"].content
    errors = {(e.source.rsplit("/", 1)[-1], e.line) for e in result.errors}
    assert errors == {
        ("latin1.md", None),
        ("bad-byte.md", None),
        ("cut.md", None),
        ("russian.md", None),
        ("short.md", None),
        ("broken.md", None),
        ("unclosed.md", None),
        ("notes.jsonl", 2),
        ("notes.jsonl", 3),
        ("notes.jsonl", 4),
        ("empty.md", None),
    }
    assert all(e.error for e in result.errors)
    reasons = {e.source.rsplit("/", 1)[-1]: e.error for e in result.errors if e.line is None}
    assert reasons["broken.md"].startswith("note kept, front-matter line ")
    assert reasons["broken.md"].endswith("; title left out (unreadable)")
    assert reasons["latin1.md"].startswith("note kept, not UTF-8: read as Windows-1252")
    assert reasons["bad-byte.md"].startswith("note kept, invalid UTF-8 replaced")
    assert reasons["empty.md"] == "empty note: no text after the front-matter"


def test_data_version_depends_only_on_ids_and_content(tmp_path):
    (tmp_path / "a.md").write_text("# A\none")
    first = read_notes(tmp_path).data_version()
    assert read_notes(tmp_path).data_version() == first
    (tmp_path / "a.md").write_text("# A\ntwo")
    assert read_notes(tmp_path).data_version() != first


def test_an_unreadable_optional_value_costs_the_value_not_the_note(tmp_path):
    # A date nobody can read or tags of the wrong shape are ignored and reported, in
    # front-matter as in a JSONL line; a line without its text is still skipped.
    (tmp_path / "a.md").write_text(
        "---\ntitle: Kept\ncreated: last tuesday\ntags: {a: 1}\ntheme: ok\n---\nBody text\n"
    )
    lines = [
        {"id": "j1", "content": "c1", "created_at": "soon", "updated_at": "2024-02-02"},
        {"id": "j2", "content": "c2", "title": ["not", "text"], "tags": "x, y"},
        {"id": "j3", "title": "no text"},
        {"id": "j4", "content": "   \n "},  # as an empty file: no note
    ]
    (tmp_path / "notes.jsonl").write_text("\n".join(json.dumps(line) for line in lines))
    result = read_notes(tmp_path)
    by_id = {n.id: n for n in result.notes}
    assert sorted(by_id) == ["a.md", "j1", "j2"]
    a, j1, j2 = by_id["a.md"], by_id["j1"], by_id["j2"]
    assert (a.title, a.created_at, a.tags, a.topic) == ("Kept", None, (), "ok")
    assert (j1.created_at, j1.updated_at) == (None, datetime(2024, 2, 2, tzinfo=UTC))
    assert (j2.title, j2.tags) == ("j2", ("x", "y"))
    reasons = {(e.source.rsplit("/", 1)[-1], e.line): e.error for e in result.errors}
    assert reasons[("a.md", None)] == (
        "note kept, front-matter created (unreadable date 'last tuesday'), "
        "tags ('tags' must be a list or a comma-separated string, got dict) ignored"
    )
    assert reasons[("notes.jsonl", 1)] == ("note kept, created_at (unreadable date 'soon') ignored")
    assert reasons[("notes.jsonl", 2)] == "note kept, title (expected text, got list) ignored"
    assert reasons[("notes.jsonl", 3)].startswith("missing 'content'")
    assert reasons[("notes.jsonl", 4)] == "empty note: 'content' holds no text"


@pytest.mark.parametrize(
    "value", ["2024-13-45", "2024-02-30", "2024-01-01 25:00:00", "2024-01-01T10:00:00+25:00"]
)
def test_a_date_that_is_no_date_in_front_matter_costs_the_value_not_the_ingest(tmp_path, value):
    # YAML reads date-shaped values as dates; one that is no date raised out of the loader
    # and failed the whole folder's ingest.
    (tmp_path / "bad.md").write_text(f"---\ntitle: Bad\ncreated: {value}\n---\nThe orchid text.\n")
    (tmp_path / "good.md").write_text("---\ncreated: 2024-01-02\n---\nFine.\n")
    result = read_notes(tmp_path)
    by_id = {n.id: n for n in result.notes}
    assert by_id["bad.md"].title == "Bad" and by_id["bad.md"].created_at is None
    assert by_id["good.md"].created_at == datetime(2024, 1, 2, tzinfo=UTC)
    (error,) = result.errors
    assert error.error == f"note kept, front-matter created (unreadable date '{value}') ignored"


def test_a_file_name_that_is_not_utf8_keeps_its_note_and_a_binary_file_is_named(tmp_path):
    # A latin-1 file name (bytes Python keeps as lone surrogates, which no UTF-8 store
    # takes) is stored with its bytes written \xNN; a binary file named .md is skipped
    # with its reason rather than stored as pages of replacement characters.
    folder = os.fsencode(tmp_path)
    with open(os.path.join(folder, b"caf\xe9.md"), "wb") as handle:
        handle.write("# Café\nLatin-1 name, UTF-8 text.\n".encode())
    (tmp_path / "image.md").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR" + bytes(range(256)))
    result = read_notes(tmp_path)
    assert [(n.id, n.title) for n in result.notes] == [("caf\\xe9.md", "Café")]
    assert result.notes[0].source.endswith("/caf\\xe9.md")
    reasons = {e.source.rsplit("/", 1)[-1]: e.error for e in result.errors}
    assert reasons == {
        "caf\\xe9.md": "note kept, its file name is not UTF-8 (stored with those bytes written \\xNN)",
        "image.md": "not a text file (it holds NUL bytes)",
    }
    assert result.files_ok == [result.notes[0].source]


def test_files_saved_with_a_byte_order_mark_read_as_their_text(tmp_path):
    # Windows editors and PowerShell write a byte order mark, and their "Unicode" is
    # UTF-16: each file below gives its notes whole, the first line of a JSONL file too.
    line = json.dumps({"id": "p1", "content": "exported by PowerShell"})
    (tmp_path / "utf8.jsonl").write_bytes(b"\xef\xbb\xbf" + line.encode() + b"\r\n")
    (tmp_path / "utf16.jsonl").write_bytes(
        json.dumps({"id": "p2", "content": "Out-File"}).encode("utf-16")
    )
    (tmp_path / "le.md").write_bytes("# Réunion\r\nOrdre du jour\r\n".encode("utf-16"))
    (tmp_path / "be.md").write_bytes(b"\xfe\xff" + "# Big endian\n\ntext".encode("utf-16-be"))
    result = read_notes(tmp_path)
    assert result.errors == []
    got = {n.id: (n.title, n.content) for n in result.notes}
    assert got == {
        "p1": ("p1", "exported by PowerShell"),
        "p2": ("p2", "Out-File"),
        "le.md": ("Réunion", "# Réunion\nOrdre du jour\n"),  # one kind of line end
        "be.md": ("Big endian", "# Big endian\n\ntext"),
    }


def test_jsonl_lines_without_ids_are_named_by_place_and_text_is_read_from_its_aliases(
    tmp_path,
):
    # A line without an id is named by its file and line number, said once per file; its
    # text may be called text or body; a line without text is skipped with the reason.
    lines = [
        {"title": "First", "content": "one"},
        {"id": "named", "text": "two"},
        {"body": "three", "created_at": "2024-01-01"},
        {"title": "No text at all"},
        {"id": "x", "content": 4},
    ]
    (tmp_path / "export.jsonl").write_text("\n".join(json.dumps(v) for v in lines))
    result = read_notes(tmp_path)
    got = {n.id: (n.title, n.content) for n in result.notes}
    assert got == {
        "export.jsonl:1": ("First", "one"),
        "named": ("named", "two"),
        "export.jsonl:3": ("export.jsonl:3", "three"),
    }
    reasons = {e.line: e.error for e in result.errors}
    assert reasons == {
        4: "missing 'content' (the note's text; 'text' or 'body' are read too)",
        5: "'content' must be a string",
        None: "note kept, 2 lines without an 'id' named by place ('export.jsonl:<line>'): "
        "a line inserted above one changes its id",
    }


def test_dates_are_read_under_the_names_site_generators_give_them(tmp_path):
    # Jekyll and Hugo posts carry `date` and `lastmod`; a JSONL export may say `date`.
    (tmp_path / "post.md").write_text(
        "---\ntitle: Post\ndate: 2023-04-05\nlastmod: 2023-06-07T08:00:00Z\n---\nBody\n"
    )
    (tmp_path / "log.jsonl").write_text(
        json.dumps({"id": "l1", "content": "x", "date": "2022-01-02", "modified": "2022-03-04"})
    )
    by_id = {n.id: n for n in read_notes(tmp_path).notes}
    assert (by_id["post.md"].created_at, by_id["post.md"].updated_at) == (
        datetime(2023, 4, 5, tzinfo=UTC),
        datetime(2023, 6, 7, 8, tzinfo=UTC),
    )
    assert (by_id["l1"].created_at, by_id["l1"].updated_at) == (
        datetime(2022, 1, 2, tzinfo=UTC),
        datetime(2022, 3, 4, tzinfo=UTC),
    )


def test_a_daily_note_takes_its_creation_date_from_its_name(tmp_path):
    # Obsidian and Logseq name daily notes by their day; front-matter still wins, and a
    # name that is no valid day (or a longer number) gives no date.
    (tmp_path / "2024-03-05.md").write_text("standup")
    (tmp_path / "journals").mkdir()
    (tmp_path / "journals" / "2023_12_31 review.md").write_text("year review")
    (tmp_path / "2024-13-45.md").write_text("not a day")
    (tmp_path / "120240305.md").write_text("a number")
    (tmp_path / "2022-01-01.md").write_text("---\ncreated: 2021-06-01\n---\nfront wins")
    got = {n.id: n.created_at for n in read_notes(tmp_path).notes}
    assert got == {
        "2024-03-05.md": datetime(2024, 3, 5, tzinfo=UTC),
        "journals/2023_12_31 review.md": datetime(2023, 12, 31, tzinfo=UTC),
        "2024-13-45.md": None,
        "120240305.md": None,
        "2022-01-01.md": datetime(2021, 6, 1, tzinfo=UTC),
    }


def test_windows_line_ends_and_hashtag_lists(tmp_path):
    # A note saved on Windows keeps one kind of line end in the store (packs mixed two);
    # tags written as hashtags separated by spaces are several tags, not one.
    (tmp_path / "w.md").write_bytes(
        b"---\r\ntags: '#aws #til'\r\n---\r\n# Title\r\n\r\nBody line.\r\n"
    )
    (note,) = read_notes(tmp_path).notes
    assert "\r" not in note.content and note.content.startswith("# Title\n\nBody line.")
    assert note.tags == ("aws", "til")


def test_a_daily_summary_line_does_not_say_the_title_twice():
    from selene_dag.notes.daily import note_line

    # A short note's essence is its title: "- Sourdough bake: Sourdough bake." read twice.
    assert note_line("Sourdough bake", "Sourdough bake.", None, "") == "- Sourdough bake."
    assert note_line("Bread", "Rye needs a longer proof.", None, "") == (
        "- Bread: Rye needs a longer proof."
    )


def test_a_value_holding_a_colon_keeps_the_front_matter_and_the_problem_names_its_line(
    tmp_path,
):
    # `title: Decision: which offer` made YAML refuse the whole front matter ("mapping
    # values are not allowed in this context"): the created date and tags were lost for
    # the file's date, and the message named neither the line nor the field.
    (tmp_path / "offer.md").write_text(
        "---\ncreated: 2025-03-02\ntitle: Decision: which offer\ntags:\n  - jobs\n  - offer\n"
        "---\nWe take the Northwind offer.\n"
    )
    (tmp_path / "flow.md").write_text(
        '---\ntitle: Decision: which offer\ntags: [career, "offers"]\ndescription: |\n'
        "  Why: the salary.\n  And the team.\n---\nBody.\n"
    )
    (tmp_path / "broken.md").write_text("---\ncreated: 2025-03-02\ntitle: [unclosed\n---\nbody")
    result = read_notes(tmp_path)
    offer = next(n for n in result.notes if n.id == "offer.md")
    assert offer.title == "Decision: which offer"
    assert offer.created_at.date().isoformat() == "2025-03-02"
    assert list(offer.tags) == ["jobs", "offer"]
    flow = next(n for n in result.notes if n.id == "flow.md")
    assert (flow.title, list(flow.tags)) == ("Decision: which offer", ["career", "offers"])
    reasons = {e.source.rsplit("/", 1)[-1]: e.error for e in result.errors}
    assert "front-matter line 3: mapping values are not allowed" in reasons["offer.md"]
    assert "quote a value that holds ': '" in reasons["offer.md"]
    # An unclosed list costs its own field only: the created date stays.
    assert reasons["broken.md"].startswith("note kept, front-matter line 4: ")
    assert reasons["broken.md"].endswith("; title left out (unreadable)")
    broken = next(n for n in result.notes if n.id == "broken.md")
    assert (broken.title, broken.created_at.date().isoformat()) == ("broken", "2025-03-02")
    # A list YAML cannot read, beside such a value, is dropped (it was split at its commas
    # into the tags "[unclosed" and "list").
    (tmp_path / "half.md").write_text("---\ntitle: Also: broken\ntags: [unclosed, list\n---\nx")
    half = next(n for n in read_notes(tmp_path).notes if n.id == "half.md")
    assert (half.title, half.tags) == ("Also: broken", ())


def test_an_empty_front_matter_is_read_as_one(tmp_path):
    # "---" twice was "front-matter ignored: no closing '---' line", both lines kept in
    # the note's text; a front matter left open still says so.
    (tmp_path / "empty.md").write_text("---\n---\n# Body\nText.\n\n---\n\nAfter a rule.\n")
    (tmp_path / "open.md").write_text("---\ntitle: x\n# Body\nText.\n")
    result = read_notes(tmp_path)
    notes = {n.id.rsplit("/", 1)[-1]: n for n in result.notes}
    # A rule further down is the text's (it took "# Body" and "Text." for a front matter).
    assert notes["empty.md"].content == "# Body\nText.\n\n---\n\nAfter a rule.\n"
    assert notes["open.md"].content.startswith("---\n")
    problems = {e.source.rsplit("/", 1)[-1]: e.error for e in result.errors}
    assert "empty.md" not in problems
    assert "no closing '---' line" in problems["open.md"]


def test_a_note_opening_with_a_rule_keeps_its_text(tmp_path):
    # The lines between a first rule and the next were taken for a front matter and cut:
    # a heading without a word (YAML reads "# ..." as a comment), prose with "ignored".
    (tmp_path / "heading.md").write_text("---\n# Chapter 1\n---\nBody text.\n")
    (tmp_path / "prose.md").write_text("---\nSome prose here.\n---\nMore.\n")
    notes = {n.id: n for n in read_notes(tmp_path).notes}
    assert notes["heading.md"].content == "---\n# Chapter 1\n---\nBody text.\n"
    assert notes["heading.md"].title == "Chapter 1"
    assert notes["prose.md"].content.startswith("---\nSome prose here.")


def test_an_empty_content_beside_a_text_reads_the_text(tmp_path):
    # The first of content/text/body present was taken even when empty: the note was
    # dropped (and, once empty notes counted as read, marked deleted).
    (tmp_path / "n.jsonl").write_text(
        '{"id": "a", "content": "", "text": "Real text A"}\n'
        '{"id": "b", "content": "  ", "body": "Real text B"}\n'
        '{"id": "c", "content": "C", "body": {"blocks": []}}\n'
    )
    notes = {n.id: n.content for n in read_notes(tmp_path).notes}
    assert notes == {"a": "Real text A", "b": "Real text B", "c": "C"}


def test_a_page_named_as_a_note_beside_it_is_said_to_be_passed_over(tmp_path):
    # a.html beside a.md was left out without a word, whatever it held; a Keep note's
    # .html beside its .json is one note by design and is said of none.
    (tmp_path / "a.md").write_text("# A\naardvark\n")
    (tmp_path / "a.html").write_text("<html><body><p>dingo</p></body></html>")
    (tmp_path / "k.json").write_text(
        '{"title": "k", "textContent": "keep note", "isTrashed": false,'
        ' "userEditedTimestampUsec": 1}'
    )
    (tmp_path / "k.html").write_text("<html><body>keep note</body></html>")
    result = read_notes(tmp_path)
    assert sorted(n.id for n in result.notes) == ["a.md", "k.json"]
    said = [(e.source.rsplit("/", 1)[-1], e.kept) for e in result.errors]
    assert said == [("a.html", True)]
    assert "copy of a.md beside it" in result.errors[0].error


def test_two_notes_given_one_front_matter_id_are_both_kept(tmp_path):
    # A template's `id: {{date}}` gives two notes written in one minute the same id: the
    # second keeps its path as its id (it was dropped as a duplicate), and the input
    # problem says so. A copy of one note (same title) is still kept once.
    (tmp_path / "a.md").write_text("---\nid: 202401011200\n---\n# Grocery list\n\nMilk.\n")
    (tmp_path / "b.md").write_text("---\nid: 202401011200\n---\n# Meeting with Ana\n\nFriday.\n")
    (tmp_path / "c.md").write_text("---\nid: 202401011200\n---\n# Grocery list\n\nMilk, eggs.\n")
    result = read_notes(tmp_path)
    assert {n.id: n.title for n in result.notes} == {
        "202401011200": "Grocery list",
        "b.md": "Meeting with Ana",
    }
    problems = {e.source.rsplit("/", 1)[-1]: e for e in result.errors}
    assert problems["b.md"].kept and "'b.md' is its id" in problems["b.md"].error
    assert not problems["c.md"].kept and "kept the first" in problems["c.md"].error
    assert sorted(result.files_ok) == sorted(str(tmp_path / f) for f in ("a.md", "b.md", "c.md"))


def test_a_jsonl_log_that_repeats_an_id_keeps_its_later_line(tmp_path):
    # An append-only log writes a note's correction as a new line: the first was kept, so
    # ask answered with the plan the correction replaced.
    (tmp_path / "log.jsonl").write_text(
        '{"id": "plan", "title": "Release plan", "content": "We deploy on Monday."}\n'
        '{"id": "plan", "title": "Release plan", "content": "Change: we deploy on Friday."}\n'
        '{"id": "dated", "title": "D", "content": "newer", "updated_at": "2024-05-02"}\n'
        '{"id": "dated", "title": "D", "content": "older", "updated_at": "2024-05-01"}\n'
    )
    result = read_notes(tmp_path)
    assert {n.id: n.content for n in result.notes} == {
        "plan": "Change: we deploy on Friday.",
        "dated": "newer",  # a line dated earlier is an older version, wherever it stands
    }
    assert [e.error for e in result.errors] == [
        "duplicate note id 'plan' in one file; kept the later",
        "duplicate note id 'dated' (first in " + str(tmp_path / "log.jsonl") + "); kept the first",
    ]


def test_front_matter_tags_are_names_without_their_hash(tmp_path):
    # "#project, #idea" gave the tags "#project," and "#idea"; [a, "#b"] counted #b and b
    # apart; a nested list became the tag "['deeper']".
    (tmp_path / "a.md").write_text('---\ntags: "#project, #idea"\n---\n# A\nx\n')
    (tmp_path / "b.md").write_text('---\ntags: [a, "#b", b]\n---\n# B\nx\n')
    (tmp_path / "c.md").write_text("---\ntags: [nested, [deeper], {a: 1}, 2024]\n---\n# C\nx\n")
    (tmp_path / "d.md").write_text('---\ntags: ["#x", x, X]\n---\n# D\nx\n')
    tags = {n.id: n.tags for n in read_notes(tmp_path).notes}
    assert tags == {
        "a.md": ("project", "idea"),
        "b.md": ("a", "b"),
        "c.md": ("nested", "2024"),
        "d.md": ("x",),  # one tag whatever its case, as Obsidian reads them
    }


def test_dates_written_as_numbers(tmp_path):
    # An app's JSON export writes epoch seconds (or milliseconds): "unreadable date".
    (tmp_path / "n.jsonl").write_text(
        '{"id": "s", "content": "x", "updated_at": 1709629200}\n'
        '{"id": "ms", "content": "y", "created_at": 1709629200123}\n'
        '{"id": "day", "content": "z", "created_at": 20240315}\n'
        '{"id": "odd", "content": "w", "created_at": 42}\n'
        '{"id": "far", "content": "v", "created_at": 99999999999999}\n'
    )
    result = read_notes(tmp_path)
    notes = {n.id: n for n in result.notes}
    assert notes["s"].updated_at == datetime(2024, 3, 5, 9, 0, tzinfo=UTC)
    assert notes["ms"].created_at == datetime(2024, 3, 5, 9, 0, 0, 123000, tzinfo=UTC)
    assert notes["day"].created_at == datetime(2024, 3, 15, tzinfo=UTC)
    assert notes["odd"].created_at is None and notes["far"].created_at is None
    odd, far = result.errors  # a number past 2099 in milliseconds is no date either
    assert odd.kept and "unreadable date 42" in odd.error
    assert far.kept and "unreadable date 99999999999999" in far.error


def test_logseq_journal_and_namespace_pages_are_titled_as_logseq_shows_them(tmp_path):
    (tmp_path / "journals").mkdir()
    (tmp_path / "pages").mkdir()
    (tmp_path / "journals" / "2024_03_05.md").write_text("- met Ana about the launch\n")
    (tmp_path / "pages" / "Projects___Falcon.md").write_text("- goal: ship the dashboard\n")
    (tmp_path / "pages" / "What%3F Why%2FHow.md").write_text("- a question page\n")
    titles = {n.id: n.title for n in read_notes(tmp_path).notes}
    assert titles == {
        "journals/2024_03_05.md": "2024-03-05",
        "pages/Projects___Falcon.md": "Projects/Falcon",
        "pages/What%3F Why%2FHow.md": "What? Why/How",
    }


def test_an_obsidian_vault_zipped_passes_over_its_template_folders(tmp_path):
    # Read as a folder, the vault's template folders are passed over; zipped, their
    # "{{date}}" templates were notes.
    import zipfile

    archive = tmp_path / "vault.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.writestr("Vault/.obsidian/templates.json", '{"folder": "Templates"}')
        zipped.writestr(
            "Vault/.obsidian/plugins/templater-obsidian/data.json", '{"templates_folder": "tpl/"}'
        )
        zipped.writestr("Vault/Templates/Daily.md", "# {{date}}\n## Tasks\n")
        zipped.writestr("Vault/tpl/Meeting.md", "# <% tp.file.title %>\n")
        zipped.writestr("Vault/real.md", "# Real\nThe real note.\n")
    result = read_notes(archive)
    assert [n.id for n in result.notes] == ["Vault/real.md"] and result.errors == []


def test_a_jsonl_line_that_is_no_json_says_so_plainly(tmp_path):
    # "bad JSON: invalid literal, expected 'null'" for a line of words.
    (tmp_path / "n.jsonl").write_text('not json here\n{"content": "ok"}\n{"content": "cut", \n')
    errors = {e.line: e.error for e in read_notes(tmp_path).errors if e.line}
    assert errors[1] == "not JSON (it opens with no object, list or value)"
    assert errors[3].startswith("bad JSON: ") and errors[3].endswith("(column 20)")


def test_a_note_dated_in_the_future_is_kept_and_reported(tmp_path: Path) -> None:
    # A typo'd year kept a note fresh (and its thread active) for decades without a word.
    (tmp_path / "a.md").write_text("---\ncreated: 2952-03-01\n---\n# Typo\nbody\n")
    (tmp_path / "b.md").write_text("---\ncreated: 2024-03-01\n---\n# Fine\nbody\n")
    result = read_notes(tmp_path)
    assert len(result.notes) == 2
    [problem] = result.errors
    assert problem.kept and problem.source.endswith("a.md")
    assert "dated in the future (note a.md, created 2952-03-01)" in problem.error
    # Dated by its file's modification time: the same.
    (tmp_path / "b.md").write_text("# Undated\nbody\n")
    later = datetime(2099, 5, 5, tzinfo=UTC).timestamp()
    os.utime(tmp_path / "b.md", (later, later))
    errors = [e.error for e in read_notes(tmp_path).errors]
    assert any("(note b.md, its file's modification time 2099-05-05)" in e for e in errors)


def test_a_title_with_a_line_break_is_one_line() -> None:
    from selene_dag.notes.ingest import NoteRecord

    note = NoteRecord("t1", "Title\rwith cr\r\nand more", "x\r\ny", None, None, "s")
    assert (note.title, note.content) == ("Title with cr and more", "x\ny")


def test_a_link_loop_is_reported_as_one(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("# A\nalpha\n")
    (tmp_path / "loopa.md").symlink_to(tmp_path / "loopb.md")
    (tmp_path / "loopb.md").symlink_to(tmp_path / "loopa.md")
    (tmp_path / "gone.md").symlink_to(tmp_path / "nowhere.md")
    result = read_notes(tmp_path)
    assert [n.title for n in result.notes] == ["A"]
    reasons = {Path(e.source).name: e.error for e in result.errors}
    assert reasons["loopa.md"].startswith("a link that loops (to ")
    assert reasons["gone.md"].startswith("a link that leads to no file (to ")
    assert set(result.files_failed) == {e.source for e in result.errors}
