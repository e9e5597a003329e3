"""Obsidian's %%comments%%: hidden everywhere but in the editor, so left out of a note."""

from __future__ import annotations

from pathlib import Path

from selene_dag.notes.comments import strip_comments
from selene_dag.notes.ingest import read_notes


def test_comments_inline_and_across_lines_are_left_out() -> None:
    text = "Call %%Bob about the salary%% on Monday.\n%%\nprivate\nlines\n%%\nvisible\n"
    assert strip_comments(text) == "Call  on Monday.\nvisible\n"


def test_code_and_stray_marks_are_kept() -> None:
    code = '```python\nprint("%%d" %% 5)\n```\nuse `%%` for a literal percent\n100% sure\n'
    assert strip_comments(code) == code
    never_closed = "start\nsome %% never closed\nrest"
    assert strip_comments(never_closed) == never_closed
    assert strip_comments("plain") == "plain"


def test_code_spans_of_several_backticks_and_indented_code_keep_their_marks() -> None:
    # A span opened by two backticks closes at two: the %% inside is code, and the comment
    # after it is still a comment (it leaked, and the text after it went, before).
    text = "Use ``fmt %%d``.\n\nVisible one.\n\n%%\nblock secret\n%%\n\nVisible two.\n"
    assert strip_comments(text) == "Use ``fmt %%d``.\n\nVisible one.\n\n\nVisible two.\n"
    assert strip_comments('``printf "%%d"`` then %%secret%% end') == '``printf "%%d"`` then  end'
    indented = 'text\n\n    x = "%%d" %% 5\n    y\n\nafter %%c%% done'
    assert strip_comments(indented) == 'text\n\n    x = "%%d" %% 5\n    y\n\nafter  done'
    assert strip_comments("a lone ` tick %%c%% end") == "a lone ` tick  end"


def test_ingest_leaves_comments_out_of_markdown_notes_only(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("# Plan\n\nShip on Friday. %%ask Dana first%%\n")
    (tmp_path / "b.txt").write_text("Budget 100%% spent %%really%%\n")
    notes = {n.id: n for n in read_notes(tmp_path).notes}
    assert "Dana" not in notes["a.md"].content and "Ship on Friday." in notes["a.md"].content
    assert notes["b.txt"].content.startswith("Budget 100%% spent %%really%%")
