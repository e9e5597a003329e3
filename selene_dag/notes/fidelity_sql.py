"""Apply seed 000's tier rules to every note with one set-based SQL transform.

``fidelity_inputs.sql`` yields each live note's rule inputs, ``fidelity_tiers.sql`` the tier
per note, and ``fidelity_write.sql`` one UPDATE that stores only the tiers that changed
(stamping ``fidelity_evaluated_at`` on those rows, as seed 000 does).
"""

from __future__ import annotations

from datetime import datetime

import duckdb

from selene_dag.paths import transform_sql
from selene_dag.store import transaction


def _check_now(now: datetime) -> None:
    if not isinstance(now, datetime):
        raise TypeError(f"now must be a datetime, got {type(now).__name__}")
    if now.tzinfo is None:
        raise ValueError("now must be timezone-aware (fidelity ages are measured in UTC)")


def fidelity_inputs(conn: duckdb.DuckDBPyConnection, now: datetime) -> list[tuple]:
    """Rows (note_id, age_days, has_essence, thread_status, last_access_days) as of ``now``.

    One row per live (not deleted), non-test note that has a processed_notes row.
    Raises TypeError/ValueError if ``now`` is not a timezone-aware datetime.
    """
    _check_now(now)
    sql = (
        "SELECT note_id, age_days, has_essence, thread_status, last_access_days FROM (\n"
        + transform_sql("fidelity_inputs")
        + "\n) AS inputs"
    )
    return conn.execute(sql, {"now": now}).fetchall()


def fidelity_update_sql() -> str:
    """The single UPDATE statement (parameter ``$now``) that stores every changed tier."""
    tiers = transform_sql("fidelity_tiers").replace("{inputs}", transform_sql("fidelity_inputs"))
    return transform_sql("fidelity_write").replace("{tiers}", tiers)


def apply_fidelity_tiers(conn: duckdb.DuckDBPyConnection, now: datetime) -> int:
    """Recompute every live note's tier as of ``now`` in one transaction; return how many changed.

    Only notes whose tier differs from the stored one are written, and only those get
    ``fidelity_evaluated_at = now``. Raises TypeError/ValueError if ``now`` is not a
    timezone-aware datetime; on any error the transaction is rolled back.
    """
    _check_now(now)
    sql = fidelity_update_sql()
    with transaction(conn):
        changed = conn.execute(sql, {"now": now}).fetchone()[0]
    return int(changed)
