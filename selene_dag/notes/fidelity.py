"""Seed 000's fidelity rules as a pure function; ``sql/transforms/fidelity_tiers.sql`` is
the same rules as one set-based statement (a property test holds them equal).

Rules, in order:
  age < 7 days                         → full
  no essence                           → full   (never demote without an essence)
  in an active thread                  → high   (rehydration)
  age < 90 days                        → high
  archived thread and no access ≥ 180d → skeleton
  otherwise                            → summary
"""

from __future__ import annotations

from dataclasses import dataclass

TIERS = ("full", "high", "summary", "skeleton")
FRESH_DAYS = 7
WARM_DAYS = 90
COLD_ACCESS_DAYS = 180


@dataclass(frozen=True)
class TierInput:
    """What decides a tier: age, essence presence, thread status, days since last access."""

    age_days: float
    has_essence: bool
    thread_status: str | None
    last_access_days: float


def compute_tier(
    age_days: float, has_essence: bool, thread_status: str | None, last_access_days: float
) -> str:
    """Return the fidelity tier (full/high/summary/skeleton) for one note per seed 000."""
    if age_days < FRESH_DAYS:
        return "full"
    if not has_essence:
        return "full"
    if thread_status == "active":
        return "high"
    if age_days < WARM_DAYS:
        return "high"
    if thread_status == "archived" and last_access_days >= COLD_ACCESS_DAYS:
        return "skeleton"
    return "summary"
