"""Write an :class:`~selene_dag.notes.ingest.IngestResult` into the ``notes`` table.

Set-based: the notes are staged as one relation and merged with SQL from
``sql/transforms/notes_*.sql``, all in one transaction, so an interrupted ingest leaves the
table as it was.
"""

from __future__ import annotations

from contextlib import ExitStack
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb

from selene_dag.notes.folders import IngestScope, nested_folders, register_folder
from selene_dag.notes.ingest import IngestResult, NoteRecord, notes_data_version
from selene_dag.paths import transform_sql
from selene_dag.store import execute_script, staged, transaction


@dataclass(frozen=True)
class NotesWriteStats:
    """What one ingest did to the ``notes`` table."""

    inserted: int
    changed: int
    unchanged: int
    deleted: int
    errors: int


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


def _epoch_us(moment: datetime) -> int:
    return (moment - _EPOCH) // _MICROSECOND


def _stored_fields(conn: duckdb.DuckDBPyConnection, id_prefix: str) -> dict[str, tuple]:
    """Per stored note id under ``id_prefix`` (deleted ones too): what the source carries,
    as :func:`_source_fields` gives it for an incoming note, and whether it is deleted."""
    rows = conn.execute(
        "SELECT id, content_hash, epoch_us(created_at), epoch_us(updated_at), source, topic, "
        "tags, test_run, deleted_at IS NOT NULL FROM notes WHERE starts_with(id, ?)",
        [id_prefix],
    ).fetchall()
    return {r[0]: r[1:] for r in rows}


def _source_fields(note: NoteRecord, digest: str, known: tuple | None) -> tuple:
    """What ``note`` would store, in ``_stored_fields``' form (see ``notes_upsert.sql``):
    without a creation date it keeps the ``known`` (stored) one; without an update date,
    the stored one while its content is the same. (A new or changed note is staged
    whatever its dates: the digest differs.)"""
    same = known is not None and known[0] == digest
    created = _epoch_us(note.created_at) if note.created_at else known[1] if known else None
    updated = _epoch_us(note.updated_at) if note.updated_at else known[2] if same else None
    return (
        digest,
        created,
        updated,
        note.source,
        note.topic,
        list(note.tags),
        note.test_run,
        False,
    )


# The staged notes' columns and SQL types (the temp table ``incoming`` the transforms read).
_INCOMING = {
    "id": "VARCHAR",
    "title": "VARCHAR",
    "content": "VARCHAR",
    "content_hash": "VARCHAR",
    "created_at": "TIMESTAMPTZ",
    "updated_at": "TIMESTAMPTZ",
    "source": "VARCHAR",
    "topic": "VARCHAR",
    "tags": "VARCHAR[]",
    "test_run": "BOOLEAN",
    "modified_at": "TIMESTAMPTZ",
}
_ERRORS = {"source": "VARCHAR", "line": "INTEGER", "error": "VARCHAR"}


def _utc(value: datetime | None) -> datetime | None:
    """``value`` with a time zone: one without is taken to be UTC."""
    return value.replace(tzinfo=UTC) if value is not None and value.tzinfo is None else value


def _incoming_columns(
    notes: list[tuple[NoteRecord, str]], stored: dict[str, tuple]
) -> dict[str, list]:
    """``notes`` (each with its content hash) as columns to stage (see ``_INCOMING``); a
    note whose content hash equals its ``stored`` one carries no title or content: the hash
    covers both, so they are not copied again to be found equal."""
    columns: dict[str, list] = {name: [] for name in _INCOMING}
    for n, digest in notes:
        known = stored.get(n.id)
        same = known is not None and known[0] == digest
        row = (
            n.id,
            None if same else n.title,
            None if same else n.content,
            digest,
            _utc(n.created_at),
            _utc(n.updated_at),
            n.source,
            n.topic,
            list(n.tags),
            n.test_run,
            _utc(n.modified_at),
        )
        for name, value in zip(_INCOMING, row, strict=True):
            columns[name].append(value)
    return columns


