"""The shipped question sets: every file parses, and every fact a notes question requires
is in the note it names (a fact no text holds would measure nothing)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from selene_dag.paths import assets_dir
from selene_dag.retrieval.evaluate import load_questions

EVAL = assets_dir() / "eval"
CORPORA = (
    assets_dir() / "demo" / "notes" / "til.jsonl",
    EVAL / "conversations" / "conversations.jsonl",
)


def _notes() -> dict[str, str]:
    texts: dict[str, str] = {}
    for corpus in CORPORA:
        for line in corpus.read_text(encoding="utf-8").splitlines():
            if line.strip():
                note = json.loads(line)
                texts[note["id"]] = f"{note.get('title', '')}\n{note['content']}".lower()
    return texts


def _conversation(texts: dict[str, str], note_id: str) -> str:
    """Every session of the conversation ``note_id`` belongs to (a fact may need two)."""
    prefix = note_id.split("/")[0] + "/session-"
    return "\n".join(t for k, t in texts.items() if k.startswith(prefix))


@pytest.mark.parametrize("path", sorted(EVAL.glob("*.jsonl")), ids=lambda p: p.stem)
def test_question_set_parses_and_note_facts_are_in_their_notes(path: Path) -> None:
    questions = load_questions(path)
    assert questions
    texts = _notes()
    for q in questions:
        if not (q.source or "").startswith("note:"):
            continue
        note_id = q.source.removeprefix("note:")
        assert note_id in texts, (path.name, q.source)
        where = texts[note_id]
        if "/session-" in note_id:
            where = _conversation(texts, note_id)
        for fact in q.must_contain:
            assert fact.lower() in where, (path.name, q.question, fact)
