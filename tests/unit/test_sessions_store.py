"""Row I/O of the sessions tables: what is written by column name reads back equal."""

from __future__ import annotations

from datetime import UTC, datetime

import duckdb
import pytest

from selene_dag.sessions.chunker import Chunk
from selene_dag.sessions.parsers.model import SessionEvent
from selene_dag.sessions.store import (
    AssessmentRow,
    ChunkScoreRow,
    DistillationRow,
    SessionFileRow,
    distilled_paths,
    load_chunks,
    load_events,
    load_scored,
    load_session_file,
    project_names,
    replace_chunks,
    replace_distillations,
    replace_scores,
    replace_session,
    scored_session_files,
)
from selene_dag.store import migrate

NOW = datetime(2026, 5, 1, tzinfo=UTC)


@pytest.fixture
def conn():
    connection = duckdb.connect(":memory:")
    migrate(connection)
    yield connection
    connection.close()


def _file(key: str = "claude-abc", project: str | None = "/p") -> SessionFileRow:
    return SessionFileRow(
        session_key=key,
        path=f"/roots/{key}.jsonl",
        platform="claude",
        project=project,
        source_session_id=f"id-{key}",
        size=10,
        mtime=1.5,
        sha256="0" * 64,
        events=2,
        parse_errors=0,
        error_samples=[],
        duplicates=0,
        redactions=1,
        scanned_at=NOW,
        parsed_at=NOW,
    )


EVENTS = [
    SessionEvent(
        "s",
        "claude",
        0,
        "2026-01-01T00:00:00Z",
        "user",
        "user_prompt",
        "fix it",
        None,
        ("a.py",),
        False,
        False,
        3,
        "user",
        1,
        70,
    ),
    SessionEvent(
        "s", "claude", 1, None, "assistant", "tool_use", "{}", "Edit", (), True, True, 1, "", 0, 55
    ),
]
CHUNK = Chunk("c1", "claude-abc", 0, 0, 1, "text", 4, 62.5, 2, (0, 1), "t0", "t1")


def test_events_and_file_round_trip(conn) -> None:
    replace_session(conn, _file(), EVENTS)
    assert load_events(conn, "claude-abc") == EVENTS
    stored = load_session_file(conn, "claude-abc")
    assert stored is not None and stored.source_session_id == "id-claude-abc"
    assert load_session_file(conn, "nope") is None
    replace_session(conn, _file(), EVENTS[:1])
    assert load_events(conn, "claude-abc") == EVENTS[:1]


def test_chunks_are_stored_with_their_texts_md5(conn) -> None:
    from dataclasses import replace

    from selene_dag.retrieval.index import _VERSION_SQL_UNMIGRATED, corpus_version

    replace_session(conn, _file(), EVENTS)
    replace_chunks(
        conn, "claude-abc", [CHUNK, replace(CHUNK, id="c2", chunk_index=1, text="other")]
    )
    rows = conn.execute("SELECT text_hash = md5(text) FROM chunks").fetchall()
    assert rows == [(True,), (True,)]
    # The index's corpus version reads the stored hashes and is the one hashing the texts
    # gives (a store read before its migration is not reported stale for it).
    hashed = conn.execute(_VERSION_SQL_UNMIGRATED).fetchone()[0]
    assert corpus_version(conn).endswith(hashed)
    replace_chunks(conn, "claude-abc", [replace(CHUNK, text="changed")])
    assert not corpus_version(conn).endswith(hashed)
    assert conn.execute("SELECT text_hash FROM chunks").fetchall() == [
        (conn.execute("SELECT md5('changed')").fetchone()[0],)
    ]


def test_chunks_scores_and_distillations(conn) -> None:
    replace_session(conn, _file(), EVENTS)
    replace_chunks(conn, "claude-abc", [CHUNK])
    assert load_chunks(conn, "claude-abc") == [CHUNK]
    assert scored_session_files(conn) == [] and project_names(conn) == []
    replace_scores(
        conn,
        "claude-abc",
        [AssessmentRow("c1", "claude-abc", "importance", 5, 6, 7, 6.0, "r", NOW)],
        [ChunkScoreRow("c1", "claude-abc", 6.0, 1, ["importance"], [], False)],
    )
    (scored,) = load_scored(conn, "claude-abc")
    assert scored.chunk == CHUNK and scored.consensus == 6.0
    assert [f.session_key for f in scored_session_files(conn, "/p")] == ["claude-abc"]
    assert project_names(conn) == ["/p"]
    row = DistillationRow(
        "claude-abc", "/p", "codex", "claude", "/out/x", 9, 80, 1, 0, "hybrid", 5.0, NOW
    )
    replace_distillations(conn, [row])
    replace_distillations(conn, [row])
    assert [str(p) for p in distilled_paths(conn, "claude-abc", "codex")] == ["/out/x"]
