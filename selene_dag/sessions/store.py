"""Row I/O of the sessions tables (``session_files``, ``session_events``, ``chunks``,
``assessments``, ``chunk_scores``, ``distilled_sessions``), by column name.

Rows are read into dataclasses through the column names of the result (never by
position) and written through named column lists. The ``replace_*`` writers delete a
session key's rows and insert the new ones in one transaction, so a re-run is idempotent
and a crash leaves either the old rows or the new ones, never a mix. No Dagster here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb

from selene_dag.sessions import naming
from selene_dag.sessions.chunker import Chunk
from selene_dag.sessions.distiller import ScoredChunk
from selene_dag.sessions.parsers.model import SessionEvent
from selene_dag.store import transaction

# pandas is imported where frames are built: the Dagster definitions load without it.
if TYPE_CHECKING:
    import pandas as pd

# Table column -> dataclass field, where the names differ.
_EVENT_FIELDS = {"ts": "timestamp"}
_CHUNK_FIELDS = {"first_ts": "first_timestamp", "last_ts": "last_timestamp"}

EVENT_COLUMNS = (
    "session_key",
    "seq",
    "session_id",
    "platform",
    "ts",
    "role",
    "kind",
    "text",
    "tool_name",
    "file_paths",
    "is_error",
    "is_sidechain",
    "tokens",
    "importance",
    "raw_type",
    "line",
    "abandoned",
    "line_tokens",
)


@dataclass(frozen=True)
class SessionFileRow:
    """One ``session_files`` row: a source file and the outcome of its last ingest."""

    session_key: str
    path: str
    platform: str
    project: str | None
    source_session_id: str | None
    size: int
    mtime: float
    sha256: str
    events: int
    parse_errors: int
    error_samples: list[str]
    duplicates: int
    redactions: int
    scanned_at: datetime
    parsed_at: datetime
    parent_session_id: str | None = None
    # The model the events' token counts are in (None: unknown, count them again).
    token_model: str | None = None
    # The redaction rules its events' texts were redacted with (``redact.RULES_VERSION``).
    redaction: str | None = None


@dataclass(frozen=True)
class AssessmentRow:
    """One ``assessments`` row: one assessor's ratings of one chunk."""

    chunk_id: str
    session_key: str
    assessor: str
    relevance: int
    signal_density: int
    reusability: int
    overall: float
    reason: str | None
    created_at: datetime


@dataclass(frozen=True)
class ChunkScoreRow:
    """One ``chunk_scores`` row: the consensus of a chunk's assessments."""

    chunk_id: str
    session_key: str
    consensus: float
    n_assessments: int
    assessors: list[str]
    dropped: list[str]
    sufficient: bool
    engine: str | None = None  # the engine SELENE_LLM named when it was rated


@dataclass(frozen=True)
class DistillationRow:
    """One ``distilled_sessions`` row: a written session file and its token accounting."""

    session_key: str
    project: str | None
    platform: str
    source_platform: str
    path: str
    tokens: int
    budget: int
    chunk_count: int
    dropped_chunks: int
    sort_mode: str
    min_consensus: float
    created_at: datetime


def fetch_dicts(
    conn: duckdb.DuckDBPyConnection, sql: str, params: Sequence[object] = ()
) -> list[dict[str, Any]]:
    """The result rows of ``sql`` as dicts keyed by the result's column names."""
    cursor = conn.execute(sql, list(params))
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def _columns(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(cls))


def _select(cls: type, renames: Mapping[str, str] | None = None, alias: str = "") -> str:
    """A select list of ``cls``'s fields, each column (``renames``: column -> field)
    aliased to its field name."""
    by_field = {v: k for k, v in (renames or {}).items()}
    prefix = f"{alias}." if alias else ""
    parts = []
    for name in _columns(cls):
        column = by_field.get(name, name)
        parts.append(f"{prefix}{column}" + (f" AS {name}" if column != name else ""))
    return ", ".join(parts)


