"""Sessions bench: parse-and-normalize throughput vs a bare orjson loop, and scoring speed.

* parse MB/s: our Claude parser (events built, text flattened, tool inputs serialized) over
  the real Claude fixture files repeated to ~8 MB, beside ``orjson.loads`` of every line of
  the same bytes (goal: ≥ 0.5× the bare loop). claude-code-log's ``load_transcript`` is a
  third baseline only when importable (it is not installed here).
* scoring events/s: ``score_frame`` (pandas/numpy, features included) and ``score_arrays``
  (precomputed features) beside the per-event ``score_event`` loop (goal ≥ 1,000,000/s).
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import orjson
import pandas as pd

from bench._common import BenchRow, print_rows
from selene_dag.sessions.parsers import ParseStats, iter_events
from selene_dag.sessions.scoring import score_arrays, score_event, score_frame

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "sessions" / "claude"
TARGET_BYTES = 8 * 1024 * 1024


def _best(fn, repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def _corpus(directory: Path) -> Path:
    data = b"".join(p.read_bytes() for p in sorted(FIXTURES.glob("claude-code-log_*.jsonl")))
    path = directory / "corpus.jsonl"
    path.write_bytes(data * max(1, TARGET_BYTES // len(data)))
    return path


def run() -> list[BenchRow]:
    """Measure and return the rows (see the module docstring)."""
    rows: list[BenchRow] = []
    with tempfile.TemporaryDirectory() as tmp:
        path = _corpus(Path(tmp))
        mb = path.stat().st_size / 1e6
        raw = path.read_bytes()

        def bare() -> None:
            for line in raw.splitlines():
                if line:
                    orjson.loads(line)

        events: list = []

        def ours() -> None:
            events.clear()
            events.extend(iter_events(path, "claude", ParseStats()))

        t_bare, t_ours = _best(bare), _best(ours)
        rows.append(
            BenchRow(
                "sessions: parse+normalize Claude JSONL",
                mb / t_ours,
                "MB/s",
                mb / t_bare,
                t_bare / t_ours,
                "≥ 0.5×",
                t_bare / t_ours >= 0.5,
                f"{mb:.1f} MB of real Claude transcripts; baseline = bare orjson.loads per line",
            )
        )
        try:
            from claude_code_log.parser import load_transcript  # type: ignore[import-not-found]  # noqa: F401

            note = "claude-code-log importable but not measured"
        except ImportError:
            note = "claude-code-log not installed: load_transcript baseline skipped"
        rows[-1].how += f"; {note}"

    base = events * max(1, 1_000_000 // max(len(events), 1))
    base = base[:1_000_000]
    frame = pd.DataFrame(
        {
            "kind": [e.kind for e in base],
            "is_error": [e.is_error for e in base],
            "text": [e.text for e in base],
            "tool_name": [e.tool_name for e in base],
        }
    )
    sample = base[:100_000]
    t_loop = _best(lambda: [score_event(e) for e in sample], repeat=2)
    loop_rate = len(sample) / t_loop
    t_frame = _best(lambda: score_frame(frame), repeat=2)
    rate = len(frame) / t_frame
    rows.append(
        BenchRow(
            "sessions: importance scoring, vectorized (features included)",
            rate,
            "events/s",
            loop_rate,
            rate / loop_rate,
            "≥ 1,000,000/s",
            rate >= 1_000_000,
            f"{len(frame):,} real events; baseline = per-event score_event loop",
        )
    )
    kind = frame["kind"].to_numpy(dtype=object).astype(str)
    text = frame["text"].astype(str)
    feats = (
        kind,
        frame["is_error"].to_numpy(bool),
        text.str.len().to_numpy(),
        text.str.contains("```", regex=False).to_numpy(),
        (kind == "tool_use"),
    )
    t_arr = _best(lambda: score_arrays(*feats), repeat=3)
    arr_rate = len(frame) / t_arr
    rows.append(
        BenchRow(
            "sessions: importance scoring, vectorized (precomputed features)",
            arr_rate,
            "events/s",
            loop_rate,
            arr_rate / loop_rate,
            "≥ 1,000,000/s",
            arr_rate >= 1_000_000,
            "score_arrays on feature columns as stored per partition",
        )
    )
    return rows


if __name__ == "__main__":
    print_rows(run())
