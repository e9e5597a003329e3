"""Per-session steps of the sessions graph over DuckDB, free of Dagster.

Each ``*_session`` function computes first and then rewrites the rows of one session key in
one transaction (delete-then-insert), so a re-run is idempotent and a crash leaves either
the old rows or the new ones, never a mix. The Dagster assets call these.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import duckdb
import pandas as pd

from selene_dag.context.tokens import count_tokens, count_tokens_batch
from selene_dag.llm.prompts import load_prompt
from selene_dag.sessions.assessors import (
    Assessor,
    ChunkView,
    NamedAssessment,
    importance_assessment,
    run_assessors,
)
from selene_dag.sessions.chunker import Chunk, ChunkConfig, build_chunks
from selene_dag.sessions.consensus import AssessmentScore, ConsensusConfig, compute_consensus
from selene_dag.sessions.distiller import DistilledSession, DistillerConfig, ScoredChunk, distill
from selene_dag.sessions.generators import SeedMeta, overhead_tokens, write_session
from selene_dag.sessions.parsers import ParseStats, iter_events
from selene_dag.sessions.parsers.model import SessionEvent
from selene_dag.sessions.redact import redact_counts
from selene_dag.sessions.scanner import ScannedFile, scan_roots
from selene_dag.sessions.scoring import CODE_FENCE, is_file_edit, score_events
from selene_dag.config import Settings
from selene_dag.store import transaction

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
)


def _hash(*parts: object) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(repr(part).encode("utf-8"))
    return digest.hexdigest()[:32]


def find_session_file(settings: Settings, session_key: str) -> ScannedFile:
    """The scanned file whose key is ``session_key``; ValueError when no root holds it."""
    for scanned in scan_roots(settings.session_roots):
        if scanned.session_key == session_key:
            return scanned
    raise ValueError(
        f"no session file with key {session_key!r} under the configured roots "
        "(SELENE_SESSION_ROOTS); it was moved or deleted"
    )


def file_sha256(path: Path | str) -> str:
    """SHA-256 of a file, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@dataclass
class IngestResult:
    """Outcome of :func:`ingest_session`."""

    session_key: str
    events: int
    parse_errors: int
    error_samples: list[str]
    duplicates: int
    redactions: Counter[str] = field(default_factory=Counter)
    kinds: Counter[str] = field(default_factory=Counter)
    data_version: str = ""
    own_assessment: bool = False


def normalize_events(
    scanned: ScannedFile, model: str | None = None
) -> tuple[list[SessionEvent], ParseStats, Counter[str]]:
    """Parse (streaming), redact every text, score importance and count tokens."""
    stats = ParseStats()
    redactions: Counter[str] = Counter()
    events: list[SessionEvent] = []
    for event in iter_events(scanned.path, scanned.platform, stats):
        if event.text:
            event.text, counts = redact_counts(event.text)
            redactions.update(counts)
        events.append(event)
    score_events(events)
    if events:
        for event, n in zip(
            events, count_tokens_batch([e.text for e in events], model=model), strict=True
        ):
            event.tokens = n
    return events, stats, redactions


# How far into the first prompt the assessment prompt's opening may sit (a CLI may put its
# own instruction before the piped text).
_MARKER_WINDOW = 2000


def is_own_assessment(events: Sequence[SessionEvent]) -> bool:
    """True when the session's first user prompt is selene-dag's own chunk-assessment
    prompt: the transcript a CLI assessor left behind (Gemini CLI has no flag to skip
    it). Ingesting it would make the pipeline feed on its own output."""
    marker = load_prompt("assess_chunk").text.strip().splitlines()[0].strip()
    for event in events:
        if event.kind == "user_prompt":
            return marker in event.text[:_MARKER_WINDOW]
    return False


