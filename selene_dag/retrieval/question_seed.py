"""A fresh, resumable session assembled for a question (seed 003 §5.12, question-driven
distillation): the session chunks full-text search finds for the question, each scored
``QUESTION_WEIGHT`` × its relevance to the question + ``STATIC_WEIGHT`` × its consensus
(both 0–10; relevance is 10 × its BM25 score over the best chunk's), chosen by that score
within the budget like any distilled session, and written in chronological order in the
format of the agent that will resume it.

With a model server, the model reads the best candidates beside the question (as it reads
ask's passages: ``rerank_passages``); those it picks get a relevance of 10 for the first and
one less for each next (not under 6), or keep their full-text relevance when that is higher.
Offline, relevance is the full-text score alone.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path

import duckdb

from selene_dag.retrieval.pack import RERANK_CHARS, RERANK_TOP, PassageRanker
from selene_dag.retrieval.search import search
from selene_dag.retrieval.terms import CoverageMatcher, query_terms, term_stem
from selene_dag.sessions.distiller import DistillerConfig, ScoredChunk
from selene_dag.sessions.generators import SeedMeta
from selene_dag.sessions.generators.gemini import is_project_hash
from selene_dag.sessions.steps import (
    DistillResult,
    newest_time,
    select_for_file,
    write_distilled_file,
)
from selene_dag.sessions.store import SessionFileRow, load_chunks_many, load_session_files_many

# Seed 003's question-weighted consensus: 60% relevance to the question, 40% the chunk's
# general consensus.
QUESTION_WEIGHT = 0.6
STATIC_WEIGHT = 0.4
# Chunks the full-text search hands over as candidates; for one session, the search reads
# this many times more, so that other sessions' matches do not crowd out its own.
CANDIDATES = 40
_ONE_SESSION_WIDENING = 10


@dataclass(frozen=True)
class QuestionSeed:
    """A session written for a question: the file, and the sessions its chunks came from."""

    result: DistillResult
    sessions: tuple[str, ...]
    candidates: int
    reranked: tuple[int, ...] = ()  # full-text ranks (1-based) the model put first, in order
    # The question's search words the chunk holding most of them holds, and all of them: a
    # seed for a question no session talks about still holds the best of weak matches.
    words_found: tuple[str, ...] = ()
    words: tuple[str, ...] = ()


def question_chunks(
    conn: duckdb.DuckDBPyConnection,
    question: str,
    session_key: str | None = None,
    limit: int = CANDIDATES,
    ranker: PassageRanker | None = None,
    weights: tuple[float, float] = (QUESTION_WEIGHT, STATIC_WEIGHT),
) -> tuple[list[ScoredChunk], list[int]]:
    """The scored chunks full-text search finds for ``question`` (the ``limit`` best; of
    ``session_key`` only when given), each with its question-weighted score in place of its
    consensus, in chronological order (by their first event's time, then session and
    position); and the full-text ranks (1-based) ``ranker`` put first, when given (see the
    module docstring). Needs a built search index; empty when nothing matches."""
    wide = limit if session_key is None else limit * _ONE_SESSION_WIDENING
    found = [c for c in search(conn, question, ["sessions"], limit=wide) if c.consensus is not None]
    session_of = _sessions_of(conn, [c.ref for c in found])
    if session_key is not None:
        found = [c for c in found if session_of.get(c.ref) == session_key]
    found = found[:limit]
    if not found:
        return [], []
    best = max(c.bm25 for c in found) or 1.0
    relevance = {c.ref: 10.0 * c.bm25 / best for c in found}
    picked: list[int] = []
    if ranker is not None:
        shown = found[:RERANK_TOP]  # best first, as the search returns them
        answer = ranker(question, [c.body[:RERANK_CHARS] for c in shown])
        picked = [i for i in dict.fromkeys(answer) if isinstance(i, int) and 0 <= i < len(shown)]
        for n, i in enumerate(picked):
            ref = shown[i].ref
            relevance[ref] = max(relevance[ref], 10.0 - n, 6.0)
    question_weight, static_weight = weights
    score = {
        c.ref: question_weight * relevance[c.ref] + static_weight * float(c.consensus or 0.0)
        for c in found
    }
    keys = sorted({session_of[ref] for ref in score})
    chunks = [
        chunk
        for stored in load_chunks_many(conn, keys).values()
        for chunk in stored
        if chunk.id in score
    ]
    chunks.sort(key=lambda c: (c.first_timestamp or "", c.session_key, c.chunk_index))
    return [ScoredChunk(c, round(score[c.id], 4)) for c in chunks], [i + 1 for i in picked]


def _sessions_of(conn: duckdb.DuckDBPyConnection, chunk_ids: Sequence[str]) -> dict[str, str]:
    """``chunk id -> session key`` of ``chunk_ids``."""
    if not chunk_ids:
        return {}
    rows = conn.execute(
        "SELECT id, session_key FROM chunks WHERE list_contains(?, id)", [list(chunk_ids)]
    ).fetchall()
    return dict(rows)


def seed_for_question(
    conn: duckdb.DuckDBPyConnection,
    question: str,
    platform: str,
    out_dir: Path,
    config: DistillerConfig,
    now: datetime,
    model: str | None = None,
    session_key: str | None = None,
    ranker: PassageRanker | None = None,
    weights: tuple[float, float] = (QUESTION_WEIGHT, STATIC_WEIGHT),
) -> QuestionSeed | None:
    """Write a ``platform`` session file under ``out_dir`` from the chunks of
    :func:`question_chunks`, chosen by their question-weighted score (``config``'s budget
    and minimum apply to that score; its sort mode is taken as ``consensus``); the file's
    time is its newest chunk's, or ``now``; ``weights``: of relevance and of consensus in
    the score; ``ranker``: a model's reading of the best
    candidates (see the module docstring). The file names the sessions and platforms of the
    chunks it holds. None when no scored chunk matches the question; raises
    :class:`NoChunkChosenError` when chunks match but none is chosen. Writes only the file."""
    scored, reranked = question_chunks(conn, question, session_key, ranker=ranker, weights=weights)
    if not scored:
        return None
    by_score = replace(config, sort_by="consensus")
    # The chunks are chosen with the provenance of every candidate in the preamble (the
    # longest it can be); the file then names only the sessions of the chunks it holds.
    sessions = load_session_files_many(conn, sorted({s.chunk.session_key for s in scored}))
    widest = _seed_meta(question, platform, scored, sessions, now)
    chosen, _ = select_for_file(scored, widest, platform, by_score, model)
    kept = list(chosen.chunks)
    if not kept:
        raise NoChunkChosenError(
            len(scored), chosen.below_consensus, by_score.min_consensus, by_score.max_tokens
        )
    kept_sessions = {key: sessions[key] for key in sorted({s.chunk.session_key for s in kept})}
    meta = _seed_meta(question, platform, kept, kept_sessions, now)
    result = write_distilled_file(kept, meta, platform, by_score, out_dir, model=model)
    distilled = replace(
        result.distilled,
        dropped_chunks=chosen.dropped_chunks,
        below_consensus=chosen.below_consensus,
    )
    words, found = best_coverage(question, [s.chunk.text for s in kept])
    return QuestionSeed(
        replace(result, distilled=distilled),
        tuple(kept_sessions),
        len(scored),
        tuple(reranked),
        found,
        words,
    )


def best_coverage(question: str, texts: Sequence[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The question's search words, and those of them the text holding most of them holds
    (compared as stems)."""
    words = tuple(query_terms(question))
    if not words or not texts:
        return words, ()
    matcher = CoverageMatcher(list(words))
    best = max((matcher.found(text) for text in texts), key=len)
    return words, tuple(w for w in words if term_stem(w) in best)


