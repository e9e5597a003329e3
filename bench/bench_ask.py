"""ask latency over 10,000 synthetic chunks plus the demo notes.

Recall (every question set of assets/eval/ over its own corpus, at 500 / 1,000 / 2,000
tokens, beside newest-first, BM25 top-k and BM25 over ~200-token passages, with the packs
over budget) is measured by ``bench/bench_ask_recall.py``: its corpora are the real ones,
not this store's synthetic chunks.

The store is built in a temporary folder: the 577 demo notes (essence = first paragraph,
tiers from age), the three demo sessions' real chunks are not needed, so 10,000 synthetic
chunks of session-like text stand in for them. The index is built once (with its postings
and the token counts of MODEL) and every question is asked once to warm the process before
the 40 timed asks.
"""

from __future__ import annotations

import random
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import BenchRow, print_rows
from selene_dag.notes.ingest import read_notes
from selene_dag.paths import assets_dir
from selene_dag.retrieval.evaluate import load_questions
from selene_dag.retrieval.index import build_index
from selene_dag.retrieval.pack import ask
from selene_dag.store import connect

NOW = datetime(2026, 7, 15, tzinfo=UTC)
CHUNKS = 10_000
BUDGET = 2_000
MODEL = "mistral:7b"
WORDS = [
    "refactor",
    "test",
    "parser",
    "cache",
    "token",
    "budget",
    "sqlite",
    "index",
    "query",
    "docker",
    "build",
    "deploy",
    "config",
    "schema",
    "migration",
    "error",
    "retry",
    "timeout",
    "session",
    "chunk",
    "score",
    "model",
    "prompt",
    "file",
    "path",
    "commit",
    "branch",
    "review",
    "lint",
    "format",
    "async",
    "thread",
    "lock",
    "queue",
    "worker",
    "api",
    "endpoint",
    "request",
    "response",
]


def _build(db: Path, chunks: int = CHUNKS) -> None:
    """Create ``db`` with the demo notes and ``chunks`` synthetic chunks; build the index."""
    conn = connect(db)
    notes = read_notes(assets_dir() / "demo" / "notes" / "til.jsonl").notes
    for n in notes:
        conn.execute(
            "INSERT INTO notes (id, title, content, content_hash, created_at, updated_at, source)"
            " VALUES (?, ?, ?, md5(?), ?, ?, 'bench')",
            [n.id, n.title, n.content, n.content, n.created_at, n.updated_at],
        )
    conn.execute(
        "INSERT INTO processed_notes (note_id, essence, fidelity_tier) SELECT id, "
        "split_part(content, chr(10) || chr(10), 2), CASE WHEN updated_at > ?::TIMESTAMPTZ - "
        "INTERVAL 30 DAY THEN 'full' WHEN updated_at > ?::TIMESTAMPTZ - INTERVAL 1 YEAR "
        "THEN 'high' ELSE 'skeleton' END FROM notes",
        [NOW, NOW],
    )
    rng = random.Random(7)
    conn.execute(
        "INSERT INTO session_files (session_key, path, platform, project, size, mtime, sha256, "
        "events, parse_errors, scanned_at, parsed_at) SELECT 'codex-' || i, "
        "'/bench/session-' || i || '.jsonl', 'codex', 'project-' || (i % 7), 1, 0, 'x', 0, 0, "
        "?, ? FROM range(100) t(i)",
        [NOW, NOW],
    )
    rows = []
    for i in range(chunks):
        text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(80, 400)))
        rows.append((f"k{i}", f"codex-{i % 100}", i, i * 10, i * 10 + 9, text, rng.random() * 10))
    conn.executemany(
        "INSERT INTO chunks (id, session_key, chunk_index, first_seq, last_seq, text, "
        "token_count, importance_avg, event_count) VALUES (?, ?, ?, ?, ?, ?, 100, 50, 10)",
        [r[:6] for r in rows],
    )
    conn.executemany(
        "INSERT INTO chunk_scores (chunk_id, session_key, consensus, n_assessments, sufficient)"
        " VALUES (?, ?, ?, 2, true)",
        [(r[0], r[1], r[6]) for r in rows],
    )
    build_index(conn, NOW)
    conn.close()


def run() -> list[BenchRow]:
    """Latency percentiles (see module docstring)."""
    questions = load_questions(assets_dir() / "eval" / "questions.jsonl")
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "bench.duckdb"
        started = time.perf_counter()
        _build(db)
        build_s = time.perf_counter() - started
        conn = connect(db)
        try:
            # Warm the process once (tokenizers, scikit-learn's first import, DuckDB's
            # buffers): one-time costs, not per-question latency.
            for q in questions:
                ask(conn, q.question, BUDGET, model=MODEL, now=NOW)
            times = []
            for q in questions * 2:
                t = time.perf_counter()
                ask(conn, q.question, BUDGET, model=MODEL, now=NOW)
                times.append((time.perf_counter() - t) * 1000)
        finally:
            conn.close()
    p50 = statistics.median(times)
    p95 = statistics.quantiles(times, n=20)[18]
    how = f"{CHUNKS:,} synthetic chunks + 577 notes, index built in {build_s:.1f} s"
    return [
        BenchRow("ask latency p50", p50, "ms", None, None, "-", None, how),
        BenchRow("ask latency p95", p95, "ms", None, None, "< 150 ms", p95 < 150, how),
    ]


if __name__ == "__main__":
    print_rows(run())
