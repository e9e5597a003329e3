"""Notes domain: the notes folder, ingest, essences, threads, digests, tiers, daily
summaries and compression health, with their checks and automation.

Thin layer: each asset reads its inputs, calls a plain function of ``selene_dag.notes``,
writes the result and returns metadata. Data versions are content hashes, so a re-run that
produces the same content marks nothing downstream stale; code versions include the hashes
of the prompts, algorithms and SQL transforms an asset uses, so editing one marks exactly
those assets stale. Cadences: essences every 5 minutes while notes are left to analyse
(``essences_sensor``), digests hourly, tiers daily at 03:00, each day's summary after
midnight; everything also follows changed inputs.

No ``from __future__ import annotations`` here: Dagster inspects the ``context`` annotation.
"""

import hashlib
import json
from datetime import date, datetime, timedelta
from pathlib import Path

import dagster as dg

from selene_dag.config import load_settings
from selene_dag.context import count_tokens
from selene_dag.context.builder import pack_notes, pack_with_threads
from selene_dag.defs.conditions import (
    DAILY_SUMMARY_CRON,
    DIGESTS_CRON,
    ESSENCES_INTERVAL,
    FOLLOW_UPSTREAM,
    TIERS_CRON,
    WITH_ITS_ASSET,
    follow_or_every,
)
from selene_dag.defs.metadata import (
    AS_OF_DAY,
    CLOCK_TAG,
    ESSENCES_LEFT,
    OWNERS,
    code_version,
    duckdb_asset,
    engine_metadata,
    markdown_table,
)
from selene_dag.defs.resources import SeleneResource
from selene_dag.defs.run_owner import release_dead_runs
from selene_dag.notes import file_cache
from selene_dag.notes.context_notes import (
    KEEP_COUNTS_SQL,
    full_tokens,
    leading_counts,
    load_context_threads,
    prepare_leading,
)
from selene_dag.notes.daily import (
    MODEL_DAYS,
    first_day_to_refresh,
    summarize_days,
    write_day_summaries,
)
from selene_dag.notes.digests import MAX_SENTENCES, MIN_SENTENCES, compile_digests
from selene_dag.notes.fidelity import compute_tier
from selene_dag.notes.fidelity_sql import apply_fidelity_tiers, fidelity_inputs
from selene_dag.notes.folders import (
    find_folder,
    folders_to_watch,
    ingest_scope,
    stored_note_files,
)
from selene_dag.notes.health import compression_health as health_document
from selene_dag.notes.ingest import notes_folder_version, read_notes
from selene_dag.notes.listing import dangling_note_links, note_files, walk_once
from selene_dag.notes.processing import analyse_notes, notes_left, processed_version
from selene_dag.notes.threads import refresh_threads, threads_version
from selene_dag.notes.writer import forget_folder, stored_notes_version, write_notes
from selene_dag.store import record_day
from selene_dag.text import hash_rows, split_sentences

HEALTH_BUDGET = 16_000


DEFAULT_DAILY_START = date(2020, 1, 1)


def first_partition_day() -> date:
    """First day of the daily summaries: SELENE_DAILY_START, else 2020-01-01. A setting,
    not the data: loading the definitions never parses the notes."""
    start = load_settings().daily_start
    return start.date() if start is not None else DEFAULT_DAILY_START


# One partition per month (each fills the summaries of its month's days): a persistent
# instance records ~80 partitions for six years of notes instead of ~2,400 (the event
# writes of daily partitions made a history backfill take minutes).
SUMMARY_PARTITIONS = dg.MonthlyPartitionsDefinition(
    start_date=first_partition_day().replace(day=1).isoformat(), end_offset=1
)


@dg.observable_source_asset(
    group_name="notes",
    owners=OWNERS,
    description=(
        "The notes folder (SELENE_NOTES_DIR): markdown, plain text, Org, canvas, JSON, JSONL "
        "and Evernote files, and note apps' exports. "
        "Its data version is a hash of the folder's path and every note file's path and "
        "bytes, so only a change to a file, or pointing it at another folder, makes it change."
    ),
)
def notes_source(selene: SeleneResource) -> dg.DataVersion:
    """Observe the notes folder and return the hash of its notes as the data version."""
    settings = selene.settings()
    return dg.DataVersion(notes_folder_version(settings.notes_dir, settings.home))


def recorded_folder_version(instance: dg.DagsterInstance) -> tuple[str | None, int | None]:
    """The notes folder's data version as last recorded in ``instance`` and the storage id
    of that record ((None, None) before any observation)."""
    from dagster._core.definitions.data_version import extract_data_version_from_entry

    record = instance.get_latest_data_version_record(notes_source.key, is_source=True)
    if record is None:
        return None, None
    version = extract_data_version_from_entry(record.event_log_entry)
    return (version.value if version else None), record.storage_id


