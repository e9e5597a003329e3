"""Faults during `processed_notes`: a SIGKILL mid-run, a model server that goes away.

The promise (selene_dag.notes.processing): completed notes are committed as they complete
with a model server, a crash leaves no partial row, and a re-run makes only the missing
model calls and ends in the same state as an uninterrupted run.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import duckdb

from selene_dag.store import connect
from tests.support.fake_ollama import FakeOllama
from tests.support.ops import (
    SELENE_CLI,
    analysis_snapshot,
    chat_prompts,
    child_env,
    inconsistent_analyses,
    kill_group,
    note_titles,
    run_materialize,
    start_materialize,
    wait_until,
    write_notes_slice,
)

NOTES = 30
ASSETS = ["raw_notes", "processed_notes"]


def _ollama_env(home: Path, notes: Path, fake: FakeOllama) -> dict[str, str]:
    return child_env(
        home,
        notes,
        SELENE_LLM="ollama",
        SELENE_OLLAMA_HOST=fake.url,
        SELENE_OLLAMA_TIMEOUT="10",
        SELENE_ESSENCE_LIMIT="0",
    )


def test_sigkill_mid_run_leaves_no_partial_row_and_rerun_matches_clean_run(
    tmp_path: Path,
) -> None:
    notes = write_notes_slice(tmp_path / "notes" / "til.jsonl", NOTES)
    crashed, clean = tmp_path / "crashed", tmp_path / "clean"

    with FakeOllama(delay=0.15) as slow:
        proc = start_materialize(ASSETS, _ollama_env(crashed, notes, slow))
        try:
            # ~1.5 s of model calls: several commits happened, most notes are still to do.
            started = wait_until(lambda: slow.requests["/api/chat"] >= 10, timeout=90)
        finally:
            kill_group(proc)
        assert started, f"the run never reached the model server: {proc.stderr.read()}"
    assert proc.returncode != 0  # killed, not finished

    db = crashed / "selene.duckdb"
    connect(db).close()  # opens read-write (WAL replayed) and migrates without error
    assert inconsistent_analyses(db) == []
    kept = analysis_snapshot(db)
    assert 0 < len(kept) < NOTES

    with duckdb.connect(str(db), read_only=True) as conn:
        cached = conn.execute(
            "SELECT count(*) FROM llm_cache WHERE task = 'analyze_note'"
        ).fetchone()[0]
    assert cached >= len(kept)  # every stored analysis is also in the call cache

    with FakeOllama() as healthy:
        rerun = run_materialize(ASSETS, _ollama_env(crashed, notes, healthy))
        assert rerun.returncode == 0, rerun.stderr
        # Only the calls that never completed are made again (none is repeated).
        assert healthy.requests["/api/chat"] == NOTES - cached
        reference = run_materialize(ASSETS, _ollama_env(clean, notes, healthy))
        assert reference.returncode == 0, reference.stderr

    resumed, expected = analysis_snapshot(db), analysis_snapshot(clean / "selene.duckdb")
    assert len(expected) == NOTES
    assert resumed == expected
    assert {k: resumed[k] for k in kept} == kept  # stored work was kept, not redone
    assert inconsistent_analyses(db) == []


def test_model_server_failing_mid_run_keeps_results_and_rerun_makes_only_missing_calls(
    tmp_path: Path,
) -> None:
    notes = write_notes_slice(tmp_path / "notes" / "til.jsonl", NOTES)
    home = tmp_path / "home"
    answered = 7

    with FakeOllama(fail_after=answered, fail_mode="refuse") as failing:
        proc = subprocess.run(
            [SELENE_CLI, "ingest", str(notes), "--home", str(home)],
            env=_ollama_env(home, notes, failing),
            capture_output=True,
            text=True,
            timeout=120,
        )
        chat_calls_answered = min(failing.requests["/api/chat"], answered)
        assert set(failing.requests) == {"/api/chat"}

    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr + proc.stdout
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("error: ingest failed: step processed_notes")
    assert failing.url.removeprefix("http://") in lines[0] or "ollama" in lines[0].lower()

    db = home / "selene.duckdb"
    stored = analysis_snapshot(db)
    assert len(stored) == chat_calls_answered == answered
    assert inconsistent_analyses(db) == []

    with FakeOllama() as healthy:
        rerun = run_materialize(["processed_notes"], _ollama_env(home, notes, healthy))
        assert rerun.returncode == 0, rerun.stderr
        assert healthy.requests["/api/chat"] == NOTES - answered
        prompts = chat_prompts(healthy.bodies)

    titles = dict(zip(_ids(notes), note_titles(notes), strict=True))
    for note_id in stored:
        assert not any(titles[note_id] in prompt for prompt in prompts), note_id
    final = analysis_snapshot(db)
    assert len(final) == NOTES and {k: final[k] for k in stored} == stored


def _ids(notes: Path) -> list[str]:
    import json

    # Stored ids carry the folder's key ("notes/") before the JSONL id.
    return [
        f"{notes.parent.name}/{json.loads(line)['id']}"
        for line in notes.read_text().splitlines()
        if line.strip()
    ]