_VALUES_ROWS = 200


def _insert(
    conn: duckdb.DuckDBPyConnection,
    table: str,
    rows: Sequence[Any],
    renames: Mapping[str, str] | None = None,
) -> None:
    """Insert dataclass rows (all of one type) into ``table`` by their field names
    (``renames``: column -> field); tuples are written as lists (DuckDB arrays). One
    statement either way (DuckDB's executemany costs one per row): a multi-row VALUES list
    up to ``_VALUES_ROWS`` rows, a registered frame beyond."""
    import pandas as pd

    if not rows:
        return
    fields = _columns(type(rows[0]))
    by_field = {v: k for k, v in (renames or {}).items()}
    columns = [by_field.get(name, name) for name in fields]
    values = [[_value(getattr(row, name)) for name in fields] for row in rows]
    names = ", ".join(columns)
    if len(rows) <= _VALUES_ROWS:
        row_marks = "(" + ", ".join("?" for _ in columns) + ")"
        conn.execute(
            f"INSERT INTO {table} ({names}) VALUES {', '.join([row_marks] * len(rows))}",
            [v for row in values for v in row],
        )
        return
    frame = pd.DataFrame(values, columns=columns)
    with _registered(conn, "_rows_frame", frame):
        conn.execute(f"INSERT INTO {table} ({names}) SELECT {names} FROM _rows_frame")


def _value(value: object) -> object:
    return list(value) if isinstance(value, tuple) else value


@contextmanager
def _registered(conn: duckdb.DuckDBPyConnection, name: str, frame: pd.DataFrame) -> Iterator[None]:
    conn.register(name, frame)
    try:
        yield
    finally:
        conn.unregister(name)


# --- session_files and session_events --------------------------------------------------


def _keys_filter(keys: Sequence[str]) -> tuple[str, object]:
    """``session_key`` matching ``keys``, and its parameter: an equality for one key (which
    DuckDB can answer from row-group statistics), else a list membership."""
    if len(keys) == 1:
        return "session_key = ?", keys[0]
    return "list_contains(?, session_key)", list(keys)


def _event_record(key: str, e: SessionEvent) -> dict[str, object]:
    return {
        "session_key": key,
        "seq": e.seq,
        "session_id": e.session_id,
        "platform": e.platform,
        "ts": e.timestamp,
        "role": e.role,
        "kind": e.kind,
        "text": e.text,
        "tool_name": e.tool_name,
        "file_paths": list(e.file_paths),
        "is_error": e.is_error,
        "is_sidechain": e.is_sidechain,
        "tokens": e.tokens,
        "importance": e.importance,
        "raw_type": e.raw_type,
        "line": e.line,
        "abandoned": e.abandoned,
        "line_tokens": e.line_tokens,
    }


def replace_session(
    conn: duckdb.DuckDBPyConnection,
    file_row: SessionFileRow,
    events: Sequence[SessionEvent],
) -> None:
    """Rewrite the ``session_files`` row and ``session_events`` rows of ``file_row.session_key``."""
    replace_sessions(conn, [(file_row, events)])


def replace_sessions(
    conn: duckdb.DuckDBPyConnection,
    sessions: Sequence[tuple[SessionFileRow, Sequence[SessionEvent]]],
) -> None:
    """Rewrite the ``session_files`` and ``session_events`` rows of every session given, in
    one transaction and a handful of statements whatever their number."""
    import pandas as pd

    if not sessions:
        return
    keys = [file_row.session_key for file_row, _ in sessions]
    frame = pd.DataFrame(
        [_event_record(file_row.session_key, e) for file_row, events in sessions for e in events],
        columns=list(EVENT_COLUMNS),
    )
    with transaction(conn):
        conn.execute("DELETE FROM session_events WHERE list_contains(?, session_key)", [keys])
        conn.execute("DELETE FROM session_files WHERE list_contains(?, session_key)", [keys])
        if len(frame):
            columns = ", ".join(EVENT_COLUMNS)
            with _registered(conn, "_events_frame", frame):
                conn.execute(
                    f"INSERT INTO session_events ({columns}) SELECT {columns} FROM _events_frame"
                )
        _insert(conn, "session_files", [file_row for file_row, _ in sessions])


