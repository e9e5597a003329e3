"""JSON Canvas files (Obsidian's canvases) are notes of their cards' text."""

import json
from pathlib import Path

from selene_dag.notes.ingest import read_notes

# The shape of jsoncanvas.org 1.0, as Obsidian writes it.
CANVAS = {
    "nodes": [
        {"id": "g1", "type": "group", "x": -40, "y": -80, "width": 900, "height": 500,
         "label": "Launch plan"},
        {"id": "t2", "type": "text", "x": 400, "y": 0, "width": 250, "height": 60,
         "text": "Ship the beta on **March 12**"},
        {"id": "t1", "type": "text", "x": 0, "y": 0, "width": 250, "height": 60,
         "text": "# Goals\n\n- 100 beta users"},
        {"id": "f1", "type": "file", "x": 0, "y": 200, "width": 250, "height": 60,
         "file": "Projects/Beta.md"},
        {"id": "l1", "type": "link", "x": 400, "y": 200, "width": 250, "height": 60,
         "url": "https://example.org/pricing"},
    ],
    "edges": [{"id": "e1", "fromNode": "t1", "toNode": "t2", "label": "then"}],
}  # fmt: skip


def test_a_canvas_is_its_cards_in_reading_order_titled_by_its_name(tmp_path: Path) -> None:
    (tmp_path / "Launch.canvas").write_text(json.dumps(CANVAS))
    result = read_notes(tmp_path)
    assert result.errors == []
    (note,) = result.notes
    assert (note.id, note.title) == ("Launch.canvas", "Launch")
    assert note.content == (
        "## Launch plan\n\n# Goals\n\n- 100 beta users\n\nShip the beta on **March 12**\n\n"
        "[[Projects/Beta.md]]\n\nhttps://example.org/pricing"
    )


def test_canvases_without_words_or_broken_give_no_note(tmp_path: Path) -> None:
    files_only = {"nodes": [{"id": "f", "type": "file", "file": "a.md", "x": 0, "y": 0}]}
    (tmp_path / "layout.canvas").write_text(json.dumps(files_only))
    # A canvas just made is "{}" (Obsidian's) or empty: no words, and no problem (it was
    # called "not a canvas").
    (tmp_path / "empty.canvas").write_text("{}")
    (tmp_path / "blank.canvas").write_text("")
    (tmp_path / "edges.canvas").write_text('{"nodes": [], "edges": []}')
    (tmp_path / "cut.canvas").write_text('{"nodes": [')
    (tmp_path / "odd.canvas").write_text(json.dumps({"nodes": [1, {"type": "text", "x": "a"}]}))
    (tmp_path / "other.canvas").write_text('{"cards": []}')
    result = read_notes(tmp_path)
    assert result.notes == []
    problems = {e.source.rsplit("/", 1)[-1]: e.error for e in result.errors}
    assert set(problems) == {"other.canvas", "cut.canvas"}
    assert problems["other.canvas"] == "not a canvas: no 'nodes' list"
    assert problems["cut.canvas"].startswith("bad JSON")
