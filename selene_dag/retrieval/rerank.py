"""Question-aware rerank (seed 003 §5.12): dedup, then 0.6 question + 0.4 static score.

Pure functions: no database. The question score mixes normalized BM25 with term coverage
(the share of the question's words the document contains, title hits counting extra); the
static score is what the item is worth without the question: consensus and importance for
session chunks, fidelity tier and recency for notes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from selene_dag.retrieval.search import Candidate
from selene_dag.retrieval.terms import CoverageMatcher
from selene_dag.text import content_hash

# Seed 003's duplicate test: two documents whose first this many characters are equal.
DEDUP_CHARS = 500

DEFAULT_TIER_WEIGHTS: Mapping[str, float] = {
    "full": 1.0,
    "high": 0.9,
    "summary": 0.8,
    "skeleton": 0.7,
}


@dataclass(frozen=True)
class RerankConfig:
    """Weights of the rerank; the seed's defaults are 0.6 question / 0.4 static."""

    question_weight: float = 0.6
    static_weight: float = 0.4
    bm25_share: float = 0.5  # of the question score; the rest is term coverage
    title_bonus: float = 1.0  # extra coverage credit for a term found in the title
    consensus_share: float = 0.7  # of a chunk's static score; the rest is importance
    tier_share: float = 0.5  # of a note's static score; the rest is recency
    # Long: a note does not lose half its worth in a few years (the tier already says age).
    recency_half_life_days: float = 10 * 365.0
    tier_weights: Mapping[str, float] = field(default_factory=lambda: dict(DEFAULT_TIER_WEIGHTS))
    # Of the question score, the share taken by the document's best retrieved passage
    # (fused BM25 + dense rank, relative to the best passage); 0 ignores passages.
    passage_share: float = 0.0

    def __post_init__(self) -> None:
        for name in (
            "question_weight",
            "static_weight",
            "bm25_share",
            "consensus_share",
            "tier_share",
            "passage_share",
        ):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must be within [0, 1], got {value}")
        if self.question_weight + self.static_weight <= 0:
            raise ValueError("question_weight + static_weight must be > 0")
        if self.recency_half_life_days <= 0:
            raise ValueError("recency_half_life_days must be > 0")
        if self.title_bonus < 0:
            raise ValueError("title_bonus must be >= 0")


@dataclass(frozen=True)
class Ranked:
    """A candidate with its scores; ``final`` is in [0, 1]."""

    candidate: Candidate
    question_score: float
    static_score: float
    final: float
    # Share of the question's words the document holds (IDF-weighted, title hits extra);
    # 1.0 where unknown.
    coverage: float = 1.0


def dedup_key(text: str) -> str:
    """The full sha256 hex digest (64 digits) of the first 500 characters of ``text``: the
    ``dedup_key`` column of ``search_docs`` (seed 003's duplicate test)."""
    return content_hash(text[:DEDUP_CHARS], length=64)


def dedup(candidates: Sequence[Candidate]) -> list[Candidate]:
    """Drop candidates whose first 500 characters repeat, keeping the higher BM25 one;
    the order of the kept candidates is preserved."""
    best: dict[str, Candidate] = {}
    for cand in candidates:
        kept = best.get(cand.dedup_key)
        if kept is None or cand.bm25 > kept.bm25:
            best[cand.dedup_key] = cand
    winners = {id(c) for c in best.values()}
    return [c for c in candidates if id(c) in winners]


def static_score(cand: Candidate, now: datetime, config: RerankConfig) -> float:
    """Question-independent worth in [0, 1]: chunks from consensus (0–10) and importance
    (0–100); notes from fidelity tier and recency (exponential half-life)."""
    if cand.kind == "chunk":
        consensus = (cand.consensus if cand.consensus is not None else 5.0) / 10.0
        importance = (cand.importance if cand.importance is not None else 50.0) / 100.0
        value = config.consensus_share * consensus + (1 - config.consensus_share) * importance
    else:
        tier = config.tier_weights.get(cand.fidelity_tier or "full", 0.5)
        recency = 0.5
        if cand.updated_at is not None:
            age_days = max(0.0, (now - cand.updated_at).total_seconds() / 86_400)
            recency = math.pow(0.5, age_days / config.recency_half_life_days)
        value = config.tier_share * tier + (1 - config.tier_share) * recency
    return min(1.0, max(0.0, value))


def rerank(
    candidates: Sequence[Candidate],
    terms: Sequence[str],
    now: datetime,
    config: RerankConfig | None = None,
    weights: Mapping[str, float] | None = None,
    passages: Mapping[str, float] | None = None,
) -> list[Ranked]:
    """Score candidates against the question terms, best first (ties by BM25, doc id).

    ``final = qw * question + sw * static`` normalized by ``qw + sw``; the question score
    is ``bm25_share * bm25 / max_bm25 + (1 - bm25_share) * coverage`` (coverage weighted
    by ``weights``, the terms' IDF, when given), mixed with ``passages[doc_id]`` (the
    document's best passage score in [0, 1], 0 when absent) at ``passage_share``.
    """
    config = config or RerankConfig()
    if not candidates:
        return []
    top = max(c.bm25 for c in candidates) or 1.0
    weight = config.question_weight + config.static_weight
    ranked = []
    matcher = CoverageMatcher(terms)
    for cand in candidates:
        coverage = matcher.coverage(cand.title, cand.body, config.title_bonus, weights)
        question = config.bm25_share * max(0.0, cand.bm25) / top
        question += (1 - config.bm25_share) * coverage
        if passages is not None and config.passage_share:
            best = passages.get(cand.doc_id, 0.0)
            question = (1 - config.passage_share) * question + config.passage_share * best
        static = static_score(cand, now, config)
        final = (config.question_weight * question + config.static_weight * static) / weight
        ranked.append(Ranked(cand, question, static, final, coverage))
    ranked.sort(key=lambda r: (-r.final, -r.candidate.bm25, r.candidate.doc_id))
    return ranked
