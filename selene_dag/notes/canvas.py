"""The text of a JSON Canvas file (``.canvas``: Obsidian's canvases, jsoncanvas.org).

A canvas holds ``nodes`` placed on a plane (``x``, ``y``): cards of markdown text, files of
the vault, web links and labelled groups, joined by ``edges``. Its note is what a reader
sees, top to bottom and left to right: each card's text, a group's label as a heading, a
file as its ``[[link]]``, a web link as its address; edges are left out.
"""

from __future__ import annotations

from typing import Any


def _number(value: Any) -> float:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0


def _shown(node: dict[str, Any]) -> str:
    kind = node.get("type")
    if kind == "text" and isinstance(node.get("text"), str):
        return node["text"].strip()
    if kind == "group" and isinstance(node.get("label"), str) and node["label"].strip():
        return f"## {node['label'].strip()}"
    if kind == "file" and isinstance(node.get("file"), str) and node["file"].strip():
        return f"[[{node['file'].strip()}]]"
    if kind == "link" and isinstance(node.get("url"), str):
        return node["url"].strip()
    return ""


def is_canvas(data: Any) -> bool:
    """Whether parsed JSON is a canvas: an object whose ``nodes`` is a list."""
    return isinstance(data, dict) and isinstance(data.get("nodes"), list)


def canvas_text(data: dict[str, Any]) -> str:
    """The text of a canvas (see the module's docstring); "" when no card, group label or
    link holds words (a canvas of files alone is a layout, not a note)."""
    nodes = [n for n in data["nodes"] if isinstance(n, dict)]
    nodes.sort(key=lambda n: (_number(n.get("y")), _number(n.get("x"))))
    parts = [(n.get("type"), _shown(n)) for n in nodes]
    if not any(text for kind, text in parts if kind != "file"):
        return ""
    return "\n\n".join(text for _, text in parts if text)
