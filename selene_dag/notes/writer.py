"""Write an :class:`~selene_dag.notes.ingest.IngestResult` into the ``notes`` table.

Set-based: the notes are staged as one relation and merged with SQL from
``sql/transforms/notes_*.sql``, all in one transaction, so an interrupted ingest leaves the
table as it was.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb

from selene_dag.notes.archive_ids import archive_prefix, newer_export, with_prefix
from selene_dag.notes.folders import IngestScope, nested_folders, register_folder
from selene_dag.notes.ingest import IngestResult, NoteRecord, is_archive, notes_data_version
from selene_dag.paths import transform_sql
from selene_dag.store import execute_script, transaction

# A renamed note's body must be at least this long to be told from another note by its text
# alone (its title, taken from the file's name, changed with it): short bodies ("TODO",
# a template's stub) are shared by unrelated notes.
MOVED_MIN_CHARS = 40

# pandas is imported where frames are built: the Dagster definitions load without it.
if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True)
class NotesWriteStats:
    """What one ingest did to the ``notes`` table."""

    inserted: int
    changed: int
    unchanged: int
    deleted: int
    errors: int
    restored: int = 0  # deleted (or forgotten) notes that came back (not counted as changed)


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


def _incoming_frame(notes: list[tuple[NoteRecord, str]], stored: dict[str, tuple]) -> pd.DataFrame:
    """``notes`` (each with its content hash) as rows to stage; a note whose content hash
    equals its ``stored`` one carries no title or content: the hash covers both, so they
    are not copied again to be found equal."""
    import pandas as pd

    columns = [
        "id",
        "title",
        "content",
        "content_hash",
        "created_at",
        "updated_at",
        "source",
        "topic",
        "tags",
        "test_run",
        "modified_at",
    ]
    rows = []
    for n, digest in notes:
        known = stored.get(n.id)
        same = known is not None and known[0] == digest
        rows.append(
            (
                n.id,
                None if same else n.title,
                None if same else n.content,
                digest,
                n.created_at,
                n.updated_at,
                n.source,
                n.topic,
                list(n.tags),
                n.test_run,
                n.modified_at,
            )
        )
    frame = pd.DataFrame(rows, columns=columns)
    for col in ("created_at", "updated_at", "modified_at"):
        frame[col] = pd.to_datetime(frame[col], utc=True)
    frame["tags"] = frame["tags"].astype(object)
    return frame


def _archives_kept(conn: duckdb.DuckDBPyConnection, scope: IngestScope) -> list[str]:
    """The ``<archive>!/`` prefixes of the archives under a folder being ingested that were
    ingested on their own: a folder's ingest reads no archive in it, so their notes are not
    its to delete, whether the archive is still there or was cleared away after its ingest
    (an export is downloaded to be read once). Ingesting the archive again updates them."""
    if not scope.path.is_dir():
        return []
    rows = conn.execute(
        "SELECT DISTINCT split_part(source, '!/', 1) FROM notes WHERE deleted_at IS NULL "
        "AND starts_with(id, ?) AND starts_with(source, ?) AND contains(source, '!/')",
        [scope.id_prefix, scope.source_prefix],
    ).fetchall()
    return [f"{archive}!/" for (archive,) in rows]


def _older_export_left_out(
    conn: duckdb.DuckDBPyConnection,
    scope: IngestScope,
    result: IngestResult,
    newer: str,
    now: datetime,
) -> NotesWriteStats:
    """Store nothing of an older export whose pages a newer one holds: one problem says
    so (``ingest_errors``, in place of the archive's earlier ones)."""
    reason = (
        f"an older export of the pages {newer} holds (written after it): left out; "
        "ingest the newer one for the current pages"
    )
    with transaction(conn):
        register_folder(conn, scope)
        conn.execute(
            "DELETE FROM ingest_errors WHERE source = ? OR starts_with(source, ?)",
            [str(scope.path), f"{scope.path}!/"],
        )
        conn.execute(
            "INSERT INTO ingest_errors (source, line, error, seen_at) VALUES (?, NULL, ?, ?)",
            [str(scope.path), reason, now],
        )
    return NotesWriteStats(0, 0, len(result.notes), 0, 1, 0)


def _archives_replaced(
    conn: duckdb.DuckDBPyConnection, scope: IngestScope, result: IngestResult, prefix: str
) -> list[str]:
    """The archives no longer there whose notes (ids under ``prefix``) the archive
    ``scope.path`` takes over: the export it replaced. Their notes it does not hold are
    pages deleted since, marked deleted too (they stayed live for good). None when the
    archive was not read whole (a page of a damaged part is not a deleted page); an archive
    still there keeps its other notes (another vault zipped beside it shares a welcome
    page, not its notes)."""
    if not is_archive(scope.path) or result.files_failed:
        return []
    rows = conn.execute(
        "SELECT DISTINCT split_part(source, '!/', 1) FROM notes WHERE deleted_at IS NULL "
        "AND contains(source, '!/') AND starts_with(id, ?) "
        "AND id IN (SELECT id FROM seen_ids) AND split_part(source, '!/', 1) <> ?",
        [prefix, str(scope.path)],
    ).fetchall()
    return sorted(str(archive) for (archive,) in rows if not Path(str(archive)).exists())


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
    import pandas as pd

    prefix = scope.id_prefix
    if (newer := newer_export(conn, scope, result)) is not None:
        return _older_export_left_out(conn, scope, result, newer, now)
    if is_archive(scope.path):
        prefix = archive_prefix(conn, scope, result)
        if prefix != scope.id_prefix:
            result = with_prefix(result, scope, prefix)
    root_prefix = scope.source_prefix
    skip = [str(folder).rstrip("/") + "/" for folder in scope.skip]
    skip += _archives_kept(conn, scope)
    failed = pd.DataFrame({"source": pd.Series(result.files_failed, dtype="object")})
    errors = pd.DataFrame(
        [(e.source, e.line, e.error) for e in result.errors], columns=["source", "line", "error"]
    ).astype({"source": "object", "line": "Int64", "error": "object"})
    with transaction(conn):
        stored = _stored_fields(conn, scope.id_prefix)
        # A note whose every field equals the stored row's is not staged at all: one edit
        # in a folder of 10,000 notes stages one row, not 10,000 to be found equal.
        hashed = [(n, n.content_hash) for n in result.notes]
        todo = [
            (n, h) for n, h in hashed if stored.get(n.id) != _source_fields(n, h, stored.get(n.id))
        ]
        untouched = len(hashed) - len(todo)
        incoming = _incoming_frame(todo, stored)
        seen = pd.DataFrame({"id": pd.Series([n.id for n in result.notes], dtype="object")})
        conn.register("incoming_df", incoming)
        conn.register("seen_df", seen)
        conn.register("failed_df", failed)
        conn.register("errors_df", errors)
        try:
            conn.execute(
                "CREATE OR REPLACE TEMP TABLE seen_ids AS SELECT id::VARCHAR AS id FROM seen_df"
            )
            # Typed temp tables: an empty DataFrame would otherwise lose its column types.
            conn.execute(
                "CREATE OR REPLACE TEMP TABLE incoming AS SELECT "
                "id::VARCHAR AS id, title::VARCHAR AS title, content::VARCHAR AS content, "
                "content_hash::VARCHAR AS content_hash, created_at::TIMESTAMPTZ AS created_at, "
                "updated_at::TIMESTAMPTZ AS updated_at, source::VARCHAR AS source, "
                "topic::VARCHAR AS topic, tags::VARCHAR[] AS tags, test_run::BOOLEAN AS test_run, "
                "modified_at::TIMESTAMPTZ AS modified_at FROM incoming_df"
            )
            conn.execute(
                "CREATE OR REPLACE TEMP TABLE failed_files AS SELECT source::VARCHAR AS source FROM failed_df"
            )
            register_folder(conn, scope)
            replaced = _archives_replaced(conn, scope, result, prefix)
            inserted, changed, unchanged = conn.execute(transform_sql("notes_changes")).fetchone()
            restored = conn.execute(
                "SELECT count(*) FROM incoming JOIN notes USING (id) "
                "WHERE notes.deleted_at IS NOT NULL"
            ).fetchone()[0]
            conn.execute(
                transform_sql("notes_upsert"),
                {"now": now, "root_prefix": root_prefix, "min_chars": MOVED_MIN_CHARS},
            )
            deleted = conn.execute(
                transform_sql("notes_mark_deleted"),
                {
                    "now": now,
                    "root_prefix": root_prefix,
                    "id_prefix": scope.id_prefix,
                    "skip": skip,
                },
            ).fetchone()[0]
            for archive in replaced:  # its pages the newer export no longer holds
                deleted += conn.execute(
                    transform_sql("notes_mark_deleted"),
                    {"now": now, "root_prefix": f"{archive}!/", "id_prefix": prefix, "skip": []},
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
            for name in ("incoming_df", "seen_df", "failed_df", "errors_df"):
                conn.unregister(name)
            for table in ("incoming", "seen_ids", "failed_files"):
                conn.execute(f"DROP TABLE IF EXISTS {table}")
    return NotesWriteStats(
        inserted=int(inserted or 0),
        changed=int(changed or 0) - int(restored or 0),
        unchanged=int(unchanged or 0) + untouched,
        deleted=int(deleted or 0),
        errors=len(result.errors),
        restored=int(restored or 0),
    )


def stored_notes_version(conn: duckdb.DuckDBPyConnection) -> str:
    """Data version of the live (not deleted) notes of every folder in the table: their
    content and every field what follows reads (dates, theme, tags, test flag), so
    that a note re-dated or re-tagged in its front matter moves its threads and tier."""
    rows = conn.execute(
        f"SELECT id, content_hash || ':' || {note_fields_digest()} FROM notes "
        "WHERE deleted_at IS NULL"
    ).fetchall()
    return notes_data_version((r[0], r[1]) for r in rows)


def note_fields_digest(alias: str = "") -> str:
    """A SQL expression: md5 of the fields of a ``notes`` row that what follows reads
    besides its content (dates, theme, tags, test flag; a NULL kept apart from an empty
    value; not its source file, which only `show` reads). ``alias``: the table's alias in
    the query, if any."""
    a = f"{alias}." if alias else ""
    return (
        f"md5(concat_ws('|', coalesce(epoch_us({a}created_at)::VARCHAR, '-'), "
        f"coalesce(epoch_us({a}updated_at)::VARCHAR, '-'), "
        f"coalesce({a}topic, chr(0)), coalesce({a}tags::VARCHAR, '-'), {a}test_run::VARCHAR))"
    )


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
