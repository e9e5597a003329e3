"""raw_notes through dagster.materialize with the real definitions and a real DuckDB file."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pytest

from selene_dag.config import load_settings
from selene_dag.defs.runs import materialize
from selene_dag.store import open_store


def _run(selection=("raw_notes",)):
    instance = dg.DagsterInstance.ephemeral()
    return materialize(list(selection), instance)


def _meta(result, node="raw_notes"):
    mat = result.asset_materializations_for_node(node)[0]
    return {k: getattr(v, "value", v) for k, v in mat.metadata.items()}


def _version(result, node="raw_notes"):
    mat = result.asset_materializations_for_node(node)[0]
    return mat.tags["dagster/data_version"]


@pytest.fixture
def corpus(tmp_path, monkeypatch, demo_notes):
    folder = tmp_path / "notes"
    folder.mkdir()
    shutil.copy(demo_notes, folder / "til.jsonl")
    monkeypatch.setenv("SELENE_NOTES_DIR", str(folder))
    return folder


def test_ingest_reingest_and_edit_one_note(corpus):
    first = _run()
    assert _meta(first)["notes"] == 577 and _meta(first)["inserted"] == 577
    db = load_settings().db_path
    with open_store(db) as conn:
        before = dict(conn.execute("SELECT id, ingested_at FROM notes").fetchall())
        titles = dict(conn.execute("SELECT id, title FROM notes").fetchall())
    rows = [json.loads(line) for line in (corpus / "til.jsonl").read_text().splitlines()]
    # Ids are home-wide: the folder's key (its name, "notes") before the JSONL id.
    source = {f"notes/{row['id']}": row for row in rows}
    assert titles == {k: v["title"] for k, v in source.items()}

    again = _run()
    assert _meta(again)["unchanged"] == 577 and _meta(again)["inserted"] == 0
    assert _version(again) == _version(first)

    lines = (corpus / "til.jsonl").read_text().splitlines()
    row = json.loads(lines[10])
    row["content"] += "\n\nAn edit."
    lines[10] = json.dumps(row)
    (corpus / "til.jsonl").write_text("\n".join(lines) + "\n")
    edited = _run()
    assert _meta(edited)["changed"] == 1 and _meta(edited)["unchanged"] == 576
    assert _version(edited) != _version(first)
    with open_store(db) as conn:
        after = dict(conn.execute("SELECT id, ingested_at FROM notes").fetchall())
        content = conn.execute(
            "SELECT content FROM notes WHERE id = ?", [f"notes/{row['id']}"]
        ).fetchone()[0]
    assert [k for k in after if after[k] != before[k]] == [f"notes/{row['id']}"]
    assert content.endswith("An edit.")


def test_bad_file_ingests_the_rest_and_deleted_file_marks_notes(tmp_path, monkeypatch):
    folder = tmp_path / "md"
    folder.mkdir()
    for i in range(3):
        (folder / f"n{i}.md").write_text(f"# Note {i}\nbody {i}")
    (folder / "bad.md").write_bytes(b"---\ntitle: nothing here\n---\n")  # an empty note
    monkeypatch.setenv("SELENE_NOTES_DIR", str(folder))
    result = _run()
    meta = _meta(result)
    assert meta["notes"] == 3 and meta["bad_inputs"] == 1
    assert (
        "bad.md" in meta["bad_input_list"].value
        if hasattr(meta["bad_input_list"], "value")
        else meta["bad_input_list"]
    )
    (folder / "n0.md").unlink()
    meta = _meta(_run())
    assert meta["notes"] == 2 and meta["marked_deleted"] == 1
    with open_store(load_settings().db_path) as conn:
        rows = dict(conn.execute("SELECT id, deleted_at IS NOT NULL FROM notes").fetchall())
        errors = conn.execute("SELECT count(*) FROM ingest_errors").fetchone()[0]
    assert rows == {"md/n0.md": True, "md/n1.md": False, "md/n2.md": False}
    assert errors == 1
    (folder / "n0.md").write_text("# Note 0\nbody 0")
    assert _meta(_run())["notes"] == 3


def test_notes_source_observation_tracks_content(corpus):
    from dagster._core.definitions.observe import observe as dagster_observe

    from selene_dag.defs.notes import notes_source
    from selene_dag.defs.resources import SeleneResource

    def observe():
        result = dagster_observe([notes_source], resources={"selene": SeleneResource()})
        (event,) = result.asset_observations_for_node(notes_source.op.name)
        return event.tags["dagster/data_version"]

    v1 = observe()
    assert observe() == v1
    (corpus / "extra.md").write_text("# New\nnote")
    assert observe() != v1


def test_definitions_validate_with_dagster_cli():
    repo = Path(__file__).resolve().parents[2]
    exe = Path(sys.executable).parent / "dagster"
    proc = subprocess.run(
        [str(exe), "definitions", "validate", "-w", "workspace.yaml"],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