def folder_observation(version: str) -> dg.AssetObservation:
    """The observation of ``notes_source`` that records ``version`` (the event an
    observation run logs, reported without the run around it)."""
    from dagster._core.definitions.data_version import DATA_VERSION_TAG

    return dg.AssetObservation(asset_key=notes_source.key, tags={DATA_VERSION_TAG: version})


# Metadata of a raw_notes run that forgot a folder: the next ingest reads its folder again
# whatever Dagster's lineage says (the folder's data version may be the one it last read).
FORGOTTEN_FOLDER = "forgotten_folder"


class NotesConfig(dg.Config):
    """What a ``raw_notes`` run does: ingest SELENE_NOTES_DIR, or, with ``forget`` (the key
    of an ingested folder), forget that folder instead (``selene-dag forget``)."""

    forget: str = ""


@duckdb_asset(
    "notes",
    deps=[notes_source],
    code_version=code_version(
        "5",
        sql=(
            "notes_changes",
            "notes_upsert",
            "notes_mark_deleted",
            "notes_forget_folder",
            "notes_move_folder",
        ),
    ),
    automation_condition=FOLLOW_UPSTREAM,
    description=(
        "Every note of SELENE_NOTES_DIR upserted into `notes` by id (content hash, dates, "
        "source, test_run). A note's id is `<folder>/<path in the folder>` (or the id its "
        "JSONL line gives, else `<file>:<line>`), where `<folder>` is the folder's name, with a `-2`, `-3`… suffix "
        "only when another folder of that name was ingested first: folders ingested into one "
        "home never share ids, and ingesting one never changes another's notes. A deleted file "
        "marks its notes deleted; a bad JSON line, a line without text, a binary file or an "
        "empty note is skipped, and a broken front-matter, an unreadable value or a bad byte "
        "costs only itself (the note is kept); every problem is listed with its reason, and "
        "nothing is half-written. Dates a note does not give are found once: its file's "
        "modification time (or the ingest's time) when it is first stored or its text changes. "
        "A run configured with `forget: <folder key>` forgets that folder instead: its notes "
        "are marked deleted and it is no longer registered (`selene-dag forget`)."
    ),
)
def raw_notes(
    context: dg.AssetExecutionContext, config: NotesConfig, selene: SeleneResource
) -> dg.MaterializeResult:
    """Ingest the notes folder into the ``notes`` table in one transaction (or forget an
    ingested folder, with ``config.forget``)."""
    settings = selene.settings()
    if config.forget:
        return _forget(config.forget, selene)
    notes_dir = settings.notes_dir
    if not notes_dir.exists():
        raise dg.Failure(
            description=f"notes folder {notes_dir} does not exist: set SELENE_NOTES_DIR or create it"
        )
    with selene.connection() as conn:
        scope = ingest_scope(conn, notes_dir)
        result = read_notes(notes_dir, scope, settings.home, lambda: stored_note_files(conn, scope))
        for error in result.errors:
            where = f"{error.source}:{error.line}" if error.line else error.source
            context.log.warning(f"skipped {where}: {error.error}")
        stats = write_notes(conn, result, scope, settings.now())
        version = stored_notes_version(conn)
        live = conn.execute("SELECT count(*) FROM notes WHERE deleted_at IS NULL").fetchone()[0]
        preview = conn.execute(
            "SELECT id, title, topic, created_at::DATE FROM notes WHERE deleted_at IS NULL "
            "ORDER BY created_at DESC LIMIT 10"
        ).fetchall()
    metadata: dict[str, object] = {
        "notes": dg.MetadataValue.int(live),
        "folder": dg.MetadataValue.text(f"{scope.folder} (note ids {scope.id_prefix}…)"),
        "inserted": dg.MetadataValue.int(stats.inserted),
        "changed": dg.MetadataValue.int(stats.changed),
        "restored": dg.MetadataValue.int(stats.restored),
        "unchanged": dg.MetadataValue.int(stats.unchanged),
        "marked_deleted": dg.MetadataValue.int(stats.deleted),
        "bad_inputs": dg.MetadataValue.int(stats.errors),
        "newest": markdown_table(["id", "title", "topic", "created"], preview),
        "dagster/row_count": dg.MetadataValue.int(live),
    }
    if scope.moved_from is not None:
        metadata["moved_from"] = dg.MetadataValue.text(str(scope.moved_from))
    if result.errors:
        metadata["bad_input_list"] = markdown_table(
            ["file", "line", "error"],
            [(e.source, e.line or "", e.error) for e in result.errors[:50]],
        )
    return dg.MaterializeResult(data_version=dg.DataVersion(version), metadata=metadata)