def ingest_session(
    conn: duckdb.DuckDBPyConnection, scanned: ScannedFile, now: datetime, model: str | None = None
) -> IngestResult:
    """Parse, redact, score one file and rewrite its ``session_files`` and ``session_events`` rows.

    A transcript of selene-dag's own assessment run (:func:`is_own_assessment`) keeps its
    ``session_files`` row with no events (``IngestResult.own_assessment``)."""
    sha = file_sha256(scanned.path)
    events, stats, redactions = normalize_events(scanned, model)
    own = is_own_assessment(events)
    if own:
        events = []
    frame = pd.DataFrame(
        [
            (
                scanned.session_key,
                e.seq,
                e.session_id,
                e.platform,
                e.timestamp,
                e.role,
                e.kind,
                e.text,
                e.tool_name,
                list(e.file_paths),
                e.is_error,
                e.is_sidechain,
                e.tokens,
                e.importance,
                e.raw_type,
                e.line,
            )
            for e in events
        ],
        columns=list(EVENT_COLUMNS),
    )
    key = scanned.session_key
    with transaction(conn):
        conn.execute("DELETE FROM session_events WHERE session_key = ?", [key])
        conn.execute("DELETE FROM session_files WHERE session_key = ?", [key])
        if len(frame):
            conn.register("_events_frame", frame)
            try:
                conn.execute(
                    f"INSERT INTO session_events ({', '.join(EVENT_COLUMNS)}) "
                    f"SELECT {', '.join(EVENT_COLUMNS)} FROM _events_frame"
                )
            finally:
                conn.unregister("_events_frame")
        conn.execute(
            "INSERT INTO session_files (session_key, path, platform, project, source_session_id, size, "
            "mtime, sha256, events, parse_errors, error_samples, duplicates, redactions, scanned_at, "
            "parsed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                key,
                scanned.path,
                scanned.platform,
                stats.project,
                stats.session_id,
                scanned.size,
                scanned.mtime,
                sha,
                len(events),
                stats.errors,
                stats.error_samples,
                stats.duplicates,
                sum(redactions.values()),
                now,
                now,
            ],
        )
    version = events_version(events)
    return IngestResult(
        session_key=key,
        events=len(events),
        parse_errors=stats.errors,
        error_samples=stats.error_samples,
        duplicates=stats.duplicates,
        redactions=redactions,
        kinds=Counter(e.kind for e in events),
        data_version=version,
        own_assessment=own,
    )


def events_version(events: Sequence[SessionEvent]) -> str:
    """Data version of a session's events: what its chunks and scores are computed from."""
    return _hash([(e.seq, e.kind, e.text, e.importance, e.tool_name, e.is_error) for e in events])


def archived_session(conn: duckdb.DuckDBPyConnection, session_key: str) -> IngestResult | None:
    """The stored state of a session whose file is gone (agents delete old transcripts,
    Claude Code after 30 days by default): its rows are the archive and stay; None when
    the session was never ingested. The data version equals the one of its last ingest,
    so nothing downstream turns stale."""
    row = conn.execute(
        "SELECT parse_errors, duplicates FROM session_files WHERE session_key = ?", [session_key]
    ).fetchone()
    if row is None:
        return None
    events = load_events(conn, session_key)
    return IngestResult(
        session_key=session_key,
        events=len(events),
        parse_errors=int(row[0] or 0),
        error_samples=[],
        duplicates=int(row[1] or 0),
        kinds=Counter(e.kind for e in events),
        data_version=events_version(events),
    )


def load_events(conn: duckdb.DuckDBPyConnection, session_key: str) -> list[SessionEvent]:
    """The stored (redacted, scored) events of one session, in seq order."""
    rows = conn.execute(
        "SELECT session_id, platform, seq, ts, role, kind, text, tool_name, file_paths, is_error, "
        "is_sidechain, tokens, raw_type, line, importance FROM session_events "
        "WHERE session_key = ? ORDER BY seq",
        [session_key],
    ).fetchall()
    return [
        SessionEvent(
            r[0],
            r[1],
            r[2],
            r[3],
            r[4],
            r[5],
            r[6],
            r[7],
            tuple(r[8] or ()),
            r[9],
            r[10],
            r[11],
            r[12] or "",
            r[13] or 0,
            r[14],
        )
        for r in rows
    ]


