"""Seed 000's seven computeTier cases."""

import pytest

from selene_dag.notes.fidelity import compute_tier


@pytest.mark.parametrize(
    ("age", "essence", "status", "access", "tier"),
    [
        (3, False, "active", 1, "full"),  # fresh note
        (30, True, "active", 5, "high"),  # warm, active thread
        (30, False, "active", 5, "full"),  # warm without essence stays full
        (120, True, "archived", 100, "summary"),  # cool, inactive
        (200, True, "archived", 200, "skeleton"),  # cold, archived, untouched
        (200, True, "active", 2, "high"),  # rehydration by an active thread
        (200, False, "archived", 200, "full"),  # cannot demote without essence
    ],
)
def test_seed_cases(age, essence, status, access, tier):
    assert compute_tier(age, essence, status, access) == tier


def test_unthreaded_old_note_is_summary_not_skeleton():
    assert compute_tier(400, True, None, 400) == "summary"
