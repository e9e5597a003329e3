"""Weighted consensus of several assessors' scores for one chunk (seed 003 §5.7).

Scores are on the 1..10 scale. Defaults: weight 1.0 per assessor (claude, codex, gemini and
any other, including the two extractive assessors), at least 2 assessments for a
*sufficient* consensus (with fewer, the weighted mean is still returned as a provisional
score, flagged ``sufficient=False``), outliers beyond 2σ dropped.

Outliers: the seed's "drop scores > 2 stddev from the mean" cannot fire with the 2–5
assessors we have when σ includes the tested score itself (a point's z-score is at most
(n−1)/√n < 2 for n ≤ 5). We therefore test each score against the mean and σ of the *other*
scores (leave-one-out, σ floored at 0.5 points), only when there are at least 3 scores, and
never drop so many that fewer than 2 remain.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

DEFAULT_WEIGHTS: Mapping[str, float] = {"claude": 1.0, "codex": 1.0, "gemini": 1.0}
SIGMA_FLOOR = 0.5


@dataclass(frozen=True)
class AssessmentScore:
    """One assessor's overall score (1..10) for a chunk."""

    assessor: str
    overall: float


@dataclass(frozen=True)
class ConsensusConfig:
    """Consensus rules (seed 003 defaults)."""

    weights: Mapping[str, float] = field(default_factory=lambda: dict(DEFAULT_WEIGHTS))
    min_assessments: int = 2
    discard_outliers: bool = True
    outlier_sigmas: float = 2.0


@dataclass(frozen=True)
class Consensus:
    """Result: score (0..10), how many scores were used, who, and whether it is sufficient."""

    score: float
    n_assessments: int
    assessors: tuple[str, ...]
    sufficient: bool
    dropped: tuple[str, ...] = ()


def _mean_std(values: Sequence[float]) -> tuple[float, float]:
    mean = sum(values) / len(values)
    var = sum((v - mean) ** 2 for v in values) / len(values)
    return mean, math.sqrt(var)


def compute_consensus(
    assessments: Sequence[AssessmentScore], config: ConsensusConfig = ConsensusConfig()
) -> Consensus:
    """Weighted mean of the assessments after outlier removal (see the module docstring).

    With no assessment at all the score is 0.0 and ``sufficient`` is False. Raises
    ValueError for a score outside 0..10 or a negative weight.
    """
    for a in assessments:
        if not 0.0 <= float(a.overall) <= 10.0 or math.isnan(float(a.overall)):
            raise ValueError(f"assessment score {a.overall!r} from {a.assessor!r} is outside 0..10")
    if not assessments:
        return Consensus(0.0, 0, (), False)
    kept = list(assessments)
    dropped: list[str] = []
    if config.discard_outliers and len(kept) >= 3:
        outliers = []
        for i, a in enumerate(kept):
            others = [b.overall for j, b in enumerate(kept) if j != i]
            mean, std = _mean_std(others)
            if abs(a.overall - mean) > config.outlier_sigmas * max(std, SIGMA_FLOOR):
                outliers.append(i)
        if len(kept) - len(outliers) >= 2:
            dropped = [kept[i].assessor for i in outliers]
            kept = [a for i, a in enumerate(kept) if i not in outliers]
    weights = []
    for a in kept:
        w = float(config.weights.get(a.assessor, 1.0))
        if w < 0:
            raise ValueError(f"weight of assessor {a.assessor!r} is negative")
        weights.append(w)
    total = sum(weights)
    if total == 0:
        score = sum(a.overall for a in kept) / len(kept)
    else:
        score = sum(w * a.overall for w, a in zip(weights, kept, strict=True)) / total
    return Consensus(
        score=round(score, 4),
        n_assessments=len(kept),
        assessors=tuple(a.assessor for a in kept),
        sufficient=len(kept) >= config.min_assessments,
        dropped=tuple(dropped),
    )