def _forget(key: str, selene: SeleneResource) -> dg.MaterializeResult:
    with selene.connection() as conn:
        key, folder = find_folder(conn, key)
        forgotten = forget_folder(conn, key, folder, selene.settings().now())
        file_cache.forget(selene.settings().home, folder)
        version = stored_notes_version(conn)
        live = conn.execute("SELECT count(*) FROM notes WHERE deleted_at IS NULL").fetchone()[0]
    return dg.MaterializeResult(
        data_version=dg.DataVersion(version),
        metadata={
            "notes": dg.MetadataValue.int(live),
            FORGOTTEN_FOLDER: dg.MetadataValue.text(f"{folder} (note ids {key}/…)"),
            "marked_deleted": dg.MetadataValue.int(forgotten),
            "dagster/row_count": dg.MetadataValue.int(live),
        },
    )


@duckdb_asset(
    "notes",
    model=True,
    deps=[raw_notes],
    code_version=code_version(
        "1",
        prompts=("note_analysis",),
        algorithms=("analyze_note",),
        sql=("processed_moved", "essence_todo", "essence_upsert"),
    ),
    # Its 5-minute cadence is essences_sensor's: a run while notes are left, not every tick.
    automation_condition=FOLLOW_UPSTREAM,
    description=(
        "Concepts, primary theme and a 1–2 sentence essence for every note. Incremental: only "
        "new notes, changed notes and notes without an essence, newest first (a note whose "
        "file was renamed or moved keeps its analysis and last use); test notes "
        "skipped; essences of 10 characters or fewer rejected. Finished notes are saved as "
        "they come (each model call on its own), so a crash or a model server going down "
        "loses little and a re-run resumes where it stopped. At most "
        "SELENE_ESSENCE_LIMIT notes per run (10 with Ollama, unlimited with extractive)."
    ),
)
def processed_notes(
    context: dg.AssetExecutionContext, selene: SeleneResource
) -> dg.MaterializeResult:
    """Analyse pending notes with the configured engine (model calls cached in llm_cache)."""
    settings = selene.settings()
    with selene.connection() as conn:
        engine = selene.engine(conn)
        try:
            stats = analyse_notes(conn, engine, settings.now(), limit=settings.essence_limit)
            for reason in stats.unusable:  # analysed offline instead; the run goes on
                context.log.warning(f"model answer unusable, note {reason}")
        finally:
            context.log.info(
                f"engine calls: {engine.calls_made} made, {engine.calls_cached} cached"
            )
        version = processed_version(conn)
        # Notes still to analyse (without an essence, or by another engine) when the run
        # stopped at its limit; those it could not give an essence do not count.
        limited = bool(settings.essence_limit) and stats.pending >= (settings.essence_limit or 0)
        left = max(0, notes_left(conn, engine) - stats.rejected_essences) if limited else 0
        total, with_essence, remaining = conn.execute(
            "SELECT count(*), count(p.essence), count(*) - count(p.essence) FROM notes n "
            "LEFT JOIN processed_notes p ON p.note_id = n.id "
            "WHERE n.deleted_at IS NULL AND NOT n.test_run"
        ).fetchone()
        preview = conn.execute(
            "SELECT n.title, p.primary_theme, p.essence FROM processed_notes p "
            "JOIN notes n ON n.id = p.note_id WHERE p.essence IS NOT NULL "
            "ORDER BY n.created_at DESC LIMIT 8"
        ).fetchall()
    metadata = {
        "analysed": dg.MetadataValue.int(stats.analysed),
        "rejected_essences": dg.MetadataValue.int(stats.rejected_essences),
        "analysed_offline": dg.MetadataValue.int(len(stats.unusable)),
        "moved_notes": dg.MetadataValue.int(stats.moved),
        # The run stopped at SELENE_ESSENCE_LIMIT with notes left: the next ingest goes on.
        ESSENCES_LEFT: dg.MetadataValue.int(left),
        "notes_with_essence": dg.MetadataValue.int(with_essence),
        "notes_without_essence": dg.MetadataValue.int(remaining),
        "essence_coverage_pct": dg.MetadataValue.float(
            round(100 * with_essence / total, 1) if total else 0.0
        ),
        "newest_essences": markdown_table(["title", "theme", "essence"], preview, width=120),
        "dagster/row_count": dg.MetadataValue.int(total),
        **engine_metadata(engine),
    }
    return dg.MaterializeResult(data_version=dg.DataVersion(version), metadata=metadata)


