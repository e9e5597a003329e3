"""Consensus (weights, minimum, outliers) and distiller (budget, sort modes, order)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from selene_dag.sessions.chunker import Chunk
from selene_dag.sessions.consensus import AssessmentScore, ConsensusConfig, compute_consensus
from selene_dag.sessions.distiller import DistillerConfig, ScoredChunk, distill


def a(name: str, score: float) -> AssessmentScore:
    return AssessmentScore(name, score)


def test_plain_average_with_default_weights() -> None:
    c = compute_consensus([a("claude", 8), a("codex", 6), a("gemini", 7)])
    assert c.score == 7.0 and c.n_assessments == 3 and c.sufficient and c.dropped == ()


def test_weights() -> None:
    c = compute_consensus(
        [a("claude", 8), a("codex", 4)], ConsensusConfig(weights={"claude": 3.0, "codex": 1.0})
    )
    assert c.score == 7.0


def test_single_assessment_is_provisional() -> None:
    c = compute_consensus([a("extractive", 6.5)])
    assert c.score == 6.5 and not c.sufficient and c.n_assessments == 1
    empty = compute_consensus([])
    assert empty.score == 0.0 and not empty.sufficient


def test_outlier_beyond_two_sigma_is_dropped() -> None:
    c = compute_consensus([a("claude", 8.0), a("codex", 8.2), a("gemini", 7.9), a("x", 1.0)])
    assert c.dropped == ("x",)
    assert c.score == pytest.approx((8.0 + 8.2 + 7.9) / 3, abs=1e-3)
    kept = compute_consensus([a("claude", 8.0), a("codex", 6.0), a("gemini", 7.0)])
    assert kept.dropped == ()
    off = compute_consensus(
        [a("claude", 8), a("codex", 8.2), a("x", 1.0)], ConsensusConfig(discard_outliers=False)
    )
    assert off.n_assessments == 3


def test_rejects_out_of_range() -> None:
    with pytest.raises(ValueError):
        compute_consensus([a("claude", 11)])


def chunk(i: int, tokens: int) -> Chunk:
    return Chunk(f"c{i}", "k", i, i * 10, i * 10 + 9, f"text {i}", tokens, 50.0, 10, (i,))


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.integers(1, 5000), st.floats(0, 10)), min_size=0, max_size=30),
    st.integers(1, 20000),
    st.sampled_from(["consensus", "chronological", "hybrid"]),
    st.integers(0, 500),
)
def test_never_over_budget_and_chronological(items, budget, mode, reserve) -> None:
    scored = [ScoredChunk(chunk(i, t), c) for i, (t, c) in enumerate(items)]
    d = distill(
        scored,
        DistillerConfig(max_tokens=budget, sort_by=mode),
        reserve_tokens=reserve,
        per_chunk_tokens=3,
    )
    assert d.total_tokens + reserve * bool(d.chunks) + 3 * len(d.chunks) <= budget or not d.chunks
    indexes = [s.chunk.chunk_index for s in d.chunks]
    assert indexes == sorted(indexes)
    assert all(s.consensus >= 5.0 for s in d.chunks)
    assert d.below_consensus == sum(c < 5.0 for _, c in items)


def test_sort_modes_pick_differently() -> None:
    scored = [
        ScoredChunk(chunk(0, 100), 9.5),
        ScoredChunk(chunk(1, 100), 6.0),
        ScoredChunk(chunk(2, 100), 7.0),
    ]
    pick = {
        m: [
            s.chunk.chunk_index
            for s in distill(scored, DistillerConfig(max_tokens=100, sort_by=m)).chunks
        ]
        for m in ("consensus", "chronological", "hybrid")
    }
    assert pick == {"consensus": [0], "chronological": [0], "hybrid": [2]}
    low = distill(scored, DistillerConfig(max_tokens=100, sort_by="chronological", min_consensus=8))
    assert [s.chunk.chunk_index for s in low.chunks] == [0]


def test_bad_sort_mode() -> None:
    with pytest.raises(ValueError, match="sort_by"):
        DistillerConfig(sort_by="random")
