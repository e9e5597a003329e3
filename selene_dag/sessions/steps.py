"""Per-session steps of the sessions graph over DuckDB, free of Dagster.

Each ``*_session`` function computes first and then rewrites the rows of one session key
through :mod:`selene_dag.sessions.store` (delete-then-insert in one transaction), so a
re-run is idempotent and a crash leaves either the old rows or the new ones, never a mix.
Each returns a data version: a content hash of what the next step reads. The Dagster
assets call these.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import duckdb

from selene_dag.config import Settings
from selene_dag.context.tokens import count_tokens_batch
from selene_dag.errors import NotFoundError, UsageError
from selene_dag.llm.prompts import load_prompt
from selene_dag.redact import RULES_VERSION, redact_counts
from selene_dag.sessions.assessors import (
    Assessor,
    ChunkView,
    NamedAssessment,
    importance_assessment,
    run_assessors,
)
from selene_dag.sessions.chunker import Chunk, ChunkConfig, build_chunks, chunk_line, is_chunked
from selene_dag.sessions.consensus import AssessmentScore, ConsensusConfig, compute_consensus
from selene_dag.sessions.distiller import DistilledSession, DistillerConfig, ScoredChunk, distill
from selene_dag.sessions.generators import SeedMeta, overhead_tokens, write_session
from selene_dag.sessions.parsers import ParseStats, iter_events
from selene_dag.sessions.parsers.model import SessionEvent
from selene_dag.sessions.parsers.timestamps import format_utc
from selene_dag.sessions.scanner import (
    ScannedFile,
    not_a_transcript,
    platform_mismatch,
    scan_roots,
)
from selene_dag.sessions.scoring import CODE_FENCE, is_file_edit, score_events
from selene_dag.sessions.store import (
    AssessmentRow,
    ChunkScoreRow,
    DistillationRow,
    SessionFileRow,
    distilled_paths,
    distilled_paths_many,
    load_chunks,
    load_events,
    load_events_many,
    load_scored,
    load_scored_many,
    load_session_file,
    load_session_files_many,
    project_names,
    replace_distillations,
    replace_session,
    scored_session_files,
)
from selene_dag.text import hash_rows


class SessionNotFoundError(NotFoundError, ValueError):
    """Something a sessions request names does not exist: a session file, an ingested or
    scored session, a chunk, the database. Also a ``ValueError``, the contract these
    functions had before the :class:`~selene_dag.errors.SeleneError` family, which the
    ``session_events`` asset still catches."""


# A project's distilled file is a row of distilled_sessions keyed 'project:<project>'.
PROJECT_PREFIX = "project:"


def find_session_file(settings: Settings, session_key: str) -> ScannedFile:
    """The scanned file whose key is ``session_key``; :class:`SessionNotFoundError` when no
    root holds it."""
    for scanned in scan_roots(settings.session_roots):
        if scanned.session_key == session_key:
            return scanned
    raise SessionNotFoundError(
        f"no session file with key {session_key!r} under the configured roots "
        "(SELENE_SESSION_ROOTS); it was moved or deleted"
    )


def scanned_by_key(settings: Settings) -> dict[str, ScannedFile]:
    """Every scanned file under the roots by its session key (one walk for a whole batch)."""
    return {f.session_key: f for f in scan_roots(settings.session_roots)}


def file_sha256(path: Path | str) -> str:
    """SHA-256 of a file, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


# --- ingest ------------------------------------------------------------------------------


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
    unfinished_line: int | None = None  # a last line still being written, read next time


@dataclass(frozen=True)
class KnownTokens:
    """What a session's stored events already hold: token counts in one model, by event
    text and by chunk line (``render_event`` + a line break); and ``redacted``, their texts
    when the current redaction rules wrote them (such a text is not redacted again)."""

    texts: dict[str, int] = field(default_factory=dict)
    lines: dict[str, int] = field(default_factory=dict)
    redacted: set[str] = field(default_factory=set)