@duckdb_asset(
    "notes",
    model=True,
    deps=[processed_notes],
    code_version=code_version(
        "1",
        prompts=("detect_threads", "reconsolidate_thread"),
        sql=("threads_by_topic", "threads_refresh_model", "thread_members"),
    ),
    tags=CLOCK_TAG,
    # Daily too: a thread is archived when its notes were not touched for a while, which
    # no input's change says (without it tiers stopped aging).
    automation_condition=follow_or_every(TIERS_CRON),
    description=(
        "Notes grouped into threads: one per topic by default (a note's topic, else its first "
        "tag, else the folder it sits in unless that folder holds most of the notes or is "
        "mostly daily notes named by their day, else its "
        "primary theme); with a model "
        "engine, the model's thread detection over the 30 newest unthreaded notes adds more, "
        "and each active thread whose newest notes changed is read again: its summary and "
        "motivation rewritten, its direction and whether it shifted recorded. A thread is "
        "active while a member was updated or used within SELENE_THREAD_ACTIVE_DAYS."
    ),
)
def threads(context: dg.AssetExecutionContext, selene: SeleneResource) -> dg.MaterializeResult:
    """Rebuild thread membership and status."""
    settings = selene.settings()
    with selene.connection() as conn:
        engine = selene.engine(conn) if settings.llm != "extractive" else None
        stats = refresh_threads(conn, settings.now(), settings.thread_active_days, engine)
        record_day(conn, "threads", settings.now().date())
        for reason in stats.unusable:  # left as they were; the run goes on
            context.log.warning(f"model answer unusable, {reason}")
        version = threads_version(conn)
        top = conn.execute(
            "SELECT name, status, note_count, last_activity_at::DATE FROM threads "
            "ORDER BY status, note_count DESC LIMIT 15"
        ).fetchall()
    metadata = {
        AS_OF_DAY: dg.MetadataValue.text(settings.now().date().isoformat()),
        "threads": dg.MetadataValue.int(stats.threads),
        "active": dg.MetadataValue.int(stats.active),
        "archived": dg.MetadataValue.int(stats.threads - stats.active),
        "model_threads_added": dg.MetadataValue.int(stats.model_threads_added),
        "threads_reconsolidated": dg.MetadataValue.int(stats.reconsolidated),
        "threads_shifted": dg.MetadataValue.int(stats.shifted),
        "model_answers_unusable": dg.MetadataValue.int(len(stats.unusable)),
        "largest": markdown_table(["thread", "status", "notes", "last activity"], top),
        "dagster/row_count": dg.MetadataValue.int(stats.threads),
    }
    if engine is not None:
        metadata.update(engine_metadata(engine))
    return dg.MaterializeResult(data_version=dg.DataVersion(version), metadata=metadata)


@duckdb_asset(
    "notes",
    model=True,
    deps=[threads, processed_notes],
    code_version=code_version("1", prompts=("thread_digest",), algorithms=("digest_thread",)),
    automation_condition=follow_or_every(DIGESTS_CRON),
    description=(
        "A 3–5 sentence digest (≥ 30 characters) of every active thread with ≥ 10 notes and "
        "≥ 5 essences, regenerated only when the essences it was made from changed."
    ),
)
def thread_digests(
    context: dg.AssetExecutionContext, selene: SeleneResource
) -> dg.MaterializeResult:
    """Compile stale digests."""
    settings = selene.settings()
    with selene.connection() as conn:
        engine = selene.engine(conn)
        stats = compile_digests(conn, engine, settings.now())
        rows = conn.execute(
            "SELECT id, digest_source FROM threads WHERE thread_digest IS NOT NULL ORDER BY id"
        ).fetchall()
        preview = conn.execute(
            "SELECT name, note_count, thread_digest FROM threads WHERE thread_digest IS NOT NULL "
            "ORDER BY note_count DESC LIMIT 6"
        ).fetchall()
    metadata = {
        "eligible_threads": dg.MetadataValue.int(stats.eligible),
        "digests_written": dg.MetadataValue.int(stats.written),
        "digests_fresh": dg.MetadataValue.int(stats.fresh),
        "digests_rejected": dg.MetadataValue.int(stats.rejected),
        "digests_cleared": dg.MetadataValue.int(stats.cleared),
        "digests": markdown_table(["thread", "notes", "digest"], preview, width=200),
        **engine_metadata(engine),
    }
    return dg.MaterializeResult(data_version=dg.DataVersion(hash_rows(rows)), metadata=metadata)


