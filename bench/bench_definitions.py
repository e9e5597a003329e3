"""Loading the definitions reads no data: ``dagster definitions validate`` with a notes
folder of 10,000 markdown files configured, beside the same command with an empty folder.

Each command is a subprocess, as a user or a code server runs it; the two take turns over
three rounds and the best time of each is kept. Goal: under 3 s with the big folder, and no
more than noise (≤ 1.2×) over the empty one: definitions that parsed or listed the notes
would grow with the folder.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench._common import BenchRow, best_interleaved, print_rows  # noqa: E402

DAGSTER = str(Path(sys.executable).parent / "dagster")
NOTES = 10_000


def _folder(path: Path, count: int) -> Path:
    for i in range(count):
        sub = path / f"topic-{i % 50}"
        sub.mkdir(parents=True, exist_ok=True)
        (sub / f"note-{i}.md").write_text(
            f"# Note {i}\n\nA few words about topic {i % 37}, written on day {i % 365}.\n",
            encoding="utf-8",
        )
    return path


def _validate(notes: Path, home: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SELENE_", "DAGSTER_"))}
    env.update(SELENE_NOTES_DIR=str(notes), SELENE_HOME=str(home))
    subprocess.run(
        [DAGSTER, "definitions", "validate", "-w", "workspace.yaml"],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        timeout=300,
    )


def run() -> list[BenchRow]:
    """Measure and return the row described in the module docstring."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        big = _folder(root / "big", NOTES)
        empty = root / "empty"
        empty.mkdir()
        home = root / "home"
        with_notes, without = best_interleaved(
            lambda: _validate(big, home), lambda: _validate(empty, home), repeat=3
        )
    ratio = with_notes / without
    return [
        BenchRow(
            figure=f"dagster definitions validate, {NOTES:,}-note folder vs empty",
            value=with_notes,
            unit="s",
            baseline=without,
            ratio=ratio,
            goal="< 3 s, ≤ 1.2×",
            met=with_notes < 3.0 and ratio <= 1.2,
            how="subprocess, best of 3 interleaved rounds",
        )
    ]


if __name__ == "__main__":
    print_rows(run())
