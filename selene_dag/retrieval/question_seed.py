"""A fresh, resumable session assembled for a question (seed 003 §5.12, question-driven
distillation): the session chunks full-text search finds for the question, each scored
``QUESTION_WEIGHT`` × its relevance to the question + ``STATIC_WEIGHT`` × its consensus
(both 0–10; relevance is 10 × its BM25 score over the best chunk's), chosen by that score
within the budget like any distilled session, and written in chronological order in the
format of the agent that will resume it.

Offline, relevance is the full-text score alone; the seed's re-assessment of each candidate
against the question by model assessors is not done here.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import duckdb

from selene_dag.retrieval.search import search
from selene_dag.sessions.distiller import DistillerConfig, ScoredChunk
from selene_dag.sessions.generators import SeedMeta
from selene_dag.sessions.parsers.timestamps import format_utc
from selene_dag.sessions.steps import DistillResult, write_distilled_file
from selene_dag.sessions.store import load_chunks_many, load_session_files_many

# Seed 003's question-weighted consensus: 60% relevance to the question, 40% the chunk's
# general consensus.
QUESTION_WEIGHT = 0.6
STATIC_WEIGHT = 0.4
# Chunks the full-text search hands over as candidates.
CANDIDATES = 40


@dataclass(frozen=True)
class QuestionSeed:
    """A session written for a question: the file, and the sessions its chunks came from."""

    result: DistillResult
    sessions: tuple[str, ...]
    candidates: int


def question_chunks(
    conn: duckdb.DuckDBPyConnection,
    question: str,
    session_key: str | None = None,
    limit: int = CANDIDATES,
) -> list[ScoredChunk]:
    """The scored chunks full-text search finds for ``question`` (at most ``limit``; those of
    ``session_key`` only when given), each with its question-weighted score in place of its
    consensus, in chronological order (by their first event's time, then session and
    position). Needs a built search index; empty when nothing matches."""
    found = [
        c for c in search(conn, question, ["sessions"], limit=limit) if c.consensus is not None
    ]
    if not found:
        return []
    best = max(c.bm25 for c in found) or 1.0
    score = {
        c.ref: QUESTION_WEIGHT * 10.0 * c.bm25 / best + STATIC_WEIGHT * float(c.consensus or 0.0)
        for c in found
    }
    keys = sorted({key for (key,) in _sessions_of(conn, list(score))})
    if session_key is not None:
        keys = [key for key in keys if key == session_key]
    chunks = [
        chunk
        for key, stored in load_chunks_many(conn, keys).items()
        for chunk in stored
        if chunk.id in score
    ]
    chunks.sort(key=lambda c: (c.first_timestamp or "", c.session_key, c.chunk_index))
    return [ScoredChunk(c, round(score[c.id], 4)) for c in chunks]


def _sessions_of(conn: duckdb.DuckDBPyConnection, chunk_ids: Sequence[str]) -> list[tuple[str]]:
    return conn.execute(
        "SELECT DISTINCT session_key FROM chunks WHERE list_contains(?, id)", [list(chunk_ids)]
    ).fetchall()


def seed_for_question(
    conn: duckdb.DuckDBPyConnection,
    question: str,
    platform: str,
    out_dir: Path,
    config: DistillerConfig,
    now: datetime,
    model: str | None = None,
    session_key: str | None = None,
) -> QuestionSeed | None:
    """Write a ``platform`` session file under ``out_dir`` from the chunks of
    :func:`question_chunks`, chosen by their question-weighted score (``config``'s budget
    and minimum apply to that score; its sort mode is taken as ``consensus``); the file's
    time is its newest chunk's, or ``now``. None when no scored chunk matches the question.
    Writes only the file."""
    scored = question_chunks(conn, question, session_key)
    if not scored:
        return None
    sessions = load_session_files_many(conn, sorted({s.chunk.session_key for s in scored}))
    platforms = [sessions[s.chunk.session_key].platform for s in scored]
    projects = [sessions[s.chunk.session_key].project or "/" for s in scored]
    digest = hashlib.sha256(question.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    stamps = [s.chunk.last_timestamp for s in scored if s.chunk.last_timestamp]
    meta = SeedMeta(
        key=f"question:{digest}:{platform}",
        source_platform=Counter(platforms).most_common(1)[0][0],
        source_sessions=tuple(
            row.source_session_id or row.session_key for _, row in sorted(sessions.items())
        ),
        cwd=Counter(projects).most_common(1)[0][0],
        created_at=max(stamps) if stamps else format_utc(now),
        title=f"Distilled for the question: {' '.join(question.split())[:80]}",
    )
    chosen = DistillerConfig(config.max_tokens, config.min_consensus, "consensus")
    result = write_distilled_file(scored, meta, platform, chosen, out_dir, model=model)
    return QuestionSeed(result, tuple(sorted(sessions)), len(scored))
