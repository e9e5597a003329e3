"""A thread's digest tells of its notes: when a forgotten folder takes notes away and the
thread falls under the minimum for a digest, its old digest ("brings together 10 notes…")
is cleared, since none would be written again. Real store, the offline engine."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from selene_dag.llm.cache import LLMCache
from selene_dag.llm.extractive import ExtractiveEngine
from selene_dag.llm.ollama import OllamaEngine
from selene_dag.notes.digests import MIN_THREAD_NOTES, compile_digests
from selene_dag.store import connect, migrate
from tests.support.fake_ollama import FakeOllama

NOW = datetime(2026, 7, 15, tzinfo=UTC)


def _thread(conn, thread_id: str, notes: int) -> list[str]:
    conn.execute(
        "INSERT INTO threads (id, name, why, status, created_at) VALUES (?, ?, '', 'active', ?)",
        [thread_id, f"thread {thread_id}", NOW],
    )
    ids = []
    for i in range(notes):
        note_id = f"{thread_id}/n{i}.md"
        ids.append(note_id)
        conn.execute(
            "INSERT INTO notes (id, title, content, content_hash, created_at, updated_at, source) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            [note_id, f"Note {i}", f"Text {i}.", f"h{i}", NOW, NOW, f"/tmp/{note_id}"],
        )
        conn.execute(
            "INSERT INTO processed_notes (note_id, essence) VALUES (?, ?)",
            [note_id, f"Essence number {i} of the thread {thread_id} is a sentence."],
        )
        conn.execute(
            "INSERT INTO thread_notes (thread_id, note_id) VALUES (?, ?)", [thread_id, note_id]
        )
    return ids


def test_a_thread_that_lost_notes_under_the_minimum_loses_its_digest(tmp_path: Path) -> None:
    conn = connect(tmp_path / "selene.duckdb")
    try:
        migrate(conn)
        shrinking = _thread(conn, "a", MIN_THREAD_NOTES + 2)
        _thread(conn, "b", MIN_THREAD_NOTES + 2)
        engine = ExtractiveEngine()
        first = compile_digests(conn, engine, NOW)
        assert (first.written, first.cleared) == (2, 0)
        # A folder forgotten: three of a's notes leave the home.
        conn.execute(
            "UPDATE notes SET deleted_at = ? WHERE list_contains(?, id)", [NOW, shrinking[:3]]
        )
        second = compile_digests(conn, engine, NOW)
        assert (second.eligible, second.fresh, second.cleared) == (1, 1, 1)
        digests = dict(conn.execute("SELECT id, thread_digest FROM threads").fetchall())
        assert digests["a"] is None and digests["b"]
        assert compile_digests(conn, engine, NOW).cleared == 0  # once
    finally:
        conn.close()


def test_a_digest_the_model_answers_unusably_keeps_the_old_one_and_is_not_cached(
    tmp_path: Path,
) -> None:
    # A model's off-task answer ('{"essence": 42}', one sentence) was cached as the digest
    # and then rejected, on every run after the model answered well again; an empty one
    # (unusable twice) failed the whole step.
    conn = connect(tmp_path / "selene.duckdb")
    try:
        migrate(conn)
        _thread(conn, "a", MIN_THREAD_NOTES + 2)
        compile_digests(conn, ExtractiveEngine(), NOW)
        old = conn.execute("SELECT thread_digest FROM threads").fetchone()[0]
        conn.execute("UPDATE processed_notes SET essence = essence || ' Changed.'")
        for answer in ('{"essence": 42, "concepts": "x"}', ""):
            with FakeOllama(content=answer) as fake:
                engine = OllamaEngine(
                    host=fake.url, model="mistral:7b", retries=0, cache=LLMCache(conn)
                )
                stats = compile_digests(conn, engine, NOW)
            assert (stats.written, stats.rejected) == (0, 1)
            assert conn.execute("SELECT thread_digest FROM threads").fetchone()[0] == old
        with FakeOllama() as fake:  # the model answers well again: asked, not the cache
            engine = OllamaEngine(host=fake.url, model="mistral:7b", cache=LLMCache(conn))
            assert compile_digests(conn, engine, NOW).written == 1
            assert fake.requests["/api/chat"] == 1
    finally:
        conn.close()
