"""ExtractiveEngine over the whole bundled demo corpus."""

from __future__ import annotations

import json

from selene_dag.llm.extractive import ExtractiveEngine
from selene_dag.paths import assets_dir


def load_notes() -> list[dict]:
    path = assets_dir() / "demo" / "notes" / "til.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def test_every_demo_note_gets_a_clean_deterministic_essence() -> None:
    notes = load_notes()
    assert len(notes) >= 500
    first = [ExtractiveEngine().analyze_note(n["title"], n["content"]) for n in notes]
    engine = ExtractiveEngine()
    second = [engine.analyze_note(n["title"], n["content"]) for n in notes]
    assert first == second
    assert engine.calls_made == len(notes) and engine.calls_cached == 0
    for note, analysis in zip(notes, first, strict=True):
        assert len(analysis.essence) > 10, note["id"]
        assert len(analysis.essence) <= 360, note["id"]
        assert "```" not in analysis.essence and "](http" not in analysis.essence, note["id"]
        assert 1 <= len(analysis.concepts) <= 5, note["id"]
        assert analysis.primary_theme, note["id"]
    # essences are picked per note, not a constant: nearly all differ
    assert len({a.essence for a in first}) > 0.95 * len(notes)
