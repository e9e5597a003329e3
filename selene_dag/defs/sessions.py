"""Sessions domain: one dynamic partition per session file, the spine
``session_events`` → ``session_chunks`` → ``chunk_scores`` → ``distilled_sessions``, the
per-project rollup, their checks, and the sensor that finds session files.

Thin layer over :mod:`selene_dag.sessions.steps`: each partition's rows are rewritten in
one transaction (delete-then-insert by session key; the first three spine steps write up
to 50 partitions per transaction), so re-runs are idempotent. Data versions are content
hashes. The ``session_files_sensor`` adds partitions and requests runs.

No ``from __future__ import annotations`` here: Dagster inspects the ``context`` annotation.
"""

import json
from collections import Counter
from pathlib import Path
from typing import Any

import dagster as dg

from selene_dag.config import Settings
from selene_dag.defs.conditions import FOLLOW_UPSTREAM, WITH_ITS_ASSET
from selene_dag.defs.metadata import FAILED_FILES, duckdb_asset, markdown_table
from selene_dag.defs.resources import SeleneResource
from selene_dag.errors import SeleneError
from selene_dag.llm import get_engine
from selene_dag.llm.cli_assessors import available_assessors
from selene_dag.sessions.distiller import DistillerConfig
from selene_dag.sessions.moves import retire_moved_sessions
from selene_dag.sessions.scanner import ScannedFile, scan_roots
from selene_dag.sessions.steps import (
    BudgetTooSmall,
    ReadSession,
    SessionScores,
    archived_session,
    chunk_views_of,
    default_assessors,
    distill_project,
    distill_sessions,
    events_to_chunk,
    file_content_tokens,
    file_sha256,
    known_tokens,
    read_session,
    scanned_by_key,
    score_views,
    session_chunks_of,
)
from selene_dag.sessions.store import (
    distilled_stamps,
    load_chunks_many,
    load_events_many,
    load_session_file,
    project_distillation_rows,
    project_names,
    replace_chunks_many,
    replace_scores_many,
    replace_sessions,
)
from selene_dag.text import content_hash

SESSION_PARTITIONS = dg.DynamicPartitionsDefinition(name="session_files")
# A run takes a range of session files: run overhead is paid once per batch, not per file.
SESSION_BACKFILL = dg.BackfillPolicy.single_run()


def _counter_table(counter: Counter, label: str) -> dg.MetadataValue:
    return markdown_table([label, "count"], counter.most_common())


class _Batch:
    """The session keys of one run and what each produced: per-key data versions and
    figures, and the keys that failed (with one line each). A failed key costs only
    itself: the other keys of the batch are stored and go on downstream. Only a failed
    key gets partition metadata of its own (an ``error``): per-partition metadata costs
    the event store a write per key, the per-key figures go into one table instead."""

    def __init__(self, context: dg.AssetExecutionContext) -> None:
        self.context = context
        self.keys: list[str] = list(context.partition_keys)
        self.versions: dict[str, str] = {}
        self.figures: dict[str, dict[str, Any]] = {}
        self.failed: dict[str, str] = {}

    def done(self, key: str, version: str, figures: dict[str, Any]) -> None:
        """Record a key's data version and its figures (metadata values)."""
        self.versions[key] = version
        self.figures[key] = figures

    def _figures_table(self) -> dg.MetadataValue:
        columns = list(next(iter(self.figures.values()), {}))
        rows = [
            (key, *(getattr(v, "value", v) for v in figures.values()))
            for key, figures in list(self.figures.items())[:100]
            if list(figures) == columns
        ]
        return markdown_table(["session_key", *columns], rows)

    def fail(self, key: str, message: str) -> None:
        self.failed[key] = message
        self.context.log.error(f"{key}: {message}")
        if len(self.keys) > 1:
            self.context.add_asset_metadata({"error": message}, partition_key=key)

    def result(self, metadata: dict[str, Any]) -> dg.MaterializeResult:
        """One partition: its own data version, ``metadata`` and its figures. A batch: the
        hash of its keys' versions, ``metadata`` (totals), a table of per-key figures and the
        failed keys."""
        if len(self.keys) == 1 and not self.failed:
            key = self.keys[0]
            return dg.MaterializeResult(
                data_version=dg.DataVersion(self.versions[key]),
                metadata={**metadata, **self.figures[key]},
            )
        if not self.versions:
            # Each file's own reason goes with the failure too: the caller reports (and
            # remembers) every file by its own, not by the run's summary.
            errors = {FAILED_FILES: dg.MetadataValue.json(dict(sorted(self.failed.items())))}
            if len(self.keys) == 1:
                raise dg.Failure(description=self.failed[self.keys[0]], metadata=errors)
            lines = "; ".join(f"{k}: {m}" for k, m in sorted(self.failed.items())[:5])
            raise dg.Failure(
                description=f"every session file of the run failed: {lines}", metadata=errors
            )
        version = content_hash(*(f"{k}={v}" for k, v in sorted(self.versions.items())))
        summary = {
            "session_files": dg.MetadataValue.int(len(self.keys)),
            "per_file": self._figures_table(),
            "failed": dg.MetadataValue.int(len(self.failed)),
            "failures": markdown_table(["session_key", "error"], sorted(self.failed.items())[:50]),
        }
        return dg.MaterializeResult(
            data_version=dg.DataVersion(version), metadata={**metadata, **summary}
        )


