"""Notes as the context library sees them, and the access stamps that feed fidelity."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import duckdb

from selene_dag.context.builder import (
    NotesPack,
    PreparedNotes,
    default_priority,
    prepare_notes,
)
from selene_dag.context.tokens import can_tile, count_tiled, count_tokens_batch
from selene_dag.notes.token_store import StoredCounts
from selene_dag.text import natural_key

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


_LIVE_NOTES = "FROM notes WHERE deleted_at IS NULL AND NOT test_run"
_LIVE = "FROM notes n LEFT JOIN processed_notes p ON p.note_id = n.id WHERE n.deleted_at IS NULL AND NOT n.test_run"
# The title, with the note's id when another live note has the same title.
_TITLE = (
    "CASE WHEN EXISTS (SELECT 1 FROM notes d WHERE d.deleted_at IS NULL AND NOT d.test_run "
    "AND lower(d.title) = lower(n.title) AND d.id <> n.id) "
    "THEN n.title || ' (' || n.id || ')' ELSE n.title END"
)


def load_context_notes(
    conn: duckdb.DuckDBPyConnection, ids: Sequence[str] | None = None
) -> list[dict[str, Any]]:
    """Every live, non-test note (``ids``: only those of them) with its essence, concepts,
    theme and tier, in id order (numbers by value: ``:2`` before ``:10``); its timestamps are UTC datetimes (``last_accessed_at``
    None when never accessed). A title that several live notes share carries the note's
    id, ``title (id)``: three lines ``- TODO [todo]`` could not be told apart or found."""
    # The instants are fetched as naive UTC and tagged here: the client converts a
    # TIMESTAMPTZ value through pytz, which was a third of loading 10,000 notes.
    only = " AND list_contains(?, n.id)" if ids is not None else ""
    rows = conn.execute(
        f"SELECT n.id, {_TITLE}, n.content, p.essence, p.concepts, "
        "coalesce(p.primary_theme, n.topic), "
        "timezone('UTC', n.created_at), timezone('UTC', n.updated_at), "
        "coalesce(p.fidelity_tier, 'full'), timezone('UTC', p.last_accessed_at) "
        f"{_LIVE}{only} ORDER BY n.id",
        [list(ids)] if ids is not None else [],
    ).fetchall()
    rows.sort(key=lambda row: natural_key(row[0]))
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


def load_context_threads(conn: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    """The active threads that have something to say (a digest, or a summary), latest
    activity first, as ``render_thread`` takes them: id, name, thread_digest, summary,
    why, note_count. An archived thread's notes have aged out of view, and a thread with
    neither text would be a header line alone."""
    rows = conn.execute(
        "SELECT id, name, thread_digest, summary, why, note_count FROM threads "
        "WHERE status = 'active' AND (coalesce(trim(thread_digest), '') <> '' "
        "OR coalesce(trim(summary), '') <> '') "
        "ORDER BY last_activity_at DESC NULLS LAST, id"
    ).fetchall()
    keys = ("id", "name", "thread_digest", "summary", "why", "note_count")
    return [dict(zip(keys, row, strict=True)) for row in rows]


# Notes prepared first by prepare_leading; four times as many each time that is too few.
LEADING_NOTES = 1024


def prepare_leading(
    conn: duckdb.DuckDBPyConnection, model: str, budget: int, leading: int = LEADING_NOTES
) -> tuple[PreparedNotes, StoredCounts, int]:
    """What ``prepare_stored`` gives for every live note, cut to the leading notes in
    packing order whose skeleton lines alone exceed ``budget`` (all notes when theirs do
    not): ``pack_notes`` then packs them into any budget up to ``budget`` exactly as it
    packs every note, since a pack that cannot hold every skeleton line keeps the leading
    ones that fit and nothing after them. The notes after are neither loaded nor rendered
    (at 10,000 notes, loading and rendering every note was most of the health step).
    ``leading``: how many notes to prepare first (four times as many each time that is too
    few). Returns the prepared notes, their counter and how many notes are live."""
    stubs = [
        {
            "id": row[0],
            "created_at": _utc(row[1]),
            "updated_at": _utc(row[2]),
            "fidelity_tier": row[3],
            "last_accessed_at": _utc(row[4]),
        }
        for row in conn.execute(
            "SELECT n.id, timezone('UTC', n.created_at), timezone('UTC', n.updated_at), "
            "coalesce(p.fidelity_tier, 'full'), timezone('UTC', p.last_accessed_at) "
            f"{_LIVE}"
        ).fetchall()
    ]
    stubs.sort(key=lambda stub: natural_key(stub["id"]))
    # The order prepare_notes sorts in: by priority, ties in id order (a stable sort).
    order = sorted(range(len(stubs)), key=lambda i: activity_priority(stubs[i]), reverse=True)
    take = max(1, leading)
    while True:
        ids = sorted(stubs[i]["id"] for i in order[:take])
        notes = load_context_notes(conn, ids) if take < len(stubs) else load_context_notes(conn)
        prepared, counter = prepare_stored(conn, notes, model)
        if take >= len(stubs) or sum(chain[-1][2] for chain in prepared.chains) > budget:
            return prepared, counter, len(stubs)
        take *= 4


def leading_counts(pack: NotesPack, prepared: PreparedNotes, live: int) -> dict[str, int]:
    """``pack.counts`` of a pack of ``prepare_leading``'s notes, its ``excluded`` counting
    the ``live`` notes that were not prepared too."""
    return {**pack.counts, "excluded": pack.counts["excluded"] + live - len(prepared.notes)}


# Every live note at full fidelity as two texts counted apart: its header line (as
# ``render_note`` writes it) and its content.
_FULL_PARTS = (
    f"SELECT '--- ' || title || ' ---' || chr(10) AS text {_LIVE_NOTES}",
    f"SELECT content AS text {_LIVE_NOTES}",
)


# The stored counts the health step keeps whatever notes it prepared: the search documents'
# bodies and every live note's header line and content (see full_tokens).
KEEP_COUNTS_SQL = (
    "SELECT md5(body) FROM search_docs",
    *(f"SELECT md5(text) FROM ({part})" for part in _FULL_PARTS),
)


def full_tokens(conn: duckdb.DuckDBPyConnection, counter: StoredCounts) -> int:
    """Tokens of every live note at full fidelity, each block counted as its header line
    and its content apart (``--- title ---`` and a newline; the content): read from
    ``token_counts`` by md5, and ``counter`` counts (and stores) the texts not there yet.
    The texts are hashed in the database: none is loaded unless it must be counted."""
    texts = " UNION ALL ".join(_FULL_PARTS)
    rows = conn.execute(
        f"SELECT t.h, count(*), any_value(c.tokens) FROM (SELECT md5(text) AS h FROM ({texts})) t "
        "LEFT JOIN token_counts c ON c.hash = t.h AND c.model = ? GROUP BY t.h",
        [counter.model],
    ).fetchall()
    missing = [h for h, _, tokens in rows if tokens is None]
    counted: dict[str, int] = {}
    if missing:
        found = conn.execute(
            f"SELECT DISTINCT text FROM ({texts}) WHERE list_contains(?, md5(text))", [missing]
        ).fetchall()
        fresh = [r[0] for r in found]
        counted = {
            hashlib.md5(t.encode("utf-8", "surrogatepass")).hexdigest(): n
            for t, n in zip(fresh, counter(fresh), strict=True)
        }
    return sum(n * (tokens if tokens is not None else counted[h]) for h, n, tokens in rows)


def _utc(moment: datetime | None) -> datetime | None:
    return moment.replace(tzinfo=UTC) if moment is not None else None


def activity_priority(note: Mapping[str, Any]) -> tuple:
    """Priority for packing: most recent of update and access first, then stored tier."""
    accessed = note.get("last_accessed_at")
    stamp, tier_rank = default_priority(note)
    if isinstance(accessed, datetime):
        stamp = max(stamp, accessed.timestamp())
    return (stamp, tier_rank)


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
    """Stamp ``last_accessed_at`` on notes a context or answer actually used. Two callers
    stamping the same notes at once through one database (threads of a process) conflict
    in DuckDB: the stamp is tried again a few times, the later one winning."""
    ids = sorted(set(note_ids))
    if not ids:
        return 0
    for attempt in range(_STAMP_ATTEMPTS):
        try:
            conn.execute(
                "UPDATE processed_notes SET last_accessed_at = ? "
                "WHERE note_id IN (SELECT unnest(?))",
                [now, ids],
            )
            break
        except duckdb.TransactionException:
            if attempt == _STAMP_ATTEMPTS - 1:
                raise
            time.sleep(0.01 * (attempt + 1))
    return len(ids)


_STAMP_ATTEMPTS = 8
