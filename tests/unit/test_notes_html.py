"""HTML notes: a page's text as markdown with its head's title, dates and tags; Notion's
HTML export's property rows; copies of notes read from another file (a Keep note's
.html, ChatGPT's chat.html) are not read twice."""

import io
import zipfile
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from selene_dag.notes.html import html_note
from selene_dag.notes.ingest import read_notes
from selene_dag.notes.listing import note_files

EVERNOTE_PAGE = """\
<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.0 Transitional//EN" "http://www.w3.org/TR/xhtml1/DTD/xhtml1-transitional.dtd">
<html xmlns="http://www.w3.org/1999/xhtml">
<head>
<meta http-equiv="Content-Type" content="text/html; charset=UTF-8"/>
<meta name="exporter-version" content="Evernote Mac 7.14 (458244)"/>
<meta name="created" content="2019-06-14 10:38:51 +0000"/>
<meta name="updated" content="2019-06-15 08:00:00 +0000"/>
<meta name="keywords" content="travel, passport"/>
<title>Passport renewal</title>
<style>body { font-family: Helvetica; }</style>
</head>
<body>
<div><span style="font-size: 14px;">Bring <b>two photos</b> and the&nbsp;old passport.</span></div>
<div><br/></div>
<h2>Checklist</h2>
<ul><li><div>Form DS-82</div></li><li>Fee: $130<ul><li>check or money order</li></ul></li></ul>
<div><input checked="true" type="checkbox"/>Book the appointment</div>
<div><input type="checkbox"/>Mail it</div>
<ol><li>Sign</li><li>Send</li></ol>
<blockquote>Allow 6&ndash;8 weeks.</blockquote>
<pre>curl -s https://travel.example/status
  --id 42</pre>
<p>Run <code>status --id 42</code> to check, see <a href="https://travel.example">the site</a>.</p>
<table><tr><td>Office</td><td>Hours</td></tr><tr><td>Main St</td><td>9&ndash;5</td></tr></table>
<script>alert("not text")</script>
</body>
</html>
"""

EVERNOTE_TEXT = """\
Bring two photos and the old passport.

## Checklist

- Form DS-82
- Fee: $130
  - check or money order

[x] Book the appointment
[ ] Mail it

1. Sign
2. Send

> Allow 6–8 weeks.

```
curl -s https://travel.example/status
  --id 42
```

Run `status --id 42` to check, see the site.

Office | Hours
Main St | 9–5"""

NOTION = "Kickoff with Ana 5d2c8e1f0a9b4c7d6e3f2a1b0c9d8e7f"
NOTION_PAGE = """\
<html><head><meta http-equiv="Content-Type" content="text/html; charset=utf-8"/>
<title>Kickoff with Ana</title><style>/* Notion's styles */ .page-title { font-size: 2.5rem; }</style>
</head><body><article id="5d2c8e1f" class="page sans"><header><h1 class="page-title">Kickoff with Ana</h1>
<table class="properties"><tbody>
<tr class="property-row property-row-created_time"><th><span class="icon property-icon"><svg role="graphics-symbol" viewBox="0 0 16 16"><path d="M8 15.126"></path></svg></span>Created</th><td><time>@March 5, 2024 10:15 AM</time></td></tr>
<tr class="property-row property-row-multi_select"><th><span class="icon property-icon"></span>Tags</th><td><span class="selected-value select-value-color-blue">budget</span>, <span class="selected-value">planning</span></td></tr>
</tbody></table></header><div class="page-body"><p id="a1">The kickoff moved to Friday; Ana owns the budget draft.</p></div></article></body></html>
"""


def test_an_evernote_html_page_is_markdown_with_its_head_fields() -> None:
    page = html_note(EVERNOTE_PAGE)
    assert page.title == "Passport renewal"
    assert page.text == EVERNOTE_TEXT
    assert page.created == "2019-06-14 10:38:51 +0000" and page.tags == ["travel", "passport"]


def test_read_as_a_note(tmp_path: Path) -> None:
    (tmp_path / "Passport renewal.html").write_text(EVERNOTE_PAGE)
    (tmp_path / "Passport renewal_files").mkdir()
    (tmp_path / "Passport renewal_files" / "scan.png").write_bytes(b"\x89PNG")
    (tmp_path / f"{NOTION}.html").write_text(NOTION_PAGE)
    result = read_notes(tmp_path)
    assert result.errors == []
    notes = {n.id: n for n in result.notes}
    passport = notes["Passport renewal.html"]
    assert passport.title == "Passport renewal" and passport.content == EVERNOTE_TEXT
    assert passport.created_at == datetime(2019, 6, 14, 10, 38, 51, tzinfo=UTC)
    assert passport.updated_at == datetime(2019, 6, 15, 8, 0, tzinfo=UTC)
    assert passport.tags == ("travel", "passport")
    kickoff = notes[f"{NOTION}.html"]
    assert kickoff.title == "Kickoff with Ana"
    assert kickoff.content.startswith("# Kickoff with Ana\n\nCreated: @March 5, 2024 10:15 AM")
    assert kickoff.created_at == datetime(2024, 3, 5, 10, 15, tzinfo=UTC)
    assert kickoff.tags == ("budget", "planning")
    assert "svg" not in kickoff.content and "font-size" not in kickoff.content


