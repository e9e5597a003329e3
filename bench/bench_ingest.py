"""``ingest`` at user scale: a fresh home, the same input again, then one note edited.

The corpus is the demo notes repeated until there are ``--notes`` of them (default 10,386:
the 577 notes ×18), each copy with its own id and a marker line so that no two notes are
the same text. With ``--distinct`` each copy after the first also has its words of four
letters or more swapped for other words of the corpus of the same length (one random
permutation per copy): the same size and the same kind of text, but no passage repeats,
so nothing that is computed once per distinct passage (embeddings) is shared between
copies, as in a user's own 10,000 notes. With ``--folder`` the notes are markdown files
with front matter (``copy<n>/<topic>/<name>.md``), as a notes app keeps them, instead of
one JSONL file: every file is looked at by each ingest (``make bench`` runs the three).
Each ingest goes through the service layer on one persistent Dagster instance, as
``selene-dag ingest`` does. Figures, each against the fresh ingest of the same run:

* unchanged re-ingest — goal ≤ 0.05× (no step runs);
* one note edited — goal ≤ 0.10× (only that note's dependents, and only its work);
* fresh ingest seconds — goal ≤ 60 s at 10,386 notes on the 2-core development machine.

``--steps`` also prints each step's seconds of the last two runs (from Dagster's own step
statistics), which is where a ratio above its goal is explained.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench._common import BenchRow, print_rows  # noqa: E402
from selene_dag import service  # noqa: E402
from selene_dag.config import load_settings  # noqa: E402
from selene_dag.paths import assets_dir  # noqa: E402

NOTES = 10_386
SOURCE = assets_dir() / "demo" / "notes" / "til.jsonl"


_WORD = re.compile(r"[A-Za-z]{4,}")


def _swaps(base: list[dict], copy: int) -> dict[str, str]:
    """Copy ``copy``'s word for each word of four letters or more in ``base``: another
    word of the same length (a seeded permutation within each length)."""
    by_length: dict[int, list[str]] = {}
    for word in sorted({w for n in base for w in _WORD.findall(n["content"])}):
        by_length.setdefault(len(word), []).append(word)
    rng = random.Random(copy)
    swaps: dict[str, str] = {}
    for words in by_length.values():
        shuffled = words[:]
        rng.shuffle(shuffled)
        swaps.update(zip(words, shuffled, strict=True))
    return swaps


def write_corpus(path: Path, count: int, edited: int | None = None, distinct: bool = False) -> None:
    """``count`` notes as JSONL at ``path``; ``edited``: the index of one note whose
    content gets an extra line (the one-note edit); ``distinct``: copies after the first
    get their words swapped (see the module docstring)."""
    base = [json.loads(line) for line in SOURCE.read_text(encoding="utf-8").splitlines() if line]
    swaps: dict[int, dict[str, str]] = {}
    out = []
    for i in range(count):
        note = dict(base[i % len(base)])
        copy = i // len(base)
        note["id"] = f"copy{copy}/{note['id']}"
        if distinct and copy:
            if copy not in swaps:
                swaps[copy] = _swaps(base, copy)
            table = swaps[copy]
            for key in ("title", "content"):
                if isinstance(note.get(key), str):
                    note[key] = _WORD.sub(
                        lambda m, t=table: t.get(m.group(0), m.group(0)), note[key]
                    )
        note["content"] = f"{note['content']}\n\n(copy {copy})"
        if edited == i:
            note["content"] += "\n\nEdited: one more line."
        out.append(json.dumps(note, ensure_ascii=False))
    path.write_text("\n".join(out) + "\n", encoding="utf-8")


def write_folder(path: Path, count: int, edited: int | None = None, distinct: bool = False) -> None:
    """The notes of :func:`write_corpus` as a folder of markdown files, as a notes app keeps
    them (``copy<n>/<topic>/<name>.md``, dates in front matter); only files whose text
    differs from what is on disk are written, so an edit touches one file."""
    staging = path.with_suffix(".jsonl")
    write_corpus(staging, count, edited, distinct)
    for line in staging.read_text(encoding="utf-8").splitlines():
        note = json.loads(line)
        text = (
            f"---\ncreated: {note['created_at']}\nupdated: {note['updated_at']}\n---\n"
            f"{note['content']}\n"
        )
        target = path / note["id"]
        if target.is_file() and target.read_text(encoding="utf-8") == text:
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    staging.unlink()


def _steps(settings, report: service.IngestReport) -> str:
    """Seconds per step of the newest run of the home's instance (empty with no run)."""
    from selene_dag.defs import runs

    instance = runs.instance_for(settings)
    records = instance.get_run_records(limit=1)
    if not records or not report.ran:
        return "no run"
    stats = instance.get_run_step_stats(records[0].dagster_run.run_id)
    parts = [
        f"{s.step_key} {s.end_time - s.start_time:.1f}s"
        for s in sorted(stats, key=lambda s: -(s.end_time or 0) + (s.start_time or 0))
        if s.start_time and s.end_time
    ]
    return ", ".join(parts)


