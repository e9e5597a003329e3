"""Dagster decides what a CLI run recomputes, against the home's persistent instance:
unchanged input starts no step, one edited note re-runs only its dependents and only that
note's work, a new day re-runs only what depends on the clock. The notes-folder sensor
skips with a reason while its folder is missing."""

from __future__ import annotations

import json
from pathlib import Path

import dagster as dg

from selene_dag import last_verdict, service
from selene_dag.config import load_settings
from selene_dag.defs.notes import notes_folder_sensor
from selene_dag.defs.resources import SeleneResource
from selene_dag.defs.runs import instance_for
from selene_dag.store import open_store
from tests.conftest import DEMO_NOTES

NOTES_AND_INDEX = {
    "raw_notes",
    "processed_notes",
    "threads",
    "thread_digests",
    "fidelity_tiers",
    "compression_health",
    "search_index",
}


def _notes(folder: Path, count: int = 30) -> tuple[Path, list[dict]]:
    rows = [json.loads(line) for line in DEMO_NOTES.read_text().splitlines()[:count]]
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "notes.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path, rows


def _steps_run(settings) -> list[set[str]]:
    """Asset keys materialized per run recorded in the home's persistent instance."""
    instance = instance_for(settings)
    runs = []
    for record in instance.get_run_records():
        keys = {
            e.dagster_event.asset_key.to_user_string()
            for e in instance.all_logs(
                record.dagster_run.run_id, of_type=dg.DagsterEventType.ASSET_MATERIALIZATION
            )
        }
        if keys:
            runs.append(keys)
    return runs


def test_unchanged_edited_and_next_day_runs(tmp_path: Path, home: Path) -> None:
    path, rows = _notes(tmp_path / "notes")
    settings = load_settings(home=home, now_override="2026-07-15")

    first = service.ingest(settings, path)
    assert set(first.ran) == NOTES_AND_INDEX and first.inserted == 30
    runs_after_first = len(_steps_run(settings))

    again = service.ingest(settings, path)
    assert again.ran == () and again.notes == 30
    assert len(_steps_run(settings)) == runs_after_first  # no run started at all
    # Dagster's verdict "nothing to run" is remembered; the next ingest reports the same
    # from it (the CLI test shows it does not load Dagster).
    assert (home / last_verdict.VERDICT_FILE).exists()
    remembered = service.ingest(settings, path)
    assert remembered.ran == () and remembered.notes == 30 and remembered.home_notes == 30
    assert len(_steps_run(settings)) == runs_after_first

    rows[3]["content"] += "\n\nOne more paragraph."
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    edited = service.ingest(settings, path)
    assert edited.changed == 1 and edited.inserted == 0
    assert "raw_notes" in edited.ran and set(edited.ran) <= NOTES_AND_INDEX
    # The folder first, alone; what follows it runs once its data version moved.
    newest, before = _steps_run(settings)[:2]  # newest first
    assert before == {"raw_notes"} and newest | before == set(edited.ran)

    next_day = service.ingest(settings.replace(now_override="2026-07-16"), path)
    # What ages with the clock: thread status (and the digests that follow it), tiers.
    assert set(next_day.ran) == {
        "threads",
        "thread_digests",
        "fidelity_tiers",
        "compression_health",
        "search_index",
    }


def test_a_new_target_model_counts_the_health_figures_and_the_index_again(
    tmp_path: Path, home: Path
) -> None:
    # Offline, a new SELENE_MODEL ran nothing: the health figures and the budget check
    # stayed counted in the old model's tokens, the index's counts too.
    path, _ = _notes(tmp_path / "notes", 10)
    settings = load_settings(home=home, now_override="2026-07-15")
    service.ingest(settings, path)
    other = settings.replace(model="gpt-4")

    switched = service.ingest(other, path)

    assert {"compression_health", "search_index"} <= set(switched.ran)
    assert "processed_notes" not in switched.ran  # the offline analysis counts no tokens
    instance = instance_for(other)
    for key in ("compression_health", "search_index"):
        event = instance.get_latest_materialization_event(dg.AssetKey(key))
        assert event.asset_materialization.metadata["model"].value == "gpt-4"
    assert service.ingest(other, path).ran == ()


def _dated_notes(folder: Path, updated: dict[int, str] | None = None, tags=None) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(1, 12):
        tag = (tags or {}).get(i, "alpha")
        (folder / f"a{i:02d}.md").write_text(
            f"---\ntitle: Alpha {i:02d}\ncreated: 2025-06-{i:02d}T09:00:00Z\n"
            f"updated: {(updated or {}).get(i, f'2025-06-{i:02d}T09:00:00Z')}\n"
            f"tags: [{tag}]\n---\nAlpha body {i:02d} about gizmo{i:02d}.\n"
        )


