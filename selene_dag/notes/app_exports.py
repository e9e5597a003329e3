"""Notes exported by note apps as JSON, made the note objects a JSONL line holds.

* Google Keep (Google Takeout, ``Takeout/Keep/*.json``): one note per file, its text in
  ``textContent`` or a checklist in ``listContent``, dates in microseconds since 1970,
  labels as ``{"name": …}``. A note in the trash is no note.
* Day One (its JSON export, ``Journal.json``): ``{"metadata": …, "entries": [...]}``, each
  entry's ``text``, ``uuid``, ``creationDate``, ``modifiedDate`` and ``tags``.
* Roam Research (its JSON export): a list of pages, each a ``title`` and ``children``
  blocks (``string``, nested ``children``, ``create-time`` / ``edit-time`` in
  milliseconds), written as the outline Roam shows.
* Standard Notes (its decrypted backup, ``Standard Notes Backup and Import File.txt``):
  ``{"items": [...]}``, a note an item of ``content_type`` ``Note`` with its ``uuid``,
  ``created_at``, ``updated_at`` and ``content`` (``title``, ``text``, ``trashed``); a
  ``Tag`` item names the notes it tags in ``content.references``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

# An untitled Keep note is titled by its first line, cut to this many characters (its
# file's name is the moment it was made: "2023-08-01T14_29_43.842+10_00.json").
KEEP_TITLE_CHARS = 80
# A checklist item's mark, "- [x] ", left out of a title made of it.
_ITEM_MARK = re.compile(r"^\s*-\s+(?:\[[ xX]\]\s*)?")


def keep_note(data: Mapping[str, Any]) -> dict[str, Any] | None:
    """The note object of a Google Keep note file (``is_keep_note``), or None for a note in
    the trash or one with neither text nor title (an image alone). A note with a title and
    no text (its image or drawing left out) is its title; an untitled one is titled by its
    first line; a title's line breaks are spaces."""
    if data.get("isTrashed"):
        return None
    text = data.get("textContent")
    if not isinstance(text, str) or not text.strip():
        text = "\n".join(
            f"- [{'x' if item.get('isChecked') else ' '}] {item['text']}".rstrip()
            for item in _list(data.get("listContent"))
            if isinstance(item, Mapping) and isinstance(item.get("text"), str)
        )
    title = data.get("title")
    title = " ".join(title.split()) if isinstance(title, str) else ""
    if not text.strip():  # an image or a drawing alone: its title, when it has one
        if not title:
            return None
        text = title
    if not title:
        first = next(line for line in text.splitlines() if line.strip())
        title = " ".join(_ITEM_MARK.sub("", first).split())[:KEEP_TITLE_CHARS] or None
    labels = [
        label["name"]
        for label in _list(data.get("labels"))
        if isinstance(label, Mapping) and isinstance(label.get("name"), str)
    ]
    return {
        "title": title or None,
        "content": text,
        "created_at": _microseconds(data.get("createdTimestampUsec")),
        "updated_at": _microseconds(data.get("userEditedTimestampUsec")),
        "tags": labels,
    }


def is_keep_note(data: object) -> bool:
    """Whether decoded JSON is one Google Keep note."""
    return isinstance(data, Mapping) and ("textContent" in data or "listContent" in data)


def day_one_entries(data: object) -> list[Any] | None:
    """The note objects of a Day One journal export, or None when ``data`` is not one."""
    if not isinstance(data, Mapping) or not isinstance(data.get("entries"), list):
        return None
    if "metadata" not in data:
        return None
    names = {
        "uuid": "id",
        "text": "content",
        "creationDate": "created_at",
        "modifiedDate": "updated_at",
        "tags": "tags",
    }
    # An entry of photos alone has no text: nothing to read, as a Keep note of an image.
    return [
        {ours: entry[theirs] for theirs, ours in names.items() if entry.get(theirs) is not None}
        if isinstance(entry, Mapping)
        else entry
        for entry in data["entries"]
        if not isinstance(entry, Mapping) or str(entry.get("text") or "").strip()
    ]


def roam_pages(data: object) -> list[Any] | None:
    """The note objects of a Roam Research JSON export (one per page with text), or None
    when ``data`` is not one."""
    if not isinstance(data, list) or not data:
        return None
    if not all(isinstance(page, Mapping) and "title" in page for page in data):
        return None
    if not any(_blocks(page.get("children")) for page in data):
        return None
    notes = []
    for page in data:
        blocks = _blocks(page.get("children"))
        lines: list[str] = []
        times: list[int] = []
        _outline(blocks, 0, lines, times)
        if not lines:
            continue
        created = page.get("create-time")
        edited = page.get("edit-time")  # the page's own: a title changed, a block removed
        if isinstance(edited, int) and not isinstance(edited, bool):
            times.append(edited)
        notes.append(
            {
                "id": page.get("title"),
                "title": page.get("title"),
                "content": "\n".join(lines),
                "created_at": _milliseconds(
                    created if isinstance(created, int) else min(times, default=None)
                ),
                "updated_at": _milliseconds(max(times, default=None)),
            }
        )
    return notes


def standard_notes_items(data: object) -> list[Any] | None:
    """The note objects of a Standard Notes backup (notes in its trash left out), or None
    when ``data`` is not one."""
    if not isinstance(data, Mapping) or not isinstance(data.get("items"), list):
        return None
    items = [i for i in data["items"] if isinstance(i, Mapping)]
    if not any(i.get("content_type") == "Note" for i in items):
        return None
    tags: dict[str, list[str]] = {}
    for item in items:
        content = item.get("content")
        if item.get("content_type") != "Tag" or not isinstance(content, Mapping):
            continue
        for ref in _list(content.get("references")):
            if isinstance(ref, Mapping) and isinstance(content.get("title"), str):
                tags.setdefault(str(ref.get("uuid")), []).append(content["title"])
    notes = []
    for item in items:
        content = item.get("content")
        if item.get("content_type") != "Note" or not isinstance(content, Mapping):
            continue
        if content.get("trashed") or item.get("deleted"):
            continue
        notes.append(
            {
                "id": item.get("uuid"),
                "title": content.get("title") or None,
                "content": content.get("text"),
                "created_at": item.get("created_at"),
                "updated_at": item.get("updated_at"),
                "tags": tags.get(str(item.get("uuid")), []),
            }
        )
    return notes


def _blocks(value: object) -> list[Mapping[str, Any]]:
    return [b for b in _list(value) if isinstance(b, Mapping) and isinstance(b.get("string"), str)]


def _outline(
    blocks: list[Mapping[str, Any]], depth: int, lines: list[str], times: list[int]
) -> None:
    for block in blocks:
        if block["string"].strip():
            lines.append(f"{'  ' * depth}- {block['string'].strip()}")
        times += [
            t
            for t in (block.get("create-time"), block.get("edit-time"))
            if isinstance(t, int) and not isinstance(t, bool)
        ]
        if depth < 50:  # an outline deeper than any page, or a cycle in a damaged export
            _outline(_blocks(block.get("children")), depth + 1, lines, times)


def _milliseconds(value: object) -> str | None:
    if not isinstance(value, int) or isinstance(value, bool):
        return None
    return _microseconds(value * 1000)


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def _microseconds(value: object) -> str | None:
    """An ISO date from microseconds since 1970 (a number or its digits), else None."""
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        return None
    try:
        return datetime.fromtimestamp(value / 1_000_000, tz=UTC).isoformat()
    except (OverflowError, OSError, ValueError):
        return None
