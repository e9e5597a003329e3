"""A library caller asking from several threads at once, on a home whose tiers are a day
old (each call refreshes them through an in-process Dagster run): the calls hung on
Dagster's logging lock, or the process's stdout was left redirected into a run's log
file; stamping the notes used failed with DuckDB's "Conflict on update"."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.support.ask import ingested_folder

THREADS = """
import sys, threading
from pathlib import Path
from selene_dag import service
from selene_dag.config import load_settings

settings = load_settings({"SELENE_LLM": "extractive", "SELENE_NOW": sys.argv[2]}, home=Path(sys.argv[1]))
errors = []

def ask():
    try:
        result = service.ask(settings, "heron census pond", 300)
        assert result.items
    except BaseException as exc:
        errors.append(repr(exc))

threads = [threading.Thread(target=ask) for _ in range(4)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print("errors:", errors)
"""


def test_threads_asking_at_once_each_get_their_answer(tmp_path: Path) -> None:
    notes = {
        f"heron-{i}.md": f"# Heron census {i}\n\nPond {i} counted {i + 3} herons.\n"
        for i in range(12)
    }
    settings = ingested_folder(tmp_path, notes)
    proc = subprocess.run(
        [sys.executable, "-c", THREADS, str(settings.home), "2031-01-02"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip() == "errors: []", proc.stdout + proc.stderr[-2000:]