def test_a_note_re_dated_or_re_tagged_in_its_front_matter_moves_its_thread_and_tier(
    tmp_path: Path, home: Path
) -> None:
    # Only the text made a note "changed": dates and tags were stored, and nothing that
    # follows ran, so threads, tiers and context kept the old ones until some text changed.
    folder = tmp_path / "notes"
    _dated_notes(folder)
    settings = load_settings(home=home, now_override="2026-01-01")
    service.ingest(settings, folder)

    def state():
        with open_store(home / "selene.duckdb") as conn:
            threads = dict(
                conn.execute(
                    "SELECT t.name, count(*) FROM threads t JOIN thread_notes m "
                    "ON m.thread_id = t.id GROUP BY t.name"
                ).fetchall()
            )
            status = conn.execute("SELECT status FROM threads WHERE name = 'alpha'").fetchone()
            tier = conn.execute(
                "SELECT fidelity_tier FROM processed_notes WHERE note_id LIKE '%a01.md'"
            ).fetchone()
        return threads, status[0], tier[0]

    threads, status, tier = state()
    assert threads == {"alpha": 11} and status == "archived" and tier == "skeleton"

    _dated_notes(folder, updated={1: "2025-12-30T09:00:00Z"})
    redated = service.ingest(settings, folder)
    assert redated.changed == 1 and {"threads", "fidelity_tiers"} <= set(redated.ran)
    threads, status, tier = state()
    assert status == "active" and tier != "skeleton"

    _dated_notes(folder, updated={1: "2025-12-30T09:00:00Z"}, tags={10: "beta", 11: "beta"})
    retagged = service.ingest(settings, folder)
    assert retagged.changed == 2 and "threads" in retagged.ran
    assert state()[0] == {"alpha": 9, "beta": 2}
    assert service.ingest(settings, folder).ran == ()


def test_one_edited_note_analyses_only_that_note(tmp_path: Path, home: Path) -> None:
    path, rows = _notes(tmp_path / "notes", 20)
    settings = load_settings(home=home, now_override="2026-07-15")
    service.ingest(settings, path)
    rows[0]["content"] += "\n\nEdited."
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    from selene_dag.defs.runs import materialize_stale

    instance = instance_for(settings)
    outcome = materialize_stale(
        instance, settings.replace(notes_dir=path.resolve()), dg.AssetSelection.groups("notes")
    )
    (mat,) = outcome.result.asset_materializations_for_node("processed_notes")
    assert mat.metadata["analysed"].value == 1
    assert outcome.reasons.keys() == {"raw_notes"}
    # Health counts tokens only for the edited note's texts; the rest come from
    # token_counts (computed once per text and model).
    (health,) = outcome.result.asset_materializations_for_node("compression_health")
    counted = health.metadata["texts_counted"].value
    assert 1 <= counted <= 5 and health.metadata["texts_count_reused"].value >= 19


def test_notes_folder_sensor_skips_a_missing_folder(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("SELENE_NOTES_DIR", str(tmp_path / "nowhere"))
    result = notes_folder_sensor(
        dg.build_sensor_context(
            instance=dg.DagsterInstance.ephemeral(), resources={"selene": SeleneResource()}
        )
    )
    assert not result.run_requests
    assert "does not exist" in (result.skip_reason.skip_message or "")


def test_an_edit_made_while_ingest_decides_is_read_then_or_next_time(
    tmp_path: Path, home: Path
) -> None:
    # The folder's version is computed once, before Dagster is asked, and recorded as the
    # observation: an edit made after that moment is either read by this ingest's
    # raw_notes or makes the next ingest read it, never lost.
    from selene_dag.defs import runs
    from selene_dag.notes.ingest import notes_folder_version
    from selene_dag.store import connect

    path, rows = _notes(tmp_path / "notes")
    settings = load_settings(home=home, now_override="2026-07-15").replace(notes_dir=path.resolve())
    service.ingest(settings, path)
    before = notes_folder_version(settings.notes_dir, settings.home)
    rows[5]["content"] += "\n\nAdded while the ingest was deciding."
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    instance = instance_for(settings)
    first = runs.materialize_stale(
        instance, settings, dg.AssetSelection.groups("notes", "context"), notes_version=before
    )
    # Recorded as unchanged, the folder gave raw_notes nothing to do: the edit waits.
    assert first.result is None
    after = service.ingest(settings, path)
    assert "raw_notes" in after.ran and after.changed == 1
    conn = connect(settings.db_path)
    try:
        [content] = conn.execute(
            "SELECT content FROM notes WHERE content LIKE '%Added while the ingest%'"
        ).fetchone()
    finally:
        conn.close()
    assert content.endswith("Added while the ingest was deciding.")