@duckdb_asset(
    "notes",
    deps=[processed_notes, threads],
    code_version=code_version("1", sql=("fidelity_inputs", "fidelity_tiers", "fidelity_write")),
    tags=CLOCK_TAG,
    automation_condition=follow_or_every(TIERS_CRON),
    description=(
        "Fidelity tier of every note (full / high / summary / skeleton) by age, activity and thread status, "
        "computed for all notes at once, as of now (SELENE_NOW when it is set)."
    ),
)
def fidelity_tiers(
    context: dg.AssetExecutionContext, selene: SeleneResource
) -> dg.MaterializeResult:
    """Recompute every note's tier in SQL."""
    settings = selene.settings()
    with selene.connection() as conn:
        changes = apply_fidelity_tiers(conn, settings.now())
        record_day(conn, "fidelity_tiers", settings.now().date())
        rows = conn.execute(
            "SELECT p.note_id, p.fidelity_tier FROM processed_notes p ORDER BY p.note_id"
        ).fetchall()
        distribution = conn.execute(
            "SELECT p.fidelity_tier, count(*) FROM processed_notes p JOIN notes n ON n.id = p.note_id "
            "WHERE n.deleted_at IS NULL AND NOT n.test_run GROUP BY 1 ORDER BY 1"
        ).fetchall()
    metadata = {
        AS_OF_DAY: dg.MetadataValue.text(settings.now().date().isoformat()),
        "tier_changes": dg.MetadataValue.int(changes),
        "tiers": markdown_table(["tier", "notes"], distribution),
        **{f"tier_{tier}": dg.MetadataValue.int(count) for tier, count in distribution},
    }
    return dg.MaterializeResult(data_version=dg.DataVersion(hash_rows(rows)), metadata=metadata)


@duckdb_asset(
    "notes",
    model=True,
    deps=[processed_notes],
    # 3: a model for the last month's days of two notes or more; 2: the title said once
    code_version=code_version("3", prompts=("summarize",)),
    partitions_def=SUMMARY_PARTITIONS,
    backfill_policy=dg.BackfillPolicy.single_run(),
    automation_condition=dg.AutomationCondition.on_cron(DAILY_SUMMARY_CRON),
    description=(
        "One summary per day of the notes created that day (each note's essence, else its "
        "three main concepts, else its opening words), a model's summary with a model "
        "server, for the days of the "
        "last month that hold two notes or more. Monthly partitions from SELENE_DAILY_START, "
        "each filling its days; "
        "a backfill of any range runs as one run, and the current month is refreshed daily "
        "(on the 1st, with the last day of the month before)."
    ),
)
def daily_summaries(
    context: dg.AssetExecutionContext, selene: SeleneResource
) -> dg.MaterializeResult:
    """Summarize every day in the run's partition range (and the day before the month in
    progress, while its summary predates that day's end: see :func:`first_day_to_refresh`)."""
    settings = selene.settings()
    window = context.partition_time_window
    start, end = window.start.date(), window.end.date()
    with selene.connection() as conn:
        start = first_day_to_refresh(conn, start, end, settings.now())
        engine = selene.engine(conn)
        since = settings.now().date() - timedelta(days=MODEL_DAYS)
        summaries = summarize_days(conn, start, end, engine, model_since=since)
        write_day_summaries(conn, start, end, summaries, settings.now())
    days_with_notes = len(summaries)
    preview = [
        (
            s.day,
            len(s.note_ids),
            s.summary.splitlines()[1] if len(s.summary.splitlines()) > 1 else "",
        )
        for s in summaries[-5:]
    ]
    metadata = {
        "days": dg.MetadataValue.int((end - start).days),
        "days_with_notes": dg.MetadataValue.int(days_with_notes),
        "notes_summarized": dg.MetadataValue.int(sum(len(s.note_ids) for s in summaries)),
        "latest": markdown_table(["day", "notes", "first line"], preview, width=120),
        **engine_metadata(engine),
    }
    return dg.MaterializeResult(
        data_version=dg.DataVersion(hash_rows([(s.day, s.summary) for s in summaries])),
        metadata=metadata,
    )


# Budgets the tiered context is packed at by the compression_health check, beside HEALTH_BUDGET.
CHECK_BUDGETS = (500, 4_000)


