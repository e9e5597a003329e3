"""Obsidian Excalidraw drawings are read for their words, not their scene data."""

import base64
import json
from datetime import UTC, datetime

from selene_dag.notes.excalidraw import drawing_text
from selene_dag.notes.ingest import read_notes

# The shape the Obsidian Excalidraw plugin writes (ExcalidrawData.generateMDBase), with a
# compressed scene of the size a small drawing has.
_SCENE = base64.b64encode(
    json.dumps({"type": "excalidraw", "elements": [{"id": f"e{i}"} for i in range(400)]}).encode()
).decode()
DRAWING = f"""\
---
excalidraw-plugin: parsed
tags: [excalidraw]
---
==⚠  Switch to EXCALIDRAW VIEW in the MORE OPTIONS menu of this document. ⚠== You can decompress Drawing data with the command palette: 'Decompress current Excalidraw file'. For more info check in plugin settings under 'Saving'

Sketch of the ingest pipeline for the design review.

# Excalidraw Data

## Text Elements
^_dummy!_

raw_notes reads the folder ^a1B2c3D4

processed_notes
computes essences ^x9Y8z7W6

## Element Links
a1B2c3D4: [[Ingest]]

## Embedded Files
0f3c9a: [[diagram.png]]

%%
## Drawing
```compressed-json
{_SCENE[:76]}
{_SCENE[76:]}
```
%%
"""


def test_a_drawing_keeps_the_users_markdown_and_its_text_elements(tmp_path):
    (tmp_path / "Drawing 2024-03-05 10.15.33.excalidraw.md").write_text(DRAWING, encoding="utf-8")
    result = read_notes(tmp_path)
    assert result.errors == []
    (note,) = result.notes
    assert note.title == "Drawing 2024-03-05 10.15.33"
    assert note.tags == ("excalidraw",)
    assert note.created_at == datetime(2024, 3, 5, tzinfo=UTC)
    assert note.content == (
        "Sketch of the ingest pipeline for the design review.\n"
        "\n"
        "raw_notes reads the folder\n"
        "\n"
        "processed_notes\n"
        "computes essences"
    )


def test_a_drawing_without_words_is_no_note_and_no_problem(tmp_path):
    empty = "---\nexcalidraw-plugin: parsed\n---\n==⚠ Switch ⚠==\n\n# Text Elements\n# Drawing\n```json\n{}\n```\n%%\n"
    (tmp_path / "blank.excalidraw.md").write_text(empty, encoding="utf-8")
    (tmp_path / "note.md").write_text("# Plain\n\n## Drawing\nstays: not a drawing\n")
    result = read_notes(tmp_path)
    assert [n.id for n in result.notes] == ["note.md"]
    assert result.errors == []
    assert "stays: not a drawing" in result.notes[0].content


def test_older_drawings_without_the_data_heading_are_read_the_same_way():
    body = '# Text Elements\nhello ^abc\n\n# Drawing\n```json\n{"type": "excalidraw"}\n```'
    assert drawing_text(body) == "hello"
