"""With a model server configured, ask widens its search with the model's rewrite of the
question and lets the model order its best passages (both cached in ``llm_cache``); with
the server down it still answers from its offline path and says why the question was not
rewritten or reranked. Real Ollama client, fake server."""

from __future__ import annotations

import dagster as dg

from selene_dag import service
from selene_dag.config import load_settings
from selene_dag.defs.runs import materialize
from selene_dag.store import connect
from tests.integration.test_ask_dagster import notes_home  # noqa: F401  (fixture)
from tests.support.fake_ollama import FakeOllama, free_port

QUESTION = "how do I get a shell inside a running docker container"


def _ingest() -> None:
    materialize(
        ["raw_notes", "processed_notes", "threads", "fidelity_tiers", "search_index"],
        dg.DagsterInstance.ephemeral(),
    )


def test_rewrite_goes_through_the_model_once_and_is_cached(notes_home, monkeypatch):  # noqa: F811
    _ingest()
    offline = service.ask(load_settings(), QUESTION, 400)
    assert "rewrite" not in offline.stats  # the extractive engine never tries
    with FakeOllama() as server:
        monkeypatch.setenv("SELENE_LLM", "ollama")
        monkeypatch.setenv("SELENE_OLLAMA_HOST", server.url)
        settings = load_settings()
        first = service.ask(settings, QUESTION, 400)
        calls = server.requests["/api/chat"] + server.requests["/api/generate"]
        assert calls == 2  # the rewrite, then the rerank of the best passages
        assert first.stats["rewrite"] and not first.stats["rewrite"].startswith("not rewritten")
        assert first.stats["reranked"], first.stats
        assert first.stats["rerank"].startswith("passages the model put first")
        assert "docker" in " ".join(str(b) for b in server.bodies).lower()
        again = service.ask(settings, QUESTION, 400)
        assert server.requests["/api/chat"] + server.requests["/api/generate"] == calls
        assert again.text == first.text and again.stats["rewrite"] == first.stats["rewrite"]
    with connect(settings.db_path) as conn:
        tasks = {r[0] for r in conn.execute("SELECT task FROM llm_cache").fetchall()}
    assert {"rewrite_question", "rerank_passages"} <= tasks


def test_a_server_that_is_down_leaves_ask_on_its_offline_path(notes_home, monkeypatch):  # noqa: F811
    _ingest()
    offline = service.ask(load_settings(), QUESTION, 400)
    monkeypatch.setenv("SELENE_LLM", "ollama")
    monkeypatch.setenv("SELENE_OLLAMA_HOST", f"http://127.0.0.1:{free_port()}")
    monkeypatch.setenv("SELENE_OLLAMA_TIMEOUT", "2")
    result = service.ask(load_settings(), QUESTION, 400)
    assert result.stats["rewrite"].startswith("not rewritten")
    assert result.stats["rerank"].startswith("not reranked")
    assert result.text == offline.text and result.items


def test_the_time_ask_took_counts_the_rewrite(notes_home, monkeypatch):  # noqa: F811
    # The rewrite runs before the pack's own clock: a 3 s model call was reported as a
    # pack of 0.3 s.
    _ingest()
    with FakeOllama(delay=0.5) as server:
        monkeypatch.setenv("SELENE_LLM", "ollama")
        monkeypatch.setenv("SELENE_OLLAMA_HOST", server.url)
        result = service.ask(load_settings(), QUESTION, 400)
    assert result.stats["elapsed_ms"] >= 2 * 500  # the rewrite and the rerank, each 0.5 s