def test_copies_of_notes_read_elsewhere_are_not_read_again(tmp_path: Path) -> None:
    keep = tmp_path / "Keep"
    keep.mkdir()
    (keep / "Boiler.json").write_text('{"title": "Boiler", "textContent": "Service in May"}')
    (keep / "Boiler.html").write_text("<html><body>Service in May</body></html>")
    (keep / "Other.html").write_text("<html><body><p>An HTML note alone</p></body></html>")
    chats = tmp_path / "chatgpt"
    chats.mkdir()
    (chats / "conversations.json").write_text("[]")
    (chats / "chat.html").write_text("<html><body>every conversation again</body></html>")
    names = {p.relative_to(tmp_path).as_posix() for p in note_files(tmp_path)}
    assert names == {"Keep/Boiler.json", "Keep/Other.html", "chatgpt/conversations.json"}
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zipped:
        for path in sorted(p for p in tmp_path.rglob("*") if p.is_file()):
            zipped.write(path, path.relative_to(tmp_path).as_posix())
    archive = tmp_path / "export.zip"
    archive.write_bytes(buffer.getvalue())
    ids = sorted(n.id for n in read_notes(archive).notes)
    assert ids == sorted(n.id for n in read_notes(tmp_path).notes)
    assert "Keep/Other.html" in ids and "Keep/Boiler.html" not in ids


def test_a_page_without_text_is_named_and_broken_html_is_read_as_far_as_it_goes(
    tmp_path: Path,
) -> None:
    (tmp_path / "empty.html").write_text("<html><head><title>Nothing</title></head><body></body>")
    (tmp_path / "broken.htm").write_text("<div><p>Unclosed <b>bold <pre>code\n  kept")
    result = read_notes(tmp_path)
    assert [n.id for n in result.notes] == ["broken.htm"]
    assert result.notes[0].content == "Unclosed bold\n\n```\ncode\n  kept\n```"
    assert [e.source.endswith("empty.html") for e in result.errors] == [True]


_TAGS = st.sampled_from(
    ["<p>", "</p>", "<li>", "</ul>", "<ol>", "<pre>", "</pre>", "<tr>", "<th>", "<td>",
     "</tr>", "<br/>", "<h2>", "</h2>", "<script>", "</script>", "<blockquote>",
     "</blockquote>", "<title>", "<code>", "<input type=checkbox checked>", "&amp;", "<!--"]
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(_TAGS, st.text(max_size=12)), max_size=40))
def test_any_tag_soup_is_read_without_raising(parts: list[str]) -> None:
    page = html_note("".join(parts))
    assert isinstance(page.text, str) and "\n\n\n" not in page.text


@pytest.mark.parametrize(
    ("page", "text"),
    [
        ("<pre><script>x", ""),  # left open inside a skipped element: nothing to read
        ("<h1><pre>x", "# x"),
        ("<tr><td><pre>x", "x"),
        ("<pre><pre>x</pre>", "```\nx\n```"),
        ("<p>a</p><pre> </pre><p>b", "a\n\nb"),  # an empty block leaves no fence
        ("<h2>Head <b>x", "## Head x"),
        ("<ul><li>one<li>two</ul>", "- one\n- two"),
        ("<h2>Use <code>ls</code></h2><p>then</p>", "## Use `ls`\n\nthen"),
        ("<table><tr><td><code>x</code> and <input type=checkbox checked>done</td></tr></table>",
         "`x` and [x] done"),
        # A highlighter's lines as list items or divs inside <pre>: one line each.
        ("<pre><code><ol><li><div>a = 1</div></li><li><div>  b = 2</div></li></ol></code></pre>",
         "```\na = 1\n  b = 2\n```"),
        # A table inside a cell: its text is the cell's.
        ("<table><tr><td>left</td><td><table><tr><td>x</td><td>y</td></tr></table></td></tr></table>",
         "left | x y"),
    ],
)  # fmt: skip
def test_elements_left_open_end_with_the_page(page: str, text: str) -> None:
    assert html_note(page).text == text


def test_a_notion_multi_select_and_checkbox_property_read_as_values(tmp_path: Path) -> None:
    # The values of a multi-select ran together ("Tags: home officecoffee": no tags) and a
    # checkbox, a <div> of a class alone, was empty.
    row = '<tr class="property-row property-row-{kind}"><th>{name}</th><td>{value}</td></tr>'
    rows = "".join(
        row.format(kind=kind, name=name, value=value)
        for kind, name, value in (
            (
                "multi_select",
                "Tags",
                '<span class="selected-value">home office</span>'
                '<span class="selected-value">coffee</span>',
            ),
            ("checkbox", "Serviced", '<div class="checkbox checkbox-on"></div>'),
            ("checkbox", "Sold", '<div class="checkbox checkbox-off"></div>'),
        )
    )
    page = (
        '<html><body><article class="page"><header><h1 class="page-title">Espresso machine'
        f'</h1><table class="properties"><tbody>{rows}</tbody></table></header>'
        '<div class="page-body"><p>Plumbed in.</p></div></article></body></html>'
    )
    (tmp_path / "Espresso machine 1590080aa5a3802488c2e857dea7aa7e.html").write_text(page)
    (note,) = read_notes(tmp_path).notes
    assert note.tags == ("home office", "coffee")
    assert "Tags: home office, coffee\nServiced: Yes\nSold: No" in note.content