def _ingested_keys(conn: Any, keys: list[str]) -> set[str]:
    rows = conn.execute(
        "SELECT session_key FROM session_files WHERE list_contains(?, session_key)", [keys]
    ).fetchall()
    return {row[0] for row in rows}


# Files read before their rows are written together: one transaction and a few statements
# for many files. Bounded so that a batch of large transcripts is not all held in memory.
_WRITE_FILES = 50
_WRITE_CHARS = 16_000_000


def _replace_reads(conn: Any, reads: list[ReadSession]) -> None:
    replace_sessions(conn, [(read.file_row, read.events) for read in reads])


def _replace_chunk_sets(conn: Any, sets: list[tuple[str, list, str]]) -> None:
    replace_chunks_many(conn, [(key, chunks) for key, chunks, _ in sets])


def _replace_session_scores(conn: Any, scored: list[SessionScores]) -> None:
    replace_scores_many(conn, [(s.session_key, s.assessments, s.scores) for s in scored])


def _write_together(
    conn: Any, pending: list[tuple[str, Any]], write: Any
) -> tuple[list[tuple[str, Any]], dict[str, str]]:
    """Write the ``pending`` (key, payload) pairs with ``write(conn, payloads)`` in one go;
    when that fails, key by key, so that a key whose rows cannot be written costs only
    itself. Returns the pairs written and ``{key: error}`` of the others; clears
    ``pending``."""
    items = list(pending)
    pending.clear()
    if not items:
        return [], {}
    try:
        write(conn, [payload for _, payload in items])
        return items, {}
    except Exception:  # retried one by one below, where the failing key is named
        pass
    written: list[tuple[str, Any]] = []
    failed: dict[str, str] = {}
    for key, payload in items:
        try:
            write(conn, [payload])
            written.append((key, payload))
        except Exception as exc:
            failed[key] = f"storing its rows failed: {type(exc).__name__}: {exc}"
    return written, failed


def _ingest_figures(read: ReadSession, scanned: ScannedFile) -> dict[str, Any]:
    result = read.result
    return {
        "path": dg.MetadataValue.path(scanned.path),
        "platform": dg.MetadataValue.text(scanned.platform),
        "events": dg.MetadataValue.int(result.events),
        "parse_errors": dg.MetadataValue.int(result.parse_errors),
        "duplicates_skipped": dg.MetadataValue.int(result.duplicates),
        "secrets_redacted": dg.MetadataValue.int(sum(result.redactions.values())),
        "own_assessment_run": dg.MetadataValue.bool(result.own_assessment),
    }


# Dagster's tags on a materialization: the data version it recorded, the code version that
# made it.
DATA_VERSION_TAG = "dagster/data_version"
CODE_VERSION_TAG = "dagster/code_version"


def _materialized_by_this_code(
    context: dg.AssetExecutionContext, keys: list[str]
) -> dict[str, str]:
    """The data versions of the latest materializations of ``keys`` (partitions of this
    asset) made by its current code version, by key: the files a run stopped after
    parsing (Ctrl-C, a failed later step) were parsed again by the next one."""
    code = context.assets_def.code_versions_by_key.get(context.asset_key)
    if not keys or code is None:
        return {}
    records = context.instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=context.asset_key, asset_partitions=keys),
        limit=4 * len(keys),
    ).records
    latest: dict[str, str] = {}
    for record in records:  # newest first
        event = record.asset_materialization
        if event is None or event.partition is None or event.partition in latest:
            continue
        latest[event.partition] = (
            event.tags.get(DATA_VERSION_TAG, "") if event.tags.get(CODE_VERSION_TAG) == code else ""
        )
    return {key: version for key, version in latest.items() if version}


