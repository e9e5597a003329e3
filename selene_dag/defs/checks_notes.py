"""Asset checks of the notes group: coverage figures (warn) and rules that must hold (block).

No ``from __future__ import annotations``: Dagster inspects the ``context`` annotation.
"""

import dagster as dg

from selene_dag.defs.assets_notes import (
    HEALTH_BUDGET,
    compression_health,
    fidelity_tiers,
    processed_notes,
    thread_digests,
)
from selene_dag.defs.resources import SeleneResource
from selene_dag.notes.digests import MAX_SENTENCES, MIN_SENTENCES, split_sentences
from selene_dag.notes.fidelity import compute_tier
from selene_dag.notes.fidelity_sql import fidelity_inputs


@dg.asset_check(asset=processed_notes, description="Share of live notes that have an essence.")
def essence_coverage(selene: SeleneResource) -> dg.AssetCheckResult:
    """Warn while some notes still lack an essence (normal with a per-run limit)."""
    with selene.connection() as conn:
        total, done = conn.execute(
            "SELECT count(*), count(p.essence) FROM notes n LEFT JOIN processed_notes p "
            "ON p.note_id = n.id WHERE n.deleted_at IS NULL AND NOT n.test_run"
        ).fetchone()
    pct = round(100 * done / total, 1) if total else 100.0
    return dg.AssetCheckResult(
        passed=done == total,
        severity=dg.AssetCheckSeverity.WARN,
        metadata={"notes": total, "with_essence": done, "coverage_pct": pct},
    )


@dg.asset_check(
    asset=fidelity_tiers,
    blocking=True,
    description="Every stored tier equals seed 000's rules recomputed in Python from SQL inputs.",
)
def tier_rules(selene: SeleneResource) -> dg.AssetCheckResult:
    """Recompute each note's tier with ``compute_tier`` and compare with the stored one."""
    now = selene.settings().now()
    with selene.connection() as conn:
        inputs = fidelity_inputs(conn, now)
        stored = dict(conn.execute("SELECT note_id, fidelity_tier FROM processed_notes").fetchall())
    wrong = [
        note_id
        for note_id, age, has_essence, status, access in inputs
        if stored.get(note_id) != compute_tier(age, has_essence, status, access)
    ]
    return dg.AssetCheckResult(
        passed=not wrong,
        metadata={"checked": len(inputs), "mismatches": len(wrong), "examples": wrong[:10]},
    )


@dg.asset_check(
    asset=thread_digests, description="Every digest has 3–5 sentences and ≥ 30 characters."
)
def digest_shape(selene: SeleneResource) -> dg.AssetCheckResult:
    """Check stored digests against seed 000's length rules."""
    with selene.connection() as conn:
        digests = conn.execute(
            "SELECT id, thread_digest FROM threads WHERE thread_digest IS NOT NULL"
        ).fetchall()
    bad = [
        thread_id
        for thread_id, digest in digests
        if len(digest) < 30 or not MIN_SENTENCES <= len(split_sentences(digest)) <= MAX_SENTENCES
    ]
    return dg.AssetCheckResult(passed=not bad, metadata={"digests": len(digests), "bad": bad[:10]})


@dg.asset_check(
    asset=compression_health,
    blocking=True,
    description="The tiered context of all notes never exceeds its budget in the target model's tokens.",
)
def context_within_budget(selene: SeleneResource) -> dg.AssetCheckResult:
    """Pack all notes at several budgets and count each pack in the model's own tokens."""
    from selene_dag.context import count_tokens
    from selene_dag.notes.context_notes import load_context_notes, pack_all_notes

    model = selene.settings().model
    with selene.connection() as conn:
        notes = load_context_notes(conn)
    results = {}
    for budget in (500, 4_000, HEALTH_BUDGET):
        pack = pack_all_notes(notes, budget, model)
        results[budget] = count_tokens(pack.text, model)
    over = {b: t for b, t in results.items() if t > b}
    return dg.AssetCheckResult(
        passed=not over,
        metadata={"model": model, **{f"tokens_at_{b}": t for b, t in results.items()}},
    )


NOTES_CHECKS = [essence_coverage, tier_rules, digest_shape, context_within_budget]