def distilled_stamps(db_path: Path) -> dict[str, tuple[int, float]] | None:
    """Each session file stored and distilled, by key: its ``(size, mtime)`` when it was
    read; empty without a database, None while another process holds it (read-only, no
    wait: a sensor looks again at its next tick)."""
    from selene_dag.store import StoreError, open_store

    if not db_path.exists():
        return {}
    try:
        with open_store(db_path, read_only=True, wait=0) as conn:
            rows = conn.execute(
                "SELECT DISTINCT f.session_key, f.size, f.mtime FROM session_files f "
                "JOIN distilled_sessions d USING (session_key)"
            ).fetchall()
    except (StoreError, duckdb.Error):
        return None
    return {str(key): (int(size), float(mtime)) for key, size, mtime in rows}


def load_session_file(conn: duckdb.DuckDBPyConnection, session_key: str) -> SessionFileRow | None:
    """The ``session_files`` row of ``session_key``; None when it was never ingested."""
    return load_session_files_many(conn, [session_key]).get(session_key)


def load_session_files_many(
    conn: duckdb.DuckDBPyConnection, session_keys: Sequence[str]
) -> dict[str, SessionFileRow]:
    """The ``session_files`` rows of those of ``session_keys`` that were ingested, by key,
    from one query."""
    where, param = _keys_filter(session_keys)
    rows = fetch_dicts(
        conn, f"SELECT {_select(SessionFileRow)} FROM session_files WHERE {where}", [param]
    )
    return {row["session_key"]: SessionFileRow(**row) for row in rows}


def scored_session_files(
    conn: duckdb.DuckDBPyConnection, project: str | None = None
) -> list[SessionFileRow]:
    """``session_files`` rows of sessions with at least one chunk score.

    All of them newest file first (by mtime), or those of ``project`` in order of their
    first event (sessions without timestamps last, then by key).
    """
    scored = "EXISTS (SELECT 1 FROM chunk_scores s WHERE s.session_key = f.session_key)"
    select = f"SELECT {_select(SessionFileRow, alias='f')} FROM session_files f"
    if project is None:
        sql = f"{select} WHERE {scored} ORDER BY f.mtime DESC"
        params: list[object] = []
    else:
        sql = (
            f"{select} WHERE f.project = ? AND {scored} "
            "ORDER BY (SELECT min(ts) FROM session_events e WHERE e.session_key = f.session_key) "
            "NULLS LAST, f.session_key"
        )
        params = [project]
    return [SessionFileRow(**row) for row in fetch_dicts(conn, sql, params)]


def scored_sessions_named(conn: duckdb.DuckDBPyConnection, session: str) -> list[SessionFileRow]:
    """The scored session ``session`` names (``sessions.naming``: a key, the tool's id, a
    path, a file name or stem, or a uuid's first characters), as a list of one, or none.
    Raises UsageError for an empty id, or one that names several sessions (a uuid's
    beginning, or the id of copies of one transcript)."""
    naming.check_id(session)
    rows = scored_session_files(conn)
    named = [r for r in rows if naming.names(session, r.session_key, r.path, r.source_session_id)]
    if len(named) > 1:
        # A session's id is its subagents' transcripts' too: the file it names first.
        named = [r for r in named if naming.names(session, r.session_key, r.path, None)] or named
    if len(named) > 1:  # copies of one transcript share its name and id
        raise naming.ambiguous(
            session, [r.session_key for r in named], [r.path for r in named], part=False
        )
    if named:
        return named
    found = naming.by_part(
        session,
        [r.session_key for r in rows],
        [r.path for r in rows],
        [r.source_session_id for r in rows],
    )
    return [rows[i] for i in found]


