"""Seed 000's reconsolidate-threads, with a model engine: each active thread is read again
over its 30 newest notes (through a 3,000-token ContextBuilder, titled with their day)
when they change; its summary and "why" are rewritten and its direction and whether it
shifted are stored. The real Ollama client against the fake server; real demo notes."""

from __future__ import annotations

import json
from pathlib import Path

import dagster as dg
import duckdb
import pytest

from selene_dag.config import load_settings
from selene_dag.defs.runs import materialize
from selene_dag.llm.engine import ThreadRevision
from selene_dag.llm.extractive import ExtractiveEngine
from selene_dag.notes.threads import RECONSOLIDATE_NOTE_LIMIT
from tests.conftest import DEMO_NOTES
from tests.support.fake_ollama import FakeOllama

NOW = "2026-07-15T00:00:00+00:00"
ASSETS = ["raw_notes", "processed_notes", "threads"]


def _notes(folder: Path, count: int) -> Path:
    rows = [json.loads(line) for line in DEMO_NOTES.read_text().splitlines()]
    chosen = [r for r in rows if r["topic"] in ("python", "sqlite")][:count]
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "notes.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in chosen))
    return path


def _threads(db: Path) -> dict[str, tuple]:
    with duckdb.connect(str(db), read_only=True) as conn:
        rows = conn.execute(
            "SELECT id, summary, why, direction, shifted, reconsolidated_at "
            "FROM threads WHERE status = 'active' AND note_count >= 2"
        ).fetchall()
    return {r[0]: r[1:] for r in rows}


def _prompts(server: FakeOllama) -> list[str]:
    out = []
    for body in server.bodies:
        text = json.dumps(body)
        if "Has the direction of this thread shifted" in text:
            out.append(text)
    return out


@pytest.fixture
def corpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = _notes(tmp_path / "notes", 8)
    monkeypatch.setenv("SELENE_NOTES_DIR", str(path.parent))
    monkeypatch.setenv("SELENE_NOW", NOW)
    monkeypatch.setenv("SELENE_ESSENCE_LIMIT", "0")
    monkeypatch.setenv("SELENE_THREAD_ACTIVE_DAYS", "36500")  # the demo notes are years old
    return path


def test_active_threads_are_read_again_only_when_their_notes_change(
    corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with FakeOllama() as server:
        monkeypatch.setenv("SELENE_LLM", "ollama")
        monkeypatch.setenv("SELENE_OLLAMA_HOST", server.url)
        db = load_settings().db_path
        instance = dg.DagsterInstance.ephemeral()
        first = materialize(ASSETS, instance)
        assert first.success
        threads = _threads(db)
        assert threads, "the demo notes form active threads"
        for summary, why, direction, shifted, at in threads.values():
            assert summary and why and direction in ("exploring", "emerging", "clear")
            assert isinstance(shifted, bool) and at is not None
        asked = _prompts(server)
        # A thread the model just detected is taken as read (its summary, why and direction
        # are the detection's): the others are read again, once each.
        detected = [t for t in threads if t.startswith("model:")]
        assert len(asked) == len(threads) - len(detected) > 0
        assert "Previous summary" in asked[0] and "(20" in asked[0]  # titled with their day
        meta = first.asset_materializations_for_node("threads")[0].metadata
        assert meta["threads_reconsolidated"].value == len(asked)

        # Nothing changed: no thread is read again.
        again = materialize(["threads"], instance)
        assert again.success and len(_prompts(server)) == len(asked)
        assert _threads(db) == threads

        # A new note in one thread: that thread alone is read again.
        rows = [json.loads(line) for line in corpus.read_text().splitlines()]
        extra = dict(rows[0], id="new-note", title="One more note on the same topic")
        corpus.write_text(corpus.read_text() + json.dumps(extra) + "\n")
        grown = materialize(ASSETS, instance)
        assert grown.success
        assert len(_prompts(server)) == len(asked) + 1
        changed = {k for k, v in _threads(db).items() if threads.get(k) != v}
        assert len(changed) == 1


def test_offline_threads_are_not_read_again(corpus: Path) -> None:
    result = materialize(ASSETS, dg.DagsterInstance.ephemeral())
    assert result.success
    assert all(v[4] is None for v in _threads(load_settings().db_path).values())
    # The extractive engine's revision keeps the thread as it stands.
    kept = ExtractiveEngine().reconsolidate_thread("sqlite", "A summary.", "Why.", "notes")
    assert kept == ThreadRevision("A summary.", "Why.", "exploring", False)
    assert RECONSOLIDATE_NOTE_LIMIT == 30