def _stored_as_read(
    conn: Any,
    batch: _Batch,
    key: str,
    scanned: ScannedFile | None,
    version: str | None,
    model: str,
) -> bool:
    """Record ``key`` done without reading its file again when this code's last
    materialization of it stands on the bytes there now, counted in ``model``'s tokens
    (its stored file row's size, time and hash): whether it did."""
    if scanned is None or not version:
        return False
    row = load_session_file(conn, key)
    if row is None or (row.size, row.mtime, row.token_model) != (
        scanned.size,
        scanned.mtime,
        model,
    ):
        return False
    try:
        if file_sha256(scanned.path) != row.sha256:
            return False
    except OSError:
        return False
    batch.done(
        key,
        version,
        {
            "source": dg.MetadataValue.text("unchanged since this code stored it: not read again"),
            "events": dg.MetadataValue.int(row.events),
        },
    )
    return True


def _read_one(
    conn: Any, batch: _Batch, key: str, scanned: ScannedFile | None, now: Any, model: str
) -> ReadSession | None:
    """Read one file of the batch for writing; None when there is nothing to write (its
    file is gone, and the key is then recorded archived or failed, or it failed to read)."""
    if scanned is None:
        archived = archived_session(conn, key)
        if archived is None:
            batch.fail(
                key,
                f"no session file with key {key!r} under the configured roots "
                "(SELENE_SESSION_ROOTS); it was moved or deleted",
            )
            return None
        batch.context.log.warning(f"{key}: file gone, its {archived.events} stored events kept")
        batch.done(
            key,
            archived.data_version,
            {
                "source": dg.MetadataValue.text("file gone: stored rows kept (archived)"),
                "events": dg.MetadataValue.int(archived.events),
            },
        )
        return None
    try:
        read = read_session(scanned, now, model=model, known=known_tokens(conn, key, model))
    except Exception as exc:  # one unreadable file must not cost the rest of the batch
        # A user's problem (SeleneError) says itself, a file the system refuses its reason
        # ("Permission denied"); anything else names its kind too.
        if isinstance(exc, OSError) and exc.strerror:
            batch.fail(key, f"{scanned.path}: cannot be read ({exc.strerror})")
            return None
        kind = "" if isinstance(exc, SeleneError) else f"{type(exc).__name__}: "
        batch.fail(key, f"{scanned.path}: {kind}{exc}")
        return None
    for sample in read.result.error_samples:
        batch.context.log.warning(f"{scanned.path}: skipped {sample}")
    if read.result.unfinished_line:
        batch.context.log.info(
            f"{scanned.path}: line {read.result.unfinished_line} is still being written; "
            "it is read once the file changes again"
        )
    if read.result.own_assessment:
        batch.context.log.info(f"{scanned.path}: selene-dag's own assessment run, no events kept")
    return read