def chunk_session(
    conn: duckdb.DuckDBPyConnection,
    session_key: str,
    config: ChunkConfig = ChunkConfig(),
    model: str | None = None,
) -> tuple[list[Chunk], str]:
    """Rebuild the ``chunks`` rows of one session; returns the chunks and a data version."""
    chunks = build_chunks(load_events(conn, session_key), session_key, config, model=model)
    with transaction(conn):
        conn.execute("DELETE FROM chunks WHERE session_key = ?", [session_key])
        if chunks:
            conn.executemany(
                "INSERT INTO chunks (id, session_key, chunk_index, first_seq, last_seq, seqs, text, "
                "token_count, importance_avg, event_count, first_ts, last_ts) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    [
                        c.id,
                        c.session_key,
                        c.chunk_index,
                        c.first_seq,
                        c.last_seq,
                        list(c.seqs),
                        c.text,
                        c.token_count,
                        c.importance_avg,
                        c.event_count,
                        c.first_timestamp,
                        c.last_timestamp,
                    ]
                    for c in chunks
                ],
            )
    return chunks, _hash([(c.id, c.text) for c in chunks])


def load_chunks(conn: duckdb.DuckDBPyConnection, session_key: str) -> list[Chunk]:
    """The stored chunks of one session, in chunk order."""
    rows = conn.execute(
        "SELECT id, session_key, chunk_index, first_seq, last_seq, text, token_count, importance_avg, "
        "event_count, seqs, first_ts, last_ts FROM chunks WHERE session_key = ? ORDER BY chunk_index",
        [session_key],
    ).fetchall()
    return [
        Chunk(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], tuple(r[9] or ()), r[10], r[11])
        for r in rows
    ]


def chunk_views(conn: duckdb.DuckDBPyConnection, session_key: str) -> list[ChunkView]:
    """Assessor inputs for every chunk of one session (text plus event features)."""
    events = {e.seq: e for e in load_events(conn, session_key)}
    views = []
    for c in load_chunks(conn, session_key):
        members = [events[s] for s in c.seqs if s in events]
        views.append(
            ChunkView(
                chunk_id=c.id,
                text=c.text,
                importance_avg=c.importance_avg,
                kinds=tuple(e.kind for e in members),
                errors=sum(e.is_error or e.kind == "error" for e in members),
                file_edits=sum(is_file_edit(e.kind, e.tool_name, e.text) for e in members),
                code_blocks=sum(CODE_FENCE in e.text for e in members),
            )
        )
    return views


@dataclass
class ScoreResult:
    """Outcome of :func:`score_session`."""

    chunks: int
    assessments: int
    sufficient: int
    assessors: Counter[str]
    data_version: str
    cli_errors: list[str] = field(default_factory=list)


def score_session(
    conn: duckdb.DuckDBPyConnection,
    session_key: str,
    assessors: Sequence[tuple[str, Assessor]],
    now: datetime,
    cli_names: Sequence[str] = (),
    consensus: ConsensusConfig = ConsensusConfig(),
    cli_timeout: float = 30.0,
) -> ScoreResult:
    """Assess every chunk of one session and rewrite its ``assessments`` and ``chunk_scores``.

    ``assessors`` run in process; ``cli_names`` are CLI assessors (already filtered to those
    on PATH) whose failures are reported in ``cli_errors`` and do not fail the step.
    """
    views = chunk_views(conn, session_key)
    rows_a: list[list[object]] = []
    rows_s: list[list[object]] = []
    used: Counter[str] = Counter()
    cli_errors: list[str] = []
    sufficient = 0
    for view in views:
        named: list[NamedAssessment] = run_assessors(view, assessors)
        if cli_names:
            from selene_dag.llm.cli_assessors import assess_with_clis

            for result in assess_with_clis(view.text, list(cli_names), timeout=cli_timeout):
                if result.ok and result.assessment is not None:
                    named.append(NamedAssessment(result.name, result.assessment))
                elif result.error:
                    cli_errors.append(result.error)
        for n in named:
            a = n.assessment
            used[n.assessor] += 1
            rows_a.append(
                [
                    view.chunk_id,
                    session_key,
                    n.assessor,
                    a.relevance,
                    a.signal_density,
                    a.reusability,
                    a.overall,
                    a.reason,
                    now,
                ]
            )
        result = compute_consensus(
            [AssessmentScore(n.assessor, n.assessment.overall) for n in named], consensus
        )
        sufficient += result.sufficient
        rows_s.append(
            [
                view.chunk_id,
                session_key,
                result.score,
                result.n_assessments,
                list(result.assessors),
                list(result.dropped),
                result.sufficient,
            ]
        )
    with transaction(conn):
        conn.execute("DELETE FROM assessments WHERE session_key = ?", [session_key])
        conn.execute("DELETE FROM chunk_scores WHERE session_key = ?", [session_key])
        if rows_a:
            conn.executemany(
                "INSERT INTO assessments (chunk_id, session_key, assessor, relevance, signal_density, "
                "reusability, overall, reason, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                rows_a,
            )
        if rows_s:
            conn.executemany(
                "INSERT INTO chunk_scores (chunk_id, session_key, consensus, n_assessments, assessors, "
                "dropped, sufficient) VALUES (?, ?, ?, ?, ?, ?, ?)",
                rows_s,
            )
    version = _hash(
        sorted((r[0], r[2], r[3]) for r in rows_a), sorted((r[0], r[2]) for r in rows_s)
    )
    return ScoreResult(len(views), len(rows_a), sufficient, used, version, cli_errors)


