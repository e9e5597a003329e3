"""Dagster's last verdict "nothing to run" is remembered with everything it rests on: the
key moves with the notes, the session files, the settings, the day, the code, the
instance's history and the database file, and only an equal key makes it stand."""

from __future__ import annotations

import shutil
from pathlib import Path

import dagster as dg

from selene_dag import last_verdict
from selene_dag.config import load_settings
from selene_dag.defs.runs import instance_for

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "sessions"


def _settings(tmp_path: Path):
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# A\n\nFirst note.\n")
    sessions = tmp_path / "sessions"
    shutil.copytree(FIXTURES / "codex", sessions)
    return load_settings(
        home=tmp_path / "home",
        notes_dir=notes,
        session_roots=f"codex={sessions}",
        now_override="2026-07-15",
    )


def _observe(settings, name: str = "elsewhere") -> None:
    instance_for(settings).report_runless_asset_event(
        dg.AssetObservation(asset_key=dg.AssetKey(name))
    )


def test_no_instance_history_gives_no_key(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    assert last_verdict.current_key(settings, "demo") is None
    assert not last_verdict.holds(settings, None)


def test_the_key_moves_with_everything_the_verdict_rests_on(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    _observe(settings)
    key = last_verdict.current_key(settings, "demo")
    assert key is not None and key == last_verdict.current_key(settings, "demo")
    assert last_verdict.current_key(settings, "ingest") != key

    def moved(field: str, changed_settings=settings, *, also: frozenset = frozenset()) -> None:
        nonlocal key
        new = last_verdict.current_key(changed_settings, "demo")
        assert new is not None
        assert {k for k in new if new[k] != key[k]} == {field} | also
        key = new

    sessions_only = last_verdict.current_key(settings, "distill", notes=False)
    (settings.notes_dir / "a.md").write_text("# A\n\nFirst note, edited.\n")
    assert last_verdict.current_key(settings, "distill", notes=False) == sessions_only
    moved("notes")
    session = next(p for p in Path(settings.session_roots[0].path).rglob("*.jsonl"))
    with session.open("a") as handle:
        handle.write("\n")
    moved("sessions")
    without = last_verdict.current_key(settings, "ingest", sessions=False)
    with session.open("a") as handle:
        handle.write("\n")
    assert last_verdict.current_key(settings, "ingest", sessions=False) == without
    moved("sessions")
    _observe(settings)
    moved("instance")
    settings.db_path.parent.mkdir(parents=True, exist_ok=True)
    settings.db_path.write_bytes(b"")
    moved("database")
    moved("settings", settings.replace(model="llama3.1:8b"))
    # "now" is a setting: its day is part of the key on its own (a home without SELENE_NOW
    # sees the day change with no setting changed).
    moved("day", settings.replace(now_override="2026-07-16"), also=frozenset({"settings"}))


def test_code_digest_moves_with_a_source_file(tmp_path: Path) -> None:
    code = tmp_path / "code"
    code.mkdir()
    (code / "a.py").write_text("X = 1\n")
    (code / "notes.txt").write_text("not code")
    roots = [(code, (".py",))]
    before = last_verdict.code_digest(roots)
    (code / "notes.txt").write_text("still not code")
    assert last_verdict.code_digest(roots) == before
    (code / "a.py").write_text("X = 2\n")
    assert last_verdict.code_digest(roots) != before
    assert last_verdict.code_digest() == last_verdict.code_digest()


def test_remember_holds_and_clear(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    _observe(settings)
    key = last_verdict.current_key(settings, "demo")
    assert not last_verdict.holds(settings, key)
    last_verdict.remember(settings, key)
    assert last_verdict.holds(settings, key)
    assert not last_verdict.holds(settings, {**key, "notes": "other"})
    _observe(settings)
    assert not last_verdict.holds(settings, last_verdict.current_key(settings, "demo"))
    # Verdicts of several commands stand side by side while the instance stays put.
    key = last_verdict.current_key(settings, "demo")
    last_verdict.remember(settings, key)
    distill = last_verdict.current_key(settings, "distill", notes=False)
    last_verdict.remember(settings, distill)
    assert last_verdict.holds(settings, key) and last_verdict.holds(settings, distill)
    (settings.home / last_verdict.VERDICT_FILE).write_text("[1, 2]")
    assert not last_verdict.holds(settings, key)
    (settings.home / last_verdict.VERDICT_FILE).write_text("{not json")
    assert not last_verdict.holds(settings, key)
    last_verdict.clear(settings)
    last_verdict.clear(settings)  # clearing nothing is fine
    assert not (settings.home / last_verdict.VERDICT_FILE).exists()