def write_notes(
    conn: duckdb.DuckDBPyConnection, result: IngestResult, scope: IngestScope, now: datetime
) -> NotesWriteStats:
    """Upsert ``result`` (read with ``scope``) into ``notes``, registering the scope's
    folder, and mark deleted the notes of that folder under ``scope.path`` that are gone.

    Touches only notes whose id starts with the folder's key and, for deletion and
    ``ingest_errors``, only sources under ``scope.path`` outside ``scope.skip``: another
    folder's notes are never changed. Runs in one transaction; ingest errors replace the
    previous ones of the same files. Returns counts of what changed.
    """
    root_prefix = scope.source_prefix
    skip = [str(folder).rstrip("/") + "/" for folder in scope.skip]
    errors = {
        "source": [e.source for e in result.errors],
        "line": [e.line for e in result.errors],
        "error": [e.error for e in result.errors],
    }
    with transaction(conn), ExitStack() as views:
        stored = _stored_fields(conn, scope.id_prefix)
        # A note whose every field equals the stored row's is not staged at all: one edit
        # in a folder of 10,000 notes stages one row, not 10,000 to be found equal.
        hashed = [(n, n.content_hash) for n in result.notes]
        todo = [
            (n, h) for n, h in hashed if stored.get(n.id) != _source_fields(n, h, stored.get(n.id))
        ]
        untouched = len(hashed) - len(todo)
        views.enter_context(staged(conn, "incoming_df", _incoming_columns(todo, stored), _INCOMING))
        views.enter_context(
            staged(conn, "seen_df", {"id": [n.id for n in result.notes]}, {"id": "VARCHAR"})
        )
        views.enter_context(
            staged(conn, "failed_df", {"source": result.files_failed}, {"source": "VARCHAR"})
        )
        views.enter_context(staged(conn, "errors_df", errors, _ERRORS))
        try:
            conn.execute("CREATE OR REPLACE TEMP TABLE seen_ids AS SELECT id FROM seen_df")
            conn.execute("CREATE OR REPLACE TEMP TABLE incoming AS SELECT * FROM incoming_df")
            conn.execute(
                "CREATE OR REPLACE TEMP TABLE failed_files AS SELECT source FROM failed_df"
            )
            register_folder(conn, scope)
            inserted, changed, unchanged = conn.execute(transform_sql("notes_changes")).fetchone()
            conn.execute(transform_sql("notes_upsert"), {"now": now})
            deleted = conn.execute(
                transform_sql("notes_mark_deleted"),
                {
                    "now": now,
                    "root_prefix": root_prefix,
                    "id_prefix": scope.id_prefix,
                    "skip": skip,
                },
            ).fetchone()[0]
            conn.execute(
                "DELETE FROM ingest_errors WHERE starts_with(source, $root_prefix) "
                "AND len(list_filter($skip::VARCHAR[], s -> starts_with(source, s))) = 0",
                {"root_prefix": root_prefix, "skip": skip},
            )
            conn.execute(
                "INSERT INTO ingest_errors (source, line, error, seen_at) "
                "SELECT source, line, error, $now FROM errors_df",
                {"now": now},
            )
        finally:
            for table in ("incoming", "seen_ids", "failed_files"):
                conn.execute(f"DROP TABLE IF EXISTS {table}")
    return NotesWriteStats(
        inserted=int(inserted or 0),
        changed=int(changed or 0),
        unchanged=int(unchanged or 0) + untouched,
        deleted=int(deleted or 0),
        errors=len(result.errors),
    )


def stored_notes_version(conn: duckdb.DuckDBPyConnection) -> str:
    """Data version of the live (not deleted) notes of every folder in the table."""
    rows = conn.execute("SELECT id, content_hash FROM notes WHERE deleted_at IS NULL").fetchall()
    return notes_data_version((r[0], r[1]) for r in rows)


def forget_folder(conn: duckdb.DuckDBPyConnection, key: str, folder: Path, now: datetime) -> int:
    """Forget the registered folder ``key`` at ``folder`` in one transaction: its live notes
    marked deleted, the problems of its files dropped, its registration removed (folders
    registered inside it keep theirs). Returns the number of notes marked deleted."""
    skip = [str(f).rstrip("/") + "/" for f in nested_folders(conn, folder)]
    with transaction(conn):
        marked = execute_script(
            conn,
            transform_sql("notes_forget_folder"),
            {"key": key, "path": str(folder).rstrip("/"), "skip": skip, "now": now},
        ).fetchone()
    return int(marked[0] if marked else 0)
