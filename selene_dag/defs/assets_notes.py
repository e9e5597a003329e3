"""Notes group: the notes folder as an observable source, and its ingest into DuckDB.

No `from __future__ import annotations` here: Dagster inspects the `context` annotation.

Thin layer: each asset reads its inputs, calls a plain function of ``selene_dag.notes``,
writes the result and returns metadata. Data versions are content hashes, so an unchanged
folder marks nothing downstream stale.
"""

import dagster as dg

from selene_dag.defs.metadata import markdown_table
from selene_dag.defs.resources import SeleneResource
from selene_dag.notes.ingest import notes_data_version, read_notes
from selene_dag.notes.writer import stored_notes_version, write_notes

EMPTY_VERSION = notes_data_version([])


@dg.observable_source_asset(
    group_name="notes",
    description=(
        "The notes folder (SELENE_NOTES_DIR): markdown and JSONL files. Its data version is "
        "a hash of every note's id and content hash, so only a real edit makes it change."
    ),
)
def notes_source(selene: SeleneResource) -> dg.DataVersion:
    """Observe the notes folder and return the hash of its notes as the data version."""
    notes_dir = selene.settings().notes_dir
    if not notes_dir.exists():
        return dg.DataVersion(EMPTY_VERSION)
    return dg.DataVersion(read_notes(notes_dir).data_version())


@dg.asset(
    deps=[notes_source],
    group_name="notes",
    kinds={"duckdb"},
    code_version="1",
    pool="duckdb",
    description=(
        "Every note of SELENE_NOTES_DIR upserted into `notes` by id (content hash, dates, "
        "source, test_run). A deleted file marks its notes deleted; a bad file or JSON line "
        "is skipped, counted and listed, never half-written."
    ),
)
def raw_notes(context: dg.AssetExecutionContext, selene: SeleneResource) -> dg.MaterializeResult:
    """Ingest the notes folder into the ``notes`` table in one transaction."""
    settings = selene.settings()
    notes_dir = settings.notes_dir
    if not notes_dir.exists():
        raise dg.Failure(
            description=f"notes folder {notes_dir} does not exist: set SELENE_NOTES_DIR or create it"
        )
    result = read_notes(notes_dir)
    for error in result.errors:
        where = f"{error.source}:{error.line}" if error.line else error.source
        context.log.warning(f"skipped {where}: {error.error}")
    with selene.connection() as conn:
        stats = write_notes(conn, result, notes_dir, settings.now())
        version = stored_notes_version(conn)
        live = conn.execute("SELECT count(*) FROM notes WHERE deleted_at IS NULL").fetchone()[0]
        preview = conn.execute(
            "SELECT id, title, topic, created_at::DATE FROM notes WHERE deleted_at IS NULL "
            "ORDER BY created_at DESC LIMIT 10"
        ).fetchall()
    metadata: dict[str, object] = {
        "notes": dg.MetadataValue.int(live),
        "inserted": dg.MetadataValue.int(stats.inserted),
        "changed": dg.MetadataValue.int(stats.changed),
        "unchanged": dg.MetadataValue.int(stats.unchanged),
        "marked_deleted": dg.MetadataValue.int(stats.deleted),
        "bad_inputs": dg.MetadataValue.int(stats.errors),
        "newest": markdown_table(["id", "title", "topic", "created"], preview),
        "dagster/row_count": dg.MetadataValue.int(live),
    }
    if result.errors:
        metadata["bad_input_list"] = markdown_table(
            ["file", "line", "error"],
            [(e.source, e.line or "", e.error) for e in result.errors[:50]],
        )
    return dg.MaterializeResult(data_version=dg.DataVersion(version), metadata=metadata)
