"""Notes of an Evernote export (``.enex``), made the note objects a JSONL line holds.

An export is XML: ``<en-export>`` holding ``<note>`` elements, each with its ``<title>``,
its text as ENML (XHTML inside ``<content>``), ``<created>`` / ``<updated>`` dates
(``20240305T101500Z``), ``<tag>`` elements and base64 attachments (``<resource>``, left
out). The XML is parsed element by element and each note's tree dropped once read, so the
parsed attachments of one note at a time are held, beside the file's bytes.
"""

from __future__ import annotations

import html
import io
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from selene_dag.notes.html import html_note


def enml_text(enml: str) -> str:
    """The text of an ENML (XHTML) note body as markdown (see :mod:`selene_dag.notes.html`:
    Evernote's to-dos as ``[x]`` / ``[ ]``, attachments and encrypted text left out)."""
    return html_note(enml).text


def _date(value: str | None) -> str | None:
    """An ISO date from Evernote's ``20240305T101500Z``; None when absent or unreadable."""
    if not value:
        return None
    try:
        return datetime.strptime(value.strip(), "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC).isoformat()
    except ValueError:
        return None


@dataclass(frozen=True)
class _Fields:
    """One ``<note>``'s fields as the export gives them."""

    title: str | None
    created: str
    updated: str | None
    tags: list[str]
    text: str


def _fields_of(element: ET.Element) -> _Fields:
    tags = [t.text.strip() for t in element.findall("tag") if t.text and t.text.strip()]
    fields = _Fields(
        title=(element.findtext("title") or "").strip() or None,
        created=(element.findtext("created") or "").strip(),
        updated=element.findtext("updated"),
        tags=tags,
        text=enml_text(element.findtext("content") or ""),
    )
    element.clear()  # its attachments' base64 too
    return fields


_NOTE_XML = re.compile(rb"<note>.*?</note>", re.DOTALL)
_CDATA = re.compile(r"<!\[CDATA\[|\]\]>")


def _field(xml: str, name: str) -> list[str]:
    return [
        html.unescape(value).strip()
        for value in re.findall(rf"<{name}>(.*?)</{name}>", xml, re.DOTALL)
    ]


def _lenient_fields(xml: str) -> _Fields:
    """A note's fields from XML that does not parse: Evernote has exported notes whose
    ENML holds a CDATA section of its own, which ends the content's early. Each field is
    found by its tags, the content between ``<content>`` and the last ``</content>``,
    every CDATA marker in it dropped."""
    start, end = xml.find("<content>"), xml.rfind("</content>")
    content = xml[start + len("<content>") : end] if 0 <= start < end else ""
    if "<![CDATA[" not in content:
        content = html.unescape(content)
    titles, created, updated = _field(xml, "title"), _field(xml, "created"), _field(xml, "updated")
    return _Fields(
        title=(titles[0] if titles else "") or None,
        created=created[0] if created else "",
        updated=updated[0] if updated else None,
        tags=[tag for tag in _field(xml, "tag") if tag],
        text=enml_text(_CDATA.sub("", content)),
    )


def _lenient_rest(raw: bytes, seen: int) -> tuple[list[_Fields], int, bool]:
    """The notes after the first ``seen`` of an export that stopped parsing, each read on
    its own (leniently when it does not parse); how many were read leniently, and whether
    the file ends inside a note (cut short: its last note is lost)."""
    found: list[_Fields] = []
    lenient = 0
    chunks = list(_NOTE_XML.finditer(raw))
    for chunk in chunks[seen:]:
        try:
            found.append(_fields_of(ET.fromstring(chunk.group())))
        except ET.ParseError:
            found.append(_lenient_fields(chunk.group().decode("utf-8", errors="replace")))
            lenient += 1
    tail = raw[chunks[-1].end() :] if chunks else raw
    return found, lenient, b"<note>" in tail


def enex_notes(raw: bytes, rel: str) -> tuple[list[dict[str, Any]], list[str], list[str]]:
    """The note objects of an Evernote export whose path in its folder is ``rel`` (id
    ``<rel>:<created>`` when the note has a creation date; notes created in the same second
    get ``#2``, ``#3``… in the order of the file), the problems met (XML that breaks off:
    the notes read before it are kept) and notices of notes kept despite a problem (a note
    whose XML does not parse is read field by field)."""
    read: list[_Fields] = []
    problems: list[str] = []
    notices: list[str] = []
    seen = 0
    try:
        for _, element in ET.iterparse(io.BytesIO(raw), events=("end",)):
            if element.tag == "note":
                seen += 1
                read.append(_fields_of(element))
    except ET.ParseError as exc:
        rest, lenient, cut = _lenient_rest(raw, seen)
        read += rest
        if lenient:
            notices.append(f"{lenient} of its notes' XML did not parse; read field by field")
        if cut or not rest:
            problems.append(f"not valid XML after note {len(read)} ({exc})")
    notes: list[dict[str, Any]] = []
    same_second: dict[str, int] = {}
    for fields in read:
        if not fields.text and not fields.title:  # an attachment alone
            continue
        note: dict[str, Any] = {
            "title": fields.title,
            "content": fields.text or fields.title,
            "created_at": _date(fields.created),
            "updated_at": _date(fields.updated),
            "tags": fields.tags,
        }
        unread = [
            v.strip()
            for v, d in ((fields.created, note["created_at"]), (fields.updated, note["updated_at"]))
            if v and v.strip() and d is None
        ]
        if unread:  # the note is dated when first ingested: said, not silent
            notices.append(
                f"note {fields.title or '(untitled)'!r}: its date {unread[0]!r} is not "
                "Evernote's 20240305T101500Z; dated when first ingested"
            )
        if note["created_at"]:
            count = same_second[fields.created] = same_second.get(fields.created, 0) + 1
            suffix = f"#{count}" if count > 1 else ""
            note["id"] = f"{rel}:{fields.created}{suffix}"
        notes.append(note)
    return notes, problems, notices
