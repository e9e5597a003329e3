"""Pages of a Notion export ("Markdown & CSV"): the dates and tags their property lines
give.

Notion names each page's file after its title and its 32-hex-digit id (``Standup
1a2b…9f.md``); a page of a database starts with its ``# Title`` and then one line per
property (``Created: March 5, 2024 10:15 AM``, ``Tags: budget, planning``,
``Last edited time: …``). Those lines stay in the note's text, as Notion shows them; the
creation and edit times and the tags become the note's fields.
"""

from __future__ import annotations

import re
from datetime import datetime

_PAGE_ID = re.compile(r"\s+[0-9a-f]{32}$")
# A property's name is what the user called it: any words, but not a list item or a quote.
_PROPERTY = re.compile(r"^([^\s:#>*-][^:]{0,59}?):\s+(\S.*?)\s*$")
_FIELDS = {
    "created": "created",
    "created time": "created",
    "date created": "created",
    "last edited time": "updated",
    "last edited": "updated",
    "updated": "updated",
    "tags": "tags",
}
# The date formats Notion writes, by the user's setting (times are local, without offset).
# Each date form with a 12- or a 24-hour time, or none.
_DATE_FORMATS = tuple(
    f"{day}{time}"
    for day in ("%B %d, %Y", "%Y/%m/%d", "%m/%d/%Y", "%d/%m/%Y")
    for time in (" %I:%M %p", " %H:%M", "")
)


def is_notion_page(stem: str) -> bool:
    """Whether a file's name (without suffix) ends with a Notion page id."""
    return _PAGE_ID.search(stem) is not None


def page_title(stem: str) -> str:
    """A Notion page file's name without its page id."""
    return _PAGE_ID.sub("", stem)


_ZONE = re.compile(r"\s*\((?:GMT|UTC)?[+-]?[\w:+-]*\)$")


def notion_date(value: str) -> str | None:
    """A date as Notion writes it (``March 5, 2024 10:15 AM``, with an ``@`` before it in
    its HTML export; of a range, its start) in ISO form; None when it is in no format
    Notion uses."""
    start = value.split("→")[0].strip().removeprefix("@").strip()
    start = _ZONE.sub("", start)  # "10:15 AM (GMT+1)": local time, as the other forms are
    for form in _DATE_FORMATS:
        try:
            return datetime.strptime(start, form).isoformat()
        except ValueError:
            continue
    return None


def page_properties(body: str) -> dict[str, str]:
    """The fields a Notion page's property lines give (``created``, ``updated``,
    ``tags``): the ``Key: value`` lines right after its ``# Title`` heading. A date in no
    format Notion writes is given as written (an ISO date reads; the reader reports any
    other as unreadable and keeps the note)."""
    lines = iter(body.splitlines())
    if not next(lines, "").startswith("# "):
        return {}
    found: dict[str, str] = {}
    for line in lines:
        if not line.strip() and not found:
            continue  # the blank line under the title
        match = _PROPERTY.match(line)
        if match is None:
            break
        field = _FIELDS.get(match.group(1).strip().lower())
        value = match.group(2)
        if field in ("created", "updated"):
            value = notion_date(value) or value.strip()
        if field and value:
            found.setdefault(field, value)
    return found
