"""Threads: notes grouped by topic (default), plus model-detected threads (seed 000).

Topic threads come from set-based SQL (``threads_by_topic.sql``). With a model engine, seed
000's detect-threads also runs over the 30 newest notes not yet in a model thread, rendered
through a ``ContextBuilder(3000)``; its proposals become ``origin='model'`` threads. Then
its reconsolidate-threads reads each active thread again whose 30 newest notes changed
since it was last read (their ids and essences, hashed): summary and "why" rewritten,
direction and whether it shifted recorded. A thread the detection just wrote counts as
read (its summary, why and direction are the detection's).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

import duckdb

from selene_dag.context.builder import ContextBuilder
from selene_dag.llm.engine import Engine, EngineResponseError
from selene_dag.paths import transform_sql
from selene_dag.store import execute_script, transaction
from selene_dag.text import hash_rows

DETECT_NOTE_LIMIT = 30
DETECT_BUDGET_TOKENS = 3000


RECONSOLIDATE_NOTE_LIMIT = 30
RECONSOLIDATE_BUDGET_TOKENS = 3000


@dataclass
class ThreadStats:
    """Outcome of one threads run."""

    threads: int
    active: int
    model_threads_added: int
    reconsolidated: int = 0
    shifted: int = 0
    # What the model answered unusably (the detection, a thread's reading): left as it was.
    unusable: list[str] = field(default_factory=list)


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:60] or "thread"


def detect_model_threads(
    conn: duckdb.DuckDBPyConnection, engine: Engine, now: datetime
) -> list[str]:
    """Run the engine's thread detection over up to 30 newest unthreaded notes; return the
    ids of the threads it added or updated (their summary, why and direction are the
    detection's).

    The notes reach the engine as a context of 3000 tokens of the engine's model (the model
    that reads it), besides the notes themselves.
    """
    rows = conn.execute(
        "SELECT n.id, n.title, n.content, p.essence, p.primary_theme, p.concepts, p.fidelity_tier "
        "FROM notes n JOIN processed_notes p ON p.note_id = n.id "
        "WHERE n.deleted_at IS NULL AND NOT n.test_run AND n.id NOT IN ("
        "  SELECT tn.note_id FROM thread_notes tn JOIN threads t ON t.id = tn.thread_id "
        "  WHERE t.origin = 'model') "
        f"ORDER BY n.created_at DESC LIMIT {DETECT_NOTE_LIMIT}"
    ).fetchall()
    if len(rows) < 3:
        return []
    keys = ("id", "title", "content", "essence", "primary_theme", "concepts", "fidelity_tier")
    notes = [dict(zip(keys, row, strict=True)) for row in rows]
    builder = ContextBuilder(DETECT_BUDGET_TOKENS, model=engine.model)
    for note in notes:
        builder.add_note(note)
    known = {n["id"] for n in notes}
    added: list[str] = []
    for proposal in engine.detect_threads(builder.build(), notes):
        members = [i for i in proposal.note_ids if i in known]
        if len(members) < 2:
            continue
        thread_id = f"model:{_slug(proposal.name)}"
        conn.execute(
            "INSERT INTO threads (id, name, why, summary, status, last_activity_at, note_count, "
            "origin, direction) VALUES (?, ?, ?, ?, 'active', ?, ?, 'model', ?) "
            "ON CONFLICT (id) DO UPDATE SET why = excluded.why, summary = excluded.summary, "
            "direction = excluded.direction",
            [
                thread_id,
                proposal.name,
                proposal.why,
                proposal.summary or None,
                now,
                len(members),
                proposal.direction,
            ],
        )
        conn.executemany(
            "INSERT INTO thread_notes (thread_id, note_id) VALUES (?, ?) ON CONFLICT DO NOTHING",
            [[thread_id, m] for m in members],
        )
        added.append(thread_id)
    return added


def reconsolidate_threads(
    conn: duckdb.DuckDBPyConnection,
    engine: Engine,
    now: datetime,
    fresh: Sequence[str] = (),
    unusable: list[str] | None = None,
) -> tuple[int, int]:
    """Read again every active thread of at least two notes whose 30 newest notes (ids and
    essences) changed since it was last read: the engine sees them newest first, titled
    with their creation time, in a context of 3000 tokens of its model, beside the
    thread's summary and "why", and its revision replaces them. ``fresh`` threads (just
    written by the detection) are taken as read now, without a call. Returns how many
    threads were read and how many of them shifted direction. A thread the model answers
    unusably keeps its summary (the reason added to ``unusable``; raised without it)."""
    rows = conn.execute(
        transform_sql("thread_members"), {"limit": RECONSOLIDATE_NOTE_LIMIT}
    ).fetchall()
    keys = ("id", "title", "content", "created_at", "essence", "primary_theme", "concepts")
    members: dict[str, list[dict[str, object]]] = {}
    for thread_id, *values in rows:
        note = dict(zip((*keys, "fidelity_tier"), values, strict=True))
        members.setdefault(thread_id, []).append(note)
    known = {
        r[0]: r[1:]
        for r in conn.execute(
            "SELECT id, name, coalesce(summary, ''), coalesce(why, ''), reconsolidated_source "
            "FROM threads WHERE status = 'active'"
        ).fetchall()
    }
    read = shifted = 0
    for thread_id, notes in sorted(members.items()):
        if len(notes) < 2 or thread_id not in known:
            continue
        name, summary, why, source = known[thread_id]
        now_source = hash_rows([(n["id"], n["essence"]) for n in notes])
        if now_source == source:
            continue
        if thread_id in fresh:
            conn.execute(
                "UPDATE threads SET shifted = false, reconsolidated_at = ?, "
                "reconsolidated_source = ? WHERE id = ?",
                [now, now_source, thread_id],
            )
            continue
        builder = ContextBuilder(RECONSOLIDATE_BUDGET_TOKENS, model=engine.model)
        for note in notes:
            created = note["created_at"]
            day = created.date().isoformat() if isinstance(created, datetime) else str(created)
            builder.add_note({**note, "title": f"{note['title']} ({day})"})
        try:
            revision = engine.reconsolidate_thread(
                str(name), str(summary), str(why), builder.build()
            )
        except EngineResponseError as exc:
            if unusable is None:
                raise
            unusable.append(f"thread {thread_id}: {exc}")
            continue
        conn.execute(
            "UPDATE threads SET summary = ?, why = ?, direction = ?, shifted = ?, "
            "reconsolidated_at = ?, reconsolidated_source = ? WHERE id = ?",
            [
                revision.summary,
                revision.why,
                revision.direction,
                revision.shifted,
                now,
                now_source,
                thread_id,
            ],
        )
        read += 1
        shifted += int(revision.shifted)
    return read, shifted


def refresh_threads(
    conn: duckdb.DuckDBPyConnection,
    now: datetime,
    active_days: int,
    engine: Engine | None = None,
) -> ThreadStats:
    """Rebuild topic threads; with ``engine``, detect model threads and read active
    threads again (``reconsolidate_threads``); set every status.

    A thread is active when its newest member activity (update or access) is within
    ``active_days`` of ``now``, else archived.
    """
    params = {"now": now, "active_days": active_days}
    with transaction(conn):
        execute_script(conn, transform_sql("threads_by_topic"), params)
    unusable: list[str] = []
    try:
        added = detect_model_threads(conn, engine, now) if engine is not None else []
    except EngineResponseError as exc:  # model threads only add to the topic threads
        added, unusable = [], [f"thread detection: {exc}"]
    conn.execute(transform_sql("threads_refresh_model"), params)
    read, shifted = (
        reconsolidate_threads(conn, engine, now, fresh=added, unusable=unusable)
        if engine is not None
        else (0, 0)
    )
    total, active = conn.execute(
        "SELECT count(*), count(*) FILTER (WHERE status = 'active') FROM threads"
    ).fetchone()
    return ThreadStats(
        threads=int(total),
        active=int(active),
        model_threads_added=len(added),
        reconsolidated=read,
        shifted=shifted,
        unusable=unusable,
    )


def threads_version(conn: duckdb.DuckDBPyConnection) -> str:
    """Hash of every thread's id, status and members."""
    rows = conn.execute(
        "SELECT t.id, t.status, list(tn.note_id ORDER BY tn.note_id) FROM threads t "
        "LEFT JOIN thread_notes tn ON tn.thread_id = t.id GROUP BY t.id, t.status ORDER BY t.id"
    ).fetchall()
    return hash_rows(rows)
