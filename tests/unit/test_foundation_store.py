import time
from pathlib import Path

import duckdb
import pytest

from selene_dag.errors import SeleneError
from selene_dag.store import (
    WAL_KEPT_BYTES,
    Migration,
    MigrationError,
    StoreError,
    applied_versions,
    connect,
    discover_migrations,
    migrate,
    open_store,
    refuse_newer_store,
    waiting_notice,
)
from tests.support.ops import lock_held


def test_shipped_migrations_apply_once(tmp_path):
    db = tmp_path / "s.duckdb"
    conn = connect(db)
    versions = [m.version for m in discover_migrations()]
    assert versions == sorted(versions) and versions[0] == 1
    assert applied_versions(conn) == set(versions)
    assert migrate(conn) == []  # applying twice is a no-op
    conn.close()
    conn = connect(db)  # re-open: still nothing to do, data kept
    assert migrate(conn) == []
    cols = {r[0] for r in conn.execute("DESCRIBE processed_notes").fetchall()}
    assert {"essence", "essence_at", "fidelity_tier", "fidelity_evaluated_at"} <= cols
    assert "thread_digest" in {r[0] for r in conn.execute("DESCRIBE threads").fetchall()}


def test_failed_migration_leaves_previous_schema(tmp_path):
    conn = duckdb.connect(str(tmp_path / "f.duckdb"))
    good = Migration(1, "good", "CREATE TABLE a (x INTEGER);")
    bad = Migration(2, "bad", "CREATE TABLE b (y INTEGER); ALTER TABLE nope ADD COLUMN z INTEGER;")
    with pytest.raises(MigrationError, match="002_bad failed and was rolled back"):
        migrate(conn, [good, bad])
    tables = {
        r[0] for r in conn.execute("SELECT table_name FROM information_schema.tables").fetchall()
    }
    assert "a" in tables and "b" not in tables
    assert applied_versions(conn) == {1}
    fixed = Migration(2, "bad", "CREATE TABLE b (y INTEGER);")
    assert migrate(conn, [good, fixed]) == [2]


def test_badly_named_migration_is_rejected(tmp_path):
    (tmp_path / "1-x.sql").write_text("SELECT 1")
    with pytest.raises(MigrationError, match=r"NNN_name\.sql"):
        discover_migrations(tmp_path)


def test_locked_file_gives_clear_error_once_the_wait_runs_out(tmp_path):
    db = tmp_path / "locked.duckdb"
    connect(db).close()
    with lock_held(db):
        started = time.monotonic()
        with pytest.raises(StoreError, match=r"locked by another process .* for 0\.3 s") as caught:
            connect(db, wait=0.3)
        waited = time.monotonic() - started
        assert "SELENE_LOCK_WAIT" in str(caught.value)
        with pytest.raises(StoreError, match="stayed locked; stop"):
            connect(db, wait=0)  # one try, no wait
    # It waited about as long as asked: not one try, not the default minute.
    assert 0.3 <= waited < 5
    connect(Path(db)).close()  # free again once the holder exits


def test_a_connect_that_waits_for_a_lock_says_so_once_then_opens(tmp_path):
    db = tmp_path / "busy.duckdb"
    connect(db).close()
    told: list[tuple[Path, float]] = []
    # The holder lets go while connect is waiting for it.
    with lock_held(db, release_after=0.8), waiting_notice(lambda p, w: told.append((p, w))):
        connect(db, wait=30).close()
    assert told == [(db, 30)]
    # Outside the context, nobody is told.
    connect(db).close()
    assert len(told) == 1


def test_a_small_write_is_kept_in_the_wal_not_checkpointed_at_close(tmp_path):
    # A checkpoint at close cost ~1.5 s on a 10,000-note store whatever the change: writes
    # stay in the write-ahead log (checkpointed by DuckDB once it passes its threshold),
    # and every later connection, read-only included, sees them.
    db = tmp_path / "s.duckdb"
    conn = connect(db)
    conn.execute("CREATE TABLE kept (content VARCHAR)")
    conn.execute("INSERT INTO kept VALUES ('c')")
    conn.close()
    assert (tmp_path / "s.duckdb.wal").exists()
    reader = connect(db, read_only=True)
    assert reader.execute("SELECT content FROM kept").fetchall() == [("c",)]
    reader.close()
    writer = connect(db)
    writer.execute("UPDATE kept SET content = 'd'")
    writer.close()
    again = connect(db)
    assert again.execute("SELECT content FROM kept").fetchall() == [("d",)]
    again.close()