@duckdb_asset(
    "notes",
    deps=[fidelity_tiers, thread_digests, processed_notes],
    code_version="5",  # 5: the budget check packs the threads too
    tags=CLOCK_TAG,
    automation_condition=FOLLOW_UPSTREAM,
    description=(
        "The compression health figures (tier distribution, essence progress, active "
        "threads with a digest) plus the token cost of all notes at full fidelity (each "
        "note's header line and content counted apart) against the tiered pack at "
        f"{HEALTH_BUDGET:,} tokens of the target model."
    ),
    check_specs=[
        dg.AssetCheckSpec(
            "context_within_budget",
            asset="compression_health",
            blocking=True,
            description=(
                "The tiered context (the active threads' digests, then all notes) never "
                "exceeds its budget in the target model's tokens (packed at 500, 4,000 and "
                "the health budget)."
            ),
        )
    ],
)
def compression_health(
    context: dg.AssetExecutionContext, selene: SeleneResource
) -> dg.MaterializeResult:
    """Compute the health document and the token savings of the tiered pack."""
    settings = selene.settings()
    with selene.connection() as conn:
        health = health_document(conn, settings.now())
        # Only the notes a pack of the largest budget can reach are loaded and rendered.
        prepared, counter, live = prepare_leading(
            conn, settings.model, max(HEALTH_BUDGET, *CHECK_BUDGETS)
        )
        # Every note at full, its header line and its content counted apart: the contents'
        # counts are shared with search_index's (token_counts), so a fresh corpus is not
        # tokenized whole once more for this figure.
        all_full = full_tokens(conn, counter)
        threads = load_context_threads(conn)
        # Counts of renders no note has any more go; the index's document bodies and the
        # notes' header lines and contents stay.
        pruned = counter.prune(keep_sql=KEEP_COUNTS_SQL)
    pack = pack_notes(prepared, HEALTH_BUDGET)
    pack_counts = leading_counts(pack, prepared, live)
    # The budget check runs here, on the notes already prepared for the figures: as a
    # check of its own it loaded and prepared every note a second time. It checks what
    # `context` prints: the active threads' digests, then the notes.
    packed = {
        budget: count_tokens(pack_with_threads(prepared, threads, budget).text, settings.model)
        for budget in (HEALTH_BUDGET, *CHECK_BUDGETS)
    }
    over = {b: t for b, t in packed.items() if t > b}
    check = dg.AssetCheckResult(
        check_name="context_within_budget",
        passed=not over,
        metadata={"model": settings.model, **{f"tokens_at_{b}": t for b, t in packed.items()}},
    )
    tier_rows = [(tier, count) for tier, count in health["tiers"].items()]
    metadata = {
        AS_OF_DAY: dg.MetadataValue.text(settings.now().date().isoformat()),
        "health": dg.MetadataValue.json(health),
        "tiers": dg.MetadataValue.table(
            records=[dg.TableRecord({"tier": t, "notes": c}) for t, c in tier_rows],
            schema=dg.TableSchema(
                columns=[dg.TableColumn("tier", "string"), dg.TableColumn("notes", "int")]
            ),
        ),
        "essence_progress_pct": dg.MetadataValue.int(health["essences"]["percent"]),
        "active_threads": dg.MetadataValue.int(health["threadDigests"]["activeThreads"]),
        "active_threads_with_digest": dg.MetadataValue.int(health["threadDigests"]["withDigest"]),
        "model": dg.MetadataValue.text(settings.model),
        "texts_counted": dg.MetadataValue.int(counter.counted),
        "texts_count_reused": dg.MetadataValue.int(counter.reused),
        "token_counts_pruned": dg.MetadataValue.int(pruned),
        "tokens_all_notes_full": dg.MetadataValue.int(all_full),
        "tokens_packed": dg.MetadataValue.int(pack.total_tokens),
        "pack_budget": dg.MetadataValue.int(HEALTH_BUDGET),
        "notes_in_pack": dg.MetadataValue.int(sum(1 for t in pack.tiers.values() if t)),
        "token_savings_pct": dg.MetadataValue.float(
            round(100 * (1 - pack.total_tokens / all_full), 1) if all_full else 0.0
        ),
        "pack_tiers": markdown_table(["tier", "notes in pack"], sorted(pack_counts.items())),
    }
    version = hash_rows(
        [health["tiers"], health["essences"], health["threadDigests"], pack.total_tokens]
    )
    return dg.MaterializeResult(
        data_version=dg.DataVersion(version), metadata=metadata, check_results=[check]
    )


# Checks: coverage figures warn, rules that must hold block downstream.


@dg.asset_check(
    automation_condition=WITH_ITS_ASSET,
    asset=processed_notes,
    description="Share of live notes that have an essence.",
)
def essence_coverage(selene: SeleneResource) -> dg.AssetCheckResult:
    """Warn while some notes still lack an essence (normal with a per-run limit)."""
    with selene.connection() as conn:
        total, done = conn.execute(
            "SELECT count(*), count(p.essence) FROM notes n LEFT JOIN processed_notes p "
            "ON p.note_id = n.id WHERE n.deleted_at IS NULL AND NOT n.test_run"
        ).fetchone()
    pct = round(100 * done / total, 1) if total else 100.0
    return dg.AssetCheckResult(
        passed=done == total,
        severity=dg.AssetCheckSeverity.WARN,
        metadata={"notes": total, "with_essence": done, "coverage_pct": pct},
    )


