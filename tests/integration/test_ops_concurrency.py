"""Two writers on one DuckDB file: runs wait for each other or fail clearly, never corrupt it."""

from __future__ import annotations

import subprocess
import threading
import time
from pathlib import Path

from selene_dag.notes.ingest import read_notes
from selene_dag.store import connect
from tests.support.ops import (
    SELENE_CLI,
    child_env,
    inconsistent_analyses,
    start_materialize,
    table_count,
    write_notes_slice,
)

LOCK_WORDS = ("lock", "another process")


def test_two_runs_at_once_on_one_home_never_corrupt_the_file(tmp_path: Path) -> None:
    notes = write_notes_slice(tmp_path / "notes" / "til.jsonl")
    home = tmp_path / "home"
    env = child_env(home, notes)
    procs = [start_materialize(["raw_notes", "processed_notes"], env) for _ in range(2)]
    results = [proc.communicate(timeout=240) for proc in procs]

    codes = [proc.returncode for proc in procs]
    assert 0 in codes, results
    for proc, (_out, err) in zip(procs, results, strict=True):
        if proc.returncode != 0:  # the loser may only fail on the lock, with a clear message
            assert any(word in err.lower() for word in LOCK_WORDS), err
            assert "Traceback" not in err

    db = home / "selene.duckdb"
    connect(db).close()
    live = len(read_notes(notes).notes)
    assert table_count(db, "notes") == live
    assert table_count(db, "processed_notes") == live
    assert inconsistent_analyses(db) == []


def _hold_write_lock(db: Path, seconds: float, held: threading.Event) -> None:
    conn = connect(db)
    try:
        held.set()
        time.sleep(seconds)
    finally:
        conn.close()


def _ingest(
    notes: Path, home: Path, timeout: float, **settings: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [SELENE_CLI, "ingest", str(notes), "--home", str(home)],
        env={**child_env(home, notes), **settings},
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_ingest_waits_for_a_briefly_held_lock_then_succeeds(tmp_path: Path) -> None:
    notes = write_notes_slice(tmp_path / "notes" / "til.jsonl", 40)
    home = tmp_path / "home"
    db = home / "selene.duckdb"
    connect(db).close()
    held = threading.Event()
    # Held for 12 s: well within the default wait of a minute.
    holder = threading.Thread(target=_hold_write_lock, args=(db, 12.0, held))
    holder.start()
    try:
        assert held.wait(10)
        proc = _ingest(notes, home, timeout=180)
    finally:
        holder.join()
    assert proc.returncode == 0, proc.stderr
    assert table_count(db, "processed_notes") == 40


def test_ingest_on_a_locked_file_fails_with_one_clear_line(tmp_path: Path) -> None:
    notes = write_notes_slice(tmp_path / "notes" / "til.jsonl", 5)
    home = tmp_path / "home"
    db = home / "selene.duckdb"
    conn = connect(db)
    try:
        started = time.monotonic()
        proc = _ingest(notes, home, timeout=240, SELENE_LOCK_WAIT="1.5")
        took = time.monotonic() - started
    finally:
        conn.close()
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr + proc.stdout
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("error: ")
    assert "lock" in lines[0].lower() and str(db.name) in lines[0]
    assert "for 1.5 s" in lines[0] and "SELENE_LOCK_WAIT" in lines[0]
    assert took < 30  # the setting, not the default minute


def test_ingests_started_together_on_a_new_folder_run_one_after_another(tmp_path: Path) -> None:
    # A cron job or a script: three ingests of a new folder at once. Each found no other
    # run, one held the database while waiting for the run slot another's step held while
    # waiting for the database: two failed after SELENE_LOCK_WAIT (a minute).
    for trial in range(2):  # the interleaving that stalls is likely, not certain
        notes = tmp_path / f"small{trial}"
        notes.mkdir()
        (notes / "q.md").write_text("# Queue note\nJobs go through celery with redis.\n")
        home = tmp_path / f"home{trial}"
        env = {**child_env(home, notes), "SELENE_LOCK_WAIT": "45"}
        started = time.monotonic()
        procs = [
            subprocess.Popen(
                [SELENE_CLI, "ingest", str(notes), "--home", str(home)],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for _ in range(3)
        ]
        results = [proc.communicate(timeout=240) for proc in procs]
        assert [proc.returncode for proc in procs] == [0, 0, 0], [err for _, err in results]
        assert time.monotonic() - started < 45  # none waited out the lock
