"""Sessions group (seed 003): one dynamic partition per session file, spine
``session_events`` → ``session_chunks`` → ``chunk_scores`` → ``distilled_sessions``.

Thin layer over :mod:`selene_dag.sessions.pipeline`: each partition's rows are rewritten in
one transaction (delete-then-insert by session key), so re-runs are idempotent. Data
versions are content hashes. The ``session_files`` sensor adds partitions and requests runs.

No ``from __future__ import annotations`` here: Dagster inspects the ``context`` annotation.
"""

import dataclasses
import hashlib
from collections import Counter

import dagster as dg

from selene_dag.defs.metadata import OWNERS, markdown_table
from selene_dag.defs.resources import SeleneResource
from selene_dag.sessions.chunker import ChunkConfig
from selene_dag.sessions.distiller import SORT_MODES, DistillerConfig
from selene_dag.sessions.pipeline import (
    archived_session,
    chunk_session,
    default_assessors,
    distill_project,
    distill_session,
    find_session_file,
    ingest_session,
    project_names,
    score_session,
)

SESSION_PARTITIONS = dg.DynamicPartitionsDefinition(name="session_files")


def _counter_table(counter: Counter, label: str) -> dg.MetadataValue:
    return markdown_table([label, "count"], counter.most_common())


@dg.asset(
    partitions_def=SESSION_PARTITIONS,
    group_name="sessions",
    owners=OWNERS,
    kinds={"duckdb"},
    code_version="1",
    pool="duckdb",
    description=(
        "One session file (Claude Code, Codex CLI or Gemini CLI) parsed into normalized events: "
        "secrets redacted to [REDACTED:kind] before storage, importance scored with seed 003's "
        "weights, tokens counted in the target model's tokens. Rewrites `session_files` and "
        "`session_events` for the partition in one transaction; malformed lines are counted."
    ),
)
def session_events(
    context: dg.AssetExecutionContext, selene: SeleneResource
) -> dg.MaterializeResult:
    """Parse, redact and score the partition's session file. A file deleted after its
    ingest (agents prune old transcripts) keeps its stored rows and data version."""
    settings = selene.settings()
    key = context.partition_key
    try:
        scanned = find_session_file(settings, key)
    except ValueError as exc:
        with selene.connection() as conn:
            archived = archived_session(conn, key)
        if archived is None:
            raise dg.Failure(description=str(exc)) from exc
        context.log.warning(f"{exc}: its {archived.events} stored events are kept as they are")
        return dg.MaterializeResult(
            data_version=dg.DataVersion(archived.data_version),
            metadata={
                "source": dg.MetadataValue.text("file gone: stored rows kept (archived)"),
                "events": dg.MetadataValue.int(archived.events),
                "dagster/row_count": dg.MetadataValue.int(archived.events),
            },
        )
    with selene.connection() as conn:
        result = ingest_session(conn, scanned, settings.now(), model=settings.model)
    for sample in result.error_samples:
        context.log.warning(f"{scanned.path}: skipped {sample}")
    if result.own_assessment:
        context.log.info(f"{scanned.path}: selene-dag's own assessment run, no events kept")
    return dg.MaterializeResult(
        data_version=dg.DataVersion(result.data_version),
        metadata={
            "path": dg.MetadataValue.path(scanned.path),
            "platform": dg.MetadataValue.text(scanned.platform),
            "events": dg.MetadataValue.int(result.events),
            "parse_errors": dg.MetadataValue.int(result.parse_errors),
            "duplicates_skipped": dg.MetadataValue.int(result.duplicates),
            "secrets_redacted": dg.MetadataValue.int(sum(result.redactions.values())),
            "own_assessment_run": dg.MetadataValue.bool(result.own_assessment),
            "kinds": _counter_table(result.kinds, "kind"),
            "dagster/row_count": dg.MetadataValue.int(result.events),
        },
    )


@dg.asset(
    deps=[session_events],
    partitions_def=SESSION_PARTITIONS,
    group_name="sessions",
    owners=OWNERS,
    kinds={"duckdb"},
    code_version="1",
    pool="duckdb",
    description=(
        "Assessment chunks of a session (seed 003): events below importance 30 left out, at most "
        "20 events and 4,000 target-model tokens per chunk, 2 events of overlap; ids are hashes "
        "of session key and first/last event."
    ),
)
def session_chunks(
    context: dg.AssetExecutionContext, selene: SeleneResource
) -> dg.MaterializeResult:
    """Rebuild the partition's chunks from its stored events."""
    settings = selene.settings()
    with selene.connection() as conn:
        chunks, version = chunk_session(
            conn, context.partition_key, ChunkConfig(), model=settings.model
        )
    tokens = sum(c.token_count for c in chunks)
    return dg.MaterializeResult(
        data_version=dg.DataVersion(version),
        metadata={
            "chunks": dg.MetadataValue.int(len(chunks)),
            "tokens": dg.MetadataValue.int(tokens),
            "preview": markdown_table(
                ["#", "events", "tokens", "importance", "start"],
                [
                    (c.chunk_index, c.event_count, c.token_count, c.importance_avg, c.text[:80])
                    for c in chunks[:10]
                ],
            ),
            "dagster/row_count": dg.MetadataValue.int(len(chunks)),
        },
    )


