"""Shared row format of every bench script: one table, and JSON rows in .selene/bench.json.

A bench script exposes ``run() -> list[BenchRow]`` and prints its rows when run alone.
``bench/run_all.py`` gathers every script's rows into one table.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path


@dataclass
class BenchRow:
    """One measured figure beside the baseline measured in the same run.

    ``ratio`` is value / baseline (None when there is no baseline); ``goal`` is a short text
    such as "≥ 0.9×" or "< 50 ms"; ``met`` says whether this run met it.
    """

    figure: str
    value: float
    unit: str
    baseline: float | None
    ratio: float | None
    goal: str
    met: bool | None
    how: str = ""


def best_interleaved(*fns: Callable[[], object], repeat: int = 5) -> list[float]:
    """Best wall time of each function over ``repeat`` rounds, the functions taking turns
    within each round: on a shared machine a ratio of two timings is only fair when both
    saw the same load, which back-to-back blocks of repeats do not ensure."""
    best = [float("inf")] * len(fns)
    for _ in range(repeat):
        for k, fn in enumerate(fns):
            start = time.perf_counter()
            fn()
            best[k] = min(best[k], time.perf_counter() - start)
    return best


def print_rows(rows: list[BenchRow]) -> None:
    """Print rows as an aligned table on stdout."""
    header = ("figure", "value", "baseline", "ratio", "goal", "met")
    table = [header]
    for r in rows:
        table.append(
            (
                r.figure,
                f"{r.value:,.3f} {r.unit}".strip(),
                "" if r.baseline is None else f"{r.baseline:,.3f} {r.unit}".strip(),
                "" if r.ratio is None else f"{r.ratio:.2f}×",
                r.goal,
                {True: "yes", False: "NO", None: "-"}[r.met],
            )
        )
    widths = [max(len(str(row[i])) for row in table) for i in range(len(header))]
    for row in table:
        print("  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)))


def write_json(rows: list[BenchRow], path: Path | None = None) -> Path:
    """Write rows as a JSON list to ``$SELENE_HOME/bench.json`` (default ./.selene)."""
    path = path or Path(os.environ.get("SELENE_HOME", ".selene")) / "bench.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps([asdict(r) for r in rows], indent=2), encoding="utf-8")
    return path
