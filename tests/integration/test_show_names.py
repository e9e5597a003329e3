"""``show`` on what a newcomer copies from a pack: a note whose file name holds brackets,
and a note whose file is gone since it was cited."""

from __future__ import annotations

from pathlib import Path

import pytest

from selene_dag import service
from selene_dag.errors import NotFoundError
from tests.support.ask import ingested_folder


def test_a_citation_of_a_file_named_with_brackets_reads_back(tmp_path: Path) -> None:
    # The id was cut at its first "] ": "no note notes/launch [draft in this home".
    name = "launch [draft] lines 1-2.md"
    settings = ingested_folder(tmp_path, {name: "# Launch\n\nThe launch code is nebula-77.\n"})
    result = service.ask(settings, "launch code nebula", 200)
    header = result.text.splitlines()[0]
    assert header.startswith(f"[note notes/{name}")
    for citation in (header, header.split("] Launch")[0] + "]", f"note notes/{name}"):
        shown = service.show(settings, citation)
        assert "nebula-77" in shown.text
        assert shown.shown.startswith(f"note notes/{name}")


def test_a_note_whose_file_is_gone_says_so(tmp_path: Path) -> None:
    settings = ingested_folder(tmp_path, {"a.md": "# A\n\nAlpha.\n", "b.md": "# B\n\nBeta.\n"})
    (tmp_path / "notes" / "b.md").unlink()
    service.ingest(settings, tmp_path / "notes")
    with pytest.raises(NotFoundError, match=r"note notes/b\.md was marked deleted at "):
        service.show(settings, "note notes/b.md")
    with pytest.raises(NotFoundError, match="copy the citation from a pack"):
        service.show(settings, "note notes/never.md")
    # An id without its folder's key (cited before ids held it, or typed so): named.
    with pytest.raises(NotFoundError, match=r"start with their folder's key: `note notes/a\.md`\?"):
        service.show(settings, "note a.md")
    with pytest.raises(NotFoundError, match=r"`note notes/a\.md lines 1-2, 4`\?"):
        service.show(settings, "note a.md lines 1-2, 4")
    with pytest.raises(TypeError, match="citation must be a str, got NoneType"):
        service.show(settings, None)  # an AttributeError from inside the parser


def test_a_deleted_note_whose_file_is_still_there_says_what_became_of_it(tmp_path: Path) -> None:
    # "its file … is gone or was renamed" was said of a file still there: one whose note
    # took another id (its front matter gave one), or one whose folder was forgotten.
    settings = ingested_folder(tmp_path, {"a.md": "# A\n\nAlpha.\n", "b.md": "# B\n\nBeta.\n"})
    (tmp_path / "notes" / "b.md").write_text("---\nid: beta\n---\n# B\n\nBeta again.\n")
    service.ingest(settings, tmp_path / "notes")
    with pytest.raises(NotFoundError, match=r"b\.md now gives the note notes/beta \(`selene-dag"):
        service.show(settings, "note notes/b.md")
    service.forget(settings, "notes")
    with pytest.raises(NotFoundError, match=r"a\.md is still there \(its folder was forgotten"):
        service.show(settings, "note notes/a.md")


def test_a_deleted_note_whose_copy_lives_on_shows_the_copy(tmp_path: Path) -> None:
    # An editor's "make a copy" (a file of its own dates), then the original deleted.
    settings = ingested_folder(tmp_path, {"a.md": "# Alpha\n\nThe alpha key is amber.\n"})
    folder = tmp_path / "notes"
    (folder / "a copy.md").write_text((folder / "a.md").read_text())
    (folder / "a.md").unlink()
    service.ingest(settings, folder)
    shown = service.show(settings, "note notes/a.md lines 3")
    assert shown.text == "[note notes/a copy.md line 3] Alpha\nThe alpha key is amber."
    assert "note notes/a copy.md holds its text" in shown.note


def test_a_range_of_lines_that_is_none_says_so(tmp_path: Path) -> None:
    # "lines 23–32" (an en dash) or "lines a-b" was "no note … in this home" (a 404).
    from selene_dag.errors import UsageError

    settings = ingested_folder(tmp_path, {"plan.md": "# Plan\n\nOne.\nTwo.\nThree.\n"})
    for bad in ("2–3", "a-b", "2-3,"):
        with pytest.raises(UsageError, match=f"note notes/plan.md: '{bad}' is no range of lines"):
            service.show(settings, f"note notes/plan.md lines {bad}")
    assert "One." in service.show(settings, "note notes/plan.md lines 2-3").text
