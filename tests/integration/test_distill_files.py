"""What a distilled file holds: every text of it within the budget (the model's
acknowledgement too), and a transcript copied beside itself counted once in its project."""

from __future__ import annotations

import shutil
from pathlib import Path

import dagster as dg
import duckdb
import pytest

from selene_dag import service
from selene_dag.config import Settings
from selene_dag.context.tokens import count_tokens
from selene_dag.errors import UsageError
from selene_dag.sessions.generators import ACK_TEXT
from selene_dag.sessions.parsers import parse_file
from tests.support.sessions import REAL_CLAUDE, offline_settings


def _settings(tmp_path: Path, **env: str) -> Settings:
    return offline_settings(tmp_path / "home", tmp_path / "projects", **env)


def _copy(tmp_path: Path, *folders: str) -> None:
    for folder in folders:
        target = tmp_path / "projects" / folder / REAL_CLAUDE.name
        target.parent.mkdir(parents=True)
        shutil.copy(REAL_CLAUDE, target)


def _rows(settings: Settings) -> dict[str, tuple]:
    with duckdb.connect(str(settings.db_path), read_only=True) as conn:
        rows = conn.execute(
            "SELECT session_key, path, chunk_count, tokens, budget FROM distilled_sessions"
        ).fetchall()
    return {r[0]: r[1:] for r in rows}


def test_every_text_of_a_distilled_file_counts_within_its_budget(tmp_path: Path) -> None:
    # The acknowledgement after the preamble was left out of the count: a file of 1,000
    # tokens held 1,017.
    _copy(tmp_path, "-proj")
    settings = _settings(tmp_path, SELENE_DISTILL_TOKEN_BUDGET="3000")
    service.distill_run(settings, all_files=True, instance=dg.DagsterInstance.ephemeral())
    rows = _rows(settings)
    assert rows
    for path, chunks, tokens, budget in rows.values():
        # What the model reads: the preamble, the chunks (wrapped) and its acknowledgement;
        # not the transcript's title or its compaction marker.
        events = parse_file(path).events
        texts = [e.text for e in events if e.kind not in ("summary", "compact_boundary")]
        texts += [e.text for e in events if e.kind == "summary" and "assembled from" in e.text]
        assert ACK_TEXT in texts and chunks >= 1
        assert sum(count_tokens(t, settings.model) for t in texts) <= tokens <= budget == 3000


def test_a_transcript_copied_beside_itself_counts_once_in_its_project(tmp_path: Path) -> None:
    # A backup of ~/.claude beside it (or a second machine's folder) holds the same session:
    # its project's distillation held every chunk twice, and named the session twice.
    _copy(tmp_path, "-proj", "-proj-backup")
    settings = _settings(tmp_path)
    service.distill_run(settings, all_files=True, instance=dg.DagsterInstance.ephemeral())
    rows = _rows(settings)
    sessions = {k: v for k, v in rows.items() if not k.startswith("project:")}
    projects = {k: v for k, v in rows.items() if k.startswith("project:")}
    assert len(sessions) == 2 and len(projects) == 1
    (single_chunks,) = {v[1] for v in sessions.values()}
    path, chunks, _, _ = next(iter(projects.values()))
    assert chunks == single_chunks
    opening = next(e.text for e in parse_file(path).events if "assembled from" in e.text)
    session_id = REAL_CLAUDE.stem.removeprefix("claude-code-log_")
    assert opening.count(session_id) == 1, opening
    # Naming the session: its id or a part of it names both copies, and the error shows
    # the keys that name each alone (it said "type more of it", which cannot help).
    keys = sorted(sessions)
    with pytest.raises(UsageError) as error:
        service.distill_seed(settings, "claude", session_id, out_dir=tmp_path / "seed")
    assert f"names 2 sessions: {keys[0]} (" in str(error.value)
    assert "name one by its key" in str(error.value) and keys[1] in str(error.value)
    with pytest.raises(UsageError, match=f"is part of the ids of 2 sessions: {keys[0]}"):
        service.distill_report(settings, session_id[:8])
    # `distill run` took the id as naming both (or, for copies under other names, the one
    # a lookup by the tool's id kept), with no word.
    with pytest.raises(UsageError, match=f"names 2 sessions: {keys[0]}"):
        service.distill_run(settings, [session_id])
    seeded = service.distill_seed(settings, "claude", keys[1], out_dir=tmp_path / "seed")
    assert Path(seeded["path"]).is_file()


