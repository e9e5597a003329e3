"""Org-mode files (Emacs Org, org-roam, Orgzly, Logseq's org pages) read as notes: the
file's settings become the fields a markdown front-matter gives, and its text the markdown
the rest of the product reads (headings, fenced code, quotes).

Settings: ``#+title:``, ``#+date:`` / ``#+created:``, ``#+updated:`` / ``#+modified:``,
``#+filetags:`` (``:a:b:``; org-roam's older ``#+roam_tags: a b`` too), ``#+category:`` as
the topic, and the properties drawer above the first heading (org-roam writes its ``:ID:``
there; ``:CREATED:`` is read as the creation date). Dates are Org timestamps
(``[2024-03-05 Tue 10:15]``, ``<2024-03-05>``) or ISO dates.

Text: a heading's stars become ``#`` marks and its tags join the note's tags; a source or
example block becomes a fenced code block, a quote block ``>`` lines; drawers
(``:PROPERTIES:``, ``:LOGBOOK:``) and ``#+`` setting lines are left out, and so are comment
lines (``# …``), which would read as markdown headings; links show their description, or
``[description](url)`` for a web link outside a heading.
"""

from __future__ import annotations

import bisect
import re
from typing import Any

_KEYWORD = re.compile(r"^\s*#\+([A-Za-z_][\w-]*):[ \t]*(.*?)\s*$")
_BLOCK_BEGIN = re.compile(r"^\s*#\+begin_(\w+)[ \t]*(.*?)\s*$", re.IGNORECASE)
_DRAWER_BEGIN = re.compile(r"^\s*:([A-Za-z][\w-]*):\s*$")
_DRAWER_END = re.compile(r"^\s*:END:\s*$", re.IGNORECASE)
_PROPERTY = re.compile(r"^\s*:([A-Za-z][\w-]*?)\+?:[ \t]*(.*?)\s*$")
_COMMENT = re.compile(r"^\s*#(?:\s.*)?$")
_HEADING = re.compile(r"^(\*+)[ \t]+(.*?)\s*$")
_HEADING_TAGS = re.compile(r"[ \t]+:((?:[\w@#%]+:)+)$")
_DESCRIBED_LINK = re.compile(r"\[\[([^\[\]]+)\]\[([^\[\]]+)\]\]")
_BARE_LINK = re.compile(r"\[\[([^\[\]]+)\]\]")
_TIMESTAMP = re.compile(
    r"^[<\[]?(\d{4}-\d{2}-\d{2})(?:[ \t]+[^\d\s\]>]+)?(?:[ \t]+(\d{1,2}):(\d{2}))?[^\]>]*[\]>]?$"
)
# Blocks shown as code; any other block (center, verse, a custom one) keeps its lines.
_CODE_BLOCKS = {"src", "example", "export"}

# Org settings under the names a markdown front-matter gives them.
_SETTINGS = {
    "title": "title",
    "date": "date",
    "created": "created",
    "updated": "updated",
    "modified": "modified",
    "lastmod": "lastmod",
    "category": "topic",
}
_TAG_SETTINGS = ("filetags", "roam_tags", "tags")


def org_date(value: str) -> str:
    """An Org timestamp (``[2024-03-05 Tue 10:15]``, ``<2024-03-05 Tue>``) as an ISO date
    or datetime; any other value as it is (the caller reads it as a date or reports it)."""
    match = _TIMESTAMP.match(value.strip().split("--")[0])  # a range: its start
    if match is None:
        return value
    day, hour, minute = match.groups()
    return f"{day}T{int(hour):02d}:{minute}" if hour else day


def _link(match: re.Match[str]) -> str:
    target, description = match.group(1), match.group(2)
    if target.startswith(("http://", "https://")):
        return f"[{description}]({target})"
    return description


def _inline(line: str, *, urls: bool = True) -> str:
    """``line`` with its links as their descriptions (with ``urls``, a web link as a
    markdown link: a heading, which may become the title, shows the description only)."""
    line = _DESCRIBED_LINK.sub(_link if urls else lambda m: m.group(2), line)
    return _BARE_LINK.sub(lambda m: m.group(1).removeprefix("file:"), line)


def _tags(value: str) -> list[str]:
    return [tag for tag in re.split(r"[:\s]+", value) if tag]


