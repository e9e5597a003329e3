"""A 5 MB note in a notes folder: what it adds to an ingest that changes it, and to one
that does not.

The folder holds 60 of the demo notes; the big note is the demo notes concatenated as
sections of one markdown file until it reaches 5 MB. Each ingest goes through the service
layer on one persistent Dagster instance, as ``selene-dag ingest`` does, with the
extractive engine. Figures, against the same kind of ingest with a small note in the
same run:

* adding the big note vs adding a small note — goal: adds ≤ 5 s;
* editing a small note with the big note present vs without it — goal: adds nothing
  (≤ 1 s of noise);
* an unchanged ingest with the big note present — no step runs.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench._common import BenchRow, print_rows  # noqa: E402
from selene_dag import service  # noqa: E402
from selene_dag.config import load_settings  # noqa: E402
from selene_dag.paths import assets_dir  # noqa: E402

SOURCE = assets_dir() / "demo" / "notes" / "til.jsonl"
BIG_BYTES = 5_000_000


def _big_note(notes: list[dict]) -> str:
    parts, size, k = ["# A very long note\n"], 0, 0
    while size < BIG_BYTES:
        note = notes[k % len(notes)]
        k += 1
        block = f"\n## {note.get('title', 'note')} ({k})\n\n{note['content']}\n"
        parts.append(block)
        size += len(block.encode())
    return "".join(parts)


def _append(path: Path, line: str) -> None:
    path.write_text(path.read_text(encoding="utf-8") + f"\n{line}\n", encoding="utf-8")


def run() -> list[BenchRow]:
    """The rows described in the module docstring."""
    notes = [json.loads(line) for line in SOURCE.read_text(encoding="utf-8").splitlines() if line]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "notes"
        folder.mkdir()
        for i, note in enumerate(notes[:60]):
            (folder / f"n{i}.md").write_text(
                f"# {note.get('title', 'note')}\n\n{note['content']}\n"
            )
        settings = load_settings({"SELENE_LLM": "extractive"}, home=Path(tmp) / "home")

        def ingest() -> tuple[float, int]:
            started = time.perf_counter()
            report = service.ingest(settings, folder)
            return time.perf_counter() - started, len(report.ran)

        ingest()
        _append(folder / "n1.md", "One more line.")
        small_edit, _ = ingest()
        (folder / "small.md").write_text("# Small\n\nA small new note about caching.\n")
        small_add, _ = ingest()
        (folder / "big.md").write_text(_big_note(notes), encoding="utf-8")
        big_add, _ = ingest()
        unchanged, ran = ingest()
        _append(folder / "n2.md", "One more line.")
        small_edit_big, _ = ingest()
    added = big_add - small_add
    drag = small_edit_big - small_edit
    return [
        BenchRow(
            "5 MB note added: extra seconds over adding a small note",
            round(added, 1),
            "s",
            round(small_add, 1),
            None,
            "≤ 5 s",
            added <= 5,
            f"ingest with the big note {big_add:.1f} s",
        ),
        BenchRow(
            "5 MB note present: extra seconds on a small edit",
            round(drag, 1),
            "s",
            round(small_edit, 1),
            None,
            "≤ 1 s",
            drag <= 1,
            f"small edit with the big note present {small_edit_big:.1f} s",
        ),
        BenchRow(
            "5 MB note present: unchanged ingest",
            round(unchanged, 1),
            "s",
            None,
            None,
            "no step runs",
            ran == 0,
            f"{ran} assets ran",
        ),
    ]


if __name__ == "__main__":
    print_rows(run())
