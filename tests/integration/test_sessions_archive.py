"""A session file deleted after its ingest (agents prune old transcripts): its partition
still materializes, its rows and data version stay, and status says the source is gone."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import dagster as dg
import duckdb
import pytest

from selene_dag.config import Settings, load_settings
from selene_dag.defs.resources import SeleneResource
from selene_dag.defs.sessions import SESSION_PARTITIONS, SESSION_SPINE
from selene_dag.service import show
from selene_dag.sessions.report import distill_report, distill_status
from selene_dag.sessions.scanner import scan_report, scan_roots
from tests.support.sessions import REAL_CODEX

TABLES = ("session_files", "session_events", "chunks", "chunk_scores", "distilled_sessions")


def _rows(db) -> dict[str, int]:
    conn = duckdb.connect(str(db), read_only=True)
    try:
        return {t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in TABLES}
    finally:
        conn.close()


def _versions(result: dg.ExecuteInProcessResult) -> dict[str, str | None]:
    return {
        e.asset_key.to_user_string(): e.step_materialization_data.materialization.tags.get(
            "dagster/data_version"
        )
        for e in result.get_asset_materialization_events()
    }


def _one_codex_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[Settings, str, Path, Callable[[], dg.ExecuteInProcessResult]]:
    """A home whose one session root holds the real Codex transcript: its settings, the
    session's key, the transcript's path and a function materializing its spine."""
    root = tmp_path / "codex" / "2025"
    root.mkdir(parents=True)
    session = root / REAL_CODEX.name
    shutil.copy(REAL_CODEX, session)
    env = {
        "SELENE_HOME": str(tmp_path / "home"),
        "SELENE_SESSION_ROOTS": f"codex={tmp_path / 'codex'}",
        "SELENE_LLM": "extractive",
        "SELENE_CLI_ASSESSORS": "",
        "SELENE_NOW": "2026-05-01T00:00:00Z",
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    settings = load_settings()
    (key,) = [f.session_key for f in scan_roots(settings.session_roots)]
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions(SESSION_PARTITIONS.name, [key])

    def run() -> dg.ExecuteInProcessResult:
        return dg.materialize(
            SESSION_SPINE,
            partition_key=key,
            instance=instance,
            resources={"selene": SeleneResource()},
        )

    return settings, key, session, run


def test_deleted_session_file_keeps_its_rows(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    settings, _, session, run = _one_codex_session(tmp_path, monkeypatch)
    first = run()
    before = _rows(settings.db_path)
    assert first.success and before["session_events"] > 0 and before["distilled_sessions"] == 1
    assert distill_status(settings)["source_gone"] == 0

    os.remove(session)
    again = run()
    assert again.success
    assert _rows(settings.db_path) == before
    assert _versions(again)["session_events"] == _versions(first)["session_events"]
    assert distill_status(settings)["source_gone"] == 1
    (report,) = distill_report(settings)
    assert report["source_exists"] is False and report["events"] == before["session_events"]


def test_never_ingested_missing_file_still_fails_clearly(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("SELENE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SELENE_SESSION_ROOTS", f"codex={tmp_path / 'none'}")
    monkeypatch.setenv("SELENE_LLM", "extractive")
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions(SESSION_PARTITIONS.name, ["codex-gone"])
    result = dg.materialize(
        SESSION_SPINE[:1],
        partition_key="codex-gone",
        instance=instance,
        resources={"selene": SeleneResource()},
        raise_on_error=False,
    )
    assert not result.success
    failure = next(e for e in result.all_events if e.is_step_failure)
    assert "moved or deleted" in str(failure.event_specific_data.error)


def _deny(monkeypatch: pytest.MonkeyPatch, folder: Path) -> None:
    """Make ``folder`` unreadable to this process: its permissions, or (root reads every
    folder whatever they say) the system calls answering for it as they would."""
    if os.geteuid() != 0:
        os.chmod(folder, 0)
        return
    stat, scandir = os.stat, os.scandir

    def denied(path: object) -> bool:
        return str(path) == str(folder) or str(path).startswith(f"{folder}{os.sep}")

    def stat_as_user(path, *args, **kwargs):  # type: ignore[no-untyped-def]
        if denied(path) and str(path) != str(folder):
            raise PermissionError(13, "Permission denied", str(path))
        return stat(path, *args, **kwargs)

    def scandir_as_user(path="."):  # type: ignore[no-untyped-def]
        if denied(path):
            raise PermissionError(13, "Permission denied", str(path))
        return scandir(path)

    monkeypatch.setattr(os, "stat", stat_as_user)
    monkeypatch.setattr(os, "scandir", scandir_as_user)


def test_a_session_folder_this_user_may_not_read_is_said_so(
    tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # status and report raised PermissionError (Path.is_file) once a stored session's
    # folder could not be read, show called the file gone, and scan left the folder out
    # without a word.
    settings, key, session, run = _one_codex_session(tmp_path, monkeypatch)
    folder = session.parent
    assert run().success
    _deny(monkeypatch, folder)
    try:
        status = distill_status(settings)
        (row,) = distill_report(settings)
        skipped = scan_report(settings.session_roots).skipped
        shown = show(settings, f"{key} events 0-1")
    finally:
        os.chmod(folder, 0o755)
    assert status["source_gone"] == 0 and status["source_unreadable"] == 1
    assert row["source_state"] == "unreadable" and row["source_exists"]
    assert [f.path for f in skipped] == [str(folder)]
    assert "permission denied" in skipped[0].reason
    assert "cannot be read now (permission denied)" in shown.note


def test_status_counts_a_session_read_but_not_yet_distilled(
    tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A run stopped after a file's events were stored and before its distillation (Ctrl-C):
    # status called the file "ingested, unchanged" and said nothing of the rest.
    settings, key, _, run = _one_codex_session(tmp_path, monkeypatch)
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions(SESSION_PARTITIONS.name, [key])
    read_only = dg.materialize(
        SESSION_SPINE[:1],
        partition_key=key,
        instance=instance,
        resources={"selene": SeleneResource()},
    )
    assert read_only.success
    status = distill_status(settings)
    assert (status["done"], status["session_files"], status["not_distilled"]) == (1, 1, 1)
    # ask said "no agent session in this home yet".
    from selene_dag import service

    pack = service.ask(settings, "which provider was configured", 200, sources="sessions")
    assert not pack.items
    assert pack.stats["note"].startswith("1 agent session stored but not chunked yet"), pack.stats
    assert run().success
    assert distill_status(settings)["not_distilled"] == 0


def _spine(key: str) -> dg.ExecuteInProcessResult:
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions(SESSION_PARTITIONS.name, [key])
    return dg.materialize(
        SESSION_SPINE, partition_key=key, instance=instance, resources={"selene": SeleneResource()}
    )


def _keys(settings: Settings) -> dict[str, int]:
    conn = duckdb.connect(str(settings.db_path), read_only=True)
    try:
        return dict(conn.execute("SELECT session_key, events FROM session_files").fetchall())
    finally:
        conn.close()


def test_a_moved_transcript_is_stored_under_its_new_path_only(
    tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A transcript moved to another folder was a second session (its key comes from the
    # path) beside the first, kept as an archive: the conversation stored, distilled and
    # cited twice.
    settings, key, session, run = _one_codex_session(tmp_path, monkeypatch)
    assert run().success
    (old_distilled,) = [Path(r["distilled_path"]) for r in distill_report(settings)]
    events = _keys(settings)[key]

    # Copied: both files are there, both sessions are kept.
    copy = tmp_path / "codex" / "2026" / session.name
    copy.parent.mkdir()
    shutil.copy(session, copy)
    (copy_key,) = {f.session_key for f in scan_roots(settings.session_roots)} - {key}
    assert _spine(copy_key).success
    assert _keys(settings) == {key: events, copy_key: events}
    before = show(settings, f"{key} events 2-4").text  # a citation copied before the move

    # The original deleted, the copy read again (it grew): the first session is retired.
    os.remove(session)
    with open(copy, "a", encoding="utf-8") as handle:
        handle.write(
            '{"timestamp": "2025-11-17T22:00:00Z", "type": "event_msg", '
            '"payload": {"type": "user_message", "message": "one more thing"}}\n'
        )
    result = _spine(copy_key)
    assert result.success
    assert _keys(settings) == {copy_key: events + 1}
    assert not old_distilled.exists()
    (row,) = distill_report(settings)
    assert row["session_key"] == copy_key and Path(row["distilled_path"]).is_file()
    assert distill_status(settings)["source_gone"] == 0
    figures = result.get_asset_materialization_events()[0].materialization.metadata
    assert figures["replaces"].value == key
    # The old key's citation opens the same events, from the moved file (it was "no
    # session … in this home").
    after = show(settings, f"{key} events 2-4")
    assert after.text.split("\n", 1)[1] == before.split("\n", 1)[1]
    assert after.text.startswith(f"[{copy_key} events 2-4]")
    assert after.note.startswith(f"{key}'s transcript moved: shown from {copy}, now {copy_key}")


def test_a_gone_session_another_file_does_not_hold_whole_is_kept(
    tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The same tool session id in a file that lacks some of the stored events (an older,
    # shorter copy put in another folder): the gone session keeps its rows.
    settings, key, session, run = _one_codex_session(tmp_path, monkeypatch)
    assert run().success
    events = _keys(settings)[key]
    lines = session.read_text(encoding="utf-8").splitlines(keepends=True)
    shorter = tmp_path / "codex" / "2026" / session.name
    shorter.parent.mkdir()
    shorter.write_text("".join(lines[: len(lines) // 2]), encoding="utf-8")
    os.remove(session)
    (other,) = {f.session_key for f in scan_roots(settings.session_roots)}
    assert _spine(other).success
    kept = _keys(settings)
    assert kept[key] == events and 0 < kept[other] < events