@duckdb_asset(
    "sessions",
    partitions_def=SESSION_PARTITIONS,
    backfill_policy=SESSION_BACKFILL,
    code_version="27",  # 27: a secret glued after another redacted too; 26: Gemini tool calls at their own times, Codex exec_command failures after its header, a pasted image's tags left out of a Codex prompt, Claude Code's API-error replies as errors; 25: a .env value with spaces whole (PASSWORD=correct horse battery staple); 24: curl -u 'user':'password' quoted apart, a bare host before -sSu, curl -A docker; 23: a rewind to the first prompt abandons the first branch, vault login tokens, AUTH echoed to Redis, httpie after sudo's flags or python -m, a value glued to a symbol whole (Kx7(mP2q, Tr0ub4dor&3xyz); 22: ENV/config names with regions, roles and two stages, SECRETKEY, MASTER/ENCRYPTION/SIGNING_KEY, indented ENV, ssh-keygen/zip/unzip/openssl/7z passphrases, Vault tokens, .pgpass lines, tool inputs' JSON values one by one, a moved session retired; 21: SECRET_KEY and staged env names, curl -sSu after option values, httpie after sudo/RUN, Redis AUTH before a redirection or quoted; no record from an object glued after a whole one unless it ends as one; 20: every record of a long glued line, a glued first line, a record before junk; escaped quotes (curl -u, sqlplus, cookies), httpie/lftp/proxy/Redis AUTH, Terraform names, environment lists, Dockerfile ENV, exec-form curl; 19: Oracle, joined curl -u, Mailchimp, Terraform and long secrets, settings kept; a record after a cut one on its line, tool names on results, server tools, Codex reviews and one-document rollouts, written-out reasoning, repeated summaries once; 18: lone surrogate escapes, image placeholders (Gemini, Codex), a Gemini BOM; 17: secrets after a JSON escape, JWTs, service tokens, more commands; 16: pass/pwd/passphrase names; 15: a last line still being written is no parse error; 14: Azure keys, Hugging Face and SendGrid tokens, a pasted image named; 13: Pwd= at a line end, a password named with no verb; 9-12: htpasswd, net use, curl -b, AWS secret keys; 7-8: in words
    description=(
        "Session files (Claude Code, Codex CLI or Gemini CLI) parsed into normalized events: "
        "secrets redacted to [REDACTED:kind] before storage, importance scored with the default "
        "weights, tokens counted in the target model's tokens, rewound branches marked. "
        "Rewrites `session_files` and `session_events` of up to 50 files in one transaction "
        "(file by file when that fails); malformed lines are counted. A run takes a batch of "
        "files; a file that fails costs only itself. A session moved to another path (its old "
        "file gone, every stored event opening the new file) is kept under the new path only."
    ),
)
def session_events(
    context: dg.AssetExecutionContext, selene: SeleneResource
) -> dg.MaterializeResult:
    """Parse, redact and score the batch's session files. A file deleted after its ingest
    (agents prune old transcripts) keeps its stored rows and data version; a session moved
    to another path is stored under the new one only (``sessions.moves``)."""
    settings = selene.settings()
    batch = _Batch(context)
    scanned = scanned_by_key(settings)
    kinds: Counter = Counter()
    events = 0
    pending: list[tuple[str, Any]] = []
    held = 0

    def write(conn: Any) -> None:
        nonlocal events, held
        written, failed = _write_together(conn, pending, _replace_reads)
        for key, message in failed.items():
            batch.fail(key, message)
        moved = retire_moved_sessions(conn, [(read.file_row, read.events) for _, read in written])
        for old, new in sorted(moved.items()):
            batch.context.log.info(
                f"{new}: the session stored as {old} (its file gone) continues in this file; "
                f"{old}'s rows and distilled file removed"
            )
        replaced = {new: old for old, new in moved.items()}
        for key, read in written:
            figures = _ingest_figures(read, scanned[key])
            if key in replaced:
                figures["replaces"] = dg.MetadataValue.text(replaced[key])
            batch.done(key, read.result.data_version, figures)
            kinds.update(read.result.kinds)
            events += read.result.events
        held = 0

    kept = _materialized_by_this_code(context, batch.keys)
    with selene.connection() as conn:
        for key in batch.keys:
            if _stored_as_read(conn, batch, key, scanned.get(key), kept.get(key), settings.model):
                continue
            read = _read_one(conn, batch, key, scanned.get(key), settings.now(), settings.model)
            if read is None:
                continue
            pending.append((key, read))
            held += sum(len(e.text) for e in read.events)
            if len(pending) >= _WRITE_FILES or held >= _WRITE_CHARS:
                write(conn)
        write(conn)
    return batch.result(
        {
            "events": dg.MetadataValue.int(events),
            "kinds": _counter_table(kinds, "kind"),
            "dagster/row_count": dg.MetadataValue.int(events),
        }
    )


