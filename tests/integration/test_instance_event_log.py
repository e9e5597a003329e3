"""The home's Dagster instance: its dagster.yaml, and the connected SQLite event log that
keeps the history plain Dagster reads (a batch run's events, partitions, planned events)."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import dagster as dg
from dagster._core.events import DagsterEventType
from dagster._core.instance.ref import InstanceRef

from selene_dag.defs import event_log, runs
from selene_dag.defs.sessions import session_events
from selene_dag.sessions.scanner import scan_roots
from tests.support.sessions import FIXTURES, offline_settings

SMALL = FIXTURES / "claude" / "agent-sessions_small.jsonl"


def _settings(tmp_path: Path, files: int = 0):
    root = tmp_path / "claude"
    for i in range(files):
        folder = root / f"-proj{i:02d}"
        folder.mkdir(parents=True)
        shutil.copy(SMALL, folder / f"s{i:02d}.jsonl")
    return offline_settings(tmp_path / "home", root)


def _plain_instance(dagster_home: Path, tmp_path: Path) -> dg.DagsterInstance:
    """Dagster's own storage classes over the same files (a config without ours)."""
    config_dir = tmp_path / "plain"
    config_dir.mkdir()
    (config_dir / "dagster.yaml").write_text("telemetry:\n  enabled: false\n", encoding="utf-8")
    return dg.DagsterInstance.from_ref(
        InstanceRef.from_dir(str(dagster_home), config_dir=str(config_dir))
    )


