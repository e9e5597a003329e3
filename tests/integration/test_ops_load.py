"""Load: 50 concurrent /ask clients against a real `selene-dag serve` process.

The run lasts SELENE_LOAD_SECONDS (default 10 here; the issue's full 30 s run is
`bench/bench_serve.py`) and stops by itself; every request must succeed with a valid ask
document within its budget. p50/p95 latency and the request count are printed.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from selene_dag.retrieval.index import build_index
from selene_dag.store import connect
from tests.support.ask import NOW, seed_store
from tests.support.loadtest import run_load, start_server

QUESTIONS = [
    "How do I attach a bash shell to a running Docker container?",
    "Unix milliseconds in SQLite with julianday",
    "How did I customize my zsh prompt?",
    "copy a SpooledTemporaryFile efficiently",
    "How was LM Studio configured in chatbot-ui?",
    "what should I water tomatoes with",
    "nothing in the corpus mentions quasars",
]


@pytest.mark.slow
def test_fifty_concurrent_ask_clients(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    seconds = float(os.environ.get("SELENE_LOAD_SECONDS", "10"))
    db = home / "selene.duckdb"
    seed_store(db)
    conn = connect(db)
    build_index(conn, NOW)
    conn.close()
    with start_server(home, env={"SELENE_NOW": NOW.isoformat()}) as base:
        report = run_load(base, QUESTIONS, clients=50, seconds=seconds, budgets=(120, 400, 2000))
    with capsys.disabled():
        print(f"\nload: {report.summary()}")
    assert report.failures == [], report.failures[:5]
    assert report.requests >= 50  # every client got at least one answer back
    # The server stamped access times through its shared connection: the file is usable
    # read-write again once the server is gone (it held no lock after exiting).
    conn = connect(db)
    try:
        stamped = conn.execute(
            "SELECT count(*) FROM processed_notes WHERE last_accessed_at IS NOT NULL"
        ).fetchone()[0]
    finally:
        conn.close()
    assert stamped >= 4
