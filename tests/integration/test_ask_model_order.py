"""A model's ranking of ask's best passages (``ask(passage_ranker=...)``, what the Ollama
engine gives through ``service.ask``) decides which passages the budget reaches first;
an empty or nonsensical ranking leaves the offline order as it was."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from selene_dag.retrieval.index import build_index
from selene_dag.retrieval.pack import RERANK_TOP, ask
from selene_dag.retrieval.search import hybrid_passages
from selene_dag.store import connect
from tests.support.ask import NOW, seed_store

MODEL = "mistral:7b"
QUESTION = "run a shell in a docker container or copy a file"


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory):
    path: Path = tmp_path_factory.mktemp("order") / "selene.duckdb"
    seed_store(path)
    conn = connect(path)
    build_index(conn, NOW, model=MODEL)
    yield conn
    conn.close()


def _ask(conn, budget: int, ranker=None):
    return ask(conn, QUESTION, budget, model=MODEL, now=NOW, passage_ranker=ranker)


def test_the_passage_the_model_puts_first_leads_the_pack(store) -> None:
    offline = _ask(store, 120)
    seen: list[Sequence[str]] = []
    lead, lead_title = offline.items[0].id, offline.items[0].title

    def pick_other_document(question: str, texts: Sequence[str]) -> list[int]:
        seen.append(texts)
        assert question == QUESTION and 1 < len(texts) <= RERANK_TOP
        # The first passage of another document than the offline leader (a passage's text
        # starts with its document's title).
        return [next(i for i, t in enumerate(texts) if t and not t.startswith(lead_title))]

    ranked = _ask(store, 120, pick_other_document)
    assert seen and ranked.stats["reranked"]
    assert ranked.items[0].id != lead
    chosen = seen[0][ranked.stats["reranked"][0] - 1]
    assert chosen.startswith(ranked.items[0].title + "\n")


def test_an_empty_or_invalid_ranking_keeps_the_offline_pack(store) -> None:
    offline = _ask(store, 300)
    for answer in ([], [99, -1]):
        result = _ask(store, 300, lambda _q, _t, answer=answer: answer)
        assert result.text == offline.text
        assert result.stats["reranked"] == []


def test_reranking_keeps_the_fused_scores_in_place(store) -> None:
    from selene_dag.retrieval.pack import model_order

    hits = hybrid_passages(store, QUESTION)
    reordered, picked = model_order(store, QUESTION, hits, lambda _q, texts: [len(texts) - 1])
    top = min(RERANK_TOP, len(hits))
    assert picked == [top - 1]
    assert reordered[0].passage_id == hits[top - 1].passage_id
    assert [h.fused for h in reordered] == [h.fused for h in hits]
    assert sorted(h.passage_id for h in reordered) == sorted(h.passage_id for h in hits)
