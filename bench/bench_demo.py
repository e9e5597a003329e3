"""The demo end to end: a fresh home against a no-op re-run on the same home.

Figures (each a subprocess ``selene-dag demo --home DIR``, as a user runs it):

* demo re-run — seconds of the second run on the same home, beside the first run on a
  fresh home. Goal: the re-run takes ≤ 10 % of the first (nothing changed, nothing redone).
  Dagster's verdict at the end of the first run ("nothing stale") stands, so the re-run
  does not load Dagster.
* demo re-run asking Dagster — the same re-run with the remembered verdict removed, so
  that Dagster is loaded and decides (as after a change it cannot vouch for); no goal.
* demo re-run model calls — new ``llm_cache`` entries written by the re-run. With the
  default extractive engine there is no model server and nothing is counted (met: "-").
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import duckdb

from bench._common import BenchRow, print_rows
from selene_dag.last_verdict import VERDICT_FILE

CLI = str(Path(sys.executable).parent / "selene-dag")


def _demo(home: Path) -> float:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SELENE_")}
    env.pop("DAGSTER_HOME", None)
    started = time.perf_counter()
    subprocess.run(
        [CLI, "demo", "--home", str(home)], env=env, check=True, capture_output=True, timeout=600
    )
    return time.perf_counter() - started


def _cache_rows(home: Path) -> int:
    conn = duckdb.connect(str(home / "selene.duckdb"), read_only=True)
    try:
        return int(conn.execute("SELECT count(*) FROM llm_cache").fetchone()[0])
    finally:
        conn.close()


def run() -> list[BenchRow]:
    """Measure and return the rows described in the module docstring."""
    engine = os.environ.get("SELENE_LLM", "extractive")
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "demo"
        first = _demo(home)
        cached_before = _cache_rows(home)
        again = _demo(home)
        new_calls = _cache_rows(home) - cached_before
        (home / VERDICT_FILE).unlink()
        asked = _demo(home)
    ratio = again / first
    model_row = BenchRow(
        figure="demo re-run model calls",
        value=float(new_calls),
        unit="calls",
        baseline=float(cached_before),
        ratio=None,
        goal="0",
        met=None if engine == "extractive" else new_calls == 0,
        how=(
            "no model server: the extractive engine makes no model calls to count"
            if engine == "extractive"
            else "new llm_cache entries written by the re-run (baseline: entries of the first run)"
        ),
    )
    return [
        BenchRow(
            figure="demo re-run (no-op) vs fresh",
            value=again,
            unit="s",
            baseline=first,
            ratio=ratio,
            goal="≤ 0.10×",
            met=ratio <= 0.10,
            how="subprocess `selene-dag demo --home DIR` twice on the same DIR",
        ),
        BenchRow(
            figure="demo re-run asking Dagster vs fresh",
            value=asked,
            unit="s",
            baseline=first,
            ratio=asked / first,
            goal="—",
            met=None,
            how=f"a third run after deleting {VERDICT_FILE}: Dagster is loaded and decides",
        ),
        model_row,
    ]


if __name__ == "__main__":
    print_rows(run())
