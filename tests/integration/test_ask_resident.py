"""Postings held in memory (``retrieval.resident``) rank exactly as the BM25 query does, are
loaded only from a build's second question on, and are never served for a rebuilt index."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from selene_dag.paths import assets_dir
from selene_dag.retrieval import bm25, resident
from selene_dag.retrieval.evaluate import load_questions
from selene_dag.retrieval.index import DOCS_BM25, PASSAGES_BM25, build_index
from selene_dag.retrieval.pack import ask
from selene_dag.retrieval.search import question_term_ids, search
from selene_dag.store import connect
from tests.conftest import DEMO_NOTES
from tests.support.ask import NOW, seed_store

MODEL = "mistral:7b"


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory):
    """The seeded store (notes and a session) plus the 577 demo notes, indexed."""
    path = tmp_path_factory.mktemp("resident") / "selene.duckdb"
    seed_store(path)
    conn = connect(path)
    notes = [json.loads(line) for line in DEMO_NOTES.read_text().splitlines() if line]
    conn.execute(
        "INSERT INTO notes (id, title, content, content_hash, created_at, updated_at, source) "
        "SELECT unnest(?), unnest(?), unnest(?), md5(unnest(?)), ?, ?, 'test'",
        [
            [f"demo/{n['id']}" for n in notes],
            [n["title"] for n in notes],
            [n["content"] for n in notes],
            [n["content"] for n in notes],
            NOW,
            NOW,
        ],
    )
    build_index(conn, NOW, model=MODEL)
    yield conn
    conn.close()


def _questions() -> list[str]:
    asked = [
        q.question
        for name in ("questions", "dev", "sessions_dev")
        for q in load_questions(assets_dir() / "eval" / f"{name}.jsonl")
    ]
    # Words shared by many documents, a word no document holds, a stopword, a repeated word.
    return [*asked, "the docker docker container", "zzzunknownword sqlite", "python"]


def test_in_memory_rankings_equal_the_query_to_the_last_bit(store) -> None:
    units = {unit.postings: resident.load(store, unit) for unit in (DOCS_BM25, PASSAGES_BM25)}
    compared = 0
    for question in _questions():
        ids = question_term_ids(store, question)
        for unit in (DOCS_BM25, PASSAGES_BM25):
            for kinds in (["note", "chunk"], ["chunk"]):
                for limit in (5, 100_000):
                    expected = bm25.top(store, unit, ids, kinds, limit)
                    got = resident.top_in(units[unit.postings], ids, kinds, limit)
                    assert got == expected, (question, unit.postings, kinds, limit)
                    compared += bool(expected)
    assert compared > 300


def test_postings_load_at_the_second_question_and_a_rebuild_drops_them(tmp_path: Path) -> None:
    db = tmp_path / "selene.duckdb"
    seed_store(db, with_session=False)
    conn = connect(db)
    build_index(conn, NOW, model=MODEL)
    question = "How do I open a bash shell in a running docker container?"
    first = ask(conn, question, 500, model=MODEL, now=NOW)
    assert resident.loaded(conn, DOCS_BM25) is None  # one ask: the query answered
    assert resident.loaded(conn, PASSAGES_BM25) is None
    second = ask(conn, question, 500, model=MODEL, now=NOW)
    assert resident.loaded(conn, DOCS_BM25) is not None
    assert resident.loaded(conn, PASSAGES_BM25) is not None
    assert second.text == first.text and second.items == first.items

    # A note gains the question's words: the rebuilt index must rank it, not the arrays
    # held for the build before.
    conn.execute(
        "UPDATE notes SET content = content || ' Open a bash shell in a running docker "
        "container with docker exec.', content_hash = 'changed' WHERE id = "
        "(SELECT id FROM notes WHERE title ILIKE '%zsh%' ORDER BY id LIMIT 1)"
    )
    build_index(conn, NOW, model=MODEL)
    assert resident.loaded(conn, DOCS_BM25) is None
    ids = question_term_ids(conn, question)
    fresh = bm25.top(conn, DOCS_BM25, ids, ["note", "chunk"], 40)
    for _ in range(3):  # by query, then from the arrays of the new build
        assert [(c.doc_id, c.bm25) for c in search(conn, question, limit=40)] == fresh
    assert resident.loaded(conn, DOCS_BM25) is not None
    conn.close()