def known_tokens(conn: duckdb.DuckDBPyConnection, session_key: str, model: str) -> KnownTokens:
    """What ``session_key``'s stored events hold (:class:`KnownTokens`): their counts when
    they are in ``model``'s tokens, their texts when the current redaction rules wrote
    them (empty otherwise): a transcript that grew is re-read counting and redacting only
    its new events."""
    row = load_session_file(conn, session_key)
    counted = row is not None and row.token_model == model
    redacted = row is not None and row.redaction == RULES_VERSION
    known = KnownTokens()
    if not counted and not redacted:
        return known
    for event in load_events(conn, session_key):
        if redacted and event.text:
            known.redacted.add(event.text)
        if counted and event.tokens is not None:
            known.texts[event.text] = event.tokens
        if counted and event.line_tokens is not None:
            known.lines[chunk_line(event)] = event.line_tokens
    return known


def normalize_events(
    scanned: ScannedFile, model: str | None = None, known: KnownTokens | None = None
) -> tuple[list[SessionEvent], ParseStats, Counter[str]]:
    """Parse (streaming), redact every text, score importance and count tokens: of each
    event's text, and of its chunk line when the chunker keeps it by default (a count in
    ``known`` is taken as it is, and a text ``known.redacted`` holds is not redacted
    again: redaction leaves its own output as it is)."""
    mismatch = platform_mismatch(scanned.path, scanned.platform)
    if mismatch is not None:  # a Codex rollout dropped under claude=: no Claude events in it
        raise UsageError(f"{mismatch}; it is not read (a root of its own tool reads it)")
    stats = ParseStats()
    redactions: Counter[str] = Counter()
    events: list[SessionEvent] = []
    known = known or KnownTokens()
    for event in iter_events(scanned.path, scanned.platform, stats):
        if event.text and event.text not in known.redacted:
            event.text, counts = redact_counts(event.text)
            redactions.update(counts)
        events.append(event)
    if stats.lines and not any(e.text for e in events):
        foreign = not_a_transcript(scanned.path, scanned.platform, stats)
        if foreign is not None:
            raise UsageError(foreign)
    score_events(events)
    chunked = [e for e in events if is_chunked(e, ChunkConfig())]
    lines = [chunk_line(e) for e in chunked]
    texts = [e.text for e in events]
    todo = list(
        dict.fromkeys(
            [t for t in texts if t not in known.texts] + [x for x in lines if x not in known.lines]
        )
    )
    counted = dict(zip(todo, count_tokens_batch(todo, model=model), strict=True)) if todo else {}
    for event, text in zip(events, texts, strict=True):
        event.tokens = known.texts.get(text, counted.get(text))
    for event, line in zip(chunked, lines, strict=True):
        event.line_tokens = known.lines.get(line, counted.get(line))
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


def events_version(events: Sequence[SessionEvent]) -> str:
    """Data version of a session's events: what its chunks and scores are computed from."""
    return hash_rows(
        (e.seq, e.kind, e.text, e.importance, e.tool_name, e.is_error, e.abandoned) for e in events
    )


@dataclass
class ReadSession:
    """One session file read for ingest: its ``session_files`` row, its events (none for
    selene-dag's own assessment run) and the outcome to report once they are stored."""

    file_row: SessionFileRow
    events: list[SessionEvent]
    result: IngestResult


def read_session(
    scanned: ScannedFile,
    now: datetime,
    model: str | None = None,
    known: KnownTokens | None = None,
) -> ReadSession:
    """Parse, redact and score one file, without writing: :func:`ingest_session` without
    the store, for a step that writes many files at once (``replace_sessions``). ``known``:
    token counts of its stored events (:func:`known_tokens`), taken instead of counting.

    A transcript of selene-dag's own assessment run (:func:`is_own_assessment`) keeps its
    ``session_files`` row with no events (``IngestResult.own_assessment``)."""
    sha = file_sha256(scanned.path)
    events, stats, redactions = normalize_events(scanned, model, known)
    own = is_own_assessment(events)
    if own:
        events = []
    file_row = SessionFileRow(
        session_key=scanned.session_key,
        path=scanned.path,
        platform=scanned.platform,
        project=stats.project,
        source_session_id=stats.session_id,
        size=scanned.size,
        mtime=scanned.mtime,
        sha256=sha,
        events=len(events),
        parse_errors=stats.errors,
        error_samples=stats.error_samples,
        duplicates=stats.duplicates,
        redactions=sum(redactions.values()),
        scanned_at=now,
        parsed_at=now,
        parent_session_id=stats.parent_session_id,
        token_model=model,
        redaction=RULES_VERSION,
    )
    result = IngestResult(
        session_key=scanned.session_key,
        events=len(events),
        parse_errors=stats.errors,
        error_samples=stats.error_samples,
        duplicates=stats.duplicates,
        redactions=redactions,
        kinds=Counter(e.kind for e in events),
        data_version=events_version(events),
        own_assessment=own,
        unfinished_line=stats.unfinished_line,
    )
    return ReadSession(file_row, events, result)


