"""``distill run --all`` at user scale: many transcripts in batches against one transcript.

The corpus is every real transcript the repository ships as a test fixture (plus the
real samples in ``../shared/data/sessions`` when present), copied ``--copies`` times into
separate folders (default: enough copies for ≥ 216 files). Each run goes through the
service layer on one persistent Dagster instance, as ``selene-dag distill run`` does, with
the extractive engine. Figures, each against one transcript distilled alone in a fresh
home in the same run:

* fresh ``distill run --all`` over the whole corpus — goal ≤ 10× one transcript;
* the same again with nothing changed — goal ≤ 1× one transcript (nothing runs);
* the same again after a distillation setting changed (SELENE_DISTILL_MIN_CONSENSUS) —
  every session is distilled again, from its stored chunks and scores: the last of the
  four steps alone, goal ≤ 0.5× the fresh run (parsing, chunking and scoring are most of
  a fresh run).
"""

from __future__ import annotations

import argparse
import shutil
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
from selene_dag.sessions.parsers import detect_platform  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures" / "sessions"
SHARED = ROOT.parent / "shared" / "data" / "sessions"
TARGET_FILES = 216


def transcripts() -> list[Path]:
    """The real transcripts of the corpus (hand-written shape fixtures left out)."""
    found = []
    for base in (FIXTURES, SHARED):
        for path in sorted(base.rglob("*.json*")):
            if path.name.startswith("shapes_") or path.name.endswith(".meta.json"):
                continue
            if path.suffix in (".json", ".jsonl") and "shapes_" not in str(path):
                try:
                    detect_platform(path)
                except ValueError:
                    continue
                found.append(path)
    return found


def _layout(root: Path, files: list[Path], copies: int) -> str:
    """Copy ``files`` ``copies`` times under ``root``; the SELENE_SESSION_ROOTS value."""
    for copy in range(copies):
        for i, path in enumerate(files):
            target = root / f"copy{copy}" / f"f{i}"
            target.mkdir(parents=True, exist_ok=True)
            shutil.copy(path, target / path.name)
    return str(root)


def _distill(home: Path, roots: str, **env: str) -> tuple[float, list[dict]]:
    settings = load_settings(
        {"SELENE_LLM": "extractive", "SELENE_SESSION_ROOTS": roots, **env}, home=home
    )
    started = time.perf_counter()
    rows = service.distill_run(settings, all_files=True)
    return time.perf_counter() - started, rows


def measure(copies: int | None) -> list[BenchRow]:
    """One transcript alone, then the corpus fresh and unchanged; rows as described."""
    files = transcripts()
    copies = copies or -(-TARGET_FILES // len(files))
    one = files[0]
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        single, rows = _distill(base / "home1", _layout(base / "one", [one], 1))
        assert rows and all(r["ok"] for r in rows), rows
        roots = _layout(base / "many", files, copies)
        fresh, rows = _distill(base / "home", roots)
        failed = [r for r in rows if not r["ok"]]
        again, rerun = _distill(base / "home", roots)
        # A distillation setting changed: every session distilled again, that step only.
        changed, redone = _distill(base / "home", roots, SELENE_DISTILL_MIN_CONSENSUS="4")
    count = len(files) * copies
    return [
        BenchRow(
            f"distill run --all, {count} transcripts vs one",
            round(fresh, 1),
            "s",
            round(single, 1),
            fresh / single,
            "≤ 10×",
            fresh / single <= 10 and not failed,
            f"{len(rows)} ran, {len(failed)} failed; one = {one.name}",
        ),
        BenchRow(
            f"distill run --all, {count} transcripts unchanged vs one",
            round(again, 1),
            "s",
            round(single, 1),
            again / single,
            "≤ 1×",
            again / single <= 1 and not rerun,
            f"{len(rerun)} ran",
        ),
        BenchRow(
            f"distill run --all, {count} transcripts, minimum consensus changed, vs fresh",
            round(changed, 1),
            "s",
            round(fresh, 1),
            changed / fresh,
            "≤ 0.5×",
            changed / fresh <= 0.5 and len(redone) == len(rows),
            f"{len(redone)} distilled again (the distillation step only)",
        ),
    ]


def run() -> list[BenchRow]:
    """The rows at the default scale (see the module docstring)."""
    return measure(None)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=None)
    args = parser.parse_args(argv)
    print_rows(measure(args.copies))
    return 0


if __name__ == "__main__":
    sys.exit(main())
