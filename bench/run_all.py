"""Run every ``bench/bench_*.py``, each in its own Python process, and print one table;
write the rows to .selene/bench.json.

A bench script that fails is reported as one row with ``met=False``; the other scripts
still run.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench._common import BenchRow, print_rows, write_json  # noqa: E402


def bench_modules() -> list[str]:
    """Module names of every bench script, sorted (``bench.bench_context``, ...)."""
    return sorted(f"bench.{p.stem}" for p in (ROOT / "bench").glob("bench_*.py"))


_CHILD = """
import importlib, json, sys
from dataclasses import asdict
sys.path.insert(0, {root!r})
rows = importlib.import_module({name!r}).run()
with open({out!r}, "w", encoding="utf-8") as f:
    json.dump([asdict(r) for r in rows], f)
"""


def _failed(name: str, how: str) -> list[BenchRow]:
    return [
        BenchRow(
            figure=f"{name.removeprefix('bench.')} failed",
            value=0.0,
            unit="",
            baseline=None,
            ratio=None,
            goal="runs",
            met=False,
            how=how[:300],
        )
    ]


def run_one(name: str) -> list[BenchRow]:
    """Run ``name`` in a fresh Python process and return its rows, or one failing row.

    One process per script: a heap left by an earlier script (Dagster runs, a million
    DuckDB rows) makes every later allocation-heavy timing pay for garbage collection.
    """
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "rows.json"
        code = _CHILD.format(root=str(ROOT), name=name, out=str(out))
        proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=False)
        if proc.returncode != 0 or not out.is_file():
            # A broken bench is a result to report, not a crash; its traceback is above.
            return _failed(name, f"exit code {proc.returncode} (traceback printed above)")
        rows = [BenchRow(**row) for row in json.loads(out.read_text(encoding="utf-8"))]
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
