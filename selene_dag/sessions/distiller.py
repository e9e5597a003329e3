"""Token-budget selection of scored chunks (seed 003 §5.8).

Defaults: budget 80,000 tokens, chunks with consensus below 5.0 left out, sort ``hybrid``
(0.7 × consensus/10 + 0.3 × recency, recency = chronological position / (n − 1)). Other
sorts: ``consensus`` (highest first) and ``chronological`` (earliest first). Chunks are taken
greedily in sort order, skipping any that would overflow the budget, so the total (chunk
tokens + ``reserve_tokens`` + ``per_chunk_tokens`` per selected chunk, all in the target
model's tokens) never exceeds ``max_tokens``. The output keeps chronological order.

The input sequence is taken to be in chronological order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from selene_dag.config import DISTILL_SORT_MODES, Settings
from selene_dag.errors import check_budget
from selene_dag.sessions.chunker import Chunk

SORT_MODES: tuple[str, ...] = DISTILL_SORT_MODES
HYBRID_CONSENSUS_WEIGHT = 0.7
HYBRID_RECENCY_WEIGHT = 0.3


@dataclass(frozen=True)
class ScoredChunk:
    """A chunk with its consensus score (0..10)."""

    chunk: Chunk
    consensus: float


@dataclass(frozen=True)
class DistillerConfig:
    """Distillation limits (seed 003 defaults)."""

    max_tokens: int = 80_000
    min_consensus: float = 5.0
    sort_by: str = "hybrid"

    def __post_init__(self) -> None:
        if self.sort_by not in SORT_MODES:
            raise ValueError(f"sort_by {self.sort_by!r}: expected one of {', '.join(SORT_MODES)}")
        check_budget(self.max_tokens, "max_tokens", minimum=1)

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        max_tokens: int | None = None,
        min_consensus: float | None = None,
        sort_by: str | None = None,
    ) -> DistillerConfig:
        """The settings' distillation (SELENE_DISTILL_*), with each knob given here instead
        of its setting. Raises ValueError as the constructor does."""
        return cls(
            settings.distill_token_budget if max_tokens is None else max_tokens,
            settings.distill_min_consensus if min_consensus is None else min_consensus,
            settings.distill_sort_mode if sort_by is None else sort_by,
        )


@dataclass(frozen=True)
class DistilledSession:
    """Selected chunks in chronological order, their token total and what was left out."""

    chunks: tuple[ScoredChunk, ...]
    total_tokens: int
    dropped_chunks: int
    below_consensus: int
    sort_by: str
    max_tokens: int


def _priority(items: Sequence[ScoredChunk], sort_by: str) -> list[int]:
    n = len(items)
    if sort_by == "chronological":
        return list(range(n))
    if sort_by == "consensus":
        return sorted(range(n), key=lambda i: (-items[i].consensus, i))
    denom = max(n - 1, 1)

    def hybrid(i: int) -> float:
        recency = i / denom if n > 1 else 1.0
        return (
            HYBRID_CONSENSUS_WEIGHT * (items[i].consensus / 10.0) + HYBRID_RECENCY_WEIGHT * recency
        )

    return sorted(range(n), key=lambda i: (-hybrid(i), -i))


def distill(
    scored: Sequence[ScoredChunk],
    config: DistillerConfig = DistillerConfig(),
    reserve_tokens: int = 0,
    per_chunk_tokens: int = 0,
) -> DistilledSession:
    """Select chunks within the budget (see the module docstring); never over budget."""
    if reserve_tokens < 0 or per_chunk_tokens < 0:
        raise ValueError("reserve_tokens and per_chunk_tokens must be >= 0")
    eligible_idx = [i for i, s in enumerate(scored) if s.consensus >= config.min_consensus]
    eligible = [scored[i] for i in eligible_idx]
    used = reserve_tokens
    chosen: set[int] = set()
    if used <= config.max_tokens:
        for i in _priority(eligible, config.sort_by):
            cost = eligible[i].chunk.token_count + per_chunk_tokens
            if used + cost <= config.max_tokens:
                chosen.add(i)
                used += cost
    picked = tuple(eligible[i] for i in sorted(chosen))
    total = sum(s.chunk.token_count for s in picked)
    return DistilledSession(
        chunks=picked,
        total_tokens=total,
        dropped_chunks=len(eligible) - len(picked),
        below_consensus=len(scored) - len(eligible),
        sort_by=config.sort_by,
        max_tokens=config.max_tokens,
    )