def ingest_session(
    conn: duckdb.DuckDBPyConnection, scanned: ScannedFile, now: datetime, model: str | None = None
) -> IngestResult:
    """Parse, redact, score one file and rewrite its ``session_files`` and ``session_events``
    rows (:func:`read_session`, then ``replace_session``)."""
    read = read_session(scanned, now, model)
    replace_session(conn, read.file_row, read.events)
    return read.result


def archived_session(conn: duckdb.DuckDBPyConnection, session_key: str) -> IngestResult | None:
    """The stored state of a session whose file is gone (agents delete old transcripts,
    Claude Code after 30 days by default): its rows are the archive and stay; None when
    the session was never ingested. The data version equals the one of its last ingest,
    so nothing downstream turns stale."""
    row = load_session_file(conn, session_key)
    if row is None:
        return None
    events = load_events(conn, session_key)
    return IngestResult(
        session_key=session_key,
        events=len(events),
        parse_errors=int(row.parse_errors or 0),
        error_samples=[],
        duplicates=int(row.duplicates or 0),
        kinds=Counter(e.kind for e in events),
        data_version=events_version(events),
    )


# --- chunk -------------------------------------------------------------------------------


def events_to_chunk(
    conn: duckdb.DuckDBPyConnection, session_keys: Sequence[str], model: str | None
) -> dict[str, list[SessionEvent]]:
    """The stored events of ``session_keys`` (:func:`load_events_many`), their chunk-line
    counts kept only where they are in ``model``'s tokens (the chunker counts the others)."""
    events = load_events_many(conn, session_keys)
    counted_in = {
        k: row.token_model for k, row in load_session_files_many(conn, session_keys).items()
    }
    for key, stored in events.items():
        if counted_in.get(key) != model:
            for event in stored:
                event.line_tokens = None
    return events


def session_chunks_of(
    events: Sequence[SessionEvent],
    session_key: str,
    config: ChunkConfig = ChunkConfig(),
    model: str | None = None,
) -> tuple[list[Chunk], str]:
    """The chunks of one session's stored ``events`` and their data version, without
    writing: a step writes many sessions' chunks at once (``replace_chunks_many``)."""
    chunks = build_chunks(events, session_key, config, model=model)
    return chunks, hash_rows((c.id, c.text) for c in chunks)


def chunk_views(conn: duckdb.DuckDBPyConnection, session_key: str) -> list[ChunkView]:
    """Assessor inputs for every chunk of one session (text plus event features)."""
    return chunk_views_of(load_events(conn, session_key), load_chunks(conn, session_key))


def chunk_views_of(events: Sequence[SessionEvent], chunks: Sequence[Chunk]) -> list[ChunkView]:
    """Assessor inputs for ``chunks`` of one session, from its stored ``events``."""
    by_seq = {e.seq: e for e in events}
    views = []
    for c in chunks:
        members = [by_seq[s] for s in c.seqs if s in by_seq]
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


# --- score -------------------------------------------------------------------------------


@dataclass
class ScoreResult:
    """Outcome of scoring one session (:func:`score_views`)."""

    chunks: int
    assessments: int
    sufficient: int
    assessors: Counter[str]
    data_version: str
    cli_errors: list[str] = field(default_factory=list)


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


@dataclass
class SessionScores:
    """A session's assessments and consensus rows, and the outcome to report once stored."""

    session_key: str
    assessments: list[AssessmentRow]
    scores: list[ChunkScoreRow]
    result: ScoreResult