def project_names(conn: duckdb.DuckDBPyConnection) -> list[str]:
    """Projects (working directories) with at least one scored session."""
    rows = fetch_dicts(
        conn,
        "SELECT DISTINCT f.project FROM session_files f JOIN chunk_scores s USING (session_key) "
        "WHERE f.project IS NOT NULL ORDER BY 1",
    )
    return [row["project"] for row in rows]


def load_events(conn: duckdb.DuckDBPyConnection, session_key: str) -> list[SessionEvent]:
    """The stored (redacted, scored) events of one session, in seq order."""
    return load_events_many(conn, [session_key]).get(session_key, [])


def load_events_many(
    conn: duckdb.DuckDBPyConnection, session_keys: Sequence[str]
) -> dict[str, list[SessionEvent]]:
    """The stored events of each of ``session_keys`` that has any, in seq order, from one
    query."""
    where, param = _keys_filter(session_keys)
    rows = fetch_dicts(
        conn,
        f"SELECT session_key AS _key, {_select(SessionEvent, _EVENT_FIELDS)} "
        f"FROM session_events WHERE {where} ORDER BY session_key, seq",
        [param],
    )
    out: dict[str, list[SessionEvent]] = {}
    for row in rows:
        key = row.pop("_key")
        row["file_paths"] = tuple(row["file_paths"] or ())
        row["raw_type"] = row["raw_type"] or ""
        row["line"] = row["line"] or 0
        out.setdefault(key, []).append(SessionEvent(**row))
    return out


def sessions_with_tool_ids(
    conn: duckdb.DuckDBPyConnection, ids: Sequence[tuple[str, str]]
) -> list[SessionFileRow]:
    """The stored sessions whose ``(platform, source_session_id)`` is one of ``ids``, from
    one query."""
    if not ids:
        return []
    rows = fetch_dicts(
        conn,
        f"SELECT {_select(SessionFileRow)} FROM session_files "
        "WHERE list_contains(?, platform || chr(31) || source_session_id)",
        [[f"{platform}\x1f{tool_id}" for platform, tool_id in ids]],
    )
    return [SessionFileRow(**row) for row in rows]


def retire_sessions(conn: duckdb.DuckDBPyConnection, moved: Mapping[str, str]) -> list[Path]:
    """Delete every row of the sessions ``moved`` names (``{old key: key now}``: file,
    events, chunks, assessments, scores, distillations) and record where each went
    (``session_moves``, a move of a moved session's key followed through), in one
    transaction; return the paths of their distilled files, for the caller to remove once
    no row names them."""
    keys = list(moved)
    if not keys:
        return []
    paths = [
        Path(row[0])
        for row in conn.execute(
            "SELECT path FROM distilled_sessions WHERE list_contains(?, session_key) "
            "AND path IS NOT NULL",
            [keys],
        ).fetchall()
    ]
    with transaction(conn):
        for table in (
            "distilled_sessions",
            "chunk_scores",
            "assessments",
            "chunks",
            "session_events",
            "session_files",
        ):
            conn.execute(f"DELETE FROM {table} WHERE list_contains(?, session_key)", [keys])
        for old, new in moved.items():  # a citation of the old key is shown from the new one
            conn.execute("UPDATE session_moves SET new_key = ? WHERE new_key = ?", [new, old])
            conn.execute(
                "INSERT OR REPLACE INTO session_moves (old_key, new_key) VALUES (?, ?)",
                [old, new],
            )
    return paths


# --- chunks ------------------------------------------------------------------------------


def replace_chunks(
    conn: duckdb.DuckDBPyConnection, session_key: str, chunks: Sequence[Chunk]
) -> None:
    """Rewrite the ``chunks`` rows of one session."""
    replace_chunks_many(conn, [(session_key, chunks)])


