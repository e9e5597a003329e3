"""Notes as the context library sees them, and the access stamps that feed fidelity."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import duckdb

from selene_dag.context.builder import (
    NotesPack,
    PreparedNotes,
    default_priority,
    pack_notes,
    prepare_notes,
)
from selene_dag.context.tokens import can_tile, count_tiled, count_tokens_batch
from selene_dag.notes.token_store import StoredCounts

CONTEXT_COLUMNS = (
    "id",
    "title",
    "content",
    "essence",
    "concepts",
    "primary_theme",
    "created_at",
    "updated_at",
    "fidelity_tier",
    "last_accessed_at",
)


def load_context_notes(conn: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    """Every live, non-test note with its essence, concepts, theme and tier; its
    timestamps are UTC datetimes (``last_accessed_at`` None when never accessed)."""
    # The instants are fetched as naive UTC and tagged here: the client converts a
    # TIMESTAMPTZ value through pytz, which was a third of loading 10,000 notes.
    rows = conn.execute(
        "SELECT n.id, n.title, n.content, p.essence, p.concepts, coalesce(p.primary_theme, n.topic), "
        "timezone('UTC', n.created_at), timezone('UTC', n.updated_at), "
        "coalesce(p.fidelity_tier, 'full'), timezone('UTC', p.last_accessed_at) "
        "FROM notes n LEFT JOIN processed_notes p ON p.note_id = n.id "
        "WHERE n.deleted_at IS NULL AND NOT n.test_run ORDER BY n.id"
    ).fetchall()
    return [
        dict(
            zip(
                CONTEXT_COLUMNS,
                (*row[:6], _utc(row[6]), _utc(row[7]), row[8], _utc(row[9])),
                strict=True,
            )
        )
        for row in rows
    ]


def _utc(moment: datetime | None) -> datetime | None:
    return moment.replace(tzinfo=UTC) if moment is not None else None


def activity_priority(note: Mapping[str, Any]) -> tuple:
    """Priority for packing: most recent of update and access first, then stored tier."""
    accessed = note.get("last_accessed_at")
    stamp, tier_rank = default_priority(note)
    if isinstance(accessed, datetime):
        stamp = max(stamp, accessed.timestamp())
    return (stamp, tier_rank)


def pack_all_notes(notes: Sequence[Mapping[str, Any]], budget: int, model: str | None) -> NotesPack:
    """Pack every note into ``budget`` tokens of ``model``, newest and most active first."""
    return pack_notes(notes, budget, model=model, priority=activity_priority)


def prepare_stored(
    conn: duckdb.DuckDBPyConnection, notes: Sequence[Mapping[str, Any]], model: str
) -> tuple[PreparedNotes, StoredCounts]:
    """``notes`` ordered and counted for ``pack_notes`` (most active first), each text's
    count read from ``token_counts`` when it was counted before (new ones are stored)."""
    counter = StoredCounts(conn, model)
    # Longest first: a render is matched with the longest content it ends with.
    long_contents = (
        sorted(
            {n["content"] for n in notes if len(n["content"]) > _DERIVE_FROM_CONTENT},
            key=len,
            reverse=True,
        )
        if can_tile(model)
        else []
    )
    if not long_contents:
        return prepare_notes(notes, model, activity_priority, count_batch=counter), counter

    def count_batch(texts: Sequence[str]) -> list[int]:
        return counter(
            texts, derive=lambda todo: _renders_from_contents(todo, long_contents, counter)
        )

    return prepare_notes(notes, model, activity_priority, count_batch=count_batch), counter


# A render of a note longer than this is counted from its content's stored count (the
# search index stores it too): a render is a header line or two, a newline and the
# content, and count_tiled joins the two counts exactly, so a 5 MB note is tokenized
# once, not once for the index and again for each tier that shows it whole.
_DERIVE_FROM_CONTENT = 32_768


def _renders_from_contents(
    texts: list[str], contents: Sequence[str], counter: StoredCounts
) -> list[int | None]:
    """For each text that is ``header + "\n" + content`` for one of ``contents``: its
    exact count from the header's and the content's (None when it is not, or when
    ``count_tiled`` cannot join them)."""
    found: list[tuple[int, int, str]] = []  # (text index, header length, content)
    for i, text in enumerate(texts):
        if len(text) <= _DERIVE_FROM_CONTENT:
            continue
        for content in contents:
            head = len(text) - len(content)
            if head > 0 and text[head - 1] == "\n" and text.endswith(content):
                found.append((i, head - 1, content))
                break
    out: list[int | None] = [None] * len(texts)
    if not found:
        return out
    model = counter.model
    headers = count_tokens_batch([texts[i][:head] for i, head, _ in found], model)
    bodies = counter([content for _, _, content in found])
    for (i, head, _), header, body in zip(found, headers, bodies, strict=True):
        text = texts[i]
        out[i] = count_tiled(text, [(0, head), (head + 1, len(text))], [header, body], model)
    return out


def mark_accessed(conn: duckdb.DuckDBPyConnection, note_ids: Iterable[str], now: datetime) -> int:
    """Stamp ``last_accessed_at`` on notes a context or answer actually used."""
    ids = sorted(set(note_ids))
    if not ids:
        return 0
    conn.execute(
        "UPDATE processed_notes SET last_accessed_at = ? WHERE note_id IN (SELECT unnest(?))",
        [now, ids],
    )
    return len(ids)
