"""``selene-dag serve`` under load: 50 concurrent ``POST /ask`` clients for 30 s.

The store holds the 577 demo notes and 1,000 synthetic chunks (``bench_ask``'s builder);
the server is a real ``selene-dag serve`` child process. The baseline is one client alone
for 5 s against the same server in the same run: its p95 is what a request costs without
contention, and its rate is what serializing every request would give. Every request must
succeed (HTTP 200, a valid ask document, total_tokens ≤ budget).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import BenchRow, print_rows
from bench.bench_ask import NOW, _build
from selene_dag.paths import assets_dir
from selene_dag.retrieval.evaluate import load_questions
from tests.support.loadtest import run_load, start_server

CLIENTS = 50
SECONDS = 30.0
BASELINE_SECONDS = 5.0
CHUNKS = 1_000
BUDGETS = (500, 1000, 2000)


def run() -> list[BenchRow]:
    """p95 latency and requests/s under 50 clients beside one client alone."""
    questions = [q.question for q in load_questions(assets_dir() / "eval" / "questions.jsonl")]
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        _build(home / "selene.duckdb", chunks=CHUNKS)
        with start_server(home, env={"SELENE_NOW": NOW.isoformat()}) as base:
            alone = run_load(base, questions, clients=1, seconds=BASELINE_SECONDS, budgets=BUDGETS)
            load = run_load(base, questions, clients=CLIENTS, seconds=SECONDS, budgets=BUDGETS)
    ok = not load.failures and not alone.failures
    how = (
        f"{CLIENTS} clients × {SECONDS:.0f} s, 577 notes + {CHUNKS:,} chunks, budgets "
        f"{'/'.join(map(str, BUDGETS))}; {load.requests} requests, {len(load.failures)} failed"
    )
    p95, p95_alone = load.percentile(95), alone.percentile(95)
    return [
        BenchRow(
            "serve /ask p95, 50 clients",
            p95,
            "ms",
            p95_alone,
            p95 / p95_alone if p95_alone else None,
            "all succeed",
            ok,
            how,
        ),
        BenchRow(
            "serve /ask requests/s, 50 clients",
            load.per_second,
            "req/s",
            alone.per_second,
            load.per_second / alone.per_second if alone.per_second else None,
            "≥ 1× one client",
            ok and load.per_second >= alone.per_second,
            how,
        ),
    ]


if __name__ == "__main__":
    print_rows(run())