def test_a_big_wal_is_checkpointed_when_the_store_closes(tmp_path):
    db = tmp_path / "s.duckdb"
    with open_store(db) as conn:
        conn.execute("CREATE TABLE kept (content VARCHAR)")
    assert (tmp_path / "s.duckdb.wal").exists()  # small: kept
    with open_store(db) as conn:
        conn.execute("INSERT INTO kept SELECT repeat(md5(i::VARCHAR), 40) FROM range(2000) t(i)")
        assert (tmp_path / "s.duckdb.wal").stat().st_size > WAL_KEPT_BYTES
    assert not (tmp_path / "s.duckdb.wal").exists()
    with open_store(db, read_only=True) as conn:
        assert conn.execute("SELECT count(*) FROM kept").fetchone()[0] == 2000


def test_no_plain_index_and_a_store_they_broke_is_repaired(tmp_path):
    # DuckDB 1.4–1.5 writes a plain (non-constraint) index corrupt when a process
    # checkpoints a write-ahead log it replayed (duckdb/duckdb#23788): lookups through it
    # find no row. Migration 013 drops every such index; the rows were never lost.
    db = tmp_path / "s.duckdb"
    old = [m for m in discover_migrations() if m.version < 13]
    writer = """
import sys
import duckdb
from selene_dag.store import discover_migrations, migrate
conn = duckdb.connect(sys.argv[1])
conn.execute("PRAGMA disable_checkpoint_on_shutdown")
migrate(conn, [m for m in discover_migrations() if m.version < 13])
conn.execute("CHECKPOINT")
conn.execute(
    "INSERT INTO chunk_scores SELECT 'c' || i, 's' || (i % 5), 5.0, 2, ['a'], [], true "
    "FROM range(50) t(i)"
)
conn.close()
"""
    import subprocess
    import sys

    subprocess.run([sys.executable, "-c", writer, str(db)], check=True, timeout=120)
    assert (tmp_path / "s.duckdb.wal").exists() and old[-1].version == 12
    # Another process replays the log and folds it in at its shutdown (DuckDB's default).
    subprocess.run(
        [sys.executable, "-c", "import duckdb, sys; duckdb.connect(sys.argv[1]).close()", str(db)],
        check=True,
        timeout=120,
    )
    conn = connect(db)  # applies 013
    assert conn.execute("SELECT count(*) FROM duckdb_indexes()").fetchone()[0] == 0
    assert conn.execute(
        "SELECT count(*) FROM chunk_scores WHERE session_key = 's3'"
    ).fetchone() == (10,)
    conn.execute("DELETE FROM chunk_scores WHERE session_key = 's3'")  # failed on a broken index
    assert conn.execute("SELECT count(*) FROM chunk_scores").fetchone() == (40,)
    conn.close()


def test_a_waiting_mark_left_over_does_not_count(tmp_path: Path) -> None:
    # A process killed while it waited left its mark; its pid may be another process's
    # since (a server then answered 503 to everything): a mark not touched for a few
    # seconds is left over, removed at the next look.
    import os
    import time

    from selene_dag.store import others_waiting

    db = tmp_path / "selene.duckdb"
    mark = tmp_path / f"selene.duckdb.waiting-{os.getppid()}"  # a live process that is not us
    mark.touch()
    assert others_waiting(db)
    old = time.time() - 60
    os.utime(mark, (old, old))
    assert not others_waiting(db) and not mark.exists()
    mark.touch()
    ahead = time.time() + 3600  # a clock ahead (another machine's): not fresh for ever
    os.utime(mark, (ahead, ahead))
    assert not others_waiting(db) and not mark.exists()
    (tmp_path / f"selene.duckdb.waiting-{os.getpid()}").touch()  # our own: never another's
    assert not others_waiting(db)


def test_a_database_from_a_newer_version_is_refused_before_anything_is_written(tmp_path):
    # An older selene-dag (a downgrade, a second install) read and wrote a home a newer one
    # had migrated, silently.
    db = tmp_path / "selene.duckdb"
    conn = connect(db)
    latest = max(applied_versions(conn))
    conn.execute(
        "INSERT INTO schema_migrations (version, name) VALUES (?, 'from_the_future')",
        [latest + 1],
    )
    conn.close()
    for read_only in (False, True):
        with pytest.raises(MigrationError, match=rf"newer selene-dag \(schema {latest + 1}; "):
            connect(db, read_only=read_only)
    assert isinstance(MigrationError("x"), SeleneError)  # one line from the CLI
    # `serve` asks before it says it is up (every request was a 503).
    with pytest.raises(MigrationError, match="newer selene-dag"):
        refuse_newer_store(db)
    refuse_newer_store(tmp_path / "missing.duckdb")  # nothing to refuse