@duckdb_asset(
    "sessions",
    deps=[session_events],
    partitions_def=SESSION_PARTITIONS,
    backfill_policy=SESSION_BACKFILL,
    code_version="3",  # 3: an event over the limit keeps its start and its end
    description=(
        "Assessment chunks of each session: events below importance 30 and events of rewound "
        "branches left out, at most 20 events and 4,000 target-model tokens per chunk, 2 events "
        "of overlap; ids are hashes of session key and first/last event."
    ),
)
def session_chunks(
    context: dg.AssetExecutionContext, selene: SeleneResource
) -> dg.MaterializeResult:
    """Rebuild the chunks of the batch's ingested sessions from their stored events."""
    settings = selene.settings()
    batch = _Batch(context)
    count = tokens = 0
    preview: list[tuple] = []
    with selene.connection() as conn:
        ingested = _ingested_keys(conn, batch.keys)
        for key in batch.keys:
            if key not in ingested:
                batch.fail(key, "not ingested (its session_events step failed)")
        todo = [key for key in batch.keys if key in ingested]
        for at in range(0, len(todo), _WRITE_FILES):
            group = todo[at : at + _WRITE_FILES]
            events = events_to_chunk(conn, group, settings.model)
            pending = [
                (key, (key, *session_chunks_of(events.get(key, []), key, model=settings.model)))
                for key in group
            ]
            written, failed = _write_together(conn, pending, _replace_chunk_sets)
            for key, message in failed.items():
                batch.fail(key, message)
            for key, (_, chunks, version) in written:
                count += len(chunks)
                tokens += sum(c.token_count for c in chunks)
                preview += [
                    (c.chunk_index, c.event_count, c.token_count, c.importance_avg, c.text[:80])
                    for c in chunks[: max(0, 10 - len(preview))]
                ]
                batch.done(key, version, {"chunks": dg.MetadataValue.int(len(chunks))})
    return batch.result(
        {
            "chunks": dg.MetadataValue.int(count),
            "tokens": dg.MetadataValue.int(tokens),
            "preview": markdown_table(["#", "events", "tokens", "importance", "start"], preview),
            "dagster/row_count": dg.MetadataValue.int(count),
        }
    )


@duckdb_asset(
    "sessions",
    model=True,
    deps=[session_chunks],
    partitions_def=SESSION_PARTITIONS,
    backfill_policy=SESSION_BACKFILL,
    code_version="1",
    description=(
        "Every chunk rated 1–10 (relevance, signal density, reusability) by each available "
        "assessor — extractive content heuristics and the structural importance heuristic "
        "always, Ollama when SELENE_LLM=ollama, the claude/codex/gemini CLIs when on PATH — then "
        "a weighted consensus (2 assessments needed, outliers beyond 2σ dropped)."
    ),
)
def chunk_scores(context: dg.AssetExecutionContext, selene: SeleneResource) -> dg.MaterializeResult:
    """Assess the chunks of the batch's sessions and store assessments and consensus."""
    settings = selene.settings()
    batch = _Batch(context)
    chunks = assessments = sufficient = cli_errors = 0
    assessors: Counter = Counter()
    with selene.connection() as conn:
        extractive = get_engine(settings.replace(llm="extractive"), cache_conn=conn)
        model_engine = selene.engine(conn) if settings.llm != "extractive" else None
        clis = available_assessors(list(settings.cli_assessors)) if settings.cli_assessors else []
        ingested = _ingested_keys(conn, batch.keys)
        for key in batch.keys:
            if key not in ingested:
                batch.fail(key, "not ingested (its session_events step failed)")
        todo = [key for key in batch.keys if key in ingested]
        for at in range(0, len(todo), _WRITE_FILES):
            group = todo[at : at + _WRITE_FILES]
            events = load_events_many(conn, group)
            stored = load_chunks_many(conn, group)
            pending = []
            for key in group:
                views = chunk_views_of(events.get(key, []), stored.get(key, []))
                scored = score_views(
                    views,
                    key,
                    default_assessors(extractive, model_engine),
                    settings.now(),
                    clis,
                    cli_timeout=settings.assessor_timeout,
                    cli_concurrency=settings.assessor_concurrency,
                    engine=settings.llm,
                )
                pending.append((key, scored))
            written, failed = _write_together(conn, pending, _replace_session_scores)
            for key, message in failed.items():
                batch.fail(key, message)
            for key, scored in written:
                result = scored.result
                for error in result.cli_errors[:10]:
                    context.log.warning(error)
                chunks += result.chunks
                assessments += result.assessments
                sufficient += result.sufficient
                cli_errors += len(result.cli_errors)
                assessors.update(result.assessors)
                batch.done(
                    key, result.data_version, {"chunks": dg.MetadataValue.int(result.chunks)}
                )
    return batch.result(
        {
            "chunks": dg.MetadataValue.int(chunks),
            "assessments": dg.MetadataValue.int(assessments),
            "sufficient_consensus": dg.MetadataValue.int(sufficient),
            "assessors": _counter_table(assessors, "assessor"),
            "cli_errors": dg.MetadataValue.int(cli_errors),
            "dagster/row_count": dg.MetadataValue.int(chunks),
        }
    )


