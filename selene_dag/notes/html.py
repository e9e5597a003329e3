"""HTML notes: a page's text as markdown, with the title, dates and tags its head gives.

Note apps export HTML (Evernote's and Joplin's HTML exports, Notion's HTML export, Apple
Notes and OneNote exporters) and people keep saved pages beside their notes. The text is
kept as markdown: headings as ``#`` lines, list items as ``-`` or ``1.`` lines, ``<pre>``
as fenced code, quotes as ``>`` lines, table rows as cells joined by `` | `` (a row of a
header cell and a value, as Notion writes a page's properties, as ``Key: value``),
checkboxes as ``[ ]`` / ``[x]``, links as their text. Scripts, styles, forms' hidden parts,
SVG and the head are left out. The head's ``<title>`` and ``<meta>`` elements give the
title, the creation and update dates and the tags.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html.parser import HTMLParser

# en-crypt: text Evernote encrypted (unreadable without its passphrase).
_SKIPPED = frozenset({
    "script", "style", "noscript", "template", "svg", "math", "iframe", "object", "en-crypt",
})  # fmt: skip
# Elements that hold lines: each starts and ends one (Evernote writes a note's lines as
# <div>s). A paragraph (<p>) is set apart by a blank line.
_BLOCKS = frozenset({
    "p", "div", "section", "article", "header", "footer", "main", "aside", "nav", "figure",
    "figcaption", "dl", "dt", "dd", "address", "details", "summary", "center", "form",
    "fieldset", "caption", "body", "html", "en-note",
})  # fmt: skip
_HEADINGS = {f"h{n}": n for n in range(1, 7)}
_VOID = frozenset({"br", "hr", "img", "input", "meta", "link", "wbr", "col", "area", "base"})
_SPACE = re.compile(r"[ \t\r\n\f\v\u00a0]+")
# <meta> names that date a page or tag it, as apps and sites write them.
_CREATED = ("created", "date", "dcterms.created", "article:published_time", "creation-date")
_UPDATED = ("updated", "modified", "dcterms.modified", "article:modified_time", "last-modified")
_TAGS = ("keywords", "tags", "tag", "article:tag")


@dataclass
class HtmlNote:
    """What a page gives: its title (``<title>``, else its first ``<h1>``), dates and tags
    from its ``<meta>`` elements, and its text as markdown."""

    title: str | None = None
    created: str | None = None
    updated: str | None = None
    tags: list[str] = field(default_factory=list)
    text: str = ""


class _Converter(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.note = HtmlNote()
        self.lines: list[str] = []
        self.line: list[str] = []
        self.skip = 0  # depth inside elements left out
        self.in_head = False
        self.in_title = False
        self.title_parts: list[str] = []
        self.first_h1: str | None = None
        self.heading: int | None = None
        self.heading_parts: list[str] = []
        self.pre = 0  # depth of open <pre> elements
        self.fence_at = 0  # index of the open code block's first fence line
        self.quote = 0
        self.lists: list[list[int]] = []  # per open list: [ordered, next number]
        self.indent = ""  # of the list item being read
        self.row: list[str] | None = None
        self.row_header: list[bool] = []
        self.cell: list[str] | None = None
        self.cell_is_header = False
        self.nested = 0  # depth of tables inside the open cell

    # -- text -------------------------------------------------------------------------
    def _prefix(self) -> str:
        return "> " * self.quote

    def _flush(self) -> None:
        text = _SPACE.sub(" ", "".join(self.line)).strip()
        self.line = []
        if text:
            self.lines.append(self._prefix() + self.indent + text)
        self.indent = ""

    def _break(self) -> None:
        self._flush()
        if self.lines and self.lines[-1] != "":
            self.lines.append("")

    def handle_data(self, data: str) -> None:
        if self.skip:
            return
        if self.in_title:
            self.title_parts.append(data)
            return
        if self.in_head:
            return
        self._sink().append(data)

    def _sink(self) -> list[str]:
        """Where inline text goes: the open table cell, else the open heading, else the
        line being read."""
        if self.cell is not None:
            return self.cell
        if self.heading is not None:
            return self.heading_parts
        return self.line

    # -- elements ---------------------------------------------------------------------
    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self.skip:
            if tag in _SKIPPED:
                self.skip += 1
            return
        if tag in _SKIPPED:
            self.skip = 1
            return
        if self.pre and tag not in ("pre", "br"):
            # Inside a code block only its text and line breaks count; a block (a
            # highlighter's line as a <div> or an <li>) starts a line.
            if (tag in _BLOCKS or tag in ("li", "tr")) and self.line and self.line[-1][-1:] != "\n":
                self.line.append("\n")
            return
        values = {k: v or "" for k, v in attrs}
        if tag == "head":
            self.in_head = True
        elif tag == "title" and not self.title_parts:
            self.in_title = True
        elif tag == "meta":
            self._meta(values)
        elif self.in_head:
            return
        elif tag in _HEADINGS:
            self._break()
            self.heading, self.heading_parts = _HEADINGS[tag], []
        elif tag == "pre":
            if not self.pre:
                self._break()
                self.fence_at = len(self.lines)
                self.lines.append(self._prefix() + "```")
            self.pre += 1
        elif tag == "blockquote":
            self._break()
            self.quote += 1
        elif tag in ("ul", "ol"):
            if self.lists:
                self._flush()
            else:
                self._break()
            self.lists.append([tag == "ol", 1])
        elif tag == "li":
            self._flush()
            marker = "- "
            if self.lists and self.lists[-1][0]:
                marker = f"{self.lists[-1][1]}. "
                self.lists[-1][1] += 1
            self.indent = "  " * max(len(self.lists) - 1, 0)
            self.line.append(marker)
        elif tag in ("table", "tr", "td", "th") and self.cell is not None:
            self.cell.append(" ")  # a table inside a cell: its text is the cell's
            self.nested += tag == "table"
        elif tag == "tr":
            self._flush()
            self.row, self.row_header = [], []
        elif tag in ("td", "th") and self.row is not None:
            self.cell, self.cell_is_header = [], tag == "th"
        elif tag == "br":
            if self.cell is not None:
                self.cell.append(" ")
            elif self.pre:
                self.line.append("\n")
            else:
                self._flush()
        elif tag == "hr":
            self._break()
        elif tag == "input" and values.get("type", "").lower() == "checkbox":
            self._sink().append("[x] " if "checked" in values else "[ ] ")
        elif tag == "en-todo":  # Evernote's checkbox
            self._sink().append("[x] " if values.get("checked") == "true" else "[ ] ")
        elif self.cell is not None and tag in ("span", "div"):
            classes = values.get("class", "").split()
            if "selected-value" in classes and "".join(self.cell).strip():
                self.cell.append(", ")  # Notion's values of a multi-select, one a span
            elif "checkbox-on" in classes:  # Notion's checkbox property, a <div> alone
                self.cell.append("Yes")
            elif "checkbox-off" in classes:
                self.cell.append("No")
        elif tag == "code" and not self.pre:
            self._sink().append("`")
        elif tag in _BLOCKS:
            self._block(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag not in _VOID:
            self.handle_endtag(tag)

    def handle_endtag(self, tag: str) -> None:
        if self.skip:
            if tag in _SKIPPED:
                self.skip -= 1
            return
        if self.pre and tag != "pre":
            return
        if tag == "head":
            self.in_head = False
        elif tag == "title":
            self.in_title = False
        elif self.in_head:
            return
        elif tag in _HEADINGS and self.heading is not None:
            text = _SPACE.sub(" ", "".join(self.heading_parts)).strip()
            if text:
                if self.heading == 1 and self.first_h1 is None:
                    self.first_h1 = text
                self.lines.append(self._prefix() + "#" * self.heading + " " + text)
                self.lines.append("")
            self.heading = None
        elif tag == "pre" and self.pre:
            self.pre -= 1
            if self.pre:
                return
            code = "".join(self.line).strip("\n")
            self.line = []
            if not code.strip():  # an empty block: no fence either
                del self.lines[self.fence_at]
                return
            self.lines.extend(self._prefix() + line for line in code.split("\n"))
            self.lines.append(self._prefix() + "```")
            self.lines.append("")
        elif tag == "blockquote" and self.quote:
            self._flush()
            self.quote -= 1
            self.lines.append("")
        elif tag in ("ul", "ol") and self.lists:
            self._flush()
            self.lists.pop()
            if not self.lists:
                self.lines.append("")
        elif tag == "li":
            self._flush()
        elif tag in ("table", "tr", "td", "th") and self.nested:
            self.nested -= tag == "table"
            if self.cell is not None:
                self.cell.append(" ")
        elif tag in ("td", "th") and self.cell is not None and self.row is not None:
            self.row.append(_SPACE.sub(" ", "".join(self.cell)).strip())
            self.row_header.append(self.cell_is_header)
            self.cell = None
        elif tag == "tr" and self.row is not None:
            self._row()
        elif tag == "table":
            self._break()
        elif tag == "code" and not self.pre:
            self._sink().append("`")
        elif tag in _BLOCKS:
            self._block(tag)

    def _block(self, tag: str) -> None:
        # A block inside a table cell or a list item stays on its line (Evernote wraps
        # each item's text in a <div>).
        if self.cell is not None or self.lists:
            (self.cell if self.cell is not None else self.line).append(" ")
        elif tag == "p":
            self._break()
        else:
            self._flush()

    def _row(self) -> None:
        cells, headers = self.row or [], self.row_header
        self.row, self.cell = None, None
        if not any(cells):
            return
        if len(cells) == 2 and headers == [True, False]:  # a property: key and value
            self.lines.append(f"{self._prefix()}{cells[0]}: {cells[1]}")
        else:
            self.lines.append(self._prefix() + " | ".join(cells))

    def _meta(self, values: dict[str, str]) -> None:
        name = (
            values.get("name") or values.get("property") or values.get("itemprop") or ""
        ).lower()
        content = values.get("content", "").strip()
        if not content:
            return
        if name in _CREATED and self.note.created is None:
            self.note.created = content
        elif name in _UPDATED and self.note.updated is None:
            self.note.updated = content
        elif name in _TAGS:
            self.note.tags += [t.strip() for t in content.split(",") if t.strip()]

    def result(self) -> HtmlNote:
        # Whatever was left open (a script, the head, a heading, a cell) ends here.
        self.skip, self.in_head, self.in_title, self.nested = 0, False, False, 0
        while self.pre:
            self.handle_endtag("pre")
        if self.heading is not None:
            self.handle_endtag(f"h{self.heading}")
        if self.cell is not None:
            self.handle_endtag("td")
        if self.row is not None:
            self.handle_endtag("tr")
        self._flush()
        text = "\n".join(self.lines)
        self.note.text = re.sub(r"\n{3,}", "\n\n", text).strip("\n")
        title = _SPACE.sub(" ", "".join(self.title_parts)).strip()
        self.note.title = title or self.first_h1
        return self.note


def html_note(text: str) -> HtmlNote:
    """The note an HTML page gives (see the module's docstring). Never raises: HTML that
    does not parse cleanly is read as far as a browser would."""
    converter = _Converter()
    converter.feed(text)
    converter.close()
    return converter.result()