def score_views(
    views: Sequence[ChunkView],
    session_key: str,
    assessors: Sequence[tuple[str, Assessor]],
    now: datetime,
    cli_names: Sequence[str] = (),
    consensus: ConsensusConfig = ConsensusConfig(),
    cli_timeout: float = 30.0,
    cli_concurrency: int = 3,
    engine: str | None = None,
) -> SessionScores:
    """Assess ``views`` (one session's chunks) and compute their consensus, without
    writing: a step writes many sessions' rows at once (``replace_scores_many``).
    ``engine``: the engine SELENE_LLM names, recorded on each ``chunk_scores`` row.

    ``assessors`` run in process; ``cli_names`` are CLI assessors (already filtered to those
    on PATH) whose failures are reported in ``cli_errors`` and do not fail the step."""
    assessments: list[AssessmentRow] = []
    scores: list[ChunkScoreRow] = []
    used: Counter[str] = Counter()
    cli_errors: list[str] = []
    sufficient = 0
    for view in views:
        # A model answering one chunk unusably leaves it to the other assessors (reported
        # with the CLI assessors' failures): it failed the whole session, on every run.
        named: list[NamedAssessment] = run_assessors(view, assessors, cli_errors)
        if cli_names:
            from selene_dag.llm.cli_assessors import assess_with_clis

            for result in assess_with_clis(
                view.text, list(cli_names), timeout=cli_timeout, max_workers=cli_concurrency
            ):
                if result.ok and result.assessment is not None:
                    named.append(NamedAssessment(result.name, result.assessment))
                elif result.error:
                    cli_errors.append(result.error)
        for n in named:
            a = n.assessment
            used[n.assessor] += 1
            assessments.append(
                AssessmentRow(
                    chunk_id=view.chunk_id,
                    session_key=session_key,
                    assessor=n.assessor,
                    relevance=a.relevance,
                    signal_density=a.signal_density,
                    reusability=a.reusability,
                    overall=a.overall,
                    reason=a.reason,
                    created_at=now,
                )
            )
        result = compute_consensus(
            [AssessmentScore(n.assessor, n.assessment.overall) for n in named], consensus
        )
        sufficient += result.sufficient
        scores.append(
            ChunkScoreRow(
                chunk_id=view.chunk_id,
                session_key=session_key,
                consensus=result.score,
                n_assessments=result.n_assessments,
                assessors=list(result.assessors),
                dropped=list(result.dropped),
                sufficient=result.sufficient,
                engine=engine,
            )
        )
    version = hash_rows(
        (
            sorted((r.chunk_id, r.assessor, r.relevance) for r in assessments),
            sorted((r.chunk_id, r.consensus) for r in scores),
        )
    )
    return SessionScores(
        session_key,
        assessments,
        scores,
        ScoreResult(len(views), len(assessments), sufficient, used, version, cli_errors),
    )


# --- distill -----------------------------------------------------------------------------


@dataclass
class DistillResult:
    """Outcome of a distillation: the written file, its platform, the selection, the
    file's tokens (preamble, wrappers and chunks) and its data version (file hash)."""

    path: Path
    platform: str
    distilled: DistilledSession
    tokens: int
    data_version: str


def newest_time(chunks: Sequence[ScoredChunk], fallback: datetime) -> str:
    """The newest of ``chunks``' last times (ISO-8601 UTC), or ``fallback`` formatted so when
    none has one: a distilled file's time."""
    stamps = [s.chunk.last_timestamp for s in chunks if s.chunk.last_timestamp]
    if stamps:
        return max(stamps)
    return format_utc(fallback)


def session_meta(session: SessionFileRow, key: str, scored: Sequence[ScoredChunk]) -> SeedMeta:
    """Identity of a file distilled from one ingested session; ``key`` drives its uuids.

    Its time is the newest chunk's timestamp; when no chunk has one (the transcript's times
    were missing or unparseable), the source file's modification time."""
    source = session.source_session_id or session.session_key
    return SeedMeta(
        key=key,
        source_platform=session.platform,
        source_sessions=(source,),
        cwd=session.project or "/",
        created_at=newest_time(scored, datetime.fromtimestamp(session.mtime, tz=UTC)),
        title=f"Distilled {session.platform} session {source}",
    )


def write_distilled_file(
    scored: Sequence[ScoredChunk],
    meta: SeedMeta,
    platform: str,
    config: DistillerConfig,
    directory: Path,
    model: str | None = None,
) -> DistillResult:
    """Select chunks of ``scored`` (:func:`select_for_file`) and write ``platform``'s
    resumable file under ``directory``. Writes only the file, never the database. Raises
    BudgetTooSmall, writing nothing, when the file's preamble alone is over the budget."""
    selection, tokens = select_for_file(scored, meta, platform, config, model)
    if tokens > config.max_tokens:
        raise BudgetTooSmall(
            f"the distilled file's preamble alone counts {tokens:,} tokens, over the budget "
            f"of {config.max_tokens:,}"
        )
    return write_selection(selection, tokens, meta, platform, directory)


