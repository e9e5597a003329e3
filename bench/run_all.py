"""Run every ``bench/bench_*.py`` and print one table; write the rows to .selene/bench.json.

A bench script that raises is reported as one row with ``met=False`` and the error in
``how``; the other scripts still run.
"""

from __future__ import annotations

import importlib
import sys
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench._common import BenchRow, print_rows, write_json  # noqa: E402


def bench_modules() -> list[str]:
    """Module names of every bench script, sorted (``bench.bench_context``, ...)."""
    return sorted(f"bench.{p.stem}" for p in (ROOT / "bench").glob("bench_*.py"))


def run_one(name: str) -> list[BenchRow]:
    """Import ``name`` and return its rows, or one failing row describing the error."""
    started = time.perf_counter()
    try:
        rows = list(importlib.import_module(name).run())
    except Exception as exc:  # a broken bench is a result to report, not a crash
        last = traceback.format_exception_only(exc)[-1].strip()
        return [
            BenchRow(
                figure=f"{name.removeprefix('bench.')} failed",
                value=0.0,
                unit="",
                baseline=None,
                ratio=None,
                goal="runs",
                met=False,
                how=last[:300],
            )
        ]
    print(f"{name}: {len(rows)} rows in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    return rows


def main() -> int:
    """Run every bench script, print the table, write the JSON; exit 0 (results, not tests)."""
    rows: list[BenchRow] = []
    for name in bench_modules():
        rows.extend(run_one(name))
    print_rows(rows)
    path = write_json(rows)
    print(f"\nrows written to {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
