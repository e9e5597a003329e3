"""Notes of an Evernote export (``.enex``), made the note objects a JSONL line holds.

An export is XML: ``<en-export>`` holding ``<note>`` elements, each with its ``<title>``,
its text as ENML (XHTML inside ``<content>``), ``<created>`` / ``<updated>`` dates
(``20240305T101500Z``), ``<tag>`` elements and base64 attachments (``<resource>``, left
out). The XML is parsed element by element and each note's tree dropped once read, so the
parsed attachments of one note at a time are held, beside the file's bytes.
"""

from __future__ import annotations

import io
import re
import xml.etree.ElementTree as ET
from datetime import UTC, datetime
from html.parser import HTMLParser
from typing import Any

# ENML elements that end a line; a list item starts with a dash.
_BLOCKS = {
    "div", "p", "br", "li", "h1", "h2", "h3", "h4", "h5", "h6", "tr", "ul", "ol",
    "blockquote", "pre", "hr", "table", "en-note",
}  # fmt: skip
_BLANK_LINES = re.compile(r"\n{3,}")


class _EnmlText(HTMLParser):
    """The text of an ENML document: blocks on their own lines, list items as ``- …``,
    to-dos as ``[x]`` / ``[ ]``, attachments left out."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []

    def _line_break(self) -> None:
        # One break per boundary: nested blocks (a <div> in a <li>) make no empty lines,
        # and a list item's text stays on its dash's line.
        if self.parts and not self.parts[-1].endswith(("\n", "- ")):
            self.parts.append("\n")

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _BLOCKS:
            self._line_break()
        if tag == "li":
            self.parts.append("- ")
        elif tag == "en-todo":
            self.parts.append("[x] " if dict(attrs).get("checked") == "true" else "[ ] ")

    def handle_endtag(self, tag: str) -> None:
        if tag in _BLOCKS:
            self._line_break()

    def handle_data(self, data: str) -> None:
        self.parts.append(data.replace("\xa0", " "))

    def text(self) -> str:
        lines = (line.rstrip() for line in "".join(self.parts).splitlines())
        return _BLANK_LINES.sub("\n\n", "\n".join(lines)).strip()


def enml_text(enml: str) -> str:
    """The plain text of an ENML (XHTML) note body."""
    parser = _EnmlText()
    parser.feed(enml)
    parser.close()
    return parser.text()


def _date(value: str | None) -> str | None:
    """An ISO date from Evernote's ``20240305T101500Z``; None when absent or unreadable."""
    if not value:
        return None
    try:
        return datetime.strptime(value.strip(), "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC).isoformat()
    except ValueError:
        return None


def enex_notes(raw: bytes, rel: str) -> tuple[list[dict[str, Any]], list[str]]:
    """The note objects of an Evernote export whose path in its folder is ``rel`` (id
    ``<rel>:<created>`` when the note has a creation date), and the problems met: XML that
    breaks off keeps the notes read before it."""
    notes: list[dict[str, Any]] = []
    problems: list[str] = []
    try:
        for _, element in ET.iterparse(io.BytesIO(raw), events=("end",)):
            if element.tag != "note":
                continue
            created = (element.findtext("created") or "").strip()
            title = (element.findtext("title") or "").strip() or None
            text = enml_text(element.findtext("content") or "")
            updated = element.findtext("updated")
            tags = [t.text.strip() for t in element.findall("tag") if t.text and t.text.strip()]
            element.clear()  # its attachments' base64 too
            if not text and not title:  # an attachment alone
                continue
            note: dict[str, Any] = {
                "title": title,
                "content": text or title,
                "created_at": _date(created),
                "updated_at": _date(updated),
                "tags": tags,
            }
            if note["created_at"]:
                note["id"] = f"{rel}:{created}"
            notes.append(note)
    except ET.ParseError as exc:
        problems.append(f"not valid XML after note {len(notes)} ({exc})")
    return notes, problems