def default_assessors(
    extractive_engine: object, model_engine: object | None = None
) -> list[tuple[str, Assessor]]:
    """``extractive`` (content) and ``importance`` (structure), plus ``ollama`` when given."""
    out: list[tuple[str, Assessor]] = [
        ("extractive", lambda v: extractive_engine.assess_chunk(v.text)),  # type: ignore[attr-defined]
        ("importance", importance_assessment),
    ]
    if model_engine is not None:
        out.append(
            (getattr(model_engine, "name", "ollama"), lambda v: model_engine.assess_chunk(v.text))
        )  # type: ignore[attr-defined]
    return out


def load_scored(conn: duckdb.DuckDBPyConnection, session_key: str) -> list[ScoredChunk]:
    """Chunks of one session with their consensus, in chronological (chunk) order."""
    scores = dict(
        conn.execute(
            "SELECT chunk_id, consensus FROM chunk_scores WHERE session_key = ?", [session_key]
        ).fetchall()
    )
    return [
        ScoredChunk(c, float(scores[c.id]))
        for c in load_chunks(conn, session_key)
        if c.id in scores
    ]


@dataclass
class DistillResult:
    """Outcome of :func:`distill_session`."""

    path: Path
    platform: str
    distilled: DistilledSession
    tokens: int
    data_version: str


def _created_at(chunks: Sequence[ScoredChunk], now: datetime) -> str:
    stamps = [s.chunk.last_timestamp for s in chunks if s.chunk.last_timestamp]
    if stamps:
        return max(stamps)
    return now.strftime("%Y-%m-%dT%H:%M:%S.000Z")


def distill_session(
    conn: duckdb.DuckDBPyConnection,
    session_key: str,
    out_dir: Path,
    now: datetime,
    config: DistillerConfig = DistillerConfig(),
    platform: str | None = None,
    model: str | None = None,
) -> DistillResult:
    """Select chunks within budget, write the resumable file, rewrite the ``distilled_sessions`` row.

    ``platform`` None writes the source's own format. The file's texts (preamble, wrappers
    and chunks) count at most ``config.max_tokens`` in the target model's tokens.
    """
    row = conn.execute(
        "SELECT platform, project, source_session_id FROM session_files WHERE session_key = ?",
        [session_key],
    ).fetchone()
    if row is None:
        raise ValueError(f"session {session_key!r} has not been ingested (no session_files row)")
    source_platform, project, source_id = row
    return _write_distillation(
        conn,
        session_key,
        project,
        source_platform,
        (source_id or session_key,),
        f"Distilled {source_platform} session {source_id or session_key}",
        load_scored(conn, session_key),
        out_dir,
        now,
        config,
        platform or source_platform,
        model,
    )


def project_names(conn: duckdb.DuckDBPyConnection) -> list[str]:
    """Projects (working directories) with at least one scored session."""
    rows = conn.execute(
        "SELECT DISTINCT f.project FROM session_files f JOIN chunk_scores s USING (session_key) "
        "WHERE f.project IS NOT NULL ORDER BY 1"
    ).fetchall()
    return [r[0] for r in rows]


