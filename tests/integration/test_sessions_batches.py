"""Batched session runs (issue #16 item 2): many files per run, one bad file costs only
itself, and ``distill run --all`` runs only what is new, changed or incomplete."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import dagster as dg
import duckdb

from selene_dag import service
from selene_dag.config import load_settings
from selene_dag.defs import runs
from selene_dag.defs.sessions import SESSION_PARTITIONS, session_events
from selene_dag.sessions.scanner import scan_roots
from tests.support.sessions import FIXTURES

SMALL = FIXTURES / "claude" / "agent-sessions_small.jsonl"


def _home(tmp_path: Path, files: int):
    root = tmp_path / "claude"
    for i in range(files):
        folder = root / f"-proj{i:02d}"
        folder.mkdir(parents=True)
        shutil.copy(SMALL, folder / f"s{i:02d}.jsonl")
    settings = load_settings(
        {
            "SELENE_SESSION_ROOTS": f"claude={root}",
            "SELENE_LLM": "extractive",
            "SELENE_CLI_ASSESSORS": "",
            "SELENE_NOW": "2026-05-01T00:00:00Z",
        },
        home=tmp_path / "home",
    )
    return settings, root


def test_batches_are_contiguous_and_bounded() -> None:
    order = [f"k{i}" for i in range(10)]
    assert runs.session_batches(order, ["k1", "k2", "k3", "k5", "k9"], 2) == [
        ["k1", "k2"],
        ["k3"],
        ["k5"],
        ["k9"],
    ]
    assert runs.session_batches(order, order, 100) == [order]
    assert runs.session_batches(order, [], 3) == []


def test_one_bad_file_in_a_batch_of_fifty_fails_only_itself(tmp_path: Path) -> None:
    settings, root = _home(tmp_path, 50)
    instance = dg.DagsterInstance.ephemeral()
    keys = [f.session_key for f in scan_roots(settings.session_roots)]
    assert len(keys) == 50
    bad = root / "-proj17" / "s17.jsonl"
    kept = tmp_path / "kept.jsonl"
    shutil.move(bad, kept)  # gone between the scan and the run
    bad_key = next(
        k for k in keys if k not in {f.session_key for f in scan_roots(settings.session_roots)}
    )

    outcome = runs.materialize_sessions(settings, keys, instance)
    assert outcome[bad_key] is not None and "moved or deleted" in outcome[bad_key]
    assert [k for k, error in outcome.items() if error] == [bad_key]
    # One run for the whole batch, not one per file.
    assert len(instance.get_run_records()) == 1
    with duckdb.connect(str(settings.db_path), read_only=True) as conn:
        stored = {r[0] for r in conn.execute("SELECT session_key FROM session_files").fetchall()}
        distilled = {
            r[0] for r in conn.execute("SELECT session_key FROM distilled_sessions").fetchall()
        }
    assert stored == distilled == set(keys) - {bad_key}

    # The file is back: a re-run of --all finishes it, and only it.
    shutil.move(kept, bad)
    rows = service.distill_run(settings, all_files=True, instance=instance)
    assert [(r["session_key"], r["ok"]) for r in rows] == [(bad_key, True)]
    assert service.distill_run(settings, all_files=True, instance=instance) == []
    assert set(instance.get_materialized_partitions(session_events.key)) == set(keys)
    assert set(instance.get_dynamic_partitions(SESSION_PARTITIONS.name)) == set(keys)


def test_all_runs_only_what_changed(tmp_path: Path) -> None:
    settings, root = _home(tmp_path, 3)
    instance = dg.DagsterInstance.ephemeral()
    first = service.distill_run(settings, all_files=True, instance=instance)
    assert len(first) == 3 and all(r["ok"] for r in first)
    runs_after_first = len(instance.get_run_records())
    assert runs_after_first == 2  # one for the three files, one for their project
    assert service.distill_run(settings, all_files=True, instance=instance) == []
    assert len(instance.get_run_records()) == runs_after_first
    grown = root / "-proj01" / "s01.jsonl"
    with grown.open("a", encoding="utf-8") as handle:
        handle.write(SMALL.read_text(encoding="utf-8").splitlines()[-1] + "\n")
    again = service.distill_run(settings, all_files=True, instance=instance)
    assert [Path(r["path"]).name for r in again] == ["s01.jsonl"]


def test_sensor_skips_with_a_reason_when_no_root_exists(tmp_path: Path) -> None:
    from selene_dag.defs.resources import SeleneResource
    from selene_dag.defs.sessions import session_files_sensor

    missing = tmp_path / "nowhere"
    resource = SeleneResource(home=str(tmp_path / "home"), session_roots=f"claude={missing}")
    ctx = dg.build_sensor_context(
        instance=dg.DagsterInstance.ephemeral(), resources={"selene": resource}
    )
    result = session_files_sensor(ctx)
    assert result.run_requests == [] and result.skip_reason is not None
    message = result.skip_reason.skip_message
    assert "no session root exists" in message and str(missing) in message


def test_sensor_requests_one_run_per_contiguous_stretch(tmp_path: Path) -> None:
    from selene_dag.defs.sessions import batch_run_requests
    from selene_dag.sessions.scanner import ScannedFile

    def file(key: str) -> ScannedFile:
        return ScannedFile(f"/x/{key}", "claude", 1, 2.0, key, "/x")

    order = ["a", "b", "c", "d", "e"]
    requests = batch_run_requests(order, [file("a"), file("b"), file("d")], 10)
    assert [
        (
            r.partition_key,
            r.tags.get("dagster/asset_partition_range_start"),
            r.tags.get("dagster/asset_partition_range_end"),
        )
        for r in requests
    ] == [
        (None, "a", "b"),
        ("d", None, None),
    ]
    assert len(batch_run_requests(order, [file(k) for k in order], 2)) == 3


def test_files_are_written_together_and_a_row_that_cannot_be_stored_costs_only_its_file(
    tmp_path: Path,
) -> None:
    from datetime import UTC, datetime

    from selene_dag.defs.sessions import _replace_reads, _write_together
    from selene_dag.sessions.steps import read_session
    from selene_dag.store import open_store

    settings, _ = _home(tmp_path, 4)
    files = scan_roots(settings.session_roots)
    now = datetime(2026, 5, 1, tzinfo=UTC)
    reads = [read_session(f, now) for f in files]
    with open_store(settings.db_path) as conn:
        pending = [(r.file_row.session_key, r) for r in reads]
        written, failed = _write_together(conn, pending, _replace_reads)
        assert pending == [] and failed == {} and len(written) == 4
        count = "SELECT count(*) FROM session_events"
        assert conn.execute(count).fetchone()[0] == sum(len(r.events) for r in reads)

        # One file's row breaks a NOT NULL column: the group write fails as a whole, then
        # file by file, and only that file is reported.
        broken = reads[2]
        broken.file_row = replace(broken.file_row, sha256=None)
        pending = [(r.file_row.session_key, r) for r in reads]
        written, failed = _write_together(conn, pending, _replace_reads)
        bad_key = broken.file_row.session_key
        assert list(failed) == [bad_key] and "NOT NULL" in failed[bad_key]
        assert [key for key, _ in written] == [
            r.file_row.session_key for r in reads if r is not broken
        ]
        stored = {r[0] for r in conn.execute("SELECT session_key FROM session_files").fetchall()}
        # The failed file's transaction rolled back: its earlier rows are still there.
        assert stored == {r.file_row.session_key for r in reads}


def test_a_distilled_file_that_cannot_be_written_fails_only_itself(tmp_path: Path) -> None:
    from selene_dag.sessions.distiller import DistillerConfig
    from selene_dag.sessions.steps import distill_sessions

    settings, _ = _home(tmp_path, 3)
    keys = [f.session_key for f in scan_roots(settings.session_roots)]
    runs.materialize_sessions(settings, keys, dg.DagsterInstance.ephemeral())
    with duckdb.connect(str(settings.db_path)) as conn:
        paths = dict(conn.execute("SELECT session_key, path FROM distilled_sessions").fetchall())
        blocked = keys[1]
        Path(paths[blocked]).unlink()
        Path(paths[blocked]).mkdir()  # a folder where its file goes: writing it fails
        batch = distill_sessions(
            conn, keys, settings.distilled_dir, settings.now(), DistillerConfig()
        )
        assert set(batch.results) == {keys[0], keys[2]}
        assert list(batch.errors) == [blocked] and isinstance(batch.errors[blocked], OSError)
        rows = conn.execute("SELECT session_key FROM distilled_sessions").fetchall()
    assert sorted(r[0] for r in rows) == sorted(keys)  # the failed one keeps its old row
    assert all(Path(batch.results[k].path).is_file() for k in batch.results)


def test_the_file_a_distillation_replaces_is_removed_after_its_row(tmp_path: Path) -> None:
    from selene_dag.sessions.distiller import DistillerConfig
    from selene_dag.sessions.steps import distill_sessions

    settings, _ = _home(tmp_path, 2)
    keys = [f.session_key for f in scan_roots(settings.session_roots)]
    runs.materialize_sessions(settings, keys, dg.DagsterInstance.ephemeral())
    with duckdb.connect(str(settings.db_path)) as conn:
        path = Path(conn.execute("SELECT path FROM distilled_sessions").fetchone()[0])
        # As after a session grew: its row names a file of an older name, in the same folder.
        older = path.with_name("rollout-older.jsonl")
        older.write_text("{}\n")
        conn.execute(
            "UPDATE distilled_sessions SET path = ? WHERE path = ?", [str(older), str(path)]
        )
        batch = distill_sessions(
            conn, keys, settings.distilled_dir, settings.now(), DistillerConfig()
        )
        assert not batch.errors
        paths = {Path(r[0]) for r in conn.execute("SELECT path FROM distilled_sessions").fetchall()}
    assert path in paths and older not in paths
    assert path.is_file() and not older.exists()


def test_health_tells_the_sessions_the_home_holds_and_their_unreadable_lines(
    tmp_path: Path,
) -> None:
    # `health` showed only notes: a home of 420 sessions read as empty, and the lines a
    # session file could not give were in no report.
    settings, root = _home(tmp_path, 2)
    broken = root / "-proj01" / "s01.jsonl"
    broken.write_text(broken.read_text(encoding="utf-8") + "{not json\n", encoding="utf-8")
    rows = service.distill_run(settings, all_files=True, instance=dg.DagsterInstance.ephemeral())
    assert all(r["ok"] for r in rows)
    sessions = service.health(settings)["sessions"]
    with duckdb.connect(str(settings.db_path), read_only=True) as conn:
        events, chunks = conn.execute(
            "SELECT (SELECT count(*) FROM session_events), (SELECT count(*) FROM chunks)"
        ).fetchone()
    assert (sessions["files"], sessions["events"], sessions["chunks"]) == (2, events, chunks)
    assert sessions["distilled"] == 2 and sessions["unreadableLines"] == 1
    [worst] = sessions["worst"]
    assert worst["file"] == str(broken) and "line" in worst["first"]


def test_a_file_rejected_for_its_content_is_read_once_until_it_changes(tmp_path: Path) -> None:
    # A Codex rollout under claude= failed every `distill run --all` (a scheduled run never
    # succeeded) and `distill status` counted it as new for ever.
    from selene_dag.sessions.report import distill_status, scan_listing
    from tests.support.sessions import REAL_CODEX

    settings, root = _home(tmp_path, 1)
    stray = root / "-proj00" / "rollout.jsonl"
    shutil.copy(REAL_CODEX, stray)
    instance = dg.DagsterInstance.ephemeral()
    first = {
        Path(r["path"]).name: r
        for r in service.distill_run(settings, all_files=True, instance=instance)
    }
    assert first["s00.jsonl"]["ok"] and not first["rollout.jsonl"]["ok"]
    assert "content is a Codex CLI transcript" in first["rollout.jsonl"]["error"]
    assert service.distill_run(settings, all_files=True, instance=instance) == []
    listing = scan_listing(settings)
    assert [Path(f["path"]).name for f in listing["files"]] == ["s00.jsonl"]
    assert [(s["path"], s["reason"].split(";")[0]) for s in listing["skipped"]] == [
        (str(stray), "content is a Codex CLI transcript, under a claude= root")
    ]
    assert distill_status(settings)["new"] == 0
    assert "1 file under SELENE_SESSION_ROOTS left out" in service.idle_roots_hint(settings)
    # Named, it is read (and fails with its reason); changed, --all reads it again.
    [named] = service.distill_run(settings, [str(stray)], instance=instance)
    assert not named["ok"]
    with stray.open("a", encoding="utf-8") as handle:
        handle.write("\n")
    [again] = service.distill_run(settings, all_files=True, instance=instance)
    assert again["path"] == str(stray) and not again["ok"]


def test_after_a_clean_run_the_next_unchanged_all_need_not_ask_dagster(tmp_path: Path) -> None:
    # The first unchanged `distill run --all` after a run loaded Dagster to learn that
    # nothing was left (4 s of a 424-file home); only the one after it was fast.
    from selene_dag import last_verdict

    settings, root = _home(tmp_path, 2)
    assert len(service.distill_run(settings, all_files=True)) == 2
    key = last_verdict.current_key(settings, "distill", notes=False)
    assert last_verdict.holds(settings, key)
    assert service.distill_run(settings, all_files=True) == []
    # A grown file moves the key: the verdict does not hold, the file runs.
    with (root / "-proj01" / "s01.jsonl").open("a", encoding="utf-8") as handle:
        handle.write(SMALL.read_text(encoding="utf-8").splitlines()[-1] + "\n")
    assert not last_verdict.holds(
        settings, last_verdict.current_key(settings, "distill", notes=False)
    )
    assert [Path(r["path"]).name for r in service.distill_run(settings, all_files=True)] == [
        "s01.jsonl"
    ]


def test_files_rejected_together_are_each_remembered_with_their_own_reason(
    tmp_path: Path,
) -> None:
    # When every new file of a run was rejected, each was remembered with the run's
    # summary (another file's reason, cut with "…").
    from selene_dag.sessions.report import scan_listing
    from tests.support.sessions import REAL_CODEX

    settings, root = _home(tmp_path, 0)
    folder = root / "-stray"
    folder.mkdir(parents=True)
    (folder / "noise.jsonl").write_bytes(bytes(range(256)) * 8)
    shutil.copy(REAL_CODEX, folder / "rollout.jsonl")
    rows = service.distill_run(settings, all_files=True, instance=dg.DagsterInstance.ephemeral())
    assert [r["ok"] for r in rows] == [False, False]
    reasons = {Path(s["path"]).name: s["reason"] for s in scan_listing(settings)["skipped"]}
    assert reasons["noise.jsonl"].startswith("not a Claude Code transcript: ")
    assert reasons["rollout.jsonl"].startswith("content is a Codex CLI transcript")


def test_scan_tells_a_grown_file_from_a_rewritten_one(tmp_path: Path) -> None:
    # A file rewritten in place at the same size was listed as "grown".
    import os

    from selene_dag.sessions.report import distill_status, scan_listing

    settings, root = _home(tmp_path, 2)
    service.distill_run(settings, all_files=True, instance=dg.DagsterInstance.ephemeral())
    rewritten, appended = root / "-proj00" / "s00.jsonl", root / "-proj01" / "s01.jsonl"
    text = rewritten.read_text(encoding="utf-8")
    rewritten.write_text(text.replace("a", "b", 1), encoding="utf-8")
    stat = rewritten.stat()
    os.utime(rewritten, ns=(stat.st_atime_ns, stat.st_mtime_ns + 5_000_000_000))
    with appended.open("a", encoding="utf-8") as handle:
        handle.write("\n")
    states = {Path(f["path"]).name: f["state"] for f in scan_listing(settings)["files"]}
    assert states == {"s00.jsonl": "changed", "s01.jsonl": "grown"}
    status = distill_status(settings)
    assert (status["new"], status["grown"], status["changed"], status["done"]) == (0, 1, 1, 0)


def test_a_transcript_saved_as_utf16_is_refused_saying_so(tmp_path: Path) -> None:
    # PowerShell's `>` writes UTF-16: the file failed as "no Claude Code record in it".
    settings, root = _home(tmp_path, 1)
    wide = root / "-proj00" / "wide.jsonl"
    wide.write_bytes(SMALL.read_text(encoding="utf-8").encode("utf-16"))
    instance = dg.DagsterInstance.ephemeral()
    runs = service.distill_run(settings, all_files=True, instance=instance)
    rows = {Path(r["path"]).name: r for r in runs}
    assert rows["s00.jsonl"]["ok"] and not rows["wide.jsonl"]["ok"]
    assert "the file is UTF-16 text" in rows["wide.jsonl"]["error"]
    # Remembered while it is unchanged: not read again, listed with the files left out.
    assert service.distill_run(settings, all_files=True, instance=instance) == []
    from selene_dag.sessions.report import scan_listing

    skipped = scan_listing(settings)["skipped"]
    assert [Path(s["path"]).name for s in skipped] == ["wide.jsonl"]


def test_a_gemini_session_resumed_into_jsonl_is_stored_once(tmp_path: Path) -> None:
    # Resuming session-x.json, Gemini CLI copies it whole into session-x.jsonl and writes on
    # there, leaving the .json: both were stored, and ask cited the conversation twice.
    import json

    from selene_dag.sessions.report import scan_listing
    from tests.support.sessions import FIXTURES

    doc = json.loads(
        (
            FIXTURES / "gemini" / "VibeCodingTracker_894772f_test_conversation_gemini.json"
        ).read_text()
    )
    chats = tmp_path / "gemini" / "tmp" / "9da8b3df" / "chats"
    chats.mkdir(parents=True)
    legacy = chats / "session-2026-04-23T12-52-8a20078e.json"
    legacy.write_text(json.dumps(doc))
    settings = load_settings(
        {"SELENE_SESSION_ROOTS": f"gemini={tmp_path / 'gemini'}", "SELENE_LLM": "extractive",
         "SELENE_CLI_ASSESSORS": "", "SELENE_NOW": "2026-05-01T00:00:00Z"},
        home=tmp_path / "home",
    )  # fmt: skip
    instance = dg.DagsterInstance.ephemeral()
    [first] = service.distill_run(settings, all_files=True, instance=instance)
    assert first["ok"]
    header = {k: doc[k] for k in ("sessionId", "projectHash", "startTime", "lastUpdated")}
    added = {**doc["messages"][0], "id": "m-new", "content": "and one more question"}
    lines = [header, *doc["messages"], added]
    migrated = chats / f"{legacy.name}l"
    migrated.write_text("".join(json.dumps(line) + "\n" for line in lines))
    [second] = service.distill_run(settings, all_files=True, instance=instance)
    assert second["ok"] and second["path"] == str(migrated)
    conn = duckdb.connect(str(settings.db_path), read_only=True)
    try:
        paths = [r[0] for r in conn.execute("SELECT path FROM session_files").fetchall()]
    finally:
        conn.close()
    assert paths == [str(migrated)]
    skipped = scan_listing(settings)["skipped"]
    assert [(Path(s["path"]).name, "copied this session" in s["reason"]) for s in skipped] == [
        (legacy.name, True)
    ]
    # A .jsonl of another session beside a .json: two sessions, both read.
    other = {**doc, "sessionId": "0ab84937-9fe7-4284-986a-33c832af0b6a"}
    (chats / "session-other.json").write_text(json.dumps(other))
    header = {**header, "sessionId": "11111111-2222-4333-8444-555555555555"}
    lines = [header, *doc["messages"]]
    (chats / "session-other.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    rows = service.distill_run(settings, all_files=True, instance=instance)
    assert sorted(Path(r["path"]).name for r in rows if r["ok"]) == [
        "session-other.json",
        "session-other.jsonl",
    ]
