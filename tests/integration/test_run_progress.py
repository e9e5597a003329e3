"""Progress of a long CLI run (issue #16 item 5): while a run executes in this process, a
background poll of the persistent instance reports its steps."""

from __future__ import annotations

from pathlib import Path

from selene_dag import service
from selene_dag.config import load_settings
from selene_dag.defs import runs


def test_watching_reports_the_steps_of_the_run(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    for i in range(5):
        (notes / f"n{i}.md").write_text(f"# Note {i}\n\nThe body of note {i} talks about caching.")
    settings = load_settings({"SELENE_LLM": "extractive"}, home=tmp_path / "home")
    lines: list[str] = []
    instance = runs.instance_for(settings)
    assert runs.run_progress(instance, 0.0) is None  # no run yet
    with runs.watching(instance, lines.append, interval=0.2):
        report = service.ingest(settings, notes)
    assert report.ran
    assert lines and all("steps done" in line for line in lines)
    assert any("running" in line for line in lines)
    final = runs.run_progress(instance, 0.0)
    assert final is not None and final.endswith("steps done")
