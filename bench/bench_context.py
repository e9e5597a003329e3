"""Context library speed: token counting overhead and packing 10,000 notes.

Rows:
* count_tokens throughput on demo notes (gpt-4 → cl100k) against raw tiktoken
  ``encode_ordinary`` on the same texts in the same run (goal ≥ 0.9×);
* the same for mistral:7b against raw SentencePiece ``encode`` (goal ≥ 0.9×);
* counting every representation of 10,000 synthetic notes once (reported, no goal);
* packing those 10,000 notes into 8,000 mistral:7b tokens with the counts known
  (goal < 50 ms); its baseline column is the one-off counting time above, so the ratio
  says what share of the total the packing itself costs.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from bench._common import BenchRow, best_interleaved, print_rows
from selene_dag.context import count_tokens, pack_notes, prepare_notes
from selene_dag.context import tokens as tk
from selene_dag.paths import assets_dir

MODEL = "mistral:7b"


def _demo_notes() -> list[dict[str, Any]]:
    path = assets_dir() / "demo" / "notes" / "til.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def synthetic_notes(n: int = 10_000) -> list[dict[str, Any]]:
    """``n`` notes cycling through the demo corpus with distinct ids, dates and tiers."""
    demo = _demo_notes()
    tiers = ("full", "full", "high", "summary", "skeleton")
    out = []
    for i in range(n):
        src = demo[i % len(demo)]
        paragraphs = src["content"].split("\n\n")
        out.append(
            {
                "id": f"{i}:{src['id']}",
                "title": f"{src['title']} ({i // len(demo)})",
                "content": src["content"],
                "essence": paragraphs[1][:240] if len(paragraphs) > 1 else None,
                "primary_theme": src.get("topic"),
                "created_at": f"{2015 + i % 10}-{i % 12 + 1:02d}-{i % 28 + 1:02d}",
                "fidelity_tier": tiers[i % len(tiers)],
            }
        )
    return out


def _throughput_row(
    name: str, model: str, raw: Callable[[str], object], texts: list[str]
) -> BenchRow:
    count_tokens(texts[0], model)  # load the tokenizer outside the timing

    def ours() -> None:
        for t in texts:
            count_tokens(t, model)

    def baseline() -> None:
        for t in texts:
            len(raw(t))

    ours_s, raw_s = best_interleaved(ours, baseline)
    value, base = len(texts) / ours_s, len(texts) / raw_s
    ratio = value / base
    return BenchRow(
        figure=name,
        value=value,
        unit="texts/s",
        baseline=base,
        ratio=ratio,
        goal="≥ 0.9×",
        met=ratio >= 0.9,
        how=f"{len(texts)} demo notes, best of 5 rounds taking turns with the raw tokenizer call",
    )


def run() -> list[BenchRow]:
    """Measure and return the rows (about 15 s)."""
    texts = [f"{n['title']}\n\n{n['content']}" for n in _demo_notes()]
    rows = [
        _throughput_row(
            "count_tokens gpt-4 (cl100k)", "gpt-4", tk.baseline().encoding.encode_ordinary, texts
        )
    ]
    mistral = tk._mistral("mistral-sp-v3")
    if mistral is not None:
        rows.append(
            _throughput_row(
                "count_tokens mistral:7b (sentencepiece)", MODEL, mistral.processor.encode, texts
            )
        )

    notes = synthetic_notes()
    prepare_notes(notes[:10], MODEL)  # warm the tokenizer
    t = time.perf_counter()
    prepared = prepare_notes(notes, MODEL)
    count_s = time.perf_counter() - t
    pack_s = best_interleaved(lambda: pack_notes(prepared, 8_000), repeat=5)[0]
    pack = pack_notes(prepared, 8_000)
    assert count_tokens(pack.text, MODEL) <= 8_000
    rows.append(
        BenchRow(
            figure="count reps of 10,000 notes (mistral:7b)",
            value=count_s * 1000,
            unit="ms",
            baseline=None,
            ratio=None,
            goal="(reported)",
            met=None,
            how="render every tier of every note and count_tokens_batch them once",
        )
    )
    rows.append(
        BenchRow(
            figure="pack 10,000 notes into 8,000 tokens",
            value=pack_s * 1000,
            unit="ms",
            baseline=count_s * 1000,
            ratio=pack_s / count_s,
            goal="< 50 ms",
            met=pack_s < 0.050,
            how=(
                f"counts precomputed; includes the exact recount of the pack; "
                f"{len(pack.order)} notes kept, {pack.counts}"
            ),
        )
    )
    return rows


if __name__ == "__main__":
    print_rows(run())
