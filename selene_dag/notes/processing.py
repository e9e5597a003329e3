"""Essences, concepts and themes for notes (seed 000's process-llm / distill-essences).

Incremental: only notes that are new, changed since their analysis, or lack an essence are
analysed, newest first. A note that cost a model call is committed as soon as it is
analysed; other notes (extractive, or answered from the call cache) are committed in one
transaction per batch, at least every ``COMMIT_EVERY_SECONDS``, instead of paying one disk
sync each. A crash or a server
going down loses at most that cheap window, and a re-run resumes where the committed work
ends.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

import duckdb

from selene_dag.llm.engine import MIN_ESSENCE_CHARS, Engine, EngineResponseError, deferred_cache
from selene_dag.llm.versions import ALGORITHM_VERSIONS
from selene_dag.notes.writer import MOVED_MIN_CHARS, note_fields_digest
from selene_dag.paths import transform_sql
from selene_dag.store import transaction
from selene_dag.text import hash_rows

# pandas is imported where frames are built: the Dagster definitions load without it.

COMMIT_EVERY_SECONDS = 0.5


@dataclass
class AnalysisStats:
    """Outcome of one processing run."""

    pending: int = 0
    analysed: int = 0
    rejected_essences: int = 0
    # Notes that took the analysis and use of the note their file held before a rename.
    moved: int = 0
    failed: int = 0
    stopped_by: str | None = None
    rejected_ids: list[str] = field(default_factory=list)
    # Notes the model answered unusably (twice), analysed offline instead: "<id>: <why>".
    unusable: list[str] = field(default_factory=list)


def carry_moved_notes(conn: duckdb.DuckDBPyConnection) -> int:
    """Give each live note without an analysis whose text a deleted note held (its file
    renamed or moved: a note's id is its path) that note's processed row: analysis, tier,
    last use (``sql/transforms/processed_moved.sql``). One transaction. Returns how many
    notes took one."""
    with transaction(conn):
        row = conn.execute(
            transform_sql("processed_moved"), {"min_chars": MOVED_MIN_CHARS}
        ).fetchone()
    return int(row[0]) if row else 0


def analysis_version(engine: Engine) -> str | None:
    """The version of ``engine``'s note analysis when a newer one should analyse again
    what an older one did (the offline engine's ``analyze_note`` algorithm), else None."""
    return ALGORITHM_VERSIONS["analyze_note"] if engine.name == "extractive" else None


def notes_needing_analysis(
    conn: duckdb.DuckDBPyConnection,
    engine: str,
    limit: int | None = None,
    analysis: str | None = None,
) -> list[tuple]:
    """Return (id, title, content, content_hash) of notes to analyse by ``engine`` (its
    ``name:model`` label), newest first: new, changed, without an essence, then those
    another engine analysed, or (``analysis``: :func:`analysis_version`) another version
    of its analysis (``sql/transforms/essence_todo.sql``)."""
    sql = transform_sql("essence_todo")
    if limit is not None:
        sql += f"\nLIMIT {int(limit)}"
    return conn.execute(sql, {"engine": engine, "analysis": analysis}).fetchall()


def notes_left(conn: duckdb.DuckDBPyConnection, engine: Engine) -> int:
    """How many notes :func:`notes_needing_analysis` would still give ``engine``."""
    sql = f"SELECT count(*) FROM ({transform_sql('essence_todo')})"
    params = {"engine": f"{engine.name}:{engine.model}", "analysis": analysis_version(engine)}
    return int(conn.execute(sql, params).fetchone()[0])


def valid_essence(essence: str | None) -> str | None:
    """Return the stripped essence when it is longer than 10 characters, else None."""
    text = (essence or "").strip()
    return text if len(text) >= MIN_ESSENCE_CHARS else None


_ESSENCE_COLUMNS = (
    "note_id",
    "concepts",
    "primary_theme",
    "essence",
    "essence_at",
    "source_hash",
    "engine",
    "analysis",
)


def analyse_notes(
    conn: duckdb.DuckDBPyConnection,
    engine: Engine,
    now: datetime,
    limit: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> AnalysisStats:
    """Analyse pending notes with ``engine``, committing completed notes as described above.
    A note whose file was renamed or moved first takes its former note's row
    (:func:`carry_moved_notes`, ``stats.moved``): analysed only when its text changed.

    A note the model answers unusably (:class:`EngineResponseError`: not JSON twice, the
    wrong shape) is analysed by the offline engine instead, recorded as its, and named in
    ``stats.unusable``: one such note stopped every run at the same place. Any other
    :class:`EngineError` (a server down) stops the run after what is done is committed; the
    error is re-raised so the caller fails with its message. Essences of ≤ 10 characters
    are rejected (stored as NULL and counted), the concepts and theme are kept.
    """
    engine_label = f"{engine.name}:{engine.model}"
    engine_analysis = analysis_version(engine)
    moved = carry_moved_notes(conn)
    todo = notes_needing_analysis(conn, engine_label, limit, engine_analysis)
    stats = AnalysisStats(pending=len(todo), moved=moved)
    upsert = transform_sql("essence_upsert")
    pending: list[dict[str, object]] = []
    last_commit = time.monotonic()

    def commit_pending() -> None:
        import pandas as pd

        nonlocal last_commit
        batch = pending.copy()
        pending.clear()
        if batch:
            # One statement per batch: DuckDB pays milliseconds per executed statement.
            frame = pd.DataFrame(batch, columns=_ESSENCE_COLUMNS)
            frame["essence_at"] = pd.to_datetime(frame["essence_at"], utc=True)
            with transaction(conn):
                conn.register("_essence_rows", frame)
                try:
                    conn.execute(upsert)
                finally:
                    conn.unregister("_essence_rows")
        if cache is not None:
            cache.flush()  # the model calls' cache entries go with the notes they made
        last_commit = time.monotonic()

    # The extractive engine's "calls" cost milliseconds: batch them like cache hits.
    cheap = bool(getattr(engine, "calls_are_cheap", False))
    stack = contextlib.ExitStack()
    cache = stack.enter_context(deferred_cache(engine))
    # An engine that can analyse a batch at once (the extractive one, over its CPUs) gets
    # the whole list; results still arrive, and are committed, note by note.
    batch = getattr(engine, "analyze_notes", None) if cheap else None
    analyses = (
        iter(batch([(title, content) for _, title, content, _ in todo]))
        if batch is not None
        else None
    )
    offline: Engine | None = None
    try:
        for index, (note_id, title, content, chash) in enumerate(todo, start=1):
            calls_before = engine.calls_made
            label = engine_label
            row_analysis = engine_analysis
            if analyses is not None:
                analysis = next(analyses)
            else:
                try:
                    analysis = engine.analyze_note(title, content)
                except EngineResponseError as exc:
                    if offline is None:
                        from selene_dag.llm.extractive import ExtractiveEngine

                        offline = ExtractiveEngine()
                    analysis = offline.analyze_note(title, content)
                    label = f"{offline.name}:{offline.model} for {engine_label}"
                    row_analysis = analysis_version(offline)
                    stats.unusable.append(f"{note_id}: {exc}")
            essence = valid_essence(analysis.essence)
            if essence is None:
                stats.rejected_essences += 1
                stats.rejected_ids.append(note_id)
            pending.append(
                {
                    "note_id": note_id,
                    "concepts": list(analysis.concepts),
                    "primary_theme": analysis.primary_theme or None,
                    "essence": essence,
                    "essence_at": now,
                    "source_hash": chash,
                    "engine": label,
                    "analysis": row_analysis,
                }
            )
            stats.analysed += 1
            paid_for = engine.calls_made > calls_before and not cheap
            if paid_for or time.monotonic() - last_commit >= COMMIT_EVERY_SECONDS:
                commit_pending()
            if progress:
                progress(index, len(todo))
    finally:
        # Keep every completed note, also when the engine fails on the next one.
        commit_pending()
        close = getattr(analyses, "close", None)
        if close is not None:
            close()  # stops a batch's worker processes when the run stops early
        stack.close()
    return stats


def processed_version(conn: duckdb.DuckDBPyConnection) -> str:
    """Content hash of every live note's analysis (essence, concepts, theme) and of the
    note it was made of: its content and fields (what follows reads them with the
    analysis, so an edit that leaves the essence as it was still reaches the threads, the
    tiers and the search index)."""
    rows = conn.execute(
        "SELECT p.note_id, p.essence, p.concepts, p.primary_theme, n.content_hash, "
        f"{note_fields_digest('n')} "
        "FROM processed_notes p JOIN notes n ON n.id = p.note_id WHERE n.deleted_at IS NULL "
        "ORDER BY p.note_id"
    ).fetchall()
    return hash_rows(rows)