def test_home_instance_uses_the_connected_event_log(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    instance = runs.instance_for(settings)
    storage = instance.event_log_storage
    assert isinstance(storage, event_log.ConnectedSqliteEventLogStorage)
    # The files Dagster's default layout uses, so a plain instance reads the same history.
    expected = (settings.dagster_home / "history" / "runs").resolve()
    assert Path(storage._base_dir) == expected
    # The session sensor ticks every 5 s: a day of its skipped ticks is kept, not Dagster's
    # default week.
    retention = instance.get_settings("retention")["sensor"]["purge_after_days"]
    assert retention["skipped"] == 1


def test_dagster_yaml_is_upgraded_unless_the_user_owns_it(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    config = settings.dagster_home / "dagster.yaml"
    config.parent.mkdir(parents=True)

    # What an earlier release wrote is replaced.
    config.write_text(runs._PREVIOUS_INSTANCE_YAML, encoding="utf-8")
    runs.prepare_dagster_home(settings)
    assert config.read_text(encoding="utf-8") == runs.instance_yaml(settings.dagster_home.resolve())

    # A home that moved: ours, with a stale path, is rewritten.
    moved = config.read_text(encoding="utf-8").replace(str(tmp_path), "/elsewhere")
    config.write_text(moved, encoding="utf-8")
    runs.prepare_dagster_home(settings)
    assert str(tmp_path) in config.read_text(encoding="utf-8")

    # Without the header line it is the user's file, and stays as it is.
    mine = "telemetry:\n  enabled: true\n"
    config.write_text(mine, encoding="utf-8")
    runs.prepare_dagster_home(settings)
    assert config.read_text(encoding="utf-8") == mine


def test_batch_run_history_is_plain_dagster_history(tmp_path: Path) -> None:
    settings = _settings(tmp_path, files=6)
    instance = runs.instance_for(settings)
    keys = [f.session_key for f in scan_roots(settings.session_roots)]
    outcome = runs.materialize_sessions(settings, keys, instance)
    assert outcome == {key: None for key in keys}

    # One planned event per spine asset for the whole batch, naming its six partitions.
    planned = instance.get_records_for_run(
        instance.get_run_records()[0].dagster_run.run_id,
        of_type=DagsterEventType.ASSET_MATERIALIZATION_PLANNED,
    ).records
    assert len(planned) == 4
    subset = planned[0].event_log_entry.dagster_event.event_specific_data.partitions_subset
    assert sorted(subset.get_partition_keys()) == sorted(keys)

    plain = _plain_instance(settings.dagster_home.resolve(), tmp_path)
    assert type(plain.event_log_storage).__name__ == "SqliteEventLogStorage"
    assert set(plain.get_materialized_partitions(session_events.key)) == set(keys)
    assert len(plain.get_run_records()) == 1


def test_open_connections_are_bounded(tmp_path: Path) -> None:
    storage = event_log.ConnectedSqliteEventLogStorage(str(tmp_path / "runs"))
    for i in range(event_log.OPEN_SHARDS + 3):
        with storage.run_connection(f"run{i}") as conn:
            conn.exec_driver_sql("SELECT 1")
    with storage.index_connection() as conn:
        conn.exec_driver_sql("SELECT 1")
    assert len(storage._engines) == event_log.OPEN_SHARDS
    assert next(reversed(storage._engines)) == "index"
    storage.dispose()
    assert not storage._engines


def test_a_pooled_connection_serves_other_threads(tmp_path: Path) -> None:
    # The UI's webserver reads the event log from several threads.
    storage = event_log.ConnectedSqliteEventLogStorage(str(tmp_path / "runs"))
    with storage.index_connection() as conn:
        conn.exec_driver_sql("SELECT 1")
    seen: list[object] = []

    def read() -> None:
        try:
            with storage.index_connection() as conn:
                seen.append(conn.exec_driver_sql("SELECT 1").scalar())
        except Exception as exc:  # the assertion below reports it
            seen.append(exc)

    worker = threading.Thread(target=read)
    worker.start()
    worker.join()
    assert seen == [1]


def test_new_databases_are_set_up_as_dagster_sets_them_up(tmp_path: Path) -> None:
    # The set-up skips Dagster's migration scripts for a new file or one at the head
    # revision; the files must still be what Dagster's own set-up makes of them.
    import sqlite3

    from dagster._core.storage.event_log.sqlite import sqlite_event_log
    from dagster._core.storage.sql import check_alembic_revision, get_alembic_config

    ours = event_log.ConnectedSqliteEventLogStorage(str(tmp_path / "ours"))
    theirs = sqlite_event_log.SqliteEventLogStorage(str(tmp_path / "theirs"))
    for storage in (ours, theirs):
        with storage.run_connection("run1") as conn:
            conn.exec_driver_sql("SELECT 1")
        with storage.index_connection() as conn:
            conn.exec_driver_sql("SELECT 1")

    def schema(path: Path) -> tuple[list[tuple], str, list[tuple]]:
        db = sqlite3.connect(path)
        try:
            tables = db.execute(
                "SELECT type, name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' "
                "ORDER BY type, name"
            ).fetchall()
            journal = db.execute("PRAGMA journal_mode").fetchone()[0]
            stamp = db.execute("SELECT version_num FROM alembic_version").fetchall()
        finally:
            db.close()
        return tables, journal, stamp

    for name in ("run1.db", "index.db"):
        mine, dagsters = schema(tmp_path / "ours" / name), schema(tmp_path / "theirs" / name)
        assert mine == dagsters
        assert mine[1] == "wal" and mine[2] == [(event_log.alembic_head(),)]
    config = get_alembic_config(sqlite_event_log.__file__)
    with ours.run_connection("run1") as conn:
        revision, head = check_alembic_revision(config, conn)
    assert revision == head == event_log.alembic_head()
    ours.dispose()
    theirs.dispose()


def test_a_finished_run_leaves_no_write_ahead_log_beside_its_history(tmp_path: Path) -> None:
    # The run's shard stayed open until the process ended, and its WAL log (1.8 MB, beside
    # a history of 100-300 KB) was left on disk: a home grew by 2.6 MB per ingest.
    settings = _settings(tmp_path, files=2)
    instance = runs.instance_for(settings)
    keys = [f.session_key for f in scan_roots(settings.session_roots)]
    runs.materialize_sessions(settings, keys[:1], instance)
    runs.materialize_sessions(settings, keys[1:], instance)
    run_ids = [r.dagster_run.run_id for r in instance.get_run_records()]
    assert len(run_ids) == 2
    folder = settings.dagster_home / "history" / "runs"
    for run_id in run_ids:
        assert (folder / f"{run_id}.db").is_file()
        assert not (folder / f"{run_id}.db-wal").exists(), sorted(p.name for p in folder.iterdir())
    # The history is whole: a plain Dagster instance reads both runs' events.
    plain = _plain_instance(settings.dagster_home.resolve(), tmp_path)
    assert set(plain.get_materialized_partitions(session_events.key)) == set(keys)
    for run_id in run_ids:
        assert plain.get_records_for_run(run_id, of_type=DagsterEventType.RUN_SUCCESS).records
