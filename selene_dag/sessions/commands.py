"""Plain functions behind ``selene-dag distill scan|run|status|report|assess|seed``.

Each returns rows (dicts) or a dict for the CLI to print; none prints. Bad input raises
ValueError with a one-line message. Reads open the database read-only when it exists.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import duckdb

from selene_dag.sessions.scanner import ScannedFile, scan_roots
from selene_dag.config import Settings
from selene_dag.store import connect


def _read_conn(settings: Settings) -> duckdb.DuckDBPyConnection | None:
    if not settings.db_path.exists():
        return None
    return connect(settings.db_path)


def _known(settings: Settings) -> dict[str, tuple[int, float, int, int]]:
    conn = _read_conn(settings)
    if conn is None:
        return {}
    try:
        rows = conn.execute(
            "SELECT session_key, size, mtime, events, parse_errors FROM session_files"
        ).fetchall()
    finally:
        conn.close()
    return {r[0]: (r[1], r[2], r[3], r[4]) for r in rows}


def distill_scan(settings: Settings) -> list[dict[str, Any]]:
    """Every session file under the roots: key, platform, path, size, events, state.

    ``state`` is ``new`` (never ingested), ``grown`` (size or mtime changed since) or ``done``.
    """
    known = _known(settings)
    rows = []
    for f in scan_roots(settings.session_roots):
        seen = known.get(f.session_key)
        state = (
            "new"
            if seen is None
            else ("done" if (seen[0], seen[1]) == (f.size, f.mtime) else "grown")
        )
        rows.append(
            {
                "session_key": f.session_key,
                "platform": f.platform,
                "path": f.path,
                "size": f.size,
                "events": seen[2] if seen else None,
                "parse_errors": seen[3] if seen else None,
                "state": state,
            }
        )
    return rows


def resolve_sessions(
    settings: Settings, ids: Sequence[str], all_files: bool = False
) -> list[ScannedFile]:
    """Scanned files matching ``ids`` (session key, the tool's session id, or a path) or all.

    Raises ValueError naming the first id that matches nothing.
    """
    files = scan_roots(settings.session_roots)
    if all_files:
        return files
    if not ids:
        raise ValueError("give session ids, keys or paths, or --all")
    by_source: dict[str, str] = {}
    conn = _read_conn(settings)
    if conn is not None:
        try:
            by_source = dict(
                conn.execute(
                    "SELECT source_session_id, session_key FROM session_files WHERE source_session_id IS NOT NULL"
                ).fetchall()
            )
        finally:
            conn.close()
    chosen: dict[str, ScannedFile] = {}
    for ident in ids:
        match = [
            f
            for f in files
            if ident in (f.session_key, f.path, str(Path(f.path).name))
            or by_source.get(ident) == f.session_key
            or Path(f.path).stem.endswith(ident)
        ]
        if not match:
            raise ValueError(f"no session file matches {ident!r} under SELENE_SESSION_ROOTS")
        for f in match:
            chosen[f.session_key] = f
    return list(chosen.values())


def distill_run(
    settings: Settings,
    ids: Sequence[str] = (),
    all_files: bool = False,
    run_config: dict[str, Any] | None = None,
    instance: Any = None,
) -> list[dict[str, Any]]:
    """Materialize the session spine for each chosen file (one run per partition).

    Uses the real definitions and ``instance`` (default: the persistent instance under
    ``$SELENE_HOME/dagster``); returns one row per session with ``ok`` and the distilled
    file path.
    """
    import dagster as dg

    from selene_dag.defs.assets_sessions import SESSION_PARTITIONS, SESSION_SPINE_SELECTION
    from selene_dag.defs.runner import all_assets_and_checks, failure_message, instance_for

    files = resolve_sessions(settings, ids, all_files)
    instance = instance or instance_for(settings)
    existing = set(instance.get_dynamic_partitions(SESSION_PARTITIONS.name))
    missing = [f.session_key for f in files if f.session_key not in existing]
    if missing:
        instance.add_dynamic_partitions(SESSION_PARTITIONS.name, missing)
    from selene_dag.definitions import defs

    rows = []
    for f in files:
        result = dg.materialize(
            all_assets_and_checks(),
            selection=SESSION_SPINE_SELECTION,
            instance=instance,
            resources=dict(defs.resources or {}),
            partition_key=f.session_key,
            raise_on_error=False,
            run_config={
                **(run_config or {}),
                "loggers": {"console": {"config": {"log_level": "CRITICAL"}}},
            },
        )
        rows.append(
            {
                "session_key": f.session_key,
                "platform": f.platform,
                "path": f.path,
                "ok": result.success,
                "error": None if result.success else failure_message(result),
            }
        )
    conn = _read_conn(settings)
    if conn is not None:
        try:
            out = dict(conn.execute("SELECT session_key, path FROM distilled_sessions").fetchall())
        finally:
            conn.close()
        for row in rows:
            row["distilled"] = out.get(row["session_key"])
    return rows


def distill_status(settings: Settings) -> dict[str, Any]:
    """Pipeline state: files per state, rows per sessions table, distilled files, and
    ``source_gone``: ingested sessions whose file no longer exists (rows kept)."""
    scan = distill_scan(settings)
    status: dict[str, Any] = {"files": len(scan)}
    for state in ("new", "grown", "done"):
        status[state] = sum(r["state"] == state for r in scan)
    conn = _read_conn(settings)
    if conn is not None:
        try:
            for table in (
                "session_files",
                "session_events",
                "chunks",
                "assessments",
                "chunk_scores",
                "distilled_sessions",
            ):
                status[table] = conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
            paths = [r[0] for r in conn.execute("SELECT path FROM session_files").fetchall()]
            # Ingested sessions whose file is gone: their rows are the archive and stay.
            status["source_gone"] = sum(not Path(p).is_file() for p in paths)
        finally:
            conn.close()
    return status


def distill_report(settings: Settings, session: str | None = None) -> list[dict[str, Any]]:
    """Per session: events, chunks, mean importance, mean consensus, distilled tokens and
    path, and whether the source file still exists (``source_exists``)."""
    conn = _read_conn(settings)
    if conn is None:
        return []
    try:
        rows = conn.execute(
            "SELECT f.session_key, f.platform, f.source_session_id, f.path, f.events, f.parse_errors, "
            "(SELECT count(*) FROM chunks c WHERE c.session_key = f.session_key), "
            "(SELECT round(avg(importance), 1) FROM session_events e WHERE e.session_key = f.session_key), "
            "(SELECT round(avg(consensus), 2) FROM chunk_scores s WHERE s.session_key = f.session_key), "
            "d.tokens, d.budget, d.chunk_count, d.path "
            "FROM session_files f LEFT JOIN distilled_sessions d ON d.session_key = f.session_key "
            "ORDER BY f.session_key"
        ).fetchall()
    finally:
        conn.close()
    names = [
        "session_key",
        "platform",
        "session_id",
        "path",
        "events",
        "parse_errors",
        "chunks",
        "importance_avg",
        "consensus_avg",
        "distilled_tokens",
        "budget",
        "distilled_chunks",
        "distilled_path",
    ]
    out = [dict(zip(names, r, strict=True)) for r in rows]
    for row in out:
        row["source_exists"] = Path(row["path"]).is_file()
    if session:
        out = [r for r in out if session in (r["session_key"], r["session_id"], r["path"])]
        if not out:
            raise ValueError(f"no ingested session matches {session!r}")
    return out


def distill_assess(settings: Settings, chunk_id: str) -> dict[str, Any]:
    """Run every available assessor on one stored chunk now; returns ratings and consensus.

    Nothing is written (the ``chunk_scores`` asset owns the stored scores).
    """
    from selene_dag.llm import get_engine
    from selene_dag.llm.cli_assessors import assess_with_clis, available_assessors
    from selene_dag.sessions.assessors import run_assessors
    from selene_dag.sessions.consensus import AssessmentScore, compute_consensus
    from selene_dag.sessions.pipeline import chunk_views, default_assessors

    conn = _read_conn(settings)
    if conn is None:
        raise ValueError("no database yet: run `selene-dag distill run` first")
    try:
        row = conn.execute("SELECT session_key FROM chunks WHERE id = ?", [chunk_id]).fetchone()
        if row is None:
            raise ValueError(f"no chunk with id {chunk_id!r}")
        view = next(v for v in chunk_views(conn, row[0]) if v.chunk_id == chunk_id)
        extractive = get_engine(dataclasses.replace(settings, llm="extractive"), cache_conn=conn)
        model = get_engine(settings, cache_conn=conn) if settings.llm != "extractive" else None
        named = run_assessors(view, default_assessors(extractive, model))
    finally:
        conn.close()
    ratings = [
        {
            "assessor": n.assessor,
            "relevance": n.assessment.relevance,
            "signal_density": n.assessment.signal_density,
            "reusability": n.assessment.reusability,
            "overall": n.assessment.overall,
            "reason": n.assessment.reason,
        }
        for n in named
    ]
    clis = available_assessors(list(settings.cli_assessors)) if settings.cli_assessors else []
    for r in assess_with_clis(view.text, clis) if clis else []:
        if r.ok and r.assessment is not None:
            a = r.assessment
            ratings.append(
                {
                    "assessor": r.name,
                    "relevance": a.relevance,
                    "signal_density": a.signal_density,
                    "reusability": a.reusability,
                    "overall": a.overall,
                    "reason": a.reason,
                }
            )
    consensus = compute_consensus([AssessmentScore(r["assessor"], r["overall"]) for r in ratings])
    return {
        "chunk_id": chunk_id,
        "assessments": ratings,
        "consensus": consensus.score,
        "sufficient": consensus.sufficient,
        "dropped": list(consensus.dropped),
    }


def distill_seed(
    settings: Settings,
    platform: str,
    session: str | None = None,
    out_dir: Path | None = None,
    max_tokens: int = 80_000,
) -> dict[str, Any]:
    """Write a fresh ``platform`` session file from a scored session (default: most recent).

    The file goes to ``out_dir`` (default ``$SELENE_HOME/distilled/seeds``); returns its path
    and token accounting. Only the file is written, not the database.
    """
    from selene_dag.sessions.distiller import DistillerConfig, distill
    from selene_dag.sessions.generators import (
        GENERATOR_PLATFORMS,
        SeedMeta,
        overhead_tokens,
        write_session,
    )
    from selene_dag.sessions.pipeline import _created_at, load_scored

    if platform not in GENERATOR_PLATFORMS:
        raise ValueError(f"platform {platform!r}: expected one of {', '.join(GENERATOR_PLATFORMS)}")
    conn = _read_conn(settings)
    if conn is None:
        raise ValueError("no database yet: run `selene-dag distill run` first")
    try:
        rows = conn.execute(
            "SELECT f.session_key, f.platform, f.project, f.source_session_id FROM session_files f "
            "WHERE EXISTS (SELECT 1 FROM chunk_scores s WHERE s.session_key = f.session_key) ORDER BY f.mtime DESC"
        ).fetchall()
        if session:
            rows = [r for r in rows if session in (r[0], r[3])]
        if not rows:
            raise ValueError(
                f"no scored session{' matches ' + repr(session) if session else ''}: run distill first"
            )
        key, source_platform, project, source_id = rows[0]
        scored = load_scored(conn, key)
    finally:
        conn.close()
    meta = SeedMeta(
        f"{key}:{platform}:seed",
        source_platform,
        (source_id or key,),
        project or "/",
        _created_at(scored, settings.now()),
        f"Distilled {source_platform} session {source_id or key}",
    )
    reserve, per_chunk = overhead_tokens(platform, meta, len(scored), model=settings.model)
    result = distill(scored, DistillerConfig(max_tokens=max_tokens), reserve, per_chunk)
    path = write_session(platform, result, meta, out_dir or settings.distilled_dir / "seeds")
    return {
        "session_key": key,
        "platform": platform,
        "path": str(path),
        "chunks": len(result.chunks),
        "tokens": reserve + sum(s.chunk.token_count + per_chunk for s in result.chunks),
        "budget": max_tokens,
    }
