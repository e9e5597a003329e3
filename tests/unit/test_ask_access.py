"""Which notes an answer counts as used: those whose text the pack shows. A REFERENCE line
names a note without showing it, and stamping it moved the tiers of every note a question
only named; a KEYWORDS line lists a note's words, and notes a question only brushed took
the place of fresh ones in `context`."""

from __future__ import annotations

from selene_dag.retrieval.pack import AskItem, AskResult


def _item(note: str, level: str, kind: str = "note") -> AskItem:
    return AskItem(f"{kind}:{note}", kind, level, 1.0, f"{kind} {note}", note, "text", 5)


def test_notes_shown_count_as_used_and_references_and_keywords_do_not() -> None:
    items = [
        _item("a.md", "full"),
        _item("b.md", "summary"),
        _item("c.md", "keywords"),
        _item("d.md", "reference"),
        _item("abc123", "full", kind="chunk"),
    ]
    result = AskResult("q", 500, "mistral:7b", 0, items, "", {})
    assert result.note_ids == ["a.md", "b.md"]
