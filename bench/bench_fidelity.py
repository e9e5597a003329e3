"""Fidelity tiers: the set-based SQL transform against per-row Python, on 1,000,000 notes.

Figures (one synthetic DuckDB built with set-based SQL: 1,000,000 notes spread over 3
years, processed_notes with 10 % missing essences and varied last access, 2,000 threads
half active, 60 % of notes in a thread):

* fidelity SQL, 1M notes — seconds of ``apply_fidelity_tiers`` (inputs, tiers, update, in
  one transaction). Goal ≤ 2 s.
* fidelity per-row Python — the seed's shape: fetch the inputs, ``compute_tier`` per row,
  one UPDATE per note. Fetch and compute run on all 1M rows; the per-row UPDATEs run on a
  sample and are scaled to 1M (stated in the row). Goal: SQL ≥ 20× faster.
* the two paths agree on every tier (checked, not timed).
"""

from __future__ import annotations

import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import duckdb

from bench._common import BenchRow, print_rows
from selene_dag.notes.fidelity import compute_tier
from selene_dag.notes.fidelity_sql import apply_fidelity_tiers, fidelity_inputs
from selene_dag.store import connect

NOTES = 1_000_000
THREADS = 2_000
UPDATE_SAMPLE = 5_000
NOW = datetime(2026, 7, 15, tzinfo=UTC)

BUILD = f"""
INSERT INTO notes (id, title, content, content_hash, created_at, updated_at, source, test_run)
SELECT 'n' || i, 'note ' || i, 'content of note ' || i, md5(i::VARCHAR),
       $now::TIMESTAMPTZ - to_seconds((i * 7919 % (3 * 365 * 86400))::BIGINT),
       $now::TIMESTAMPTZ - to_seconds((i * 7919 % (3 * 365 * 86400))::BIGINT),
       'synthetic', false
FROM range({NOTES}) t(i);

INSERT INTO processed_notes (note_id, concepts, primary_theme, essence, source_hash,
                             last_accessed_at)
SELECT 'n' || i, ['c' || (i % 50)], 't' || (i % 20),
       CASE WHEN i % 10 = 0 THEN NULL ELSE 'essence of note ' || i END,
       md5(i::VARCHAR),
       CASE WHEN i % 3 = 0 THEN NULL
            ELSE $now::TIMESTAMPTZ - to_seconds((i * 104729 % (400 * 86400))::BIGINT) END
FROM range({NOTES}) t(i);

INSERT INTO threads (id, name, status, note_count)
SELECT 't' || i, 'thread ' || i, CASE WHEN i % 2 = 0 THEN 'active' ELSE 'archived' END, 0
FROM range({THREADS}) t(i);

INSERT INTO thread_notes (thread_id, note_id)
SELECT 't' || (i % {THREADS}), 'n' || i FROM range({NOTES}) t(i) WHERE i % 10 < 6;
"""


def build(db_path: Path) -> duckdb.DuckDBPyConnection:
    """Create the synthetic store of the module docstring at ``db_path``."""
    conn = connect(db_path)
    from selene_dag.store import execute_script

    execute_script(conn, BUILD, {"now": NOW})
    return conn


def per_row_python(conn: duckdb.DuckDBPyConnection, sample: int) -> tuple[float, dict, int]:
    """Time the per-row path; return (seconds scaled to all rows, tiers, rows)."""
    started = time.perf_counter()
    rows = fidelity_inputs(conn, NOW)
    tiers = {
        note_id: compute_tier(age, has, status, last) for note_id, age, has, status, last in rows
    }
    compute = time.perf_counter() - started

    items = list(tiers.items())[:sample]
    started = time.perf_counter()
    conn.execute("BEGIN TRANSACTION")
    for note_id, tier in items:
        conn.execute(
            "UPDATE processed_notes SET fidelity_tier = ?, fidelity_evaluated_at = ? "
            "WHERE note_id = ?",
            [tier, NOW, note_id],
        )
    conn.execute("ROLLBACK")  # the SQL path writes the real result afterwards
    updates = (time.perf_counter() - started) * len(rows) / max(len(items), 1)
    return compute + updates, tiers, len(rows)


def run() -> list[BenchRow]:
    """Measure and return the rows described in the module docstring."""
    with tempfile.TemporaryDirectory() as tmp:
        conn = build(Path(tmp) / "fidelity.duckdb")
        try:
            python_s, tiers, rows = per_row_python(conn, UPDATE_SAMPLE)
            started = time.perf_counter()
            apply_fidelity_tiers(conn, NOW)
            sql_s = time.perf_counter() - started
            stored = dict(
                conn.execute("SELECT note_id, fidelity_tier FROM processed_notes").fetchall()
            )
        finally:
            conn.close()
    agree = sum(1 for note_id, tier in tiers.items() if stored.get(note_id) == tier)
    speedup = python_s / sql_s if sql_s else None
    return [
        BenchRow(
            figure=f"fidelity SQL, {rows:,} notes",
            value=sql_s,
            unit="s",
            baseline=python_s,
            ratio=sql_s / python_s if python_s else None,
            goal="≤ 2 s and ≥ 20× faster",
            met=sql_s <= 2.0 and speedup is not None and speedup >= 20,
            how=(
                "apply_fidelity_tiers (one transaction) vs per-row Python: fetch inputs + "
                f"compute_tier on all {rows:,} rows, one UPDATE per note timed on "
                f"{UPDATE_SAMPLE:,} notes and scaled linearly to {rows:,}"
            ),
        ),
        BenchRow(
            figure="fidelity speed-up SQL vs per-row Python",
            value=speedup or 0.0,
            unit="×",
            baseline=None,
            ratio=None,
            goal="≥ 20×",
            met=speedup is not None and speedup >= 20,
            how="per-row seconds / SQL seconds (same run)",
        ),
        BenchRow(
            figure="fidelity SQL and Python agree",
            value=agree,
            unit="notes",
            baseline=float(rows),
            ratio=agree / rows if rows else None,
            goal="all notes",
            met=agree == rows,
            how="tier stored by the SQL path == compute_tier for every note",
        ),
    ]


if __name__ == "__main__":
    print_rows(run())
