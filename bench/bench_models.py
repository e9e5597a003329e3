"""Model layer speed: ExtractiveEngine over the demo notes, and the cache's re-run.

Figures (measured in one run, on all notes of ``assets/demo/notes/til.jsonl``):

* extractive essences — total seconds for ``analyze_note`` on every note (fresh in-memory
  cache), beside a naive baseline: the first sentence of the stripped text. The goal is
  "a few seconds" for the whole corpus.
* extractive calls/s — notes analysed per second.
* cached re-run — the same notes again through a DuckDB-backed cache: seconds, and the
  number of calls made (goal: 0).
"""

from __future__ import annotations

import json
import tempfile
import time
import warnings
from pathlib import Path

from bench._common import BenchRow, print_rows
from selene_dag.llm.cache import LLMCache
from selene_dag.llm.extractive import ExtractiveEngine
from selene_dag.paths import assets_dir
from selene_dag.store import connect
from selene_dag.text import split_sentences, strip_markdown


def _notes() -> list[dict]:
    path = assets_dir() / "demo" / "notes" / "til.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def _first_sentence(title: str, content: str) -> str:
    sentences = split_sentences(strip_markdown(content))
    return sentences[0] if sentences else title


def run() -> list[BenchRow]:
    """Measure and return the rows described in the module docstring."""
    warnings.simplefilter("ignore")
    notes = _notes()
    n = len(notes)
    ExtractiveEngine().analyze_note("warm up", "Load scikit-learn once. Then measure.")

    started = time.perf_counter()
    for note in notes:
        _first_sentence(note["title"], note["content"])
    naive = time.perf_counter() - started

    engine = ExtractiveEngine()
    started = time.perf_counter()
    for note in notes:
        engine.analyze_note(note["title"], note["content"])
    extractive = time.perf_counter() - started

    with tempfile.TemporaryDirectory() as tmp:
        conn = connect(Path(tmp) / "bench.duckdb")
        first = ExtractiveEngine(cache=LLMCache(conn))
        for note in notes:
            first.analyze_note(note["title"], note["content"])
        rerun = ExtractiveEngine(cache=LLMCache(conn))
        started = time.perf_counter()
        for note in notes:
            rerun.analyze_note(note["title"], note["content"])
        cached = time.perf_counter() - started
        calls_made = rerun.calls_made
        conn.close()

    how = f"{n} demo notes"
    return [
        BenchRow(
            "extractive essences, all demo notes",
            round(extractive, 3),
            "s",
            round(naive, 3),
            round(extractive / naive, 2) if naive else None,
            "< 10 s",
            extractive < 10,
            how + "; baseline = naive first sentence",
        ),
        BenchRow(
            "extractive analyze_note rate",
            round(n / extractive, 1),
            "calls/s",
            round(n / naive, 1) if naive else None,
            round(naive / extractive, 4) if naive else None,
            "≥ 100 calls/s",
            n / extractive >= 100,
            how + "; baseline = naive first sentence",
        ),
        BenchRow(
            "cached re-run (DuckDB llm_cache), calls made",
            float(calls_made),
            "calls",
            float(n),
            round(calls_made / n, 3),
            "0 calls",
            calls_made == 0,
            f"re-run took {cached:.3f} s vs {extractive:.3f} s computing",
        ),
    ]


if __name__ == "__main__":
    print_rows(run())