def distill_project(
    conn: duckdb.DuckDBPyConnection,
    project: str,
    out_dir: Path,
    now: datetime,
    config: DistillerConfig = DistillerConfig(),
    platform: str | None = None,
    model: str | None = None,
) -> DistillResult:
    """One distillation over every scored session of ``project`` (seed 003's per-project run).

    Chunks of all its sessions compete for one budget; the file is written in the platform
    most of the project's sessions use unless ``platform`` says otherwise; its row has
    ``session_key = 'project:<project>'``.
    """
    sessions = conn.execute(
        "SELECT f.session_key, f.platform, f.source_session_id FROM session_files f "
        "WHERE f.project = ? AND EXISTS (SELECT 1 FROM chunk_scores s WHERE s.session_key = f.session_key) "
        "ORDER BY (SELECT min(ts) FROM session_events e WHERE e.session_key = f.session_key) NULLS LAST, "
        "f.session_key",
        [project],
    ).fetchall()
    if not sessions:
        raise ValueError(f"project {project!r} has no scored session")
    platforms = [p for _, p, _ in sessions]
    source_platform = max(sorted(set(platforms)), key=platforms.count)
    scored = [s for key, _, _ in sessions for s in load_scored(conn, key)]
    return _write_distillation(
        conn,
        f"project:{project}",
        project,
        source_platform,
        tuple(source_id or key for key, _, source_id in sessions),
        f"Distilled project {project} ({len(sessions)} sessions)",
        scored,
        out_dir,
        now,
        config,
        platform or source_platform,
        model,
    )


def _write_distillation(
    conn: duckdb.DuckDBPyConnection,
    key: str,
    project: str | None,
    source_platform: str,
    source_ids: tuple[str, ...],
    title: str,
    scored: list[ScoredChunk],
    out_dir: Path,
    now: datetime,
    config: DistillerConfig,
    target: str,
    model: str | None,
) -> DistillResult:
    meta = SeedMeta(
        key=f"{key}:{target}",
        source_platform=source_platform,
        source_sessions=source_ids,
        cwd=project or "/",
        created_at=_created_at(scored, now),
        title=title,
    )
    reserve, per_chunk = overhead_tokens(target, meta, len(scored), model=model)
    result = distill(scored, config, reserve_tokens=reserve, per_chunk_tokens=per_chunk)
    tokens = reserve + sum(s.chunk.token_count + per_chunk for s in result.chunks)
    previous = conn.execute(
        "SELECT path FROM distilled_sessions WHERE session_key = ? AND platform = ?",
        [key, target],
    ).fetchall()
    path = write_session(target, result, meta, out_dir / target)
    for (old,) in previous:
        if old != str(path) and Path(old).is_file() and Path(old).parent == path.parent:
            Path(old).unlink()
    with transaction(conn):
        conn.execute(
            "DELETE FROM distilled_sessions WHERE session_key = ? AND platform = ?",
            [key, target],
        )
        conn.execute(
            "INSERT INTO distilled_sessions (session_key, project, platform, source_platform, path, tokens, "
            "budget, chunk_count, dropped_chunks, sort_mode, min_consensus, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                key,
                project,
                target,
                source_platform,
                str(path),
                tokens,
                config.max_tokens,
                len(result.chunks),
                result.dropped_chunks,
                config.sort_by,
                config.min_consensus,
                now,
            ],
        )
    version = hashlib.sha256(path.read_bytes()).hexdigest()[:32]
    return DistillResult(path, target, result, tokens, version)


def file_content_tokens(path: Path, model: str | None = None) -> int:
    """Tokens of every user/assistant text in a generated file, re-read with our parser."""
    from selene_dag.sessions.parsers import parse_file

    texts = [
        e.text
        for e in parse_file(path).events
        if e.kind in ("user_prompt", "summary") and e.raw_type != "summary"
    ]
    return sum(count_tokens(t, model=model) for t in texts)


__all__ = [
    "DistillResult",
    "IngestResult",
    "ScoreResult",
    "archived_session",
    "chunk_session",
    "default_assessors",
    "distill_project",
    "distill_session",
    "file_content_tokens",
    "find_session_file",
    "ingest_session",
    "load_chunks",
    "load_events",
    "load_scored",
    "normalize_events",
    "project_names",
    "score_session",
]
