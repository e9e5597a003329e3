"""Compression health: seed 000's ``/health/compression`` fields, from the database."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import duckdb

from selene_dag.notes.digests import MIN_THREAD_ESSENCES, MIN_THREAD_NOTES
from selene_dag.notes.fidelity import TIERS


def compression_health(conn: duckdb.DuckDBPyConnection, now: datetime) -> dict[str, Any]:
    """Return seed 000's health document: tiers, essence progress, thread digests (and
    ``threadDigests.eligible``: active threads large enough for a digest).

    Counts only live (not deleted), non-test notes.
    """
    tier_rows = conn.execute(
        # A note not analysed yet (a model server's limit per run) is shown in full.
        "SELECT coalesce(p.fidelity_tier, 'full'), count(*) FROM notes n "
        "LEFT JOIN processed_notes p ON p.note_id = n.id "
        "WHERE n.deleted_at IS NULL AND NOT n.test_run GROUP BY 1"
    ).fetchall()
    tiers = {tier: 0 for tier in TIERS} | {tier: int(count) for tier, count in tier_rows}
    total, computed = conn.execute(
        "SELECT count(*), count(p.essence) FROM notes n "
        "LEFT JOIN processed_notes p ON p.note_id = n.id "
        "WHERE n.deleted_at IS NULL AND NOT n.test_run"
    ).fetchone()
    active, with_digest = conn.execute(
        "SELECT count(*), count(thread_digest) FROM threads WHERE status = 'active'"
    ).fetchone()
    # Threads large enough for a digest (as compile_digests picks them): the others never
    # get one, so "13 / 66" is no backlog when 13 are eligible.
    # Those of them without one: the engine's digest was rejected (under three sentences),
    # or it is not made yet.
    eligible, undigested = conn.execute(
        "SELECT count(*), count(*) FILTER (WHERE NOT has_digest) FROM (SELECT t.id, "
        "any_value(t.thread_digest IS NOT NULL) AS has_digest FROM threads t "
        "JOIN thread_notes tn ON tn.thread_id = t.id "
        "JOIN notes n ON n.id = tn.note_id AND n.deleted_at IS NULL "
        "LEFT JOIN processed_notes p ON p.note_id = n.id "
        "WHERE t.status = 'active' GROUP BY t.id "
        f"HAVING count(*) >= {MIN_THREAD_NOTES} AND count(p.essence) >= {MIN_THREAD_ESSENCES})"
    ).fetchone()
    return {
        "status": "ok",
        "timestamp": now.isoformat(),
        "tiers": tiers,
        "essences": {
            "total": int(total),
            "computed": int(computed),
            "remaining": int(total - computed),
            "percent": round(100 * computed / total) if total else 0,
        },
        "threadDigests": {
            "activeThreads": int(active),
            "withDigest": int(with_digest),
            "eligible": int(eligible),
            "eligibleWithoutDigest": int(undigested),
        },
    }