class DistillConfig(dg.Config):
    """Distillation knobs of one run; a knob left unset is the setting
    (SELENE_DISTILL_TOKEN_BUDGET, SELENE_DISTILL_MIN_CONSENSUS, SELENE_DISTILL_SORT_MODE);
    ``platform`` empty = the source's platform."""

    max_tokens: int | None = None
    min_consensus: float | None = None
    sort_by: str | None = None
    platform: str = ""
    # project_distillations only: the projects to distill again (None: every project).
    projects: list[str] | None = None

    def distiller(self, settings: Settings) -> DistillerConfig:
        """The distiller's configuration: this run's knobs, the settings for those unset. A
        run fails with one line on an unknown sort mode or a budget below 1."""
        try:
            return DistillerConfig.from_settings(
                settings, self.max_tokens, self.min_consensus, self.sort_by
            )
        except (ValueError, TypeError) as exc:
            raise dg.Failure(description=str(exc)) from None


@duckdb_asset(
    "sessions",
    deps=[chunk_scores],
    partitions_def=SESSION_PARTITIONS,
    backfill_policy=SESSION_BACKFILL,
    code_version="2",  # 2: the acknowledgement counted in the budget
    description=(
        "A resumable session file per source session under $SELENE_HOME/distilled/<platform>/: "
        "the chunks whose consensus reaches SELENE_DISTILL_MIN_CONSENSUS (5.0), chosen by "
        "SELENE_DISTILL_SORT_MODE (hybrid: 0.7 consensus + 0.3 recency) within "
        "SELENE_DISTILL_TOKEN_BUDGET target-model tokens (80,000; preamble and wrappers "
        "included), in chronological order."
    ),
)
def distilled_sessions(
    context: dg.AssetExecutionContext, config: DistillConfig, selene: SeleneResource
) -> dg.MaterializeResult:
    """Write the distilled session file and its ``distilled_sessions`` row per session."""
    settings = selene.settings()
    distiller = config.distiller(settings)
    batch = _Batch(context)
    written: list[tuple] = []
    with selene.connection() as conn:
        outcome = distill_sessions(
            conn,
            batch.keys,
            settings.distilled_dir,
            settings.now(),
            distiller,
            platform=config.platform or None,
            model=settings.model,
        )
    for key, error in outcome.errors.items():
        if isinstance(error, OSError):  # a full disk or a read-only folder, for this file
            batch.fail(key, f"writing the distilled file failed: {error}")
        elif isinstance(error, BudgetTooSmall):
            batch.fail(
                key, f"{error}: raise SELENE_DISTILL_TOKEN_BUDGET (a file distilled before is kept)"
            )
        else:
            batch.fail(key, "not ingested (its session_events step failed)")
    for key, result in outcome.results.items():
        written.append((key, result))
        batch.done(
            key,
            result.data_version,
            {
                "path": dg.MetadataValue.path(str(result.path)),
                "tokens": dg.MetadataValue.int(result.tokens),
            },
        )
    metadata: dict[str, Any] = {
        "files": dg.MetadataValue.int(len(written)),
        "tokens": dg.MetadataValue.int(sum(r.tokens for _, r in written)),
        "budget": dg.MetadataValue.int(distiller.max_tokens),
        "min_consensus": dg.MetadataValue.float(distiller.min_consensus),
        "sort_mode": dg.MetadataValue.text(distiller.sort_by),
    }
    if len(written) == 1:
        result = written[0][1]
        metadata |= {
            "path": dg.MetadataValue.path(str(result.path)),
            "platform": dg.MetadataValue.text(result.platform),
            "chunks_selected": dg.MetadataValue.int(len(result.distilled.chunks)),
            "chunks_dropped_for_budget": dg.MetadataValue.int(result.distilled.dropped_chunks),
            "chunks_below_consensus": dg.MetadataValue.int(result.distilled.below_consensus),
        }
    return batch.result(metadata)