def measure(
    count: int, show_steps: bool, distinct: bool = False, folder: bool = False
) -> list[BenchRow]:
    """Fresh, unchanged and one-edit ingests of ``count`` notes (one JSONL file, or with
    ``folder`` one markdown file each); rows as described."""
    write = write_folder if folder else write_corpus
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        corpus = Path(tmp) / ("notes" if folder else "notes.jsonl")
        write(corpus, count, distinct=distinct)
        settings = load_settings({"SELENE_LLM": "extractive"}, home=home)
        timings = {}
        reports = {}
        for label, edited in (("fresh", None), ("unchanged", None), ("one edit", count // 2)):
            if edited is not None:
                write(corpus, count, edited, distinct)
            started = time.perf_counter()
            reports[label] = service.ingest(settings, corpus)
            timings[label] = time.perf_counter() - started
            if show_steps:
                print(f"{label}: {timings[label]:.1f} s; {_steps(settings, reports[label])}")
    fresh = timings["fresh"]
    kind = ("distinct notes" if distinct else "notes") + (" (files)" if folder else "")
    rows = [
        BenchRow(
            f"ingest {count:,} {kind}: fresh",
            round(fresh, 1),
            "s",
            None,
            None,
            "≤ 60 s",
            fresh <= 60,
            "one persistent Dagster instance, extractive engine",
        )
    ]
    for label, goal in (("unchanged", 0.05), ("one edit", 0.10)):
        ratio = timings[label] / fresh
        ran = ", ".join(reports[label].ran) or "nothing"
        rows.append(
            BenchRow(
                f"ingest {count:,} {kind}: {label} vs fresh",
                round(timings[label], 1),
                "s",
                round(fresh, 1),
                ratio,
                f"≤ {goal:.2f}×",
                ratio <= goal,
                f"ran: {ran}",
            )
        )
    return rows


def run() -> list[BenchRow]:
    """The rows at the default scale (see the module docstring), for the repeated corpus,
    for the distinct one, and for the repeated one as a folder of markdown files."""
    return (
        measure(NOTES, show_steps=False)
        + measure(NOTES, show_steps=False, distinct=True)
        + measure(NOTES, show_steps=False, folder=True)
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notes", type=int, default=NOTES)
    parser.add_argument("--steps", action="store_true", help="print seconds per step")
    parser.add_argument(
        "--distinct", action="store_true", help="copies with their words swapped: no repeats"
    )
    parser.add_argument(
        "--folder", action="store_true", help="one markdown file per note instead of one JSONL"
    )
    args = parser.parse_args(argv)
    print_rows(measure(args.notes, args.steps, args.distinct, args.folder))
    return 0


if __name__ == "__main__":
    sys.exit(main())
