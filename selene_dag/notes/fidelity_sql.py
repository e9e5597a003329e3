"""Apply seed 000's tier rules to every note with one set-based SQL transform."""

from __future__ import annotations

from datetime import datetime

import duckdb

from selene_dag.paths import transform_sql


def fidelity_inputs(conn: duckdb.DuckDBPyConnection, now: datetime) -> list[tuple]:
    """Rows (note_id, age_days, has_essence, thread_status, last_access_days) as of ``now``."""
    return conn.execute(transform_sql("fidelity_inputs"), {"now": now}).fetchall()


def apply_fidelity_tiers(conn: duckdb.DuckDBPyConnection, now: datetime) -> int:
    """Recompute every live note's tier as of ``now`` in one transaction; return how many changed."""
    sql = transform_sql("fidelity_tiers").replace("{inputs}", transform_sql("fidelity_inputs"))
    conn.execute("BEGIN TRANSACTION")
    try:
        conn.execute(sql, {"now": now})
        changed = conn.execute(
            "SELECT count(*) FROM fidelity_new f JOIN processed_notes p USING (note_id) "
            "WHERE p.fidelity_tier IS DISTINCT FROM f.tier"
        ).fetchone()[0]
        conn.execute(transform_sql("fidelity_write"), {"now": now})
        conn.execute("DROP TABLE fidelity_new")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return int(changed)
