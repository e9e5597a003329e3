"""The text of an Obsidian Excalidraw drawing (a markdown file whose front-matter holds
``excalidraw-plugin``): what a reader of the drawing sees, without the drawing's data.

The plugin writes, after the front-matter, a banner line (``==⚠ Switch to EXCALIDRAW
VIEW … ⚠==``), the user's own markdown if any, then ``# Excalidraw Data`` (older releases:
``# Text Elements``) with each text element of the drawing followed by its block id
(`` ^abc123``), and the sections ``## Element Links``, ``## Embedded Files`` and
``## Drawing`` (the scene as JSON, often LZ-compressed base64: tens of kilobytes that
would be stored, searched and embedded as words). The note keeps the user's markdown and
the text elements.
"""

from __future__ import annotations

import re

FRONT_MATTER_KEY = "excalidraw-plugin"
_BLOCK_ID = re.compile(r"\s\^[\w!-]+\s*$")
_TEXT_HEADINGS = {"# Text Elements", "## Text Elements"}
_DATA_HEADINGS = {"# Excalidraw Data"}
# Sections holding links, files and the scene: no words a reader sees.
_DATA_SECTIONS = {"## Element Links", "## Embedded Files", "## Drawing", "# Drawing"}
_DUMMY_ELEMENT = "^_dummy!_"  # what the plugin adds to protect its first text from linters
_BLANK_LINES = re.compile(r"\n{3,}")


def is_drawing(meta: dict) -> bool:
    """Whether a markdown file's front-matter ``meta`` marks it an Excalidraw drawing."""
    return FRONT_MATTER_KEY in meta


def drawing_text(body: str) -> str:
    """The words of an Excalidraw drawing's markdown (the text after its front-matter):
    the user's markdown before the drawing's data, then each text element without its
    block id; "" for a drawing with no words."""
    kept: list[str] = []
    section = "markdown"
    for line in body.splitlines():
        stripped = line.strip()
        if stripped.startswith("==⚠") or stripped == "%%":
            continue  # the banner, and the comment marks that hide the data
        if stripped in _DATA_HEADINGS:
            continue
        if stripped in _TEXT_HEADINGS:
            section = "text"
            continue
        if stripped in _DATA_SECTIONS:
            section = "data"
            continue
        if section == "data" or stripped == _DUMMY_ELEMENT:
            continue
        kept.append(_BLOCK_ID.sub("", line) if section == "text" else line)
    return _BLANK_LINES.sub("\n\n", "\n".join(kept)).strip()