class _DrawerEnds:
    """Where each drawer opened at a line closes: the first ``:END:`` line after it, unless
    a heading comes first (then the opening line is text). Ends and headings are found
    once, so a file of many lines that look like drawers (``:smile:``) stays linear."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self.ends: list[int] | None = None  # found at the first drawer: most files have none
        self.headings: list[int] = []

    def after(self, start: int) -> int | None:
        """The index of the ``:END:`` line closing a drawer opened at ``start``, or None."""
        if self.ends is None:
            self.ends = [i for i, line in enumerate(self.lines) if _DRAWER_END.match(line)]
            self.headings = [i for i, line in enumerate(self.lines) if _HEADING.match(line)]
        at = bisect.bisect_right(self.ends, start)
        if at == len(self.ends):
            return None
        end = self.ends[at]
        heading = bisect.bisect_right(self.headings, start)
        if heading < len(self.headings) and self.headings[heading] < end:
            return None
        return end


def org_note(text: str) -> tuple[dict[str, Any], str]:
    """The settings of an Org file as front-matter fields (``title``, ``date``, ``tags``,
    ``topic``, …, from its ``#+`` settings, then from the properties drawer above its
    first heading) and its text as markdown. Org-roam's ``:ID:`` is not read: the note
    keeps its path as its id. Never raises: what it does not recognize stays as it is."""
    meta: dict[str, Any] = {}
    properties: dict[str, str] = {}  # of the file's top drawer; its settings come first
    tags: list[str] = []
    out: list[str] = []
    lines = text.splitlines()
    drawer_ends = _DrawerEnds(lines)
    seen_heading = False
    block: str | None = None  # the open block's kind
    index = 0
    while index < len(lines):
        line = lines[index]
        index += 1
        if block is not None:
            if re.match(rf"^\s*#\+end_{re.escape(block)}\b", line, re.IGNORECASE):
                if block in _CODE_BLOCKS:
                    out.append("```")
                elif block == "quote":
                    out.append("")
                block = None
            elif block in _CODE_BLOCKS:
                out.append(line)
            elif block == "quote":
                out.append(f"> {_inline(line.strip())}" if line.strip() else ">")
            else:
                out.append(_inline(line))
            continue
        marker = line.lstrip()[:1]
        if marker not in ("#", "*", ":"):  # most lines: plain text (the patterns below need one)
            out.append(_inline(line) if "[[" in line else line)
            continue
        begin = _BLOCK_BEGIN.match(line)
        if begin:
            block = begin.group(1).lower()
            if block in _CODE_BLOCKS:
                language = begin.group(2).split()[0] if block == "src" and begin.group(2) else ""
                out.append(f"```{language}")
            continue
        keyword = _KEYWORD.match(line)
        if keyword:
            name, value = keyword.group(1).lower(), keyword.group(2)
            if name in _TAG_SETTINGS:
                tags += _tags(value)
            elif name in _SETTINGS and value:
                meta.setdefault(_SETTINGS[name], value)
            continue
        drawer = _DRAWER_BEGIN.match(line)
        if drawer and drawer.group(1).upper() != "END":
            end = drawer_ends.after(index - 1)
            if end is not None:
                if drawer.group(1).upper() == "PROPERTIES" and not seen_heading:
                    for prop in lines[index:end]:
                        found = _PROPERTY.match(prop)
                        if found and found.group(2):
                            properties.setdefault(found.group(1).lower(), found.group(2))
                index = end + 1
                continue
        if _COMMENT.match(line):
            continue
        heading = _HEADING.match(line)
        if heading:
            seen_heading = True
            title = heading.group(2)
            heading_tags = _HEADING_TAGS.search(title)
            if heading_tags:
                tags += _tags(heading_tags.group(1))
                title = title[: heading_tags.start()].rstrip()
            out.append(f"{'#' * min(len(heading.group(1)), 6)} {_inline(title, urls=False)}")
            continue
        out.append(_inline(line))
    if block in _CODE_BLOCKS:  # a block the file never closes
        out.append("```")
    for key, value in properties.items():
        if key in _SETTINGS:
            meta.setdefault(_SETTINGS[key], value)
    for key in ("date", "created", "updated", "modified", "lastmod"):
        if isinstance(meta.get(key), str):
            meta[key] = org_date(meta[key])
    if tags:
        meta["tags"] = list(dict.fromkeys(tags))
    return meta, "\n".join(out).strip("\n") + "\n"