class NoChunkChosenError(LookupError):
    """Chunks match the question, but none is written: each scores under the minimum, or
    none fits the budget."""

    def __init__(
        self, candidates: int, below_minimum: int, min_consensus: float, max_tokens: int
    ) -> None:
        self.candidates = candidates
        self.below_minimum = below_minimum
        self.min_consensus = min_consensus
        self.max_tokens = max_tokens
        super().__init__(
            f"{candidates} chunk(s) match the question: {below_minimum} under the minimum "
            f"score {min_consensus:g}, the others too large for {max_tokens} tokens"
        )


def _seed_meta(
    question: str,
    platform: str,
    scored: Sequence[ScoredChunk],
    sessions: Mapping[str, SessionFileRow],
    now: datetime,
) -> SeedMeta:
    """The identity of the session written for ``question`` from ``scored``: its sources'
    sessions and platforms, and the project it resumes in (the most common project that is
    a folder; a Gemini session knows its project only by a hash of it)."""
    platforms = [sessions[s.chunk.session_key].platform for s in scored]
    projects = [sessions[s.chunk.session_key].project or "" for s in scored]
    folders = [p for p in projects if p and not is_project_hash(p)]
    digest = hashlib.sha256(question.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    return SeedMeta(
        key=f"question:{digest}:{platform}",
        source_platform=Counter(platforms).most_common(1)[0][0],
        source_platforms=tuple(sorted(set(platforms))),
        source_sessions=tuple(
            row.source_session_id or row.session_key for _, row in sorted(sessions.items())
        ),
        cwd=Counter(folders or projects).most_common(1)[0][0] or "/",
        created_at=newest_time(scored, now),
        title=f"Distilled for the question: {' '.join(question.split())[:80]}",
        question=question,
    )