@duckdb_asset(
    "sessions",
    deps=[chunk_scores],
    code_version="2",  # 2: the acknowledgement counted; a chunk repeated across sessions once
    automation_condition=FOLLOW_UPSTREAM,
    description=(
        "One distilled session per project (working directory) across all of its scored "
        "sessions: their chunks compete for one budget (SELENE_DISTILL_TOKEN_BUDGET, 80,000 "
        "tokens). Rows have session_key 'project:<project>'. `distill run` rewrites those of "
        "the projects whose sessions it ran."
    ),
)
def project_distillations(config: DistillConfig, selene: SeleneResource) -> dg.MaterializeResult:
    """Write one distilled file per project with scored sessions (those of
    ``config.projects`` only, when given: the projects whose sessions just ran)."""
    settings = selene.settings()
    distiller = config.distiller(settings)
    results = []
    with selene.connection() as conn:
        known = project_names(conn)
        wanted = set(config.projects) if config.projects is not None else set(known)
        for project in [p for p in known if p in wanted]:
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
        # Every project's file as it stands, those not written this time included.
        stored = project_distillation_rows(conn)
    rows = [(p, r.platform, len(r.distilled.chunks), r.tokens, r.path.name) for p, r in results]
    return dg.MaterializeResult(
        data_version=dg.DataVersion(content_hash(*(":".join(map(str, row)) for row in stored))),
        metadata={
            "projects": dg.MetadataValue.int(len(results)),
            "files": markdown_table(["project", "platform", "chunks", "tokens", "file"], rows),
            "budget": dg.MetadataValue.int(distiller.max_tokens),
            "min_consensus": dg.MetadataValue.float(distiller.min_consensus),
            "sort_mode": dg.MetadataValue.text(distiller.sort_by),
        },
    )


SESSION_SPINE = [session_events, session_chunks, chunk_scores, distilled_sessions]
SESSION_ROLLUPS = [project_distillations]
SESSION_SPINE_SELECTION = dg.AssetSelection.assets(*SESSION_SPINE)
# Choosing chunks again under other distillation settings: the last step of the spine only.
DISTILL_SELECTION = dg.AssetSelection.assets(distilled_sessions)
PROJECTS_SELECTION = dg.AssetSelection.assets(project_distillations)


# Checks: ranges and budgets block downstream; coverage figures warn.

PARSE_ERROR_WARN_RATE = 0.05


@dg.asset_check(
    automation_condition=WITH_ITS_ASSET,
    asset=session_events,
    blocking=True,
    description="Every importance score is within 0..100.",
)
def session_events_importance_range(selene: SeleneResource) -> dg.AssetCheckResult:
    """Fail when any stored event has an importance outside 0..100."""
    with selene.connection() as conn:
        bad, total = conn.execute(
            "SELECT count(*) FILTER (WHERE importance < 0 OR importance > 100), count(*) FROM session_events"
        ).fetchone()
    return dg.AssetCheckResult(passed=bad == 0, metadata={"out_of_range": bad, "events": total})


@dg.asset_check(
    automation_condition=WITH_ITS_ASSET,
    asset=session_events,
    description="Share of malformed lines across ingested files.",
)
def session_files_parse_errors(selene: SeleneResource) -> dg.AssetCheckResult:
    """Report the parse-error rate (warning above 5 %)."""
    with selene.connection() as conn:
        errors, events, files, worst = conn.execute(
            "SELECT coalesce(sum(parse_errors), 0), coalesce(sum(events), 0), count(*), "
            "arg_max(path, parse_errors) FILTER (WHERE parse_errors > 0) FROM session_files"
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
    automation_condition=WITH_ITS_ASSET,
    asset=chunk_scores,
    blocking=True,
    description="Ratings in 1..10, consensus in 0..10.",
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
    automation_condition=WITH_ITS_ASSET,
    asset=chunk_scores,
    description="Share of chunks with a sufficient (≥ 2 assessors) consensus.",
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
    automation_condition=WITH_ITS_ASSET,
    asset=distilled_sessions,
    blocking=True,
    description="No distilled file over its token budget; every recorded file exists.",
)
def distilled_within_budget(
    context: dg.AssetCheckExecutionContext, selene: SeleneResource
) -> dg.AssetCheckResult:
    """Re-read the distilled files this run wrote (its partitions; every file when the run
    has none) and count their texts against the budget: a backfill checks each file once,
    not every file once per partition."""
    model = selene.settings().model
    run = context.op_execution_context
    keys = list(run.partition_keys) if run.has_partition_key_range or run.has_partition_key else []
    with selene.connection() as conn:
        query = "SELECT session_key, path, tokens, budget FROM distilled_sessions"
        if keys:
            rows = conn.execute(query + " WHERE list_contains(?, session_key)", [keys]).fetchall()
        else:
            rows = conn.execute(query).fetchall()
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