@dg.asset_check(
    automation_condition=WITH_ITS_ASSET,
    asset=fidelity_tiers,
    blocking=True,
    description="Every stored tier equals the tier rules recomputed in Python from SQL inputs.",
)
def tier_rules(selene: SeleneResource) -> dg.AssetCheckResult:
    """Recompute each note's tier with ``compute_tier`` and compare with the stored one."""
    now = selene.settings().now()
    with selene.connection() as conn:
        inputs = fidelity_inputs(conn, now)
        stored = dict(conn.execute("SELECT note_id, fidelity_tier FROM processed_notes").fetchall())
    wrong = [
        note_id
        for note_id, age, has_essence, status, access in inputs
        if stored.get(note_id) != compute_tier(age, has_essence, status, access)
    ]
    return dg.AssetCheckResult(
        passed=not wrong,
        metadata={"checked": len(inputs), "mismatches": len(wrong), "examples": wrong[:10]},
    )


@dg.asset_check(
    automation_condition=WITH_ITS_ASSET,
    asset=thread_digests,
    description="Every digest has 3–5 sentences and ≥ 30 characters.",
)
def digest_shape(selene: SeleneResource) -> dg.AssetCheckResult:
    """Check stored digests against seed 000's length rules."""
    with selene.connection() as conn:
        digests = conn.execute(
            "SELECT id, thread_digest FROM threads WHERE thread_digest IS NOT NULL"
        ).fetchall()
    bad = [
        thread_id
        for thread_id, digest in digests
        if len(digest) < 30
        or not MIN_SENTENCES <= len(split_sentences(digest, flatten=True)) <= MAX_SENTENCES
    ]
    return dg.AssetCheckResult(passed=not bad, metadata={"digests": len(digests), "bad": bad[:10]})


NOTES_CHECKS = [essence_coverage, tier_rules, digest_shape]


# Automation: the notes folder is on disk, where Dagster cannot see a change.


def folder_fingerprint(notes_dir: Path) -> str:
    """Hash of the notes folder's file names, sizes and mtimes (no file is parsed)."""
    digest = hashlib.sha256()
    with walk_once():
        files, dangling = note_files(notes_dir), dangling_note_links(notes_dir)
    for path in files:
        try:
            stat = path.stat()
        except OSError:
            continue
        line = f"{path}\x00{stat.st_size}\x00{stat.st_mtime_ns}\n"
        digest.update(line.encode("utf-8", "surrogateescape"))
    for link in dangling:
        digest.update(f"{link}\x00dangling\n".encode("utf-8", "surrogateescape"))
    return digest.hexdigest()[:32]


@dg.sensor(
    name="notes_folder_sensor",
    target=dg.AssetSelection.assets(raw_notes),
    minimum_interval_seconds=30,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description=(
        "Ingests SELENE_NOTES_DIR, and every other folder ingested whole into the home, when "
        "a file in it is added, changed or removed."
    ),
)
def notes_folder_sensor(
    context: dg.SensorEvaluationContext, selene: SeleneResource
) -> dg.SensorResult:
    """Request a raw_notes run for each watched folder whose fingerprint changed (the
    cursor keeps each folder's). For SELENE_NOTES_DIR, record its new data version as an
    observation of ``notes_source`` so that lineage (and the CLI) sees what that run read,
    and skip when a run since that version was recorded (a CLI ``ingest``) already read
    it. Every other folder ingested whole is ingested by a run given its path through the
    resource's config; a folder registered for a file ingested alone is not watched. Skip
    with a reason when nothing changed, or while SELENE_NOTES_DIR does not exist.

    Each tick first marks failed the runs whose process ended before they did (a CLI
    command killed mid-run) and frees the pool slots they held: the daemon's queued runs
    waited on such a slot until a command of the CLI freed it."""
    if released := release_dead_runs(context.instance):
        context.log.info(
            f"marked failed {len(released)} run(s) whose process ended before they did, "
            f"their pool slots freed: {', '.join(released)}"
        )
    settings = selene.settings()
    state = json.loads(context.cursor) if context.cursor else {}
    fingerprint = state.get("fingerprint")
    requests: list[dg.RunRequest] = []
    events: list[dg.AssetObservation] = []
    reasons: list[str] = []
    notes_dir = settings.notes_dir
    if not notes_dir.exists():
        reasons.append(f"notes folder {notes_dir} does not exist: set SELENE_NOTES_DIR")
    elif (now := folder_fingerprint(notes_dir)) == fingerprint:
        reasons.append("notes folder unchanged")
    else:
        fingerprint = now
        version = notes_folder_version(notes_dir, settings.home)
        recorded, recorded_at = recorded_folder_version(context.instance)
        ingested = context.instance.fetch_materializations(raw_notes.key, limit=1).records
        if recorded == version and ingested and ingested[0].storage_id > (recorded_at or 0):
            reasons.append("notes folder already ingested as it is now")
        else:
            events = [] if recorded == version else [folder_observation(version)]
            requests.append(dg.RunRequest(run_key=fingerprint))
    folders = dict(state.get("folders", {}))
    others = folders_to_watch(settings.db_path, notes_dir)
    if others is not None:  # None: the database is busy; they are looked at next time
        folders = {str(path): folders.get(str(path)) for path in others}
        for path, key in others.items():
            if (now := folder_fingerprint(path)) == folders[str(path)]:
                continue
            folders[str(path)] = now
            config = {"resources": {"selene": {"config": {"notes_dir": str(path)}}}}
            requests.append(
                dg.RunRequest(
                    run_key=f"{key}:{now}", run_config=config, tags={"selene/folder": str(path)}
                )
            )
    cursor = json.dumps({"fingerprint": fingerprint, "folders": folders})
    if requests:
        return dg.SensorResult(run_requests=requests, asset_events=events, cursor=cursor)
    return dg.SensorResult(skip_reason="; ".join(reasons), cursor=cursor)