def test_a_distilled_file_deleted_by_hand_is_written_again(tmp_path: Path) -> None:
    # `distill run --all` said "every file up to date" with a session's or a project's
    # distilled file gone; only naming the session wrote it again.
    from typer.testing import CliRunner

    from selene_dag import last_verdict
    from selene_dag.cli import app
    from selene_dag.defs.runs import instance_for

    _copy(tmp_path, "-proj")
    settings = _settings(tmp_path, SELENE_DISTILL_MIN_CONSENSUS="0")
    instance = instance_for(settings)  # the home's own: its history keys the verdict
    service.distill_run(settings, all_files=True, instance=instance)
    rows = _rows(settings)
    (session,) = [Path(r[0]) for k, r in rows.items() if not k.startswith("project:")]
    (project,) = [Path(r[0]) for k, r in rows.items() if k.startswith("project:")]
    assert service.distill_run(settings, all_files=True, instance=instance) == []
    key = last_verdict.current_key(settings, "distill", notes=False)
    assert key is not None
    session.unlink()
    # The verdict that nothing had to run no longer holds: it rests on the distilled files.
    assert last_verdict.current_key(settings, "distill", notes=False) != key
    (row,) = service.distill_run(settings, all_files=True, instance=instance)
    assert row["ok"] and session.is_file() and project.is_file()
    project.unlink()
    env = {
        "SELENE_HOME": str(settings.home),
        "SELENE_SESSION_ROOTS": f"claude={tmp_path / 'projects'}",
        "SELENE_LLM": "extractive",
        "SELENE_CLI_ASSESSORS": "",
        "SELENE_NOW": "2026-05-01T00:00:00Z",
        "SELENE_DISTILL_MIN_CONSENSUS": "0",
    }
    ran = CliRunner().invoke(app, ["distill", "run", "--all"], env=env)
    assert ran.exit_code == 0, ran.output
    assert "1 project file written again (deleted since distilled)" in ran.output
    assert project.is_file()
    assert service.distill_run(settings, all_files=True, instance=instance) == []


def test_a_transcript_shorter_than_when_read_is_told(tmp_path: Path) -> None:
    # A transcript replaced by an older, shorter copy dropped its stored events without a
    # word (a file deleted keeps them).
    _copy(tmp_path, "-proj")
    settings = _settings(tmp_path)
    instance = dg.DagsterInstance.ephemeral()
    (first,) = service.distill_run(settings, all_files=True, instance=instance)
    assert first["shrank"] is None
    path = Path(first["path"])
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    path.write_text("".join(lines[: len(lines) // 2]), encoding="utf-8")
    (row,) = service.distill_run(settings, all_files=True, instance=instance)
    before, after = row["shrank"]["events_before"], row["shrank"]["events"]
    assert 0 < after < before
    assert service.shrank_hint([row]) == (
        "1 session file is shorter than when last read (replaced or cut): its stored events "
        f"now follow it ({row['session_key']} {before:,} → {after:,} events). Agents only "
        "append to transcripts: if an older copy was put back, the events it lacks are gone "
        "from this home"
    )
    # Grown again, nothing is said.
    path.write_text("".join(lines), encoding="utf-8")
    (grown,) = service.distill_run(settings, all_files=True, instance=instance)
    assert grown["shrank"] is None and service.shrank_hint([grown]) == ""


def test_a_budget_too_small_fails_clearly_and_keeps_the_file_before(tmp_path: Path) -> None:
    # SELENE_DISTILL_TOKEN_BUDGET=50: the good file was replaced by a preamble over the
    # budget, the run failed with the check's bare name, and the next run said nothing
    # failed. At 1,000 every chunk was left out without a word.
    _copy(tmp_path, "-proj")
    instance = dg.DagsterInstance.ephemeral()
    settings = _settings(tmp_path)
    service.distill_run(settings, all_files=True, instance=instance)
    good = _rows(settings)
    files = {key: Path(row[0]).read_bytes() for key, row in good.items()}
    tiny = _settings(tmp_path, SELENE_DISTILL_TOKEN_BUDGET="50")
    for _ in range(2):  # not forgotten at the next run
        rows = service.distill_run(tiny, all_files=True, instance=instance)
        failed = [r for r in rows if not r["ok"]]
        assert failed and all(
            "preamble alone counts" in r["error"] and "SELENE_DISTILL_TOKEN_BUDGET" in r["error"]
            for r in failed
        )
    assert _rows(settings) == good
    assert {key: Path(row[0]).read_bytes() for key, row in good.items()} == files
    small = _settings(tmp_path, SELENE_DISTILL_TOKEN_BUDGET="300")
    rows = service.distill_run(small, all_files=True, instance=instance)
    assert all(r["ok"] and r["distilled_chunks"] == 0 for r in rows)
    hint = service.kept_no_chunk_hint(rows)
    assert "is larger than the budget of 300 tokens leaves" in hint
    assert "SELENE_DISTILL_TOKEN_BUDGET raises it" in hint and "consensus 5" not in hint
