"""The extractive engine on a very long note: centrality is computed from sums, never from
an n × n similarity matrix, so tens of thousands of sentences cost time linear in them."""

from __future__ import annotations

import numpy as np

from selene_dag.llm.extractive.essence import pick_essence
from selene_dag.llm.extractive.scoring import centrality, tfidf_similarity


def _assert_matrix_means(sentences: list[str], extra: str) -> tuple[np.ndarray, np.ndarray]:
    """centrality(sentences, extra) equals the means of the dense similarity matrix."""
    n = len(sentences)
    central, to_extra = centrality(sentences, extra)
    sim = tfidf_similarity([*sentences, extra])
    assert sim is not None
    core = sim[:n, :n].copy()
    np.fill_diagonal(core, 0.0)
    assert np.allclose(central, core.sum(axis=1) / (n - 1))
    assert np.allclose(to_extra, sim[:n, n])
    return central, to_extra


def test_centrality_equals_the_similarity_matrix_means() -> None:
    sentences = [
        "The cache evicts the least recently used entry first.",
        "Eviction happens when the cache is full.",
        "A full cache evicts entries by recency.",
        "Unrelated: tomatoes need sun and water.",
    ]
    _assert_matrix_means(sentences, "cache eviction")
    assert centrality(["!!", "??"])[0].tolist() == [0.0, 0.0]


def test_centrality_with_wordless_rows_and_no_shared_word() -> None:
    # A sentence of stop words only is an empty row in the middle of the matrix.
    sentences = ["Caching layers evict entries.", "It is what it is.", "Eviction caching layers."]
    central, to_title = _assert_matrix_means(sentences, "layers")
    assert central[1] == 0.0 and to_title[1] == 0.0
    # Sentences that share no word score exactly 0, not rounding noise: noise must not
    # become the best centrality a note's scores are divided by.
    apart = centrality(["Postgres stores tables.", "Zsh prompts colour.", "Bees make honey."])
    assert apart[0].tolist() == [0.0, 0.0, 0.0]


def test_forty_thousand_sentences_do_not_build_a_square_matrix() -> None:
    body = " ".join(
        f"Sentence {i} explains cache layer {i % 97} and eviction policy {i % 13}."
        for i in range(40_000)
    )
    # A dense 40,000 × 40,000 float matrix would need 12.8 GB: this must stay small.
    essence = pick_essence("Cache eviction", body)
    assert len(essence) > 10