@dg.asset(
    deps=[session_chunks],
    partitions_def=SESSION_PARTITIONS,
    group_name="sessions",
    owners=OWNERS,
    kinds={"duckdb", "ollama"},
    code_version="1",
    pool="duckdb",
    description=(
        "Every chunk rated 1–10 (relevance, signal density, reusability) by each available "
        "assessor — extractive content heuristics and the structural importance heuristic "
        "always, Ollama when SELENE_LLM=ollama, the claude/codex/gemini CLIs when on PATH — then "
        "a weighted consensus (2 assessments needed, outliers beyond 2σ dropped)."
    ),
)
def chunk_scores(context: dg.AssetExecutionContext, selene: SeleneResource) -> dg.MaterializeResult:
    """Assess the partition's chunks and store assessments and consensus."""
    from selene_dag.llm import get_engine
    from selene_dag.llm.cli_assessors import available_assessors

    settings = selene.settings()
    with selene.connection() as conn:
        extractive = get_engine(dataclasses.replace(settings, llm="extractive"), cache_conn=conn)
        model_engine = selene.engine(conn) if settings.llm != "extractive" else None
        clis = available_assessors(list(settings.cli_assessors)) if settings.cli_assessors else []
        result = score_session(
            conn,
            context.partition_key,
            default_assessors(extractive, model_engine),
            settings.now(),
            clis,
        )
    for error in result.cli_errors[:10]:
        context.log.warning(error)
    return dg.MaterializeResult(
        data_version=dg.DataVersion(result.data_version),
        metadata={
            "chunks": dg.MetadataValue.int(result.chunks),
            "assessments": dg.MetadataValue.int(result.assessments),
            "sufficient_consensus": dg.MetadataValue.int(result.sufficient),
            "assessors": _counter_table(result.assessors, "assessor"),
            "cli_errors": dg.MetadataValue.int(len(result.cli_errors)),
            "dagster/row_count": dg.MetadataValue.int(result.chunks),
        },
    )


class DistillConfig(dg.Config):
    """Distillation knobs (seed 003 defaults); ``platform`` empty = the source's platform."""

    max_tokens: int = 80_000
    min_consensus: float = 5.0
    sort_by: str = "hybrid"
    platform: str = ""


@dg.asset(
    deps=[chunk_scores],
    partitions_def=SESSION_PARTITIONS,
    group_name="sessions",
    owners=OWNERS,
    kinds={"duckdb"},
    code_version="1",
    pool="duckdb",
    description=(
        "A resumable session file per source session under $SELENE_HOME/distilled/<platform>/: "
        "chunks with consensus ≥ 5.0 chosen by hybrid score (0.7 consensus + 0.3 recency) within "
        "80,000 target-model tokens (preamble and wrappers included), in chronological order."
    ),
)
def distilled_sessions(
    context: dg.AssetExecutionContext, config: DistillConfig, selene: SeleneResource
) -> dg.MaterializeResult:
    """Write the distilled session file and its ``distilled_sessions`` row."""
    if config.sort_by not in SORT_MODES:
        raise dg.Failure(
            description=f"sort_by {config.sort_by!r}: expected one of {', '.join(SORT_MODES)}"
        )
    settings = selene.settings()
    distiller = DistillerConfig(config.max_tokens, config.min_consensus, config.sort_by)
    with selene.connection() as conn:
        result = distill_session(
            conn,
            context.partition_key,
            settings.distilled_dir,
            settings.now(),
            distiller,
            platform=config.platform or None,
            model=settings.model,
        )
    return dg.MaterializeResult(
        data_version=dg.DataVersion(result.data_version),
        metadata={
            "path": dg.MetadataValue.path(str(result.path)),
            "platform": dg.MetadataValue.text(result.platform),
            "tokens": dg.MetadataValue.int(result.tokens),
            "budget": dg.MetadataValue.int(config.max_tokens),
            "chunks_selected": dg.MetadataValue.int(len(result.distilled.chunks)),
            "chunks_dropped_for_budget": dg.MetadataValue.int(result.distilled.dropped_chunks),
            "chunks_below_consensus": dg.MetadataValue.int(result.distilled.below_consensus),
            "sort_mode": dg.MetadataValue.text(config.sort_by),
        },
    )


@dg.asset(
    deps=[chunk_scores],
    group_name="sessions",
    owners=OWNERS,
    kinds={"duckdb"},
    code_version="1",
    pool="duckdb",
    automation_condition=dg.AutomationCondition.eager().replace(
        "newly_updated", dg.AutomationCondition.data_version_changed()
    ),
    description=(
        "One distilled session per project (working directory) across all of its scored "
        "sessions: their chunks compete for one 80,000-token budget (seed 003's per-project "
        "run). Rows have session_key 'project:<project>'."
    ),
)
def project_distillations(config: DistillConfig, selene: SeleneResource) -> dg.MaterializeResult:
    """Write one distilled file per project with scored sessions."""
    if config.sort_by not in SORT_MODES:
        raise dg.Failure(
            description=f"sort_by {config.sort_by!r}: expected one of {', '.join(SORT_MODES)}"
        )
    settings = selene.settings()
    distiller = DistillerConfig(config.max_tokens, config.min_consensus, config.sort_by)
    results = []
    with selene.connection() as conn:
        for project in project_names(conn):
            result = distill_project(
                conn,
                project,
                settings.distilled_dir / "projects",
                settings.now(),
                distiller,
                platform=config.platform or None,
                model=settings.model,
            )
            results.append((project, result))
    rows = [(p, r.platform, len(r.distilled.chunks), r.tokens, r.path.name) for p, r in results]
    return dg.MaterializeResult(
        data_version=dg.DataVersion(
            hashlib.sha256("".join(r.data_version for _, r in results).encode()).hexdigest()[:32]
        ),
        metadata={
            "projects": dg.MetadataValue.int(len(results)),
            "files": markdown_table(["project", "platform", "chunks", "tokens", "file"], rows),
            "budget": dg.MetadataValue.int(config.max_tokens),
        },
    )


SESSION_SPINE = [session_events, session_chunks, chunk_scores, distilled_sessions]
SESSION_ROLLUPS = [project_distillations]
SESSION_SPINE_SELECTION = dg.AssetSelection.assets(*SESSION_SPINE)
