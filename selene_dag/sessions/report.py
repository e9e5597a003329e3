"""Database-reading use cases behind ``selene-dag distill scan|status|report|assess|seed``.

Each returns rows (dicts) or a dict for a front door to print; none prints and none writes
the database. A request naming something that does not exist raises
:class:`~selene_dag.sessions.steps.SessionNotFoundError`, a bad option
:class:`~selene_dag.errors.UsageError` (both ``ValueError`` subclasses, one-line
messages). Reads open the database only when it exists. No Dagster here.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import duckdb

from selene_dag.config import Settings
from selene_dag.errors import UsageError
from selene_dag.files import file_state
from selene_dag.sessions import naming
from selene_dag.sessions.rejected import split as split_rejected
from selene_dag.sessions.scanner import ScannedFile, is_under_roots, scan_report, scan_roots
from selene_dag.sessions.steps import PROJECT_PREFIX, SessionNotFoundError
from selene_dag.sessions.store import fetch_dicts
from selene_dag.store import connect
from selene_dag.text import path_text

_NO_DATABASE = "no database yet: run `selene-dag distill run` first"
_SESSION_TABLES = (
    "session_files",
    "session_events",
    "chunks",
    "assessments",
    "chunk_scores",
    "distilled_sessions",
)


def read_conn(settings: Settings) -> duckdb.DuckDBPyConnection | None:
    """A connection to the database, or None when it does not exist yet."""
    if not settings.db_path.exists():
        return None
    return connect(settings.db_path, wait=settings.lock_wait)


def stored_files(settings: Settings) -> dict[str, dict[str, Any]]:
    """Each stored session file by key: its ``size``, ``mtime``, ``events`` and
    ``parse_errors`` when it was last read. Empty without a database."""
    conn = read_conn(settings)
    if conn is None:
        return {}
    try:
        rows = fetch_dicts(
            conn, "SELECT session_key, size, mtime, events, parse_errors FROM session_files"
        )
    finally:
        conn.close()
    return {row["session_key"]: row for row in rows}


def scan_listing(settings: Settings) -> dict[str, list[dict[str, Any]]]:
    """Every session file under the roots (``files``) and every file left out (``skipped``).

    A file row has key, platform, path, size, events, parse errors and ``state``: ``new``
    (never ingested), ``grown`` (larger since), ``changed`` (rewritten since: the same
    size or smaller, another mtime) or ``done``. A skipped row has
    ``path`` and ``reason`` (empty, not a transcript, another platform under an explicit root,
    or, read once, its content found to be no transcript: ``sessions.rejected``).
    """
    known = stored_files(settings)
    result = scan_report(settings.session_roots)
    files, rejected = split_rejected(settings, result.files)
    rows = []
    skipped = [{"path": s.path, "reason": s.reason} for s in result.skipped]
    skipped += [{"path": f.path, "reason": reason} for f, reason in rejected]
    for f in files:
        seen = known.get(f.session_key)
        if seen is None:
            state = "new"
        elif (seen["size"], seen["mtime"]) == (f.size, f.mtime):
            state = "done"
        else:
            state = "grown" if f.size > seen["size"] else "changed"
        rows.append(
            {
                "session_key": f.session_key,
                "platform": f.platform,
                "path": f.path,
                "size": f.size,
                "events": seen["events"] if seen else None,
                "parse_errors": seen["parse_errors"] if seen else None,
                "state": state,
            }
        )
    return {"files": rows, "skipped": skipped}


def distill_scan(settings: Settings) -> list[dict[str, Any]]:
    """The ``files`` rows of :func:`scan_listing`."""
    return scan_listing(settings)["files"]


def resolve_sessions(
    settings: Settings, ids: Sequence[str], all_files: bool = False
) -> list[ScannedFile]:
    """Scanned files matching ``ids`` (session key, the tool's session id, or a path), all
    of them with ``all_files``, or with neither the most recently modified one (seed 003
    §5.11: ``run`` defaults to the most recent session).

    Raises UsageError when neither is given and the roots hold no session file,
    SessionNotFoundError naming the first id that matches nothing.
    """
    files = scan_roots(settings.session_roots)
    if all_files:
        return files
    if not ids:
        if not files:
            raise UsageError(
                "no session file under SELENE_SESSION_ROOTS to take as the most recent "
                "(`selene-dag distill scan` lists the roots, the files found and those "
                "skipped, and why)"
            )
        return [max(files, key=lambda f: (f.mtime, f.path))]
    # The tool's session id of each stored file (copies of a transcript, and a session's
    # subagent transcripts, share one).
    source_of: dict[str, str] = {}
    conn = read_conn(settings)
    if conn is not None:
        try:
            rows = fetch_dicts(
                conn,
                "SELECT source_session_id, session_key FROM session_files "
                "WHERE source_session_id IS NOT NULL",
            )
        finally:
            conn.close()
        source_of = {row["session_key"]: row["source_session_id"] for row in rows}
    chosen: dict[str, ScannedFile] = {}
    real = {os.path.realpath(f.path): f for f in files}
    for ident in ids:
        naming.check_id(ident)
        # A path as typed from anywhere (relative, through a link) names its file.
        typed = real.get(os.path.realpath(os.path.expanduser(ident)))
        if typed is not None:
            match = [typed]
        else:
            match = [
                f
                for f in files
                if naming.names(ident, f.session_key, f.path, source_of.get(f.session_key))
            ]
        if len(match) > 1:  # as `distill report` and `seed` take an id: the file it names
            match = [f for f in match if naming.names(ident, f.session_key, f.path, None)] or match
        if len(match) > 1:  # copies of one transcript share its name and id
            raise naming.ambiguous(
                ident, [f.session_key for f in match], [f.path for f in match], part=False
            )
        if not match:
            found = naming.by_part(
                ident,
                [f.session_key for f in files],
                [f.path for f in files],
                [source_of.get(f.session_key) for f in files],
            )
            match = [files[i] for i in found]
        if not match:
            raise SessionNotFoundError(_not_found(settings, ident))
        for f in match:
            chosen[f.session_key] = f
    return list(chosen.values())


def _not_found(settings: Settings, ident: str) -> str:
    """Why ``ident`` names no scanned session file, and what to do about it."""
    path = Path(ident).expanduser()
    if file_state(path) == "present":
        if is_under_roots(path, settings.session_roots):  # the scan passed over it: why
            real = os.path.realpath(path)
            skipped = scan_report(settings.session_roots).skipped
            reason = next(
                (f.reason for f in skipped if os.path.realpath(f.path) == real),
                "not a transcript the scan takes",
            )
            return f"{path_text(ident)} is not distilled: {reason}"
        roots = os.pathsep.join(
            f"{root.platform}={root.path}" if root.platform else str(root.path)
            for root in settings.session_roots
        )
        folder = path.resolve().parent
        return (
            f"{path_text(ident)} is a file outside SELENE_SESSION_ROOTS ({roots or 'none'}): "
            f"sessions are read from those folders; add its folder to distill it, e.g. "
            f"SELENE_SESSION_ROOTS='{roots + os.pathsep if roots else ''}{folder}'"
        )
    if path.is_dir():
        return (
            f"{path_text(ident)} is a folder: name a session file in it (`selene-dag distill "
            "scan` lists them), or distill every session with --all"
        )
    if os.sep in ident or ident.startswith(("~", ".")) or ident.endswith((".jsonl", ".json")):
        return f"{path_text(ident)} does not exist"
    return (
        f"no session file matches '{path_text(ident)}' under SELENE_SESSION_ROOTS "
        "(`selene-dag distill scan` lists the files found and those skipped, and why)"
    )


def distillations_by_session(settings: Settings) -> dict[str, dict[str, Any]] | None:
    """Per session with a distilled file: its ``distilled_path``, ``distilled_chunks`` (the
    chunks it kept), ``dropped_chunks`` (those left out for the budget), ``chunks`` (the
    session's chunks), the ``min_consensus`` and ``budget`` it was distilled with and ``model_rated`` (its
    chunks the model server rated); None when there is no database."""
    conn = read_conn(settings)
    if conn is None:
        return None
    try:
        rows = fetch_dicts(
            conn,
            "SELECT d.session_key, d.path AS distilled_path, d.chunk_count AS distilled_chunks, "
            "d.dropped_chunks, d.min_consensus, d.budget, (SELECT count(*) FROM chunks c WHERE c.session_key = "
            "d.session_key) AS chunks, (SELECT count(DISTINCT a.chunk_id) FROM assessments a "
            "WHERE a.session_key = d.session_key AND a.assessor = 'ollama') AS model_rated "
            "FROM distilled_sessions d",
        )
    finally:
        conn.close()
    return {row.pop("session_key"): row for row in rows}


def projects_of(settings: Settings, session_keys: Sequence[str]) -> set[str]:
    """The projects (working directories) of ``session_keys``; empty without a database."""
    from selene_dag.sessions.store import session_projects

    conn = read_conn(settings)
    if conn is None:
        return set()
    try:
        return session_projects(conn, session_keys)
    finally:
        conn.close()


def distilled_files_gone(settings: Settings) -> tuple[set[str], set[str]]:
    """The sessions and the projects whose distilled file is gone from the home (deleted
    by hand, or the distilled folder cleared): ``distill run --all`` writes them again.
    Empty without a database."""
    conn = read_conn(settings)
    if conn is None:
        return set(), set()
    try:
        rows = conn.execute(
            "SELECT session_key, path FROM distilled_sessions WHERE path IS NOT NULL"
        ).fetchall()
    finally:
        conn.close()
    sessions: set[str] = set()
    projects: set[str] = set()
    for key, path in rows:
        if file_state(path) == "gone":
            if key.startswith(PROJECT_PREFIX):
                projects.add(key.removeprefix(PROJECT_PREFIX))
            else:
                sessions.add(key)
    return sessions, projects


def distilled_with_other_settings(settings: Settings) -> set[str]:
    """The sessions whose distilled file was chosen under other distillation settings than
    ``settings``' (SELENE_DISTILL_*): they must be distilled again. Empty when there is no
    database."""
    from selene_dag.sessions.distiller import DistillerConfig
    from selene_dag.sessions.store import distilled_otherwise

    conn = read_conn(settings)
    if conn is None:
        return set()
    config = DistillerConfig.from_settings(settings)
    try:
        return distilled_otherwise(conn, config.max_tokens, config.min_consensus, config.sort_by)
    finally:
        conn.close()


def counted_in_another_model(settings: Settings) -> set[str]:
    """The ingested sessions whose token counts are not in ``settings.model``'s tokens (the
    target model changed since, or rows written before the model was recorded): their
    chunks and distilled files would keep budgets counted in other tokens, so they must
    run again. Empty when there is no database."""
    conn = read_conn(settings)
    if conn is None:
        return set()
    try:
        rows = conn.execute(
            "SELECT session_key FROM session_files WHERE token_model IS DISTINCT FROM ?",
            [settings.model],
        ).fetchall()
    finally:
        conn.close()
    return {row[0] for row in rows}


def rated_by_another_engine(settings: Settings) -> set[str]:
    """The ingested sessions whose chunks were rated under another engine than SELENE_LLM
    names now (the engine recorded on their ``chunk_scores`` rows; for rows from before it
    was recorded, their assessments: with a model server, none of their chunks rated by
    it; offline, some rated by one). Notes are analysed again after such a switch; their
    sessions are rated again too. Empty when there is no database."""
    conn = read_conn(settings)
    if conn is None:
        return set()
    try:
        rows = conn.execute(
            "SELECT s.session_key, any_value(s.engine), "
            "bool_or(a.assessor = 'ollama') FROM chunk_scores s "
            "LEFT JOIN assessments a ON a.chunk_id = s.chunk_id "
            "AND a.session_key = s.session_key GROUP BY s.session_key"
        ).fetchall()
    finally:
        conn.close()
    wanted = settings.llm == "ollama"
    return {
        key
        for key, engine, by_model in rows
        if (engine != settings.llm if engine is not None else bool(by_model) != wanted)
    }


def distill_status(settings: Settings) -> dict[str, Any]:
    """Pipeline state: files per state, rows per sessions table, distilled files,
    ``source_gone``: ingested sessions whose file no longer exists (rows kept),
    ``source_unreadable`` (only when there are some): those whose file this user may not
    look at now (a folder's permissions), ``not_distilled``: stored sessions with no
    distilled file yet (a run stopped between reading a file and distilling it), and
    ``last_parsed_at``: when the newest run parsed a file (ISO-8601; None before any)."""
    scan = distill_scan(settings)
    status: dict[str, Any] = {"files": len(scan)}
    for state in ("new", "grown", "changed", "done"):
        status[state] = sum(r["state"] == state for r in scan)
    conn = read_conn(settings)
    if conn is not None:
        try:
            for table in _SESSION_TABLES:
                status[table] = fetch_dicts(conn, f"SELECT count(*) AS n FROM {table}")[0]["n"]
            # Per-project rollups live in the same table, keyed 'project:<name>'.
            status["distilled_projects"] = fetch_dicts(
                conn,
                "SELECT count(*) AS n FROM distilled_sessions "
                "WHERE starts_with(session_key, 'project:')",
            )[0]["n"]
            status["distilled_sessions"] -= status["distilled_projects"]
            status["not_distilled"] = fetch_dicts(
                conn,
                "SELECT count(*) AS n FROM session_files f WHERE NOT EXISTS "
                "(SELECT 1 FROM distilled_sessions d WHERE d.session_key = f.session_key)",
            )[0]["n"]
            paths = [r["path"] for r in fetch_dicts(conn, "SELECT path FROM session_files")]
            # Ingested sessions whose file is gone: their rows are the archive and stay.
            states = [file_state(p) for p in paths]
            status["source_gone"] = states.count("gone")
            if "unreadable" in states:  # a folder on the way this user may not read
                status["source_unreadable"] = states.count("unreadable")
            last = fetch_dicts(conn, "SELECT max(parsed_at) AS t FROM session_files")[0]["t"]
            status["last_parsed_at"] = last.isoformat() if last is not None else None
        finally:
            conn.close()
    return status


TOP_CHUNKS = 3
PREVIEW_CHARS = 100
# Each session's best chunks: the highest consensus first (a chunk not yet scored last),
# then the higher mean importance, then the earlier chunk.
_TOP_CHUNKS_SQL = """
SELECT session_key, id, first_seq, last_seq, consensus, importance, text FROM (
    SELECT c.session_key, c.id, c.first_seq, c.last_seq, round(s.consensus, 2) AS consensus,
           round(c.importance_avg, 1) AS importance, left(c.text, 400) AS text,
           row_number() OVER (PARTITION BY c.session_key
                              ORDER BY s.consensus DESC NULLS LAST, c.importance_avg DESC,
                                       c.chunk_index) AS place
    FROM chunks c LEFT JOIN chunk_scores s ON s.chunk_id = c.id
) WHERE place <= ? ORDER BY session_key, place
"""


def distill_report(settings: Settings, session: str | None = None) -> list[dict[str, Any]]:
    """Per session (``session``: a key, the tool's session id, a path or a file name; all
    the sessions a file name matches): its project (working directory; a Gemini session's
    project hash) and first event's time (``started``, as the tool wrote it), events,
    chunks, mean importance, mean consensus,
    distilled tokens,
    chunks (kept, ``dropped_chunks``: left out for the budget, and
    ``below_minimum_chunks``: under the minimum consensus) and path, the minimum
    consensus its distillation used, whether the source file still exists
    (``source_exists``), and ``top_chunks``: its ``TOP_CHUNKS`` best chunks by consensus
    (then mean importance), each ``{id, citation, consensus, importance, preview}``, the
    citation as ask prints it (``<key> events a-b``, which ``show`` reads back).

    Raises SessionNotFoundError when ``session`` matches no ingested session.
    """
    conn = read_conn(settings)
    if conn is None:
        return []
    try:
        out = fetch_dicts(
            conn,
            "SELECT f.session_key, f.platform, f.source_session_id AS session_id, f.path, "
            "f.project, (SELECT min(ts) FROM session_events e "
            "WHERE e.session_key = f.session_key) AS started, f.events, f.parse_errors, "
            "(SELECT count(*) FROM chunks c WHERE c.session_key = f.session_key) AS chunks, "
            "(SELECT round(avg(importance), 1) FROM session_events e "
            "WHERE e.session_key = f.session_key) AS importance_avg, "
            "(SELECT round(avg(consensus), 2) FROM chunk_scores s "
            "WHERE s.session_key = f.session_key) AS consensus_avg, "
            "d.tokens AS distilled_tokens, d.budget, d.chunk_count AS distilled_chunks, "
            "d.dropped_chunks, d.min_consensus, d.path AS distilled_path "
            "FROM session_files f LEFT JOIN distilled_sessions d ON d.session_key = f.session_key "
            "ORDER BY f.session_key",
        )
        top = fetch_dicts(conn, _TOP_CHUNKS_SQL, [TOP_CHUNKS])
    finally:
        conn.close()
    best: dict[str, list[dict[str, Any]]] = {}
    for chunk in top:
        best.setdefault(chunk["session_key"], []).append(
            {
                "id": f"chunk:{chunk['id']}",
                "citation": f"{chunk['session_key']} events {chunk['first_seq']}-{chunk['last_seq']}",
                "consensus": chunk["consensus"],
                "importance": chunk["importance"],
                "preview": " ".join((chunk["text"] or "").split())[:PREVIEW_CHARS],
            }
        )
    for row in out:
        state = file_state(row["path"])
        row["source_exists"] = state != "gone"
        row["source_state"] = state
        row["below_minimum_chunks"] = (
            row["chunks"] - row["distilled_chunks"] - (row["dropped_chunks"] or 0)
            if row["distilled_chunks"] is not None
            else None
        )
        row["top_chunks"] = best.get(row["session_key"], [])
    if session is not None:
        naming.check_id(session)
        named = [
            r for r in out if naming.names(session, r["session_key"], r["path"], r["session_id"])
        ]
        if not named:
            found = naming.by_part(
                session,
                [r["session_key"] for r in out],
                [r["path"] for r in out],
                [r["session_id"] for r in out],
            )
            named = [out[i] for i in found]
        out = named
        if not out:
            raise SessionNotFoundError(f"no ingested session matches {session!r}")
    return out


def _rating(assessor: str, assessment: Any) -> dict[str, Any]:
    return {
        "assessor": assessor,
        "relevance": assessment.relevance,
        "signal_density": assessment.signal_density,
        "reusability": assessment.reusability,
        "overall": assessment.overall,
        "reason": assessment.reason,
    }


def distill_assess(settings: Settings, chunk_id: str) -> dict[str, Any]:
    """Run every available assessor on one stored chunk now; returns ratings, consensus and
    ``failed``: why each assessor that gave no rating failed (a CLI on PATH that timed out
    after SELENE_ASSESSOR_TIMEOUT twice, exited with an error, answered no rating; the
    model's server down, its model missing, its answer unusable).

    ``chunk_id`` may carry the ``chunk:`` prefix that ask's JSON gives its items. Nothing
    is written (the ``chunk_scores`` asset owns the stored scores). Raises
    SessionNotFoundError when there is no database or no chunk ``chunk_id``.
    """
    chunk_id = chunk_id.removeprefix("chunk:")
    from selene_dag.llm import get_engine
    from selene_dag.llm.cli_assessors import assess_with_clis, available_assessors
    from selene_dag.llm.engine import EngineUnavailable
    from selene_dag.sessions.assessors import run_assessors
    from selene_dag.sessions.consensus import AssessmentScore, compute_consensus
    from selene_dag.sessions.steps import chunk_views, default_assessors
    from selene_dag.sessions.store import chunk_session_key

    conn = read_conn(settings)
    if conn is None:
        raise SessionNotFoundError(_NO_DATABASE)
    try:
        session_key = chunk_session_key(conn, chunk_id)
        if session_key is None:
            raise SessionNotFoundError(
                f"no chunk with id {chunk_id!r} (distill report lists the best chunks)"
            )
        view = next(v for v in chunk_views(conn, session_key) if v.chunk_id == chunk_id)
        extractive = get_engine(settings.replace(llm="extractive"), cache_conn=conn)
        model = get_engine(settings, cache_conn=conn) if settings.llm != "extractive" else None
        # The model's failure is this chunk's one rating fewer, listed under `failed` (a
        # server down, a model missing, an answer unusable twice): the others still rate.
        failed: list[str] = []
        try:
            named = run_assessors(view, default_assessors(extractive, model), failed)
        except EngineUnavailable as exc:
            named = run_assessors(view, default_assessors(extractive, None))
            failed.append(f"{getattr(model, 'name', 'model')}: {exc}")
    finally:
        conn.close()
    ratings = [_rating(n.assessor, n.assessment) for n in named]
    clis = available_assessors(list(settings.cli_assessors)) if settings.cli_assessors else []
    rated = (
        assess_with_clis(
            view.text, clis, settings.assessor_timeout, max_workers=settings.assessor_concurrency
        )
        if clis
        else []
    )
    for r in rated:
        if r.ok and r.assessment is not None:
            ratings.append(_rating(r.name, r.assessment))
        elif r.error:
            failed.append(r.error)
    consensus = compute_consensus([AssessmentScore(r["assessor"], r["overall"]) for r in ratings])
    return {
        "chunk_id": chunk_id,
        "assessments": ratings,
        "consensus": consensus.score,
        "sufficient": consensus.sufficient,
        "dropped": list(consensus.dropped),
        "failed": failed,
    }


def distill_seed(
    settings: Settings,
    platform: str,
    session: str | None = None,
    out_dir: Path | None = None,
    max_tokens: int | None = None,
) -> dict[str, Any]:
    """Write a fresh ``platform`` session file from a scored session (default: most recent).

    Chunks are chosen as a distilled session's are (the SELENE_DISTILL_* settings), within
    ``max_tokens`` when given. The file goes to ``out_dir`` (default
    ``$SELENE_HOME/distilled/seeds``); returns its path and token accounting. Only the file
    is written, not the database. Raises UsageError for an unknown platform,
    SessionNotFoundError when there is no database or no scored session (matching
    ``session``), when the session kept no chunk (unnamed: when none did), or when none
    fits ``max_tokens``.
    """
    from selene_dag.sessions.distiller import DistillerConfig
    from selene_dag.sessions.generators import check_platform
    from selene_dag.sessions.steps import select_for_file, session_meta, write_selection
    from selene_dag.sessions.store import load_scored, scored_session_files, scored_sessions_named

    check_platform(platform)
    conn = read_conn(settings)
    if conn is None:
        raise SessionNotFoundError(_NO_DATABASE)
    try:
        rows = scored_sessions_named(conn, session) if session is not None else None
        rows = scored_session_files(conn) if rows is None else rows
        if not rows:
            raise SessionNotFoundError(
                f"no session matches {session!r}: `selene-dag distill report` lists the "
                "sessions distilled"
                if session is not None
                else "no scored session: run `selene-dag distill run` first"
            )
        config = DistillerConfig.from_settings(settings, max_tokens)
        # Unnamed, the most recent session that kept a chunk: a seed of none is no seed.
        for chosen in rows:
            scored = load_scored(conn, chosen.session_key)
            kept_one = any(s.consensus >= config.min_consensus for s in scored)
            if kept_one or session:
                break
    finally:
        conn.close()
    if not kept_one:
        which = (
            f"session {chosen.session_key} kept no chunk"
            if session
            else ("no scored session kept a chunk")
        )
        raise SessionNotFoundError(
            f"{which}: every chunk scores under {config.min_consensus:g} "
            "(SELENE_DISTILL_MIN_CONSENSUS)"
        )
    meta = session_meta(chosen, f"{chosen.session_key}:{platform}:seed", scored)
    selection, tokens = select_for_file(scored, meta, platform, config, settings.model)
    if not selection.chunks:
        raise SessionNotFoundError(
            f"no chunk of session {chosen.session_key} fits in "
            f"{config.max_tokens:,} tokens with the session's opening message: give a larger "
            "--max-tokens"
        )
    result = write_selection(
        selection, tokens, meta, platform, out_dir or settings.distilled_dir / "seeds"
    )
    return {
        "session_key": chosen.session_key,
        "platform": platform,
        "path": str(result.path),
        "chunks": len(result.distilled.chunks),
        "tokens": result.tokens,
        "budget": config.max_tokens,
    }


__all__ = [
    "counted_in_another_model",
    "distill_assess",
    "distill_report",
    "distill_scan",
    "distill_seed",
    "distill_status",
    "distillations_by_session",
    "read_conn",
    "resolve_sessions",
    "scan_listing",
]
