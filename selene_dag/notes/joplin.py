"""Joplin's own exports: a JEX file (a tar archive) or a RAW export folder.

Both hold one file per item, named ``<32-hex-digit id>.md``: the item's title, a blank
line, its body (a note's markdown), a blank line, then one ``key: value`` line per
property, ``type_`` among them: 1 a note, 2 a notebook, 5 a tag, 6 the link of a note to a
tag (``note_id``, ``tag_id``); resources, revisions and the rest are other numbers. A
note's notebook is the item its ``parent_id`` names, its tags those its links name, its
dates ``user_created_time`` / ``user_updated_time`` (the ones the user sees and can edit)
or else ``created_time`` / ``updated_time``; a note in Joplin's trash has a
``deleted_time`` other than 0. Read as Joplin reads it (``BaseItem.unserialize``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

ITEM_NAME = re.compile(r"^[0-9a-f]{32}\.md$")
NOTE, NOTEBOOK, TAG, NOTE_TAG = 1, 2, 5, 6


@dataclass(frozen=True)
class JoplinItem:
    """One exported item: its type (``type_``), title, body and properties."""

    type: int
    title: str
    body: str
    props: Mapping[str, str]

    @property
    def id(self) -> str:
        """The item's id (32 hex digits)."""
        return self.props.get("id", "")


@dataclass(frozen=True)
class JoplinNote:
    """A note's fields, with its notebook and tags resolved from the other items."""

    title: str
    body: str
    created: str | None
    updated: str | None
    notebook: str | None
    tags: tuple[str, ...] = field(default=())
    encrypted: bool = False


def is_item_name(name: str) -> bool:
    """Whether a file's name is an item's (``<32 hex digits>.md``)."""
    return ITEM_NAME.match(name) is not None


def parse_item(text: str) -> JoplinItem | None:
    """The item a file's text serializes, or None when it is no Joplin item (no
    properties block ending it, or no ``id`` or numeric ``type_`` in it)."""
    lines = text.rstrip().split("\n")
    props: dict[str, str] = {}
    index = len(lines) - 1
    while index >= 0:
        line = lines[index].strip()
        if not line:
            break
        key, colon, value = line.partition(":")
        if not colon:
            return None
        props.setdefault(key.strip(), value.strip())
        index -= 1
    kind = props.get("type_", "")
    if not kind.isdigit() or not ITEM_NAME.match(props.get("id", "") + ".md"):
        return None
    rest = lines[: max(index, 0)]
    title = rest[0].strip() if rest else ""
    body = "\n".join(rest[2:]) if len(rest) > 2 else ""
    return JoplinItem(int(kind), title, body, props)


def _date(props: Mapping[str, str], *names: str) -> str | None:
    for name in names:
        value = props.get(name, "")
        if value and value != "0":
            return value
    return None


def _deleted(item: JoplinItem) -> bool:
    return item.props.get("deleted_time", "0") not in ("", "0")


def _notebook_path(items: Mapping[str, JoplinItem], parent: str) -> str | None:
    names: list[str] = []
    seen: set[str] = set()
    while parent and parent not in seen:
        seen.add(parent)
        notebook = items.get(parent)
        if notebook is None or notebook.type != NOTEBOOK:
            break
        names.append(notebook.title)
        parent = notebook.props.get("parent_id", "")
    return " / ".join(reversed(names)) or None


def joplin_notes(items: Mapping[str, JoplinItem]) -> dict[str, JoplinNote]:
    """The notes among ``items`` (keyed by any name, e.g. their file's), keyed the same:
    each with its notebook's path (``Work / Meetings``) and its tags; notes in the trash
    are left out."""
    by_id = {item.id: item for item in items.values()}
    tags_of: dict[str, list[str]] = {}
    for link in by_id.values():
        if link.type != NOTE_TAG or _deleted(link):
            continue
        tag = by_id.get(link.props.get("tag_id", ""))
        if tag is not None and tag.type == TAG and tag.title and not _deleted(tag):
            tags_of.setdefault(link.props.get("note_id", ""), []).append(tag.title)
    notes: dict[str, JoplinNote] = {}
    for name, item in items.items():
        if item.type != NOTE or _deleted(item):
            continue
        notes[name] = JoplinNote(
            title=item.title,
            body=item.body,
            created=_date(item.props, "user_created_time", "created_time"),
            updated=_date(item.props, "user_updated_time", "updated_time"),
            notebook=_notebook_path(by_id, item.props.get("parent_id", "")),
            tags=tuple(sorted(set(tags_of.get(item.id, [])))),
            encrypted=item.props.get("encryption_applied", "0") not in ("", "0"),
        )
    return notes
