"""Asset checks of the sessions group: score ranges, consensus coverage, budgets, parse errors.

No ``from __future__ import annotations`` here: Dagster inspects annotations.
"""

from pathlib import Path

import dagster as dg

from selene_dag.defs.assets_sessions import chunk_scores, distilled_sessions, session_events
from selene_dag.defs.resources import SeleneResource
from selene_dag.sessions.pipeline import file_content_tokens

PARSE_ERROR_WARN_RATE = 0.05


@dg.asset_check(
    asset=session_events, blocking=True, description="Every importance score is within 0..100."
)
def session_events_importance_range(selene: SeleneResource) -> dg.AssetCheckResult:
    """Fail when any stored event has an importance outside 0..100."""
    with selene.connection() as conn:
        bad, total = conn.execute(
            "SELECT count(*) FILTER (WHERE importance < 0 OR importance > 100), count(*) FROM session_events"
        ).fetchone()
    return dg.AssetCheckResult(passed=bad == 0, metadata={"out_of_range": bad, "events": total})


@dg.asset_check(asset=session_events, description="Share of malformed lines across ingested files.")
def session_files_parse_errors(selene: SeleneResource) -> dg.AssetCheckResult:
    """Report the parse-error rate (warning above 5 %)."""
    with selene.connection() as conn:
        errors, events, files, worst = conn.execute(
            "SELECT coalesce(sum(parse_errors), 0), coalesce(sum(events), 0), count(*), "
            "arg_max(path, parse_errors) FROM session_files"
        ).fetchone()
    rate = errors / (errors + events) if errors + events else 0.0
    return dg.AssetCheckResult(
        passed=rate <= PARSE_ERROR_WARN_RATE,
        severity=dg.AssetCheckSeverity.WARN,
        metadata={
            "parse_errors": int(errors),
            "events": int(events),
            "files": files,
            "error_rate_pct": round(100 * rate, 3),
            "worst_file": str(worst or ""),
        },
    )


@dg.asset_check(
    asset=chunk_scores, blocking=True, description="Ratings in 1..10, consensus in 0..10."
)
def chunk_scores_range(selene: SeleneResource) -> dg.AssetCheckResult:
    """Fail on any assessment rating outside 1..10 or consensus outside 0..10."""
    with selene.connection() as conn:
        bad_a = conn.execute(
            "SELECT count(*) FROM assessments WHERE least(relevance, signal_density, reusability) < 1 "
            "OR greatest(relevance, signal_density, reusability) > 10 OR overall < 1 OR overall > 10"
        ).fetchone()[0]
        bad_s = conn.execute(
            "SELECT count(*) FROM chunk_scores WHERE consensus < 0 OR consensus > 10"
        ).fetchone()[0]
    return dg.AssetCheckResult(
        passed=bad_a == 0 and bad_s == 0,
        metadata={"bad_assessments": bad_a, "bad_consensus": bad_s},
    )


@dg.asset_check(
    asset=chunk_scores, description="Share of chunks with a sufficient (≥ 2 assessors) consensus."
)
def chunk_scores_coverage(selene: SeleneResource) -> dg.AssetCheckResult:
    """Report how many chunks are scored and how many have a sufficient consensus."""
    with selene.connection() as conn:
        chunks, scored, sufficient = conn.execute(
            "SELECT count(*), count(s.chunk_id), count(*) FILTER (WHERE s.sufficient) "
            "FROM chunks c LEFT JOIN chunk_scores s ON s.chunk_id = c.id AND s.session_key = c.session_key"
        ).fetchone()
    coverage = sufficient / chunks if chunks else 1.0
    return dg.AssetCheckResult(
        passed=coverage >= 0.95,
        severity=dg.AssetCheckSeverity.WARN,
        metadata={
            "chunks": chunks,
            "scored": scored,
            "sufficient": sufficient,
            "sufficient_pct": round(100 * coverage, 1),
        },
    )


@dg.asset_check(
    asset=distilled_sessions,
    blocking=True,
    description="No distilled file over its token budget; every recorded file exists.",
)
def distilled_within_budget(selene: SeleneResource) -> dg.AssetCheckResult:
    """Re-read every distilled file and count its texts against the budget."""
    model = selene.settings().model
    with selene.connection() as conn:
        rows = conn.execute(
            "SELECT session_key, path, tokens, budget FROM distilled_sessions"
        ).fetchall()
    over, missing = [], []
    for key, path, tokens, budget in rows:
        if not Path(path).is_file():
            missing.append(key)
            continue
        counted = file_content_tokens(Path(path), model=model)
        if tokens > budget or counted > budget:
            over.append(f"{key}: {max(tokens, counted)} > {budget}")
    return dg.AssetCheckResult(
        passed=not over and not missing,
        metadata={
            "files": len(rows),
            "over_budget": ", ".join(over) or "none",
            "missing_files": ", ".join(missing) or "none",
        },
    )


SESSION_CHECKS = [
    session_events_importance_range,
    session_files_parse_errors,
    chunk_scores_range,
    chunk_scores_coverage,
    distilled_within_budget,
]