class BudgetTooSmall(ValueError):
    """A distilled file's budget that holds not even its preamble (a file written anyway
    was over it, and replaced the good one)."""


def select_for_file(
    scored: Sequence[ScoredChunk],
    meta: SeedMeta,
    platform: str,
    config: DistillerConfig,
    model: str | None = None,
) -> tuple[DistilledSession, int]:
    """The chunks of ``scored`` that ``platform``'s file for ``meta`` holds, and the file's
    tokens: its texts (preamble, wrappers and chunks) count at most ``config.max_tokens``
    in the target model's tokens."""
    reserve, per_chunk = overhead_tokens(platform, meta, len(scored), model=model)
    selection = distill(scored, config, reserve_tokens=reserve, per_chunk_tokens=per_chunk)
    return selection, reserve + sum(s.chunk.token_count + per_chunk for s in selection.chunks)


def write_selection(
    selection: DistilledSession, tokens: int, meta: SeedMeta, platform: str, directory: Path
) -> DistillResult:
    """Write ``platform``'s resumable file of ``selection`` (:func:`select_for_file`, with
    its ``tokens``) under ``directory``."""
    path = write_session(platform, selection, meta, directory)
    return DistillResult(path, platform, selection, tokens, file_sha256(path)[:32])


@dataclass(frozen=True)
class _Distillation:
    """What one ``distilled_sessions`` row is made of: its key and project, the file's
    identity, the candidate chunks and the platform to write."""

    key: str
    project: str | None
    meta: SeedMeta
    scored: list[ScoredChunk]
    platform: str


@dataclass
class DistillBatch:
    """Outcome of :func:`distill_sessions`: a result per session distilled, and per session
    that was not, why (an ``OSError`` writing its file, a ``BudgetTooSmall``, or a
    ``LookupError`` when it was never ingested)."""

    results: dict[str, DistillResult] = field(default_factory=dict)
    errors: dict[str, Exception] = field(default_factory=dict)


