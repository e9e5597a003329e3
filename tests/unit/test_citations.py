"""Citations read back (``selene-dag show``): every form ask prints, and the ranges."""

from __future__ import annotations

import pytest

from selene_dag.errors import UsageError
from selene_dag.retrieval.citations import (
    Citation,
    cut_lines,
    parse_citation,
    parse_ranges,
    widen,
)


def test_every_form_ask_prints_reads_back() -> None:
    assert parse_citation("note docker/exec.md") == Citation("note", "docker/exec.md")
    assert parse_citation("note notes/My Note.md lines 12-30, 41") == Citation(
        "note", "notes/My Note.md", ((12, 30), (41, 41))
    )
    # An item's header line as printed, brackets and all; a JSON item's id.
    assert parse_citation("[note a/b.md lines 3-4]") == Citation("note", "a/b.md", ((3, 4),))
    assert parse_citation("[note d/[draft].md lines 3-4] A [title]") == Citation(
        "note", "d/[draft].md", ((3, 4),)
    )
    assert parse_citation("[codex-95dcd5e8fd0e events 3-9] codex session /w/p") == Citation(
        "session", "codex-95dcd5e8fd0e", ((3, 9),)
    )
    assert parse_citation("note:a/b.md") == Citation("note", "a/b.md")
    assert parse_citation("codex-95dcd5e8fd0e events 3-9") == Citation(
        "session", "codex-95dcd5e8fd0e", ((3, 9),)
    )
    assert parse_citation("  codex-95dcd5e8fd0e   events 3-9, 12-14 ") == Citation(
        "session", "codex-95dcd5e8fd0e", ((3, 9), (12, 14))
    )
    assert parse_citation("claude-1a2b3c") == Citation("session", "claude-1a2b3c")
    assert parse_citation("chunk:0f1e2d3c4b5a6978") == Citation("chunk", "0f1e2d3c4b5a6978")


@pytest.mark.parametrize(
    "text", ["", "what is this?", "codex-1 events", "codex-1 events 9-3", "note a lines 4-2"]
)
def test_anything_else_is_a_usage_error(text: str) -> None:
    with pytest.raises(UsageError):
        parse_citation(text)


@pytest.mark.parametrize(
    ("text", "form"), [("note", "note <id>"), ("chunk:", "chunk:<id>"), ("note:", "note:<id>")]
)
def test_a_kind_without_its_id_says_so(text: str, form: str) -> None:
    # "note" alone was read as a session key: "no session note in this home".
    with pytest.raises(UsageError, match=f"names no .*give its id \\({form}\\)"):
        parse_citation(text)


def test_a_huge_citation_is_refused_without_being_echoed() -> None:
    with pytest.raises(UsageError, match=r"^a citation of 5,000,005 characters is no citation$"):
        parse_citation("note " + "x" * 5_000_000)


def test_ranges() -> None:
    assert parse_ranges("7") == ((7, 7),)
    assert parse_ranges("1-3,5 , 8-9") == ((1, 3), (5, 5), (8, 9))
    # A note's lines are numbered from 1: "lines 0-3" was read as 1-3 without a word.
    # (A session's events are numbered from 0.)
    with pytest.raises(UsageError, match=r"numbered from 1"):
        parse_citation("note docker/exec.md lines 0-3")
    assert parse_citation("codex-demo events 0-12").ranges == ((0, 12),)
    assert widen([(5, 6), (10, 12)], 2, 1, 13) == [(3, 13)]
    assert widen([(5, 6), (12, 12)], 1, 1, 20) == [(4, 7), (11, 13)]
    assert widen([(1, 2)], 5, 1, 4) == [(1, 4)]
    assert widen([(50, 60)], 0, 1, 10) == []


def test_cut_lines_keeps_the_named_lines_with_a_gap_between() -> None:
    text = "\n".join(f"l{i}" for i in range(1, 11))
    assert cut_lines(text, [(2, 3), (5, 5)]) == "l2\nl3\n…\nl5"
    assert cut_lines(text, [(2, 3), (4, 4)]) == "l2\nl3\nl4"
    assert cut_lines(text, [(9, 40)]) == "l9\nl10"
    assert cut_lines(text, []) == text


def test_cut_lines_inside_a_code_block_come_with_its_fences() -> None:
    # A range ending inside a block left its fence open (the rest of a markdown view read
    # as code); one starting inside it showed code as prose.
    text = "intro\n```python\na=1\nb=2\nc=3\n```\nafter\n~~~~\nx\n```\ny\n~~~~"
    assert cut_lines(text, [(3, 4)]) == "```python\na=1\nb=2\n```"
    assert cut_lines(text, [(1, 3)]) == "intro\n```python\na=1\n```"
    # The gap between two ranges of one block sits outside it.
    assert cut_lines(text, [(3, 3), (5, 7)]) == "```python\na=1\n```\n…\n```python\nc=3\n```\nafter"
    # A longer fence of other characters holds a ``` line as code.
    assert cut_lines(text, [(9, 10)]) == "~~~~\nx\n```\n~~~~"
    assert cut_lines(text, [(7, 7)]) == "after"


def test_a_header_with_brackets_in_its_id_reads_back() -> None:
    from selene_dag.retrieval.citations import bracketed, parse_citation

    line = "[note notes/emoji 🚀 [brackets] lines 1-2.md lines 1-3] Rocket [beta] notes"
    assert bracketed(line) == "note notes/emoji 🚀 [brackets] lines 1-2.md lines 1-3"
    cited = parse_citation(line)
    assert (cited.ref, cited.ranges) == ("notes/emoji 🚀 [brackets] lines 1-2.md", ((1, 3),))
    # An unbalanced "]" in an id falls back to the first "] ".
    assert bracketed("[note a].md] Title") == "note a].md"
    assert bracketed("note a.md") is None


def test_a_citation_keeps_the_spaces_of_its_id_and_joins_its_lines() -> None:
    # A file named with two spaces in a row: its citation named another note.
    assert (
        parse_citation("[note n2/with spaces  double.md] Spaces").ref == "n2/with spaces  double.md"
    )
    assert parse_citation("note:n2/a  b.md").ref == "n2/a  b.md"
    assert parse_citation("note  n2/a.md   lines  3-4\n") == Citation("note", "n2/a.md", ((3, 4),))
    assert parse_citation("[note n2/a.md lines\n  3-4] Title") == Citation(
        "note", "n2/a.md", ((3, 4),)
    )
    assert parse_citation("claude-abc  events 2-3").ranges == ((2, 3),)
    # A tab or a no-break space reads as a space.
    assert parse_citation("note\tn2/a.md\tlines\u00a03") == Citation("note", "n2/a.md", ((3, 3),))