# A run the sensor requested that has not ended yet: another would wait for it, then find
# what it did.
_NOT_FINISHED = (
    dg.DagsterRunStatus.NOT_STARTED,
    dg.DagsterRunStatus.QUEUED,
    dg.DagsterRunStatus.STARTING,
    dg.DagsterRunStatus.STARTED,
    dg.DagsterRunStatus.CANCELING,
)


def essences_to_resume(instance: dg.DagsterInstance, engine: str) -> tuple[str | None, str]:
    """The run key of a ``processed_notes`` run to request now, or None, and why: the last
    one stopped at its per-run limit with notes left (a model server's
    SELENE_ESSENCE_LIMIT), or analysed with another engine or model than ``engine``
    (``name:model``) is now; keyed by that materialization, so that one state asks once."""
    records = instance.fetch_materializations(processed_notes.key, limit=1).records
    materialization = records[0].asset_materialization if records else None
    if materialization is None:
        return None, "essences never computed: they run with their notes"
    metadata = materialization.metadata
    left = metadata.get(ESSENCES_LEFT)
    used = metadata.get("engine")
    left_count = int(left.value) if isinstance(left, dg.IntMetadataValue) and left.value else 0
    used_engine = used.value if isinstance(used, dg.TextMetadataValue) else None
    if left_count:
        return f"essences:{records[0].storage_id}", f"{left_count} notes left to analyse"
    if used_engine is not None and used_engine != engine:
        return f"essences:{records[0].storage_id}:{engine}", f"engine now {engine}"
    return None, "no note left to analyse"


@dg.sensor(
    name="essences_sensor",
    target=dg.AssetSelection.assets(processed_notes),
    minimum_interval_seconds=ESSENCES_INTERVAL,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description=(
        "Every 5 minutes, analyses the notes a run left (at most SELENE_ESSENCE_LIMIT a run "
        "with a model server), and the notes another engine or model analysed; with nothing "
        "left, nothing runs."
    ),
)
def essences_sensor(context: dg.SensorEvaluationContext, selene: SeleneResource) -> dg.SensorResult:
    """Request a ``processed_notes`` run while :func:`essences_to_resume` names one (a run
    on the clock alone did nothing with the offline engine: 288 empty runs a day) and none
    it requested is waiting or running. Each tick may ask again: a run that failed (a model
    server down for a while) is tried again at the next tick, as the clock did."""
    engine = selene.engine()
    run_key, reason = essences_to_resume(context.instance, f"{engine.name}:{engine.model}")
    if run_key is None:
        return dg.SensorResult(skip_reason=reason)
    waiting = context.instance.get_run_records(
        filters=dg.RunsFilter(
            statuses=[*_NOT_FINISHED], tags={"dagster/sensor_name": "essences_sensor"}
        ),
        limit=1,
    )
    if waiting:
        return dg.SensorResult(
            skip_reason=f"{reason}: its run {waiting[0].dagster_run.run_id} has not finished"
        )
    context.log.info(reason)
    tick = context.cursor or "0"
    return dg.SensorResult(
        run_requests=[dg.RunRequest(run_key=f"{run_key}:{int(tick) + 1}")],
        cursor=str(int(tick) + 1),
    )


NOTES_ASSETS = [
    notes_source,
    raw_notes,
    processed_notes,
    threads,
    thread_digests,
    fidelity_tiers,
    daily_summaries,
    compression_health,
]


def demo_partition_range(now: datetime) -> tuple[str, str]:
    """First and last summary partition keys up to ``now`` (for a one-run backfill)."""
    keys = SUMMARY_PARTITIONS.get_partition_keys(current_time=now + timedelta(days=1))
    return keys[0], keys[-1]