def replace_chunks_many(
    conn: duckdb.DuckDBPyConnection, sessions: Sequence[tuple[str, Sequence[Chunk]]]
) -> None:
    """Rewrite the ``chunks`` rows of every ``(session_key, chunks)`` given, with their
    text's md5 (``text_hash``), in one transaction."""
    if not sessions:
        return
    keys = [k for k, _ in sessions]
    with transaction(conn):
        conn.execute("DELETE FROM chunks WHERE list_contains(?, session_key)", [keys])
        _insert(conn, "chunks", [c for _, chunks in sessions for c in chunks], _CHUNK_FIELDS)
        # The text's md5, read by the search index's corpus version before every ask.
        conn.execute(
            "UPDATE chunks SET text_hash = md5(text) WHERE list_contains(?, session_key)", [keys]
        )


def load_chunks(conn: duckdb.DuckDBPyConnection, session_key: str) -> list[Chunk]:
    """The stored chunks of one session, in chunk order."""
    return load_chunks_many(conn, [session_key]).get(session_key, [])


def load_chunks_many(
    conn: duckdb.DuckDBPyConnection, session_keys: Sequence[str]
) -> dict[str, list[Chunk]]:
    """The stored chunks of each of ``session_keys`` that has any, in chunk order, from one
    query."""
    where, param = _keys_filter(session_keys)
    rows = fetch_dicts(
        conn,
        f"SELECT {_select(Chunk, _CHUNK_FIELDS)} FROM chunks "
        f"WHERE {where} ORDER BY session_key, chunk_index",
        [param],
    )
    out: dict[str, list[Chunk]] = {}
    for row in rows:
        row["seqs"] = tuple(row["seqs"] or ())
        chunk = Chunk(**row)
        out.setdefault(chunk.session_key, []).append(chunk)
    return out


def chunk_session_key(conn: duckdb.DuckDBPyConnection, chunk_id: str) -> str | None:
    """The session key of the chunk ``chunk_id``; None when no such chunk is stored."""
    rows = fetch_dicts(conn, "SELECT session_key FROM chunks WHERE id = ?", [chunk_id])
    return rows[0]["session_key"] if rows else None


# --- assessments and chunk_scores --------------------------------------------------------


def replace_scores(
    conn: duckdb.DuckDBPyConnection,
    session_key: str,
    assessments: Sequence[AssessmentRow],
    scores: Sequence[ChunkScoreRow],
) -> None:
    """Rewrite the ``assessments`` and ``chunk_scores`` rows of one session."""
    replace_scores_many(conn, [(session_key, assessments, scores)])


def replace_scores_many(
    conn: duckdb.DuckDBPyConnection,
    sessions: Sequence[tuple[str, Sequence[AssessmentRow], Sequence[ChunkScoreRow]]],
) -> None:
    """Rewrite the ``assessments`` and ``chunk_scores`` rows of every
    ``(session_key, assessments, scores)`` given, in one transaction."""
    if not sessions:
        return
    keys = [key for key, _, _ in sessions]
    with transaction(conn):
        conn.execute("DELETE FROM assessments WHERE list_contains(?, session_key)", [keys])
        conn.execute("DELETE FROM chunk_scores WHERE list_contains(?, session_key)", [keys])
        _insert(conn, "assessments", [a for _, rows, _ in sessions for a in rows])
        _insert(conn, "chunk_scores", [c for _, _, rows in sessions for c in rows])


def load_scored(conn: duckdb.DuckDBPyConnection, session_key: str) -> list[ScoredChunk]:
    """Chunks of one session with their consensus, in chronological (chunk) order."""
    return load_scored_many(conn, [session_key]).get(session_key, [])