def distill_sessions(
    conn: duckdb.DuckDBPyConnection,
    session_keys: Sequence[str],
    out_dir: Path,
    now: datetime,
    config: DistillerConfig = DistillerConfig(),
    platform: str | None = None,
    model: str | None = None,
) -> DistillBatch:
    """Distill each of ``session_keys``: select its chunks within budget, write its
    resumable file, rewrite its ``distilled_sessions`` row.

    ``platform`` None writes each source's own format. A file's texts (preamble, wrappers
    and chunks) count at most ``config.max_tokens`` in the target model's tokens. The
    sessions' rows and chunks are read in a few queries; each file is written on its own
    (a file that cannot be written fails only itself); the rows of those written are
    rewritten in one transaction, and only then are the files they replace removed."""
    keys = list(dict.fromkeys(session_keys))
    batch = DistillBatch()
    if not keys:
        return batch
    sessions = load_session_files_many(conn, keys)
    scored = load_scored_many(conn, keys)
    previous = distilled_paths_many(conn, keys)
    rows: list[DistillationRow] = []
    replaced: list[Path] = []
    for key in keys:
        session = sessions.get(key)
        if session is None:
            batch.errors[key] = LookupError(f"session {key!r} has not been ingested")
            continue
        target = platform or session.platform
        chunks = scored.get(key, [])
        meta = session_meta(session, f"{key}:{target}", chunks)
        plan = _Distillation(key, session.project, meta, chunks, target)
        try:
            result, row, stale = _write_distillation(
                plan, previous.get((key, target), []), out_dir, now, config, model
            )
        except (OSError, BudgetTooSmall) as exc:
            batch.errors[key] = exc
            continue
        batch.results[key] = result
        rows.append(row)
        replaced += stale
    replace_distillations(conn, rows)
    _remove(replaced)  # only once no row names them any more
    return batch


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
    ``session_key = 'project:<project>'``. Raises ValueError when ``project`` has no
    scored session (callers pass names from :func:`project_names`).
    """
    sessions = scored_session_files(conn, project)
    if not sessions:
        raise ValueError(f"project {project!r} has no scored session")
    platforms = [s.platform for s in sessions]
    source_platform = max(sorted(set(platforms)), key=platforms.count)
    target = platform or source_platform
    # A transcript copied beside itself (a backup, a second machine's folder) or a resumed
    # session replaying its history holds the same chunks: each text competes once.
    scored: list[ScoredChunk] = []
    seen: set[str] = set()
    for c in (c for s in sessions for c in load_scored(conn, s.session_key)):
        if c.chunk.text not in seen:
            seen.add(c.chunk.text)
            scored.append(c)
    key = f"{PROJECT_PREFIX}{project}"
    meta = SeedMeta(
        key=f"{key}:{target}",
        source_platform=source_platform,
        source_platforms=tuple(sorted(set(platforms))),
        source_sessions=tuple(
            dict.fromkeys(s.source_session_id or s.session_key for s in sessions)
        ),
        cwd=project or "/",
        created_at=newest_time(
            scored, datetime.fromtimestamp(max(s.mtime for s in sessions), tz=UTC)
        ),
        title=f"Distilled project {project} ({len(sessions)} sessions)",
    )
    plan = _Distillation(key, project, meta, scored, target)
    return _record_distillation(conn, plan, out_dir, now, config, model)


def _record_distillation(
    conn: duckdb.DuckDBPyConnection,
    plan: _Distillation,
    out_dir: Path,
    now: datetime,
    config: DistillerConfig,
    model: str | None,
) -> DistillResult:
    """Write the file of ``plan`` (see :func:`_write_distillation`) and rewrite its row."""
    previous = distilled_paths(conn, plan.key, plan.platform)
    result, row, stale = _write_distillation(plan, previous, out_dir, now, config, model)
    replace_distillations(conn, [row])
    _remove(stale)
    return result


def _remove(paths: Sequence[Path]) -> None:
    for path in paths:
        if path.is_file():
            path.unlink(missing_ok=True)


def _write_distillation(
    plan: _Distillation,
    previous: Sequence[Path],
    out_dir: Path,
    now: datetime,
    config: DistillerConfig,
    model: str | None,
) -> tuple[DistillResult, DistillationRow, list[Path]]:
    """Write the file under ``out_dir / plan.platform``; return the result, the
    ``distilled_sessions`` row to record and the files among ``previous`` it replaces (a
    new file name in the same folder), to remove once the row is recorded."""
    result = write_distilled_file(
        plan.scored, plan.meta, plan.platform, config, out_dir / plan.platform, model
    )
    path = result.path
    stale = [old for old in previous if old != path and old.parent == path.parent]
    row = DistillationRow(
        session_key=plan.key,
        project=plan.project,
        platform=plan.platform,
        source_platform=plan.meta.source_platform,
        path=str(path),
        tokens=result.tokens,
        budget=config.max_tokens,
        chunk_count=len(result.distilled.chunks),
        dropped_chunks=result.distilled.dropped_chunks,
        sort_mode=config.sort_by,
        min_consensus=config.min_consensus,
        created_at=now,
    )
    return result, row, stale


def file_content_tokens(path: Path, model: str | None = None) -> int:
    """Tokens of every user/assistant text in a generated file, re-read with our parser."""
    from selene_dag.sessions.parsers import parse_file

    texts = [
        e.text
        for e in parse_file(path).events
        if e.kind in ("user_prompt", "summary") and e.raw_type != "summary"
    ]
    return sum(count_tokens_batch(texts, model=model)) if texts else 0


__all__ = [
    "DistillBatch",
    "DistillResult",
    "IngestResult",
    "KnownTokens",
    "ScoreResult",
    "SessionNotFoundError",
    "SessionScores",
    "archived_session",
    "chunk_views",
    "chunk_views_of",
    "default_assessors",
    "distill_project",
    "distill_sessions",
    "events_to_chunk",
    "events_version",
    "file_content_tokens",
    "file_sha256",
    "find_session_file",
    "ingest_session",
    "is_own_assessment",
    "known_tokens",
    "normalize_events",
    "project_names",
    "read_session",
    "score_views",
    "select_for_file",
    "session_chunks_of",
    "session_meta",
    "write_distilled_file",
    "write_selection",
]
