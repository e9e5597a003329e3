"""The sessions spine materialized with Dagster on real fixture files in a temp SELENE_HOME."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import dagster as dg
import duckdb
import pytest

from selene_dag.config import load_settings
from selene_dag.defs.resources import SeleneResource
from selene_dag.defs.sessions import (
    SESSION_CHECKS,
    SESSION_PARTITIONS,
    SESSION_SPINE,
    session_files_sensor,
)
from selene_dag.sessions.parsers import parse_file
from selene_dag.sessions.scanner import scan_roots
from selene_dag.sessions.steps import SessionNotFoundError
from tests.support.sessions import (
    REAL_CLAUDE,
    REAL_CODEX,
    REAL_GEMINI,
    plant_secrets,
    secret_values,
)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory):
    base = tmp_path_factory.mktemp("sessions")
    roots = {p: base / "roots" / p for p in ("claude", "codex", "gemini")}
    (roots["claude"] / "-proj").mkdir(parents=True)
    plant_secrets(REAL_CLAUDE, roots["claude"] / "-proj" / REAL_CLAUDE.name)
    (roots["codex"] / "2025").mkdir(parents=True)
    shutil.copy(REAL_CODEX, roots["codex"] / "2025" / REAL_CODEX.name)
    (roots["gemini"] / "hash" / "chats").mkdir(parents=True)
    shutil.copy(
        REAL_GEMINI, roots["gemini"] / "hash" / "chats" / "session-2026-04-23T12-52-0ab84937.jsonl"
    )
    env = {
        "SELENE_HOME": str(base / "home"),
        "SELENE_SESSION_ROOTS": os.pathsep.join(f"{p}={d}" for p, d in roots.items()),
        "SELENE_LLM": "extractive",
        "SELENE_CLI_ASSESSORS": "",
        "SELENE_NOW": "2026-05-01T00:00:00Z",
    }
    settings = load_settings(env)
    instance = dg.DagsterInstance.ephemeral()
    files = scan_roots(settings.session_roots)
    instance.add_dynamic_partitions(SESSION_PARTITIONS.name, [f.session_key for f in files])
    return {"instance": instance, "files": files, "settings": settings, "roots": roots, "env": env}


@pytest.fixture(autouse=True)
def _world_env(world, monkeypatch: pytest.MonkeyPatch) -> None:
    """Runs after the suite's isolation fixture: point SELENE_* at this module's world."""
    for name, value in world["env"].items():
        monkeypatch.setenv(name, value)


def _materialize(world, key: str) -> dg.ExecuteInProcessResult:
    return dg.materialize(
        [*SESSION_SPINE, *SESSION_CHECKS],
        partition_key=key,
        instance=world["instance"],
        resources={"selene": SeleneResource()},
    )


def _tables(settings) -> dict[str, list[tuple]]:
    conn = duckdb.connect(str(settings.db_path), read_only=True)
    try:
        names = [
            "session_files",
            "session_events",
            "chunks",
            "assessments",
            "chunk_scores",
            "distilled_sessions",
        ]
        return {
            n: sorted(conn.execute(f"SELECT * EXCLUDE (created_at) FROM {n}").fetchall(), key=repr)
            if n in ("assessments", "distilled_sessions")
            else sorted(conn.execute(f"SELECT * FROM {n}").fetchall(), key=repr)
            for n in names
        }
    finally:
        conn.close()


@pytest.fixture(scope="module")
def first_run(world):
    with pytest.MonkeyPatch.context() as mp:  # module fixtures run before function ones
        for name, value in world["env"].items():
            mp.setenv(name, value)
        results = {f.session_key: _materialize(world, f.session_key) for f in world["files"]}
    return results, _tables(world["settings"])


def test_spine_runs_for_every_platform(world, first_run) -> None:
    results, tables = first_run
    assert all(r.success for r in results.values())
    for r in results.values():
        assert all(c.passed for c in r.get_asset_check_evaluations())
        # The budget check re-reads only the file its run wrote (not every file each run).
        (budget,) = [
            c for c in r.get_asset_check_evaluations() if c.check_name == "distilled_within_budget"
        ]
        assert budget.metadata["files"].value == 1
        # No file has an unreadable line: none is named the worst (it named any file).
        (errors,) = [
            c
            for c in r.get_asset_check_evaluations()
            if c.check_name == "session_files_parse_errors"
        ]
        assert errors.metadata["parse_errors"].value == 0
        assert errors.metadata["worst_file"].value == ""
    platforms = sorted(row[2] for row in tables["session_files"])
    assert platforms == ["claude", "codex", "gemini"]
    conn = duckdb.connect(str(world["settings"].db_path), read_only=True)
    try:
        rows = conn.execute(
            "SELECT path, platform, events, parse_errors FROM session_files"
        ).fetchall()
        for path, platform, events, errors in rows:
            assert events == len(parse_file(path, platform).events) and errors == 0
        assert (
            conn.execute("SELECT count(*) FROM chunk_scores WHERE NOT sufficient").fetchone()[0]
            == 0
        )
        assert conn.execute("SELECT count(DISTINCT assessor) FROM assessments").fetchone()[0] == 2
        distilled = conn.execute(
            "SELECT platform, path, tokens, budget, chunk_count FROM distilled_sessions"
        ).fetchall()
    finally:
        conn.close()
    assert sorted(d[0] for d in distilled) == ["claude", "codex", "gemini"]
    for platform, path, tokens, budget, count in distilled:
        assert Path(path).is_file() and Path(path).is_relative_to(world["settings"].distilled_dir)
        parsed = parse_file(path)
        assert parsed.platform == platform and parsed.errors == 0
        assert tokens <= budget and count > 0


def test_no_planted_secret_anywhere(world, first_run) -> None:
    _, tables = first_run
    dumped = json.dumps(tables, default=str)
    assert "[REDACTED:" in dumped
    for root, _, names in os.walk(world["settings"].distilled_dir):
        for name in names:
            dumped += (Path(root) / name).read_text(encoding="utf-8")
    for value in secret_values():
        assert value not in dumped, value


def test_rerun_is_idempotent(world, first_run) -> None:
    _, before = first_run
    key = world["files"][0].session_key
    result = _materialize(world, key)
    assert result.success
    assert _tables(world["settings"]) == before
    versions = {
        e.asset_key.to_user_string(): e.step_materialization_data.materialization.tags.get(
            "dagster/data_version"
        )
        for e in result.get_asset_materialization_events()
    }
    assert all(versions.values())
    # Its file unchanged since this code parsed it: not read again (a run stopped after
    # parsing parsed every file again at the next one).
    (events,) = [
        e.step_materialization_data.materialization
        for e in result.get_asset_materialization_events()
        if e.asset_key.to_user_string() == "session_events"
    ]
    assert events.metadata["source"].value.startswith("unchanged since this code stored it")


def test_sensor_adds_partitions_and_requests_new_or_grown_files(
    world, tmp_path, monkeypatch
) -> None:
    monkeypatch.setenv("SELENE_HOME", str(tmp_path / "fresh"))  # nothing stored yet
    instance = dg.DagsterInstance.ephemeral()
    ctx = dg.build_sensor_context(
        instance=instance, cursor=None, resources={"selene": SeleneResource()}
    )
    first = session_files_sensor(ctx)
    keys = sorted(f.session_key for f in world["files"])
    # One run for the three new files: a range over the partitions it adds.
    (batch,) = first.run_requests
    assert batch.partition_key is None
    assert batch.tags["dagster/asset_partition_range_start"] == keys[0]
    assert batch.tags["dagster/asset_partition_range_end"] == keys[-1]
    assert first.dynamic_partitions_requests[0].partition_keys == keys
    instance.add_dynamic_partitions(SESSION_PARTITIONS.name, keys)
    idle = session_files_sensor(
        dg.build_sensor_context(
            instance=instance, cursor=first.cursor, resources={"selene": SeleneResource()}
        )
    )
    assert idle.run_requests == [] and idle.dynamic_partitions_requests == []
    # A skipped tick says why (it read "Sensor function returned an empty result").
    assert idle.skip_reason.skip_message == "no new or grown session file (3 under the roots)"
    codex = next(f for f in world["files"] if f.platform == "codex")
    with open(codex.path, "a", encoding="utf-8") as handle:
        handle.write(
            json.dumps(
                {
                    "timestamp": "2025-11-17T22:00:00Z",
                    "type": "event_msg",
                    "payload": {"type": "user_message", "message": "one more thing"},
                }
            )
            + "\n"
        )
    grown = session_files_sensor(
        dg.build_sensor_context(
            instance=instance, cursor=idle.cursor, resources={"selene": SeleneResource()}
        )
    )
    assert [r.partition_key for r in grown.run_requests] == [codex.session_key]
    assert grown.dynamic_partitions_requests == []


def test_cli_functions(world, first_run) -> None:
    from selene_dag.service import (
        distill_assess,
        distill_report,
        distill_scan,
        distill_seed,
        distill_status,
        show,
    )
    from selene_dag.sessions.report import resolve_sessions

    settings = world["settings"]
    scan = distill_scan(settings)
    assert {r["state"] for r in scan} <= {"done", "grown"} and len(scan) == 3
    status = distill_status(settings)
    assert status["files"] == 3 and status["distilled_sessions"] == 3
    report = distill_report(settings)
    assert {r["platform"] for r in report} == {"claude", "codex", "gemini"}
    assert all(r["distilled_tokens"] <= r["budget"] for r in report)
    # Seed 003 item 71: the report shows each session's best chunks, best first, each
    # cited as ask cites it, so that `show` prints it whole.
    conn = duckdb.connect(str(settings.db_path), read_only=True)
    scored = {
        row["session_key"]: conn.execute(
            "SELECT c.first_seq, c.last_seq, s.consensus FROM chunks c "
            "JOIN chunk_scores s ON s.chunk_id = c.id WHERE c.session_key = ? "
            "ORDER BY s.consensus DESC, c.importance_avg DESC, c.chunk_index",
            [row["session_key"]],
        ).fetchall()
        for row in report
    }
    conn.close()
    for row in report:
        top, best = row["top_chunks"], scored[row["session_key"]]
        assert 0 < len(top) == min(3, len(best))
        assert [t["consensus"] for t in top] == pytest.approx([c for *_, c in best[:3]], abs=0.006)
        first, last, _ = best[0]
        assert top[0]["citation"] == f"{row['session_key']} events {first}-{last}"
        shown = show(settings, top[0]["citation"])
        assert shown.text.startswith(f"[{row['session_key']} events {first}-")
        assert top[0]["preview"] and len(top[0]["preview"]) <= 100
    assert status["last_parsed_at"] is not None
    codex_id = next(r["session_id"] for r in report if r["platform"] == "codex")
    assert [f.platform for f in resolve_sessions(settings, [codex_id])] == ["codex"]
    seed = distill_seed(settings, "gemini", session=codex_id, max_tokens=3000)
    parsed = parse_file(seed["path"])
    assert parsed.platform == "gemini" and seed["tokens"] <= 3000
    conn = duckdb.connect(str(settings.db_path), read_only=True)
    chunk_id = conn.execute("SELECT id FROM chunks LIMIT 1").fetchone()[0]
    conn.close()
    assessed = distill_assess(settings, chunk_id)
    assert {a["assessor"] for a in assessed["assessments"]} == {"extractive", "importance"}
    assert assessed["sufficient"]
    # The id as ask's JSON prints it (`chunk:<id>`) names the same chunk.
    assert distill_assess(settings, f"chunk:{chunk_id}")["assessments"] == assessed["assessments"]
    # So does the citation the report lists.
    citation = report[0]["top_chunks"][0]["citation"]
    by_citation = distill_assess(settings, citation)
    assert by_citation["chunk_id"] == report[0]["top_chunks"][0]["id"].removeprefix("chunk:")
    with pytest.raises(SessionNotFoundError, match="no chunk with citation"):
        distill_assess(settings, f"{report[0]['session_key']} events 9998-9999")
    with pytest.raises(ValueError, match="no session file matches"):
        resolve_sessions(settings, ["does-not-exist"])
    # Neither ids nor --all: the most recently modified file (seed 003 §5.11).
    files = {f["path"]: f for f in scan}
    newest = max(files, key=lambda p: (os.stat(p).st_mtime, p))
    assert [f.path for f in resolve_sessions(settings, [])] == [newest]


def test_project_distillation_spans_a_projects_sessions(world, first_run) -> None:
    from selene_dag.defs.sessions import project_distillations

    result = dg.materialize(
        [project_distillations, *SESSION_SPINE],
        selection=[project_distillations],
        instance=world["instance"],
        resources={"selene": SeleneResource()},
    )
    assert result.success
    conn = duckdb.connect(str(world["settings"].db_path), read_only=True)
    try:
        projects = conn.execute(
            "SELECT DISTINCT project FROM session_files WHERE project IS NOT NULL"
        ).fetchall()
        rows = conn.execute(
            "SELECT session_key, project, path, tokens, budget, chunk_count FROM distilled_sessions "
            "WHERE session_key LIKE 'project:%'"
        ).fetchall()
        chunks = dict(
            conn.execute(
                "SELECT f.project, count(*) FROM chunk_scores s JOIN session_files f USING (session_key) "
                "WHERE s.consensus >= 5.0 GROUP BY 1"
            ).fetchall()
        )
        platforms = dict(
            conn.execute(
                "SELECT project, list(DISTINCT platform ORDER BY platform) FROM session_files "
                "GROUP BY 1"
            ).fetchall()
        )
    finally:
        conn.close()
    assert {r[1] for r in rows} == {p[0] for p in projects}
    for key, project, path, tokens, budget, count in rows:
        assert key == f"project:{project}" and tokens <= budget
        assert Path(path).is_file() and parse_file(path).errors == 0
        assert count == chunks.get(project, 0)  # far under budget: every good chunk is kept
        # The first message names every platform the project's sessions come from.
        opening = next(e.text for e in parse_file(path).events if "assembled from" in e.text)
        assert f"of {' and '.join(platforms[project])} session(s)" in opening


def test_the_first_tick_passes_over_files_distilled_unchanged(world, first_run) -> None:
    # `dev` started after `distill run --all`: its sensor's cursor was empty, so every
    # stored session went through the spine again.
    context = dg.build_sensor_context(
        instance=world["instance"], cursor=None, resources={"selene": SeleneResource()}
    )
    from selene_dag.sessions.store import distilled_stamps

    stamps = distilled_stamps(world["settings"].db_path)
    files = scan_roots(world["settings"].session_roots)
    # Another test of the module appends to the Codex file: that one has changed since.
    unchanged = {f.session_key for f in files if stamps.get(f.session_key) == (f.size, f.mtime)}
    assert unchanged and len(unchanged) >= len(files) - 1
    result = session_files_sensor(context)
    requested = {r.partition_key for r in result.run_requests}
    assert requested == {f.session_key for f in files} - unchanged
    assert result.dynamic_partitions_requests == []
