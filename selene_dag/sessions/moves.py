"""Transcripts moved to another path: the session stored under the old path is retired.

A session's key comes from its file's path, so a transcript moved (or copied, then the
original deleted) into another folder is a new session, and the old one stays as an
archive whose source is gone: the same conversation stored twice, cited twice by ``ask``
and distilled twice. When a file is read whose session the store already holds under
another key, and that key's file is gone and every event stored for it opens the new file
(same kind and text, in order), nothing is lost by dropping the old rows: the new key
holds all of them.
"""

from __future__ import annotations

from collections.abc import Sequence

import duckdb

from selene_dag.files import file_state
from selene_dag.sessions.parsers.model import SessionEvent
from selene_dag.sessions.scanner import gemini_migration
from selene_dag.sessions.store import (
    SessionFileRow,
    load_events_many,
    retire_sessions,
    sessions_with_tool_ids,
)


def moved_sessions(
    conn: duckdb.DuckDBPyConnection,
    read: Sequence[tuple[SessionFileRow, Sequence[SessionEvent]]],
) -> dict[str, str]:
    """``{stored key: key read}``: stored sessions that a file of ``read`` (its row and
    events, as just read) continues under another key: the same platform and tool session
    id, a source file that is gone now (or a Gemini CLI ``session-….json`` that Gemini CLI
    copied whole into the ``session-….jsonl`` read, resuming it, and left in place), and
    stored events that are, kind and text in order, the first events of the file read. A
    few queries, whatever the number."""
    new_by_id: dict[tuple[str, str], list[tuple[str, Sequence[SessionEvent]]]] = {}
    for row, events in read:
        if row.source_session_id and events:
            new_by_id.setdefault((row.platform, row.source_session_id), []).append(
                (row.session_key, events)
            )
    read_keys = {row.session_key for row, _ in read}
    read_paths = {row.path for row, _ in read}
    candidates = [
        row
        for row in sessions_with_tool_ids(conn, list(new_by_id))
        if row.session_key not in read_keys
        and row.events
        and (file_state(row.path) == "gone" or gemini_migration(row.path) in read_paths)
    ]
    if not candidates:
        return {}
    stored = load_events_many(conn, [row.session_key for row in candidates])
    moved: dict[str, str] = {}
    for row in candidates:
        old = [(e.kind, e.text) for e in stored.get(row.session_key, [])]
        if not old:
            continue
        for key, events in new_by_id[(row.platform, row.source_session_id or "")]:
            if len(events) >= len(old) and [(e.kind, e.text) for e in events[: len(old)]] == old:
                moved[row.session_key] = key
                break
    return moved


def retire_moved_sessions(
    conn: duckdb.DuckDBPyConnection,
    read: Sequence[tuple[SessionFileRow, Sequence[SessionEvent]]],
) -> dict[str, str]:
    """Delete the rows and distilled files of the :func:`moved_sessions` of ``read`` (their
    rows in one transaction, with where each went, then their files); return ``{retired
    key: key read}``."""
    moved = moved_sessions(conn, read)
    for path in retire_sessions(conn, moved):
        path.unlink(missing_ok=True)
    return moved