# Automation: session files are on disk, where Dagster cannot see a change.


def changed_files(files: list[ScannedFile], cursor: dict[str, list[float]]) -> list[ScannedFile]:
    """Files that are new, or whose size or mtime differ from the cursor."""
    return [f for f in files if cursor.get(f.path) != [f.size, f.mtime]]


def batch_run_requests(
    ordered: list[str], files: list[ScannedFile], size: int
) -> list[dg.RunRequest]:
    """Run requests for ``files``: contiguous stretches of the partition order ``ordered``,
    at most ``size`` files each; a single file gets a plain partition request. The run key
    names the files' sizes and mtimes, so a file that changes again gets a new run."""
    by_key = {f.session_key: f for f in files}
    wanted = [k for k in ordered if k in by_key]
    requests = []
    start = 0
    while start < len(wanted):
        batch = [wanted[start]]
        position = ordered.index(batch[0])
        while (
            len(batch) < size
            and start + len(batch) < len(wanted)
            and position + len(batch) < len(ordered)
            and ordered[position + len(batch)] == wanted[start + len(batch)]
        ):
            batch.append(wanted[start + len(batch)])
        start += len(batch)
        run_key = content_hash(*(f"{k}:{by_key[k].size}:{by_key[k].mtime}" for k in batch))
        if len(batch) == 1:
            requests.append(dg.RunRequest(partition_key=batch[0], run_key=run_key))
        else:
            requests.append(
                dg.RunRequest(
                    run_key=run_key,
                    tags={
                        "dagster/asset_partition_range_start": batch[0],
                        "dagster/asset_partition_range_end": batch[-1],
                    },
                )
            )
    return requests


SENSOR_BATCH = 100


@dg.sensor(
    target=SESSION_SPINE_SELECTION,
    default_status=dg.DefaultSensorStatus.RUNNING,
    # A new session is picked up within seconds, as a file watcher would (the scan is a
    # listing and a stat per file; the daemon keeps one day of its skipped ticks).
    minimum_interval_seconds=5,
    description=(
        "Scans SELENE_SESSION_ROOTS every 5 s; new or grown session files get a partition "
        "and go through the spine in batches (one run per range of files)."
    ),
)
def session_files_sensor(
    context: dg.SensorEvaluationContext, selene: SeleneResource
) -> dg.SensorResult:
    """One tick: scan, diff against the cursor, add partitions, request batched runs."""
    settings = selene.settings()
    roots = [r for r in settings.session_roots if Path(r.path).expanduser().is_dir()]
    if not roots:
        listed = ", ".join(str(r.path) for r in settings.session_roots) or "none"
        return dg.SensorResult(
            skip_reason=f"no session root exists (SELENE_SESSION_ROOTS: {listed})",
            cursor=context.cursor,
        )
    try:
        cursor = json.loads(context.cursor) if context.cursor else {}
    except json.JSONDecodeError:
        cursor = {}
    files = scan_roots(roots)
    if not cursor:
        # A first tick: the files `distill run` stored and distilled unchanged since are
        # seen (every one went through the spine again at the first `dev`).
        stamps = distilled_stamps(settings.db_path)
        if stamps is None:
            return dg.SensorResult(
                skip_reason="another process holds the store: looking again next tick",
                cursor=context.cursor,
            )
        cursor = {
            f.path: [f.size, f.mtime]
            for f in files
            if stamps.get(f.session_key) == (f.size, f.mtime)
        }
    existing = context.instance.get_dynamic_partitions(SESSION_PARTITIONS.name)
    new_keys = sorted({f.session_key for f in files} - set(existing))
    requests = batch_run_requests(
        [*existing, *new_keys], changed_files(files, cursor), SENSOR_BATCH
    )
    partition_requests = [SESSION_PARTITIONS.build_add_request(new_keys)] if new_keys else []
    next_cursor = json.dumps({f.path: [f.size, f.mtime] for f in files}, sort_keys=True)
    if not requests and not partition_requests:
        return dg.SensorResult(
            skip_reason=f"no new or grown session file ({len(files)} under the roots)",
            cursor=next_cursor,
        )
    return dg.SensorResult(
        run_requests=requests,
        dynamic_partitions_requests=partition_requests,
        cursor=next_cursor,
    )
