"""Obsidian's comments: text between ``%%`` marks, shown in the editor and hidden everywhere
else (reading view, export, publish). A note's comments are its author's private remarks,
so ingest leaves them out of what a model reads.

A comment may sit inside a line or span lines. ``%%`` inside a fenced or indented code
block or an inline code span (of any number of backticks) is code, not a comment. A ``%%`` never closed is kept as written: Obsidian
would hide the rest of the note, but a stray ``%%`` in prose is likelier than a comment
left open, and dropping text is the worse mistake.
"""

from __future__ import annotations

from selene_dag.text import FENCE_LINE

MARK = "%%"


def _code_span_end(line: str, tick: int) -> int:
    """Where the inline code span opening at ``tick`` ends: after the next run of as many
    backticks as opened it (CommonMark), or just after the opening run when none closes it
    (then those backticks are plain text)."""
    run = len(line[tick:]) - len(line[tick:].lstrip("`"))
    at = tick + run
    while True:
        close = line.find("`" * run, at)
        if close < 0:
            return tick + run
        after = close + run
        alone_after = after >= len(line) or line[after] != "`"
        alone_before = close == 0 or line[close - 1] != "`"
        if alone_after and alone_before:  # a run of exactly that many backticks
            return after
        at = after + len(line[after:]) - len(line[after:].lstrip("`"))


def _line_parts(line: str, in_comment: bool) -> tuple[str, bool]:
    """``line`` without its comment parts, and whether a comment is still open after it."""
    out: list[str] = []
    pos = 0
    while pos < len(line):
        if in_comment:
            end = line.find(MARK, pos)
            if end < 0:
                return "".join(out), True
            in_comment, pos = False, end + len(MARK)
            continue
        tick = line.find("`", pos)
        mark = line.find(MARK, pos)
        if mark < 0:
            out.append(line[pos:])
            break
        if 0 <= tick < mark:  # an inline code span: kept whole, %% and all
            stop = _code_span_end(line, tick)
            out.append(line[pos:stop])
            pos = stop
            continue
        out.append(line[pos:mark])
        in_comment, pos = True, mark + len(MARK)
    return "".join(out), in_comment


def strip_comments(text: str) -> str:
    """``text`` without its ``%%comments%%`` (see the module docstring); a line that held
    only a comment is dropped. ``text`` itself when it holds no ``%%``."""
    if MARK not in text:
        return text
    lines = text.split("\n")
    out: list[str] = []
    in_fence = in_comment = False
    opened_at = 0  # index in ``out`` and in ``lines`` where the open comment began
    opened_line = 0
    prev_blank, in_indented = True, False
    for n, line in enumerate(lines):
        if not in_comment and FENCE_LINE.match(line):
            in_fence = not in_fence
            out.append(line)
            continue
        if in_fence:
            out.append(line)
            continue
        # An indented code block: four spaces or a tab, after a blank line or more of it.
        indented = line.startswith(("    ", "\t")) and bool(line.strip())
        in_indented = not in_comment and indented and (prev_blank or in_indented)
        prev_blank = not line.strip()
        if in_indented:
            out.append(line)
            continue
        was_open = in_comment
        if not was_open:
            opened_at, opened_line = len(out), n
        touched = was_open or MARK in line
        kept, in_comment = _line_parts(line, in_comment)
        if not touched:
            out.append(line)
        elif kept.strip():  # the line's own text, its comment left out
            out.append(kept.rstrip())
    if in_comment:  # never closed: keep what followed the last opening as written
        return "\n".join(out[:opened_at] + lines[opened_line:])
    return "\n".join(out)
