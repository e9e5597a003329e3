"""Logseq's own bookkeeping inside a page's text: the ``id:: <uuid>`` line it writes under a
block the first time another block references it, and ``collapsed:: true`` under a block
folded in its editor. Neither is the author's text: left in, they were 26-43% of an
outline page's tokens, opened excerpts and became themes ("collapsed true"), and folding a
block in the editor counted as an edit of the note.
"""

from __future__ import annotations

import re

from selene_dag.text import FENCE_LINE

_BOOKKEEPING = re.compile(
    r"^[ \t]*(?:-[ \t]+)?(?:id::[ \t]*[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-"
    r"[0-9a-fA-F]{4}-[0-9a-fA-F]{12}|collapsed::[ \t]*(?:true|false))[ \t]*$"
)


def strip_block_properties(text: str) -> str:
    """``text`` without Logseq's ``id:: <uuid>`` and ``collapsed:: true|false`` lines (see
    the module docstring), code blocks left as written; ``text`` itself when it holds
    neither."""
    if "id::" not in text and "collapsed::" not in text:
        return text
    out: list[str] = []
    in_fence = False
    for line in text.split("\n"):
        if FENCE_LINE.match(line.lstrip(" \t-")):
            in_fence = not in_fence
        elif not in_fence and _BOOKKEEPING.match(line.rstrip("\r")):
            continue
        out.append(line)
    return "\n".join(out)
