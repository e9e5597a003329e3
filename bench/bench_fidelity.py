"""Fidelity tiers: the set-based SQL transform against per-row Python, on 1,000,000 notes.

Figures (one synthetic DuckDB built with set-based SQL: 1,000,000 notes spread over 3
years, processed_notes with 10 % missing essences and varied last access, 2,000 threads
half active, 60 % of notes in a thread), for two runs of the daily job:

* first run — every note still at the default tier, so most tiers change (~894k writes);
* steady-state re-run — the next day (``NOW`` + 1 day): only the notes that crossed a
  7 / 90 / 180-day boundary change (a few thousand).

For each run:

* fidelity SQL — seconds of ``apply_fidelity_tiers`` (one UPDATE of the changed notes, in
  one transaction, commit included). Goal ≤ 2 s.
* per-row Python — seed 000's shape, measured just before on the same store: fetch every
  note's inputs and stored tier, ``compute_tier`` per row, one UPDATE per note whose tier
  changed. Fetch and compute run on all 1M rows; the per-row UPDATEs run on at most
  ``UPDATE_SAMPLE`` changed notes (then rolled back) and are scaled linearly to all
  changed notes (stated in the row). Goal for the first run: SQL ≥ 20× faster.
* the two paths agree on every tier after each run (checked, not timed).
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb

from bench._common import BenchRow, print_rows
from selene_dag.notes.fidelity import compute_tier
from selene_dag.notes.fidelity_sql import apply_fidelity_tiers
from selene_dag.paths import transform_sql
from selene_dag.store import connect, execute_script

NOTES = 1_000_000
THREADS = 2_000
UPDATE_SAMPLE = 5_000
NOW = datetime(2026, 7, 15, tzinfo=UTC)
NEXT_DAY = NOW + timedelta(days=1)
SPEEDUP_GOAL = 20.0
SECONDS_GOAL = 2.0

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


@dataclass
class PerRow:
    """One timed per-row pass: seconds (scaled), the tiers it computed, rows and changes."""

    seconds: float
    tiers: dict[str, str]
    rows: int
    changed: int
    sampled: int


def build(db_path: Path) -> duckdb.DuckDBPyConnection:
    """Create the synthetic store of the module docstring at ``db_path``."""
    conn = connect(db_path)
    execute_script(conn, BUILD, {"now": NOW})
    conn.execute("CHECKPOINT")
    return conn


def per_row_python(conn: duckdb.DuckDBPyConnection, now: datetime, sample: int) -> PerRow:
    """Time seed 000's per-row path as of ``now`` without keeping its writes.

    Fetch and compute are timed on every row; the UPDATEs on at most ``sample`` changed
    notes, rolled back, then scaled linearly to all changed notes.
    """
    started = time.perf_counter()
    # fidelity_inputs.sql also yields the stored tier, as the seed's single query does.
    rows = conn.execute(transform_sql("fidelity_inputs"), {"now": now}).fetchall()
    tiers: dict[str, str] = {}
    changed: list[tuple[str, str]] = []
    for note_id, age, has_essence, status, last, stored, _row_id in rows:
        tier = compute_tier(age, has_essence, status, last)
        tiers[note_id] = tier
        if tier != stored:
            changed.append((note_id, tier))
    compute = time.perf_counter() - started

    items = changed[:sample]
    conn.execute("BEGIN TRANSACTION")
    started = time.perf_counter()
    for note_id, tier in items:
        conn.execute(
            "UPDATE processed_notes SET fidelity_tier = ?, fidelity_evaluated_at = ? "
            "WHERE note_id = ?",
            [tier, now, note_id],
        )
    elapsed = time.perf_counter() - started
    conn.execute("ROLLBACK")  # the SQL path writes the real result afterwards
    updates = elapsed * len(changed) / len(items) if items else 0.0
    return PerRow(compute + updates, tiers, len(rows), len(changed), len(items))


def timed_sql(conn: duckdb.DuckDBPyConnection, now: datetime) -> tuple[float, int]:
    """Seconds of ``apply_fidelity_tiers`` as of ``now`` and the changes it reported."""
    started = time.perf_counter()
    changed = apply_fidelity_tiers(conn, now)
    return time.perf_counter() - started, changed


def agreement(conn: duckdb.DuckDBPyConnection, tiers: dict[str, str]) -> int:
    """How many notes' stored tier equals the per-row tier."""
    stored = dict(conn.execute("SELECT note_id, fidelity_tier FROM processed_notes").fetchall())
    return sum(1 for note_id, tier in tiers.items() if stored.get(note_id) == tier)


def run_rows(label: str, python: PerRow, sql_s: float, sql_changed: int) -> list[BenchRow]:
    """The seconds row and the speed-up row of one run."""
    speedup = python.seconds / sql_s if sql_s else 0.0
    first = label == "first run"
    scaled = (
        f"one UPDATE per changed note timed on {python.sampled:,} of {python.changed:,} "
        f"and scaled linearly"
        if python.sampled < python.changed
        else f"one UPDATE per changed note, all {python.changed:,} timed"
    )
    return [
        BenchRow(
            figure=f"fidelity SQL {label}, {python.rows:,} notes ({sql_changed:,} changed)",
            value=sql_s,
            unit="s",
            baseline=python.seconds,
            ratio=sql_s / python.seconds if python.seconds else None,
            goal=f"≤ {SECONDS_GOAL:g} s",
            met=sql_s <= SECONDS_GOAL,
            how=(
                "apply_fidelity_tiers (one UPDATE of changed notes, one transaction) vs "
                f"per-row Python: fetch inputs + compute_tier on all {python.rows:,} rows, "
                + scaled
            ),
        ),
        BenchRow(
            figure=f"fidelity speed-up SQL vs per-row Python, {label}",
            value=speedup,
            unit="×",
            baseline=None,
            ratio=None,
            goal=f"≥ {SPEEDUP_GOAL:g}×" if first else "- (per-row is bound by its fetch)",
            met=speedup >= SPEEDUP_GOAL if first else None,
            how="per-row seconds / SQL seconds (same run)",
        ),
    ]


def run() -> list[BenchRow]:
    """Measure and return the rows described in the module docstring."""
    rows: list[BenchRow] = []
    agree = total = 0
    with tempfile.TemporaryDirectory() as tmp:
        conn = build(Path(tmp) / "fidelity.duckdb")
        try:
            for label, now in (("first run", NOW), ("steady-state next day", NEXT_DAY)):
                python = per_row_python(conn, now, UPDATE_SAMPLE)
                sql_s, sql_changed = timed_sql(conn, now)
                if sql_changed != python.changed:
                    raise RuntimeError(
                        f"{label}: SQL changed {sql_changed:,} tiers, per-row {python.changed:,}"
                    )
                rows += run_rows(label, python, sql_s, sql_changed)
                agree += agreement(conn, python.tiers)
                total += python.rows
        finally:
            conn.close()
    rows.append(
        BenchRow(
            figure="fidelity SQL and Python agree (both runs)",
            value=agree,
            unit="notes",
            baseline=float(total),
            ratio=agree / total if total else None,
            goal="all notes",
            met=agree == total,
            how="tier stored by the SQL path == compute_tier for every note, after each run",
        )
    )
    return rows


if __name__ == "__main__":
    print_rows(run())
