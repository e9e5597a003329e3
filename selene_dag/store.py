"""DuckDB connection and the migrations runner.

Migrations are the files ``sql/migrations/NNN_name.sql``, applied in numeric order. Each
pending migration runs inside its own transaction together with its row in
``schema_migrations``; a failure rolls that migration back, leaving the schema as the
previous migration left it, and raises :class:`MigrationError`.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import duckdb

from selene_dag.errors import SeleneError, make_folder
from selene_dag.paths import sql_dir

_MIGRATION_NAME = re.compile(r"^(\d{3,})_([a-z0-9_]+)\.sql$")
# The last: two threads of one process opening the file at the same moment (DuckDB's
# instance cache has the first one half made); the second's try a moment later joins it.
_LOCK_MARKERS = (
    "Could not set lock",
    "Conflicting lock",
    "database is locked",
    "Unique file handle conflict",
)


class StoreError(SeleneError, RuntimeError):
    """The database cannot be opened or used; the message says what to do."""


class MigrationError(StoreError):
    """A migration failed; it was rolled back and the previous schema is intact."""


@dataclass(frozen=True)
class Migration:
    """One migration file: its version number, name and SQL text."""

    version: int
    name: str
    sql: str


def discover_migrations(directory: Path | None = None) -> list[Migration]:
    """Return the migrations in ``directory`` (default: the shipped ones), sorted by version.

    Raises MigrationError on a badly named file or a duplicated version number.
    """
    directory = directory or sql_dir() / "migrations"
    found: dict[int, Migration] = {}
    for path in sorted(directory.glob("*.sql")):
        match = _MIGRATION_NAME.match(path.name)
        if not match:
            raise MigrationError(f"migration file {path.name!r} must be named NNN_name.sql")
        version = int(match.group(1))
        if version in found:
            raise MigrationError(f"two migrations share version {version:03d}")
        found[version] = Migration(version, match.group(2), path.read_text(encoding="utf-8"))
    return [found[v] for v in sorted(found)]


def applied_versions(conn: duckdb.DuckDBPyConnection) -> set[int]:
    """Return the migration versions recorded in ``schema_migrations`` (creating the table)."""
    conn.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations ("
        " version INTEGER PRIMARY KEY, name VARCHAR NOT NULL,"
        " applied_at TIMESTAMPTZ NOT NULL DEFAULT current_timestamp)"
    )
    return {row[0] for row in conn.execute("SELECT version FROM schema_migrations").fetchall()}


def migrate(
    conn: duckdb.DuckDBPyConnection, migrations: list[Migration] | None = None
) -> list[int]:
    """Apply every pending migration in order; return the versions applied now.

    Applying twice is a no-op. Each migration and its bookkeeping row commit together.
    """
    known = migrations is None
    migrations = discover_migrations() if migrations is None else migrations
    done = applied_versions(conn)
    if known:
        refuse_newer_schema(done, migrations)
    applied: list[int] = []
    for migration in migrations:
        if migration.version in done:
            continue
        conn.execute("BEGIN TRANSACTION")
        try:
            conn.execute(migration.sql)
            conn.execute(
                "INSERT INTO schema_migrations (version, name) VALUES (?, ?)",
                [migration.version, migration.name],
            )
            conn.execute("COMMIT")
        except duckdb.Error as exc:
            conn.execute("ROLLBACK")
            raise MigrationError(
                f"migration {migration.version:03d}_{migration.name} failed and was rolled back: {exc}"
            ) from exc
        applied.append(migration.version)
    if applied:
        # A schema change is folded into the file at once rather than replayed from the
        # log by every later process (DuckDB's replay of some DDL has had bugs of its own).
        with suppress(duckdb.Error):  # another transaction of this process is open
            conn.execute("CHECKPOINT")
    return applied


def refuse_newer_schema(applied: set[int], migrations: list[Migration]) -> None:
    """Raise MigrationError when the database records a migration newer than every one this
    version of selene-dag has: a newer version wrote it, and this one would read and write
    tables whose meaning changed (a downgrade ran on silently)."""
    latest = max((m.version for m in migrations), default=0)
    newer = sorted(v for v in applied if v > latest)
    if newer:
        raise MigrationError(
            f"this database was written by a newer selene-dag (schema {newer[-1]}; this "
            f"version knows up to {latest}): upgrade selene-dag to use this home, or use "
            "another --home"
        )


def _is_lock_error(exc: BaseException) -> bool:
    return any(marker in str(exc) for marker in _LOCK_MARKERS)


# How long a connect waits for another process to release the file, by default (seconds).
DEFAULT_LOCK_WAIT = 60.0
# Between tries: a failed open costs about 6 ms, and a short pause catches the moment a
# Dagster run releases the file between two steps before its next step takes it again.
_POLL_FIRST, _POLL_MOST = 0.05, 0.25

# Told once per connect that waits for another process's lock (see waiting_notice).
_WAIT_NOTICE: ContextVar[Callable[[Path, float], None] | None] = ContextVar(
    "selene_store_wait_notice", default=None
)


# A process waiting for the file says so with an empty file beside it, named with its pid
# (``selene.duckdb.waiting-4242``): a server that keeps the file open while requests come
# (``service.SharedStore``) lets it go for the waiting writer, which a server under steady
# load otherwise never did (every ingest beside it failed after SELENE_LOCK_WAIT).
_WAITING = ".waiting-"
# The waiting process touches its mark at every try (every 0.25 s at most): a mark not
# touched for this long is left over (a process killed while it waited, whose pid another
# process may have taken since) and is removed.
_WAITING_FRESH = 5.0


def _waiting_marker(path: Path) -> Path:
    return path.with_name(f"{path.name}{_WAITING}{os.getpid()}")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process: there
        return True
    return True


def others_waiting(db_path: Path | str) -> bool:
    """Whether another live process is waiting to open ``db_path`` (see :func:`connect`):
    a mark of another pid touched in the last ``_WAITING_FRESH`` seconds, of a process that
    is running; the marks of processes that ended or stopped touching them are removed."""
    path = Path(db_path)
    prefix = f"{path.name}{_WAITING}"
    try:
        names = [name for name in os.listdir(path.parent) if name.startswith(prefix)]
    except OSError:
        return False
    for name in names:
        pid = name[len(prefix) :]
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        mark = path.parent / name
        try:
            # Either way: a mark from a clock ahead (another machine's) is not fresh for ever.
            fresh = abs(time.time() - mark.stat().st_mtime) < _WAITING_FRESH
        except OSError:  # gone since the listing
            continue
        if fresh and _alive(int(pid)):
            return True
        with suppress(OSError):
            mark.unlink()
    return False


@contextmanager
def waiting_notice(notice: Callable[[Path, float], None]) -> Iterator[None]:
    """While the body runs, a :func:`connect` (in this context) that finds its file locked
    by another process calls ``notice(path, wait)`` once before it starts waiting for it,
    ``wait`` being the most seconds it will wait: a command can say why it pauses."""
    token = _WAIT_NOTICE.set(notice)
    try:
        yield
    finally:
        _WAIT_NOTICE.reset(token)


def connect(
    db_path: Path | str,
    *,
    read_only: bool = False,
    wait: float = DEFAULT_LOCK_WAIT,
    run_migrations: bool = True,
) -> duckdb.DuckDBPyConnection:
    """Open the DuckDB file (creating its folder), migrated to the latest schema.

    A read-write connection does not checkpoint when it closes (see :func:`close_store`
    for the one that does when the log is big): on a 10,000-note store a checkpoint cost
    about 1.5 s whatever the change, so small writes stay in ``<file>.wal`` (durable,
    replayed by every later connection). A copy of the store takes both files.

    A file locked by another process (DuckDB allows one writer) is tried again every
    0.05–0.25 s for up to ``wait`` seconds, a mark beside the file saying so (see
    :func:`others_waiting`); then a :class:`StoreError` says which file and what to do.
    ``wait=0`` tries once.
    """
    path = Path(db_path)
    if not read_only:
        make_folder(path.parent, "the database's folder")
    deadline = time.monotonic() + max(wait, 0.0)
    pause = _POLL_FIRST
    told = False
    marker: Path | None = None
    try:
        while True:
            try:
                conn = duckdb.connect(str(path), read_only=read_only)
                break
            except duckdb.Error as exc:
                if not _is_lock_error(exc):
                    raise StoreError(f"cannot open {path}: {exc}") from exc
                left = deadline - time.monotonic()
                if left <= 0:
                    waited = f" for {wait:g} s" if wait > 0 else ""
                    raise StoreError(
                        f"{path} is locked by another process (DuckDB allows one writer) and "
                        f"stayed locked{waited}; stop the other selene-dag or Dagster process, "
                        "wait for its run to finish, or set SELENE_LOCK_WAIT to wait longer"
                    ) from exc
                marker = marker or _waiting_marker(path)
                with suppress(OSError):  # a folder this process may not write: no mark
                    marker.touch()  # at every try: a mark not touched is left over
                if not told and (notice := _WAIT_NOTICE.get()) is not None:
                    notice(path, wait)
                told = True
                time.sleep(min(pause, left))
                pause = min(pause * 2, _POLL_MOST)
    finally:
        if marker is not None:
            with suppress(OSError):
                marker.unlink()
    # Timestamps come back in UTC whatever the machine's zone, so tests and demos agree.
    conn.execute("SET TimeZone = 'UTC'")
    if not read_only:
        conn.execute("PRAGMA disable_checkpoint_on_shutdown")
    try:
        if run_migrations and not read_only:
            migrate(conn)
        elif run_migrations:
            refuse_newer_schema(_recorded_versions(conn), discover_migrations())
    except Exception:
        conn.close()
        raise
    return conn


def refuse_newer_store(db_path: Path | str) -> None:
    """Raise MigrationError when the database at ``db_path`` was migrated by a newer
    selene-dag (see :func:`refuse_newer_schema`): for a server, before it says it is up. A
    file that is missing, or held by another process now, is left to the first request."""
    if not Path(db_path).is_file():
        return
    try:
        close_store(connect(db_path, read_only=True, wait=0), db_path)
    except MigrationError:
        raise
    except (StoreError, duckdb.Error):
        return


def _recorded_versions(conn: duckdb.DuckDBPyConnection) -> set[int]:
    """The versions ``schema_migrations`` records, without creating it (a read-only
    connection): none when the table is missing."""
    try:
        rows = conn.execute("SELECT version FROM schema_migrations").fetchall()
    except duckdb.CatalogException:
        return set()
    return {row[0] for row in rows}


@contextmanager
def open_store(
    db_path: Path | str, *, read_only: bool = False, wait: float = DEFAULT_LOCK_WAIT
) -> Iterator[duckdb.DuckDBPyConnection]:
    """Context manager around :func:`connect` (same arguments) that always closes the
    connection."""
    conn = connect(db_path, read_only=read_only, wait=wait)
    try:
        yield conn
    finally:
        close_store(conn, db_path)


# A write-ahead log up to this size stays when a connection closes: every open replays it
# (~12 ms a MiB measured), while a checkpoint rewrites the tables it touched (~1.5 s on a
# 10,000-note store even for one edited note). A bigger log is folded in at close.
WAL_KEPT_BYTES = 1 << 20


def close_store(conn: duckdb.DuckDBPyConnection, db_path: Path | str) -> None:
    """Close ``conn`` to ``db_path``, checkpointing (folding the write-ahead log into the
    file) only when the log holds more than ``WAL_KEPT_BYTES``. When other connections of
    this process still hold the database, the last one to close decides."""
    wal = Path(f"{db_path}.wal")
    try:
        big = wal.stat().st_size > WAL_KEPT_BYTES
    except OSError:
        big = False
    if big:
        with suppress(duckdb.Error):  # a read-only connection cannot set it
            conn.execute("PRAGMA enable_checkpoint_on_shutdown")
    conn.close()


@contextmanager
def transaction(conn: duckdb.DuckDBPyConnection) -> Iterator[duckdb.DuckDBPyConnection]:
    """Run the block in one transaction: commit on success, roll back on any exception."""
    conn.execute("BEGIN TRANSACTION")
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def table_counts(conn: duckdb.DuckDBPyConnection) -> dict[str, int]:
    """Return ``{table: row count}`` for every base table in the main schema."""
    tables = [
        row[0]
        for row in conn.execute(
            "SELECT table_name FROM information_schema.tables "
            "WHERE table_schema = 'main' AND table_type = 'BASE TABLE' ORDER BY table_name"
        ).fetchall()
    ]
    return {t: conn.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0] for t in tables}


_STATEMENT_END = re.compile(r";[ \t]*(?:--[^\n]*)?(?:\n|\Z)")
_PARAM = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")


def execute_script(
    conn: duckdb.DuckDBPyConnection, sql: str, params: dict[str, object] | None = None
) -> duckdb.DuckDBPyConnection:
    """Execute a multi-statement SQL text, giving each statement the ``$name`` params it uses.

    DuckDB binds prepared parameters only in the last statement of a text, so the script is
    split at semicolons that end a line. Returns the connection after the last statement.
    """
    params = params or {}
    result = conn
    for statement in _STATEMENT_END.split(sql):
        body = "\n".join(
            line
            for line in statement.splitlines()
            if line.strip() and not line.strip().startswith("--")
        )
        if not body.strip():
            continue
        used = {name: params[name] for name in _PARAM.findall(body) if name in params}
        result = conn.execute(statement, used) if used else conn.execute(statement)
    return result


def record_day(conn: duckdb.DuckDBPyConnection, asset: str, day: date) -> None:
    """Record that ``asset`` (one that ages with the clock) was computed for ``day``."""
    conn.execute(
        "INSERT INTO clock_days (asset, as_of) VALUES (?, ?) "
        "ON CONFLICT (asset) DO UPDATE SET as_of = excluded.as_of",
        [asset, day],
    )


def recorded_day(conn: duckdb.DuckDBPyConnection, asset: str) -> date | None:
    """The day ``asset`` was last computed for (:func:`record_day`); None when never."""
    row = conn.execute("SELECT as_of FROM clock_days WHERE asset = ?", [asset]).fetchone()
    return None if row is None else row[0]
