"""The shipped question sets: every file parses, and every fact a notes question requires
is in the note it names (a fact no text holds would measure nothing)."""

from __future__ import annotations

import json
import re
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


_JSON_ESCAPE = re.compile(r'\\(u[0-9a-f]{4}|["\\/bfnrt])')


def _decode(escape: str) -> str:
    if escape.startswith("u"):
        return chr(int(escape[1:], 16))
    return {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f"}.get(escape, escape)


# Session question sets and the transcripts they ask about.
SESSION_CORPORA = {
    "sessions_dev": Path(__file__).resolve().parents[1] / "fixtures" / "sessions",
    "sessions_blind": Path(__file__).resolve().parents[1] / "fixtures" / "sessions",
    "sessions_blind2": Path(__file__).resolve().parents[1] / "fixtures" / "sessions",
    "sessions_blind3": EVAL / "sessions_more",
    "sessions_dev2": EVAL / "sessions_dev2",
    "sessions_dev3": EVAL / "sessions_dev3",
    "sessions_dev4": EVAL / "sessions_dev2",
    "sessions_dev5": EVAL / "sessions_dev3",
    "sessions_blind4": EVAL / "sessions_blind4",
}


@pytest.mark.parametrize(
    "name", [n for n in SESSION_CORPORA if (EVAL / f"{n}.jsonl").is_file()], ids=str
)
def test_session_facts_are_in_the_parsed_transcript_they_name(name: str) -> None:
    from selene_dag.sessions.parsers import parse_file

    files = [
        p
        for p in sorted(SESSION_CORPORA[name].rglob("*.json*"))
        if "shapes_" not in p.name and not p.name.endswith(".meta.json")
    ]
    # A tool's input is stored as JSON; a question may quote a string in it as a person
    # reads it ("vite": "^5.4.11"), so the check also looks at the text with the escapes
    # of JSON strings decoded.
    texts = {
        str(p): "\n".join(f"{e.tool_name or ''} {e.text}" for e in parse_file(p).events).lower()
        for p in files
    }
    texts = {
        p: t + "\n" + _JSON_ESCAPE.sub(lambda m: _decode(m.group(1)), t) for p, t in texts.items()
    }
    for q in load_questions(EVAL / f"{name}.jsonl"):
        assert (q.source or "").startswith("session:"), (name, q.question)
        needle = q.source.removeprefix("session:")
        where = [t for path, t in texts.items() if needle in path]
        assert where, (name, q.source)
        for fact in q.must_contain:
            assert any(fact.lower() in t for t in where), (name, q.question, fact)