def load_scored_many(
    conn: duckdb.DuckDBPyConnection, session_keys: Sequence[str]
) -> dict[str, list[ScoredChunk]]:
    """The scored chunks of each of ``session_keys`` that has any, with their consensus, in
    chronological (chunk) order, from two queries."""
    where, param = _keys_filter(session_keys)
    rows = fetch_dicts(
        conn, f"SELECT session_key, chunk_id, consensus FROM chunk_scores WHERE {where}", [param]
    )
    scores = {(row["session_key"], row["chunk_id"]): row["consensus"] for row in rows}
    out: dict[str, list[ScoredChunk]] = {}
    for key, chunks in load_chunks_many(conn, session_keys).items():
        kept = [ScoredChunk(c, float(scores[key, c.id])) for c in chunks if (key, c.id) in scores]
        if kept:
            out[key] = kept
    return out


# --- distilled_sessions ------------------------------------------------------------------


def distilled_paths(conn: duckdb.DuckDBPyConnection, session_key: str, platform: str) -> list[Path]:
    """Paths of the files recorded for ``session_key`` in ``platform``'s format."""
    rows = fetch_dicts(
        conn,
        "SELECT path FROM distilled_sessions WHERE session_key = ? AND platform = ?",
        [session_key, platform],
    )
    return [Path(row["path"]) for row in rows]


def distilled_paths_many(
    conn: duckdb.DuckDBPyConnection, session_keys: Sequence[str]
) -> dict[tuple[str, str], list[Path]]:
    """Paths of the files recorded for each of ``session_keys``, by (key, platform)."""
    where, param = _keys_filter(session_keys)
    rows = fetch_dicts(
        conn, f"SELECT session_key, platform, path FROM distilled_sessions WHERE {where}", [param]
    )
    out: dict[tuple[str, str], list[Path]] = {}
    for row in rows:
        out.setdefault((row["session_key"], row["platform"]), []).append(Path(row["path"]))
    return out


def project_distillation_rows(conn: duckdb.DuckDBPyConnection) -> list[tuple]:
    """Every project's distilled file as recorded: (key, platform, path, tokens, chunks),
    in key and platform order."""
    return conn.execute(
        "SELECT session_key, platform, path, tokens, chunk_count FROM distilled_sessions "
        "WHERE starts_with(session_key, 'project:') ORDER BY session_key, platform"
    ).fetchall()


def session_projects(conn: duckdb.DuckDBPyConnection, session_keys: Sequence[str]) -> set[str]:
    """The projects (working directories) of ``session_keys`` that have one."""
    rows = conn.execute(
        "SELECT DISTINCT project FROM session_files WHERE list_contains(?, session_key) "
        "AND project IS NOT NULL",
        [list(session_keys)],
    ).fetchall()
    return {row[0] for row in rows}


def distilled_otherwise(
    conn: duckdb.DuckDBPyConnection, max_tokens: int, min_consensus: float, sort_mode: str
) -> set[str]:
    """The sessions whose distilled file in their own platform's format (the one a
    distillation writes unless a run asks for another) was chosen with another budget,
    minimum consensus or sort mode than these."""
    rows = conn.execute(
        "SELECT DISTINCT d.session_key FROM distilled_sessions d JOIN session_files f "
        "ON f.session_key = d.session_key AND f.platform = d.platform "
        "WHERE d.budget <> ? OR d.min_consensus <> ? OR d.sort_mode <> ?",
        [max_tokens, min_consensus, sort_mode],
    ).fetchall()
    return {row[0] for row in rows}


def replace_distillations(conn: duckdb.DuckDBPyConnection, rows: Sequence[DistillationRow]) -> None:
    """Rewrite the ``distilled_sessions`` rows of each ``(session_key, platform)`` of
    ``rows``, in one transaction and two statements whatever their number."""
    if not rows:
        return
    with transaction(conn):
        conn.execute(
            "DELETE FROM distilled_sessions WHERE list_contains(?, session_key || chr(31) || "
            "platform)",
            [[f"{r.session_key}\x1f{r.platform}" for r in rows]],
        )
        _insert(conn, "distilled_sessions", list(rows))
