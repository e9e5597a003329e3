"""The use cases both front doors share: the CLI (``cli.py``) and the HTTP API (``api.py``)
call these and nothing below them.

Each function takes :class:`~selene_dag.config.Settings` explicitly, does one job (ingest,
demo, context, ask, eval, health, compact, cache, distill) and returns data; none prints.
A problem the user can fix raises a :class:`~selene_dag.errors.SeleneError` with a
one-line message; anything else is a bug and propagates with its traceback.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import duckdb

from selene_dag import last_verdict
from selene_dag.config import (
    DEMO_MARKER_FILE,
    DEMO_MARKER_TEXT,
    PINNED_NOW_FILE,
    Settings,
    is_demo_home,
)
from selene_dag.context.builder import PreparedNotes, pack_with_threads, prepare_notes
from selene_dag.context.compaction import CompactionReport, compact_messages
from selene_dag.context.messages import Conversation, load_conversation, parse_messages
from selene_dag.context.tokens import tokenizer_for, tokenizer_info
from selene_dag.errors import NotFoundError, SeleneError, UsageError, check_budget
from selene_dag.llm import get_engine
from selene_dag.llm.cache import CacheStatsRow
from selene_dag.llm.cache import cache_clear as clear_cache_rows
from selene_dag.llm.cache import cache_stats as cache_stat_rows
from selene_dag.llm.engine import EngineError, ModelCalls
from selene_dag.llm.outside import with_model_calls_outside
from selene_dag.notes.archive_ids import archive_id_prefix
from selene_dag.notes.context_notes import (
    activity_priority,
    leading_counts,
    load_context_notes,
    load_context_threads,
    mark_accessed,
    prepare_leading,
)
from selene_dag.notes.folders import (
    find_folder,
    folder_counts,
    ingest_scope,
    is_home_folder,
    require_text_path,
)
from selene_dag.notes.health import compression_health
from selene_dag.notes.ingest import is_archive, read_notes
from selene_dag.notes.listing import (
    DOCUMENT_SUFFIXES,
    NOTE_SUFFIXES,
    note_files,
    other_files,
    walk_once,
)
from selene_dag.paths import assets_dir, bundled_notes, bundled_session_roots
from selene_dag.redact import redact
from selene_dag.retrieval.citations import Shown, parse_citation
from selene_dag.retrieval.citations import show as show_citation
from selene_dag.retrieval.evaluate import (
    EvalReport,
    Question,
    QuestionFile,
    applicable,
    evaluate,
    load_questions,
    read_question_file,
)
from selene_dag.retrieval.index import SearchIndexError, index_exists, index_is_stale
from selene_dag.retrieval.pack import NOTHING_MATCHED, AskResult, PassageRanker
from selene_dag.retrieval.pack import ask as ask_pack
from selene_dag.retrieval.search import SOURCES, parse_sources
from selene_dag.sessions import rejected as sessions_rejected
from selene_dag.sessions import report as sessions_report
from selene_dag.sessions.conversation import session_conversation
from selene_dag.sessions.parsers.detect import detect_platform_file
from selene_dag.sessions.scanner import ScannedFile, scan_report
from selene_dag.store import (
    StoreError,
    close_store,
    connect,
    open_store,
    others_waiting,
    recorded_day,
    table_counts,
)
from selene_dag.text import plural, replace_lone_surrogates


class NoDatabaseError(NotFoundError):
    """The home has no database yet; the message says which command creates it."""


class RunFailedError(SeleneError):
    """A Dagster run failed; the message is the root cause of its first failed step."""


# Errors that say "the store cannot serve now", not "the request is wrong" (HTTP 503).
UNAVAILABLE_ERRORS: tuple[type[SeleneError], ...] = (
    StoreError,
    SearchIndexError,
    RunFailedError,
    NoDatabaseError,
)


def _defs_runs() -> Any:
    # The Dagster layer costs ~1.5 s to import: only the use cases that run assets pay it.
    from selene_dag.defs import runs

    return runs


@contextmanager
def existing_store(settings: Settings) -> Iterator[duckdb.DuckDBPyConnection]:
    """A connection to the home's database; :class:`NoDatabaseError` when there is none
    (nothing is created)."""
    if not settings.db_path.exists():
        raise NoDatabaseError(
            f"no database at {settings.db_path}: run `selene-dag ingest PATH` (notes), "
            "`selene-dag distill run --all` (agent sessions) first, or try the bundled "
            f"demo in a home of its own: `selene-dag demo --home {DEMO_HOME}`"
        )
    with open_store(settings.db_path, wait=settings.lock_wait) as conn:
        yield conn


# --- notes -------------------------------------------------------------------------------


@dataclass(frozen=True)
class IngestReport:
    """What one ingest did: the ``raw_notes`` counts when it ran, and which assets ran
    (none when nothing changed since the last run)."""

    path: Path
    notes: int
    inserted: int
    changed: int
    deleted: int
    bad_inputs: int
    seconds: float
    ran: tuple[str, ...] = ()
    skipped: tuple[tuple[str, int | None, str], ...] = ()  # (file, line, reason), first 20
    skipped_total: int = 0
    skipped_inputs: int = 0  # the files (or archives' members) those problems are in
    id_prefix: str = ""  # what the ids of these notes start with: '<folder key>/'
    inside: str = "folder"  # what the rest of an id is a path in: "folder" or "archive"
    home_notes: int = 0  # live notes of every folder in the home
    # When the folder holds no note: its other files by suffix, which ingest does not read.
    other_files: dict[str, int] = field(default_factory=dict)
    # The folder's former path, when this ingest found it moved (its notes kept their ids).
    moved_from: str = ""
    # When the folder gave notes and the ingest ran: its documents of kinds ingest does not
    # read (``DOCUMENT_SUFFIXES``: PDF, Word, reStructuredText…) by suffix.
    documents_left_out: dict[str, int] = field(default_factory=dict)
    # Likewise its archives (an export's .zip beside the notes), which a folder's ingest
    # does not open: by suffix.
    archives_left_out: dict[str, int] = field(default_factory=dict)
    # When the ingest ran: files and folders its .seleneignore files list (a folder once).
    passed_over: int = 0
    # A folder that gave no note and holds no other file either.
    empty_folder: bool = False
    # The folders ingested on their own inside it, which keep their notes (its ingest
    # passes over them): their paths.
    nested: tuple[str, ...] = ()
    # Notes deleted (or their folder forgotten) before that this ingest brought back.
    restored: int = 0
    # Notes the model answered unusably, analysed by the offline engine instead.
    analysed_offline: int = 0
    # New notes whose text a deleted note held (their file renamed or moved), which took its
    # essence and last use.
    moved_notes: int = 0
    # Notes left to analyse (new, changed, or by another engine or model) when the run stopped at
    # SELENE_ESSENCE_LIMIT.
    essences_left: int = 0
    # Notes analysed by this ingest (new or changed ones, and those an earlier run left).
    analysed: int = 0


SKIPPED_SHOWN = 20
# What the hints below say ingest reads.
INGEST_READS = "markdown, plain text, Org, HTML, JSON, JSONL, Evernote and canvas files"


def unread_files_hint(report: IngestReport) -> str:
    """One line for a folder that gave no note: what ingest reads, and what the folder
    holds instead (most common suffixes first), or that it holds no file."""
    return _unread_hint(report.path, report.other_files, report.nested)


def nested_folders_hint(report: IngestReport) -> str:
    """One line naming the folders inside the one ingested that were ingested on their
    own: their notes are theirs, and an ingest of this folder does not read them."""
    nested = report.nested
    shown = ", ".join(nested[:3]) + (" …" if len(nested) > 3 else "")
    return (
        f"passed over: {plural(len(nested), 'folder')} inside it ingested on "
        f"{'its' if len(nested) == 1 else 'their'} own ({shown}), which "
        f"{'keeps its' if len(nested) == 1 else 'keep their'} notes; ingest "
        f"{'it' if len(nested) == 1 else 'one'} by its path to read its changes"
    )


def _unread_hint(path: Path, others: dict[str, int], nested: Sequence[str]) -> str:
    kinds = sorted(others.items(), key=lambda kv: (-kv[1], kv[0]))
    found = ", ".join(f"{count:,} {suffix or 'without a suffix'}" for suffix, count in kinds[:5])
    more = " …" if len(kinds) > 5 else ""
    reads = ", ".join(NOTE_SUFFIXES)
    if nested and not kinds:  # "holds no file" when its files are theirs was wrong
        shown = ", ".join(nested[:3]) + (" …" if len(nested) > 3 else "")
        return (
            f"no note file of its own in {path}: the folders inside it that were "
            f"ingested on their own keep their notes ({shown}); ingest one by its path to "
            "read it again, folders below it included"
        )
    if not kinds:
        return f"no note file in {path}: the folder holds no file (ingest reads {INGEST_READS})"
    archives = any(suffix in _ARCHIVE_SUFFIXES for suffix in others)
    return (
        f"no note file in {path}: ingest reads {INGEST_READS} ({reads}); "
        f"the folder holds {plural(sum(others.values()), 'other file')} "
        f"({found}{more})"
        + (
            f"; an archive in a folder is read when named alone: `selene-dag ingest "
            f"{path}{os.sep}<archive>`"
            if archives
            else ""
        )
    )


# What an archive ingest reads when it is named alone ends with (``.tar.gz`` as ``.gz``).
_ARCHIVE_SUFFIXES = frozenset({".zip", ".jex", ".tar", ".tgz", ".gz"})


def _by_kind(counts: Mapping[str, int]) -> str:
    """``2 .rst, 1 .pdf``: files by suffix, the most common first."""
    kinds = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return ", ".join(f"{count:,} {suffix}" for suffix, count in kinds)


def documents_left_out_hint(report: IngestReport) -> str:
    """One line naming the documents of kinds ingest does not read that a folder which gave
    notes holds (most common suffixes first)."""
    found = _by_kind(report.documents_left_out)
    total = plural(sum(report.documents_left_out.values()), "file")
    return (
        f"left out: {total} of kinds ingest does not read ({found}); it reads {INGEST_READS}, "
        "and an export's archive (.zip, .jex, .tar, .tar.gz) named alone"
    )


# File suffixes (as ``other_files`` counts them) of the archives ingest reads when named
# alone: ``.tar.gz`` counts as ``.gz``.
_ARCHIVE_KINDS = frozenset(
    {".zip", ".bear2bk", ".bearbk", ".jex", ".tar", ".tgz", ".tbz2", ".txz", ".gz", ".bz2", ".xz"}
)


def archives_left_out_hint(report: IngestReport) -> str:
    """One line counting, by kind, the archives a folder which gave notes holds: its ingest
    does not open them (they went without a word), each is read when named alone."""
    found = _by_kind(report.archives_left_out)
    total = plural(sum(report.archives_left_out.values()), "archive")
    return (
        f"left out: {total} ({found}): a folder's ingest opens no archive; "
        "`selene-dag ingest ARCHIVE` reads one"
    )


def passed_over_hint(report: IngestReport) -> str:
    """One line counting what the folder's ``.seleneignore`` files made ingest pass over."""
    what = plural(report.passed_over, "file or folder", "files or folders")
    return f"passed over: {what} listed in .seleneignore"


def skipped_inputs(
    conn: duckdb.DuckDBPyConnection, prefix: str = "", limit: int = SKIPPED_SHOWN
) -> tuple[list[tuple[str, int | None, str]], int]:
    """Skipped inputs recorded by the last ingest of each folder (those under ``prefix``
    when given), newest first: up to ``limit`` (file, line, reason) rows and the total."""
    where = "WHERE starts_with(source, ?)" if prefix else ""
    params = [prefix] if prefix else []
    total = conn.execute(f"SELECT count(*) FROM ingest_errors {where}", params).fetchone()[0]
    rows = conn.execute(
        f"SELECT source, line, error FROM ingest_errors {where} "
        "ORDER BY seen_at DESC, source, line LIMIT ?",
        [*params, limit],
    ).fetchall()
    return [(r[0], r[1], r[2]) for r in rows], int(total)


def ingest(settings: Settings, path: str | os.PathLike[str]) -> IngestReport:
    """Ingest the notes of ``path`` (folder or file) into the home: materialize what is
    stale or missing in the notes group and ``search_index`` (so that ask and context see
    the notes at once), in one run against the home's persistent Dagster instance.
    Unchanged notes start no run at all; when Dagster finds nothing to run, its verdict is
    remembered with what it rests on (:mod:`selene_dag.last_verdict`), and the next ingest
    of the same path with all of that unchanged reports without loading Dagster.

    Note ids are ``<folder key>/<path in the folder>`` (see ``selene_dag.notes.folders``):
    ingesting one folder never changes or deletes another folder's notes. ``notes`` in the
    report counts the live notes of this folder (under ``path``), ``home_notes`` all."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a folder's or a file's path, got {type(path).__name__}")
    path = Path(path).expanduser()  # a "~/notes" that no shell expanded (a script, a config)
    try:
        path.stat()
    except FileNotFoundError:
        raise UsageError(f"{path} does not exist") from None
    except OSError as exc:  # a folder on the way that this user may not enter
        raise UsageError(f"{path} cannot be read ({exc.strerror or exc})") from None
    if not path.is_file() and not path.is_dir():
        # `ingest <(cat notes.jsonl)`: the run failed on "notes folder /proc/…/pipe:[…]
        # does not exist" and left an empty home; a home keeps where its notes came from.
        raise UsageError(
            f"{path} is a pipe or a device, not a file or a folder: ingest reads notes from "
            "files and folders, which it reads again for their changes; save it to a file"
        )
    # A folder this user may not list gave "0 notes" (or kept its notes) in silence; asked
    # of the system, not by listing it (an ingest lists its folder once).
    effective = os.access in os.supports_effective_ids
    if path.is_dir() and not os.access(path, os.R_OK | os.X_OK, effective_ids=effective):
        raise UsageError(f"{path} cannot be listed (Permission denied)")
    if path.is_file() and not path.name.lower().endswith(NOTE_SUFFIXES) and not is_archive(path):
        # As a folder's walk passes it over: a PDF's bytes were stored as a note, then
        # marked deleted by the folder's next ingest.
        kind = f"{path.suffix} files" if path.suffix else "files without a suffix"
        raise UsageError(
            f"{path}: ingest does not read {kind}; it reads {INGEST_READS}, and archives of "
            "them (.zip, .tar, .tar.gz, Joplin's .jex)"
        )
    require_text_path(path.resolve())
    if is_demo_home(settings.home) and path.resolve() != bundled_notes().resolve():
        # Mixed in, the demo's next run took them as its own and its figures moved.
        raise UsageError(
            f"{settings.home} is the demo's home (it holds the bundled corpus): ingest your "
            "notes into a home of your own (--home DIR or SELENE_HOME; the default is ./.selene)"
        )
    settings = settings.replace(notes_dir=path.resolve())
    started = time.perf_counter()
    # The folder's version, the notes the run reads and the report rest on one walk of it.
    with walk_once():
        _refuse_a_new_folder_without_notes(settings, path)
        key = last_verdict.current_key(settings, "ingest", sessions=False)
        if last_verdict.holds(settings, key):
            with open_store(settings.db_path, wait=settings.lock_wait) as conn:
                return _ingest_report(conn, path, started, (), {})
        import dagster as dg

        runs = _defs_runs()
        selection = dg.AssetSelection.groups("notes", "context")
        instance = runs.instance_for(settings)
        # Open for the whole ingest: the run's steps and the report below join the database
        # DuckDB already holds instead of opening the file again (0.1 s at 10,000 notes).
        with runs.keep_store_open(settings, instance):
            outcome = runs.materialize_stale(
                instance,
                settings,
                selection,
                notes_version=key["notes"] if key is not None else None,
            )
            if not outcome.success:
                raise RunFailedError(f"ingest failed: {runs.failure_message(outcome.result)}")
            meta = outcome.metadata("raw_notes")
            analysis = outcome.metadata("processed_notes")
            with open_store(settings.db_path, wait=settings.lock_wait) as conn:
                report = _ingest_report(conn, path, started, tuple(outcome.selected), meta)
            report = replace(
                report,
                analysed_offline=int(analysis.get("analysed_offline") or 0),
                moved_notes=int(analysis.get("moved_notes") or 0),
                essences_left=int(analysis.get("essences_left") or 0),
                analysed=int(analysis.get("analysed") or 0),
            )
    # Dagster found nothing to run: remembered unless something it rests on moved while it
    # decided (the folder walked again, outside the block).
    if (
        outcome.result is None
        and key is not None
        and last_verdict.current_key(settings, "ingest", sessions=False) == key
    ):
        last_verdict.remember(settings, key)
    return report


def _refuse_a_new_folder_without_notes(settings: Settings, path: Path) -> None:
    """Raise UsageError, before any run, for a folder that holds no note file and is not
    a folder of the home (nor inside or around one): registered, it stayed in ``health``
    as "0 notes" until forgotten (a folder of PDFs, a wrong path). A folder of the home
    that has lost its notes is ingested: its notes are marked deleted."""
    folder = path.resolve()
    if not folder.is_dir() or note_files(folder):
        return
    if settings.db_path.exists():
        with open_store(settings.db_path, wait=settings.lock_wait) as conn:
            if is_home_folder(conn, folder):
                return
    passed_over: list[str] = []
    others = other_files(folder, passed_over)
    hint = _unread_hint(path, others, ())
    if passed_over:  # what .seleneignore leaves out is said, as an ingest that ran says it
        ignored = f".seleneignore passes over {plural(len(passed_over), 'file or folder')}"
        hint = f"no note file in {path}: {ignored}" if not others else f"{hint}; {ignored}"
    raise UsageError(f"{hint}; nothing ingested")


def _ingest_report(
    conn: duckdb.DuckDBPyConnection,
    path: Path,
    started: float,
    ran: tuple[str, ...],
    meta: dict[str, Any],
) -> IngestReport:
    scope = ingest_scope(conn, path)
    prefix = scope.source_prefix
    folder_notes, home_notes = conn.execute(
        "SELECT count(*) FILTER (WHERE starts_with(id, ?) AND starts_with(source, ?)), "
        "count(*) FROM notes WHERE deleted_at IS NULL",
        [scope.id_prefix, prefix],
    ).fetchone()
    skipped, skipped_total = skipped_inputs(conn, prefix)
    where = "WHERE starts_with(source, ?)" if prefix else ""
    problem_files = conn.execute(
        f"SELECT count(DISTINCT source) FROM ingest_errors {where}", [prefix] if prefix else []
    ).fetchone()[0]
    # One walk of the folder serves the three hints: what it holds when it gave no note,
    # its documents ingest does not read and what .seleneignore passed over (after a run).
    unread = not folder_notes and not skipped_total
    passed_over: list[str] = []
    others = other_files(path.resolve(), passed_over) if unread or ran else {}
    return IngestReport(
        path=path,
        notes=int(folder_notes),
        inserted=meta.get("inserted", 0),
        changed=meta.get("changed", 0),
        restored=meta.get("restored", 0),
        deleted=meta.get("marked_deleted", 0),
        bad_inputs=meta.get("bad_inputs", skipped_total),
        seconds=time.perf_counter() - started,
        ran=ran,
        skipped=tuple(skipped),
        skipped_total=skipped_total,
        skipped_inputs=int(problem_files),
        id_prefix=archive_id_prefix(conn, scope),
        inside="archive" if is_archive(path.resolve()) else "folder",
        home_notes=int(home_notes),
        moved_from=str(meta.get("moved_from", "")),
        other_files=others if unread else {},
        empty_folder=unread and not others and path.is_dir(),
        nested=tuple(str(folder) for folder in scope.skip),
        documents_left_out=(
            {k: n for k, n in others.items() if k in DOCUMENT_SUFFIXES}
            if folder_notes and ran
            else {}
        ),
        archives_left_out=(
            {k: n for k, n in others.items() if k in _ARCHIVE_KINDS} if folder_notes and ran else {}
        ),
        passed_over=len(passed_over) if ran else 0,
    )


@dataclass(frozen=True)
class ForgetReport:
    """What forgetting an ingested folder did."""

    key: str
    path: Path
    forgotten: int  # notes marked deleted
    home_notes: int  # live notes left in the home
    seconds: float
    ran: tuple[str, ...] = ()


def forget(settings: Settings, target: str) -> ForgetReport:
    """Forget the ingested folder ``target`` (its key, ``notes``, or its path, which need
    not exist any more): its notes are marked deleted and leave ask, context and health,
    and what depends on them is brought up to date in the same run. Its files are not
    touched; ingesting the folder again brings its notes back under the same ids.
    Raises UsageError naming the ingested folders when ``target`` is none of them."""
    import dagster as dg

    runs = _defs_runs()
    started = time.perf_counter()
    instance = runs.instance_for(settings)
    with runs.keep_store_open(settings, instance):
        with open_store(settings.db_path, wait=settings.lock_wait) as conn:
            key, folder = find_folder(conn, target)
        selection = dg.AssetSelection.groups("notes", "context")
        outcome = runs.forget_notes_folder(instance, settings, key, selection)
        if not outcome.success:
            raise RunFailedError(f"forget failed: {runs.failure_message(outcome.result)}")
        forgotten = int(outcome.metadata("raw_notes").get("marked_deleted") or 0)
        with open_store(settings.db_path, wait=settings.lock_wait) as conn:
            live = conn.execute("SELECT count(*) FROM notes WHERE deleted_at IS NULL").fetchone()[0]
    return ForgetReport(
        key, folder, forgotten, int(live), time.perf_counter() - started, tuple(outcome.selected)
    )


@dataclass(frozen=True)
class ContextPack:
    """The tiered pack of all notes and its accounting: ``threads`` the active threads
    shown before the notes (id and name, in order), ``shown`` the notes shown (id and tier,
    in order), ``counts`` notes per tier plus ``excluded``, ``notes`` how many are live."""

    text: str
    total_tokens: int
    budget: int
    model: str
    notes: int
    counts: dict[str, int]
    threads: list[dict[str, str]]
    shown: list[dict[str, str]]
    seconds: float

    @property
    def note(self) -> str:
        """Why the pack holds no note when the home has notes ("" otherwise)."""
        if not self.notes or self.counts.get("excluded", 0) != self.notes:
            return ""
        return (
            f"a budget of {plural(self.budget, 'token')} holds no note: not even the first "
            "note's title line fits (notes are packed in priority order); raise the budget"
        )

    def to_json(self) -> dict[str, Any]:
        """The document ``context --format json`` prints and ``POST /context`` returns
        (``note``: why no note is shown, when none is; ``tokens_exact`` false when the
        model's tokens were counted by an upper estimate, ``tokenizer`` names which)."""
        counted = tokenizer_info(self.model)
        return {
            "budget": self.budget,
            "model": self.model,
            "tokenizer": counted.name,
            "tokens_exact": counted.exact,
            "total_tokens": self.total_tokens,
            "counts": self.counts,
            "threads": self.threads,
            "notes": self.shown,
            "text": self.text,
            **({"note": self.note} if self.note else {}),
        }


def _context_pack(
    conn: duckdb.DuckDBPyConnection,
    prepared: PreparedNotes,
    live: int,
    budget: int,
    model: str,
    started: float,
) -> ContextPack:
    """The active threads, then ``prepared`` notes, packed into ``budget``."""
    threads = load_context_threads(conn)
    pack = pack_with_threads(prepared, threads, budget)
    names = {thread["id"]: thread["name"] for thread in threads}
    return ContextPack(
        text=pack.text,
        total_tokens=pack.total_tokens,
        budget=budget,
        model=model,
        notes=live,
        counts=leading_counts(pack.notes, prepared, live),
        threads=[{"id": t, "name": names[t]} for t in pack.threads],
        shown=[{"id": n, "tier": str(pack.notes.tiers[n])} for n in pack.notes.order],
        seconds=time.perf_counter() - started,
    )


def target_model(settings: Settings, model: str | None) -> str:
    """The model a pack is counted in: ``model``, or the settings' when it is None, without
    spaces around it (a pack echoes the name).

    Raises UsageError for a blank name or one holding a lone surrogate, before any query
    (DuckDB cannot bind such a name, and an empty one silently meant the default)."""
    name = settings.model if model is None else model
    tokenizer_for(name)
    return name.strip()


def context(settings: Settings, budget: int, model: str | None = None) -> ContextPack:
    """The tiered context within ``budget`` tokens of ``model`` (default the settings'
    model): the active threads' digests (at most a quarter of the budget), then every note
    at the tier the budget affords, thread status and tiers brought up to today first
    (:func:`refresh_tiers_if_stale`). Stamps no access (``ask`` does)."""
    check_budget(budget, "--budget")
    model = target_model(settings, model)
    started = time.perf_counter()
    refresh_tiers_if_stale(settings)
    with existing_store(settings) as conn:
        # Only the notes the budget can reach are loaded and rendered (see prepare_leading).
        prepared, _, live = prepare_leading(conn, model, budget)
        if not live:
            raise NotFoundError("no notes yet: run `selene-dag ingest PATH` first")
        # No access stamps: a context shows every note its budget reaches, so stamping them
        # kept them warm for ever (each call made its notes "used" again); ask stamps the
        # notes that answered a question.
        return _context_pack(conn, prepared, live, budget, model, started)


def context_in(
    conn: duckdb.DuckDBPyConnection, settings: Settings, budget: int, model: str | None = None
) -> dict[str, Any]:
    """The tiered pack read through ``conn`` (no access stamps), as ``context`` makes it,
    as the API's JSON document (``ContextPack.to_json``). Raises NotFoundError when the
    home holds no note."""
    check_budget(budget, "budget")
    model = target_model(settings, model)
    started = time.perf_counter()
    notes = load_context_notes(conn)
    if not notes:  # as `selene-dag context` says it (an empty text, 200, before)
        raise NotFoundError("no notes yet: run `selene-dag ingest PATH` first")
    prepared = prepare_notes(notes, model, activity_priority)
    return _context_pack(conn, prepared, len(notes), budget, model, started).to_json()


def watched_folders(settings: Settings) -> dict[Path, str]:
    """The folders besides ``notes_dir`` that `selene-dag dev`'s notes sensor watches
    (``{path: key}``): every folder ingested whole into the home that exists."""
    from selene_dag.notes.folders import folders_to_watch

    return folders_to_watch(settings.db_path, settings.notes_dir) or {}


def unwatched_folders(settings: Settings) -> dict[Path, str]:
    """The folders ingested into the home (``{path: key}``) that `selene-dag dev`'s notes
    sensor does not watch: registered for a file ingested alone, or no longer there; empty
    when the home has no database, or while another process holds it."""
    if not settings.db_path.exists():
        return {}
    from selene_dag.notes.folders import folders_to_watch, registered_folders

    with open_store(settings.db_path, wait=settings.lock_wait) as conn:
        folders = registered_folders(conn)
    watched = folders_to_watch(settings.db_path, settings.notes_dir)
    if watched is None:  # held by another process a moment: which are watched is unknown
        return {}
    notes_dir = settings.notes_dir.resolve()
    # SELENE_NOTES_DIR naming a file (the demo's notes): its folder is the one it watches.
    skip = {notes_dir, notes_dir.parent if notes_dir.is_file() else notes_dir}
    skip |= {p.resolve() for p in watched}
    return {path: key for path, key in sorted(folders.items()) if path.resolve() not in skip}


def health(settings: Settings) -> dict[str, Any]:
    """The compression health document (tiers, essence progress, thread digests), plus
    ``skippedInputs``: how many inputs the last ingests skipped and the newest five, and
    ``noteFolders``: every ingested folder with its key, path, live notes and whether the
    path still exists. Thread status and tiers computed for another day are brought up
    to today first (:func:`refresh_tiers_if_stale`)."""
    refresh_tiers_if_stale(settings)
    with existing_store(settings) as conn:
        return health_in(conn, settings)


def health_in(conn: duckdb.DuckDBPyConnection, settings: Settings) -> dict[str, Any]:
    """The health document (:func:`health`) read through ``conn``."""
    document = compression_health(conn, settings.now())
    newest, total = skipped_inputs(conn, limit=5)
    document["skippedInputs"] = {
        "count": total,
        "newest": [{"file": f, "line": line, "reason": r} for f, line, r in newest],
    }
    document["noteFolders"] = [
        {"key": key, "path": str(path), "notes": notes, "exists": present}
        for key, path, notes, present in folder_counts(conn)
    ]
    document["sessions"] = sessions_health(conn)
    return document


def sessions_health(conn: duckdb.DuckDBPyConnection, limit: int = 5) -> dict[str, Any]:
    """The sessions the home holds: session files, their events and chunks, the sessions
    with a distilled file, and the files with unreadable lines (how many lines in all,
    and the ``limit`` files with most, each with its first problem)."""
    files, events, broken, lines = conn.execute(
        "SELECT count(*), coalesce(sum(events), 0), count(*) FILTER (WHERE parse_errors > 0), "
        "coalesce(sum(parse_errors), 0) FROM session_files"
    ).fetchone()
    (chunks,) = conn.execute("SELECT count(*) FROM chunks").fetchone()
    (distilled,) = conn.execute(
        "SELECT count(DISTINCT session_key) FROM distilled_sessions "
        "WHERE NOT starts_with(session_key, 'project:')"
    ).fetchone()
    worst = conn.execute(
        "SELECT path, parse_errors, error_samples[1] FROM session_files WHERE parse_errors > 0 "
        "ORDER BY parse_errors DESC, path LIMIT ?",
        [limit],
    ).fetchall()
    return {
        "files": int(files),
        "events": int(events),
        "chunks": int(chunks),
        "distilled": int(distilled),
        "filesWithUnreadableLines": int(broken),
        "unreadableLines": int(lines),
        "worst": [{"file": p, "lines": int(n), "first": s or ""} for p, n, s in worst],
    }


# --- compaction --------------------------------------------------------------------------


_T = TypeVar("_T")


def _user_file(path: Path, read: Callable[[Path], _T]) -> _T:
    """``read(path)`` for a file a user named: a missing path or a folder is NotFoundError,
    text that is not UTF-8 a one-line UsageError. A leading ``~`` is the user's home."""
    path = path.expanduser()
    if not path.is_file():
        raise NotFoundError(f"{path} {'is not a file' if path.exists() else 'does not exist'}")
    try:
        return read(path)
    except UnicodeDecodeError as exc:
        raise UsageError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None


def read_conversation(path: Path) -> Conversation:
    """The conversation in a file: a JSON list of messages (or ``{"messages", "digest"}``),
    a JSONL file of messages, or a Claude Code, Codex CLI or Gemini CLI session
    transcript (told by its content). Raises UsageError with a one-line reason when the
    file holds no conversation, NotFoundError when it is missing."""

    def read(path: Path) -> Conversation:
        try:
            if detect_platform_file(path) is not None:
                return session_conversation(path)
            return load_conversation(path)
        except UnicodeDecodeError:
            raise
        except (TypeError, ValueError) as exc:  # the input's shape, named by the reader
            raise UsageError(str(exc)) from exc

    return _user_file(path, read)


# Seconds compact waits for a store another process holds before it goes on without the
# home's cache of model calls.
CACHE_WAIT = 2.0


def compact(
    settings: Settings,
    messages: str | os.PathLike[str] | Conversation | Sequence[Any] | Mapping[str, Any],
    window: int,
    model: str | None = None,
    *,
    summarize_with_engine: bool = True,
    digest: Sequence[Mapping[str, Any]] = (),
    shared: SharedStore | None = None,
) -> CompactionReport:
    """Compact a conversation (a file ``read_conversation`` reads, named by a path or a
    string; a conversation read already; a list of messages with its memory ``digest``;
    or ``{"messages": [...], "digest": [...]}``) for a ``window``-token context. With
    ``summarize_with_engine`` the configured engine writes the summaries, a model's
    cached in the home's ``llm_cache`` when the home has a store (through ``shared``, the
    server's, when given); the store is let go while the model writes. Raises TypeError
    for ``messages`` of none of those kinds."""
    check_budget(window, "--window")
    model = target_model(settings, model)
    if isinstance(messages, (str, os.PathLike)):  # a string was read as its characters
        messages = read_conversation(Path(messages))
    elif isinstance(messages, Mapping):
        try:
            messages = Conversation(*parse_messages(messages))
        except (TypeError, ValueError) as exc:
            raise UsageError(str(exc)) from exc
    elif not isinstance(messages, (Conversation, Sequence)):
        raise TypeError(
            "messages must be a file's path, a list of messages or "
            f'{{"messages": [...]}}, got {type(messages).__name__}'
        )
    if isinstance(messages, Conversation):
        conversation, digest = messages.messages, messages.digest
    else:
        try:
            conversation, digest = parse_messages({"messages": list(messages), "digest": digest})
        except (TypeError, ValueError) as exc:  # the input's shape, named by the validator
            raise UsageError(str(exc)) from exc

    def run(
        cache_conn: duckdb.DuckDBPyConnection | None, calls: ModelCalls | None
    ) -> CompactionReport:
        summarizer: Callable[[str, int], str] | None = None
        fell_back: list[str] = []  # why the model did not write a summary, when it did not
        if summarize_with_engine:
            engine = get_engine(settings, cache_conn=cache_conn, deferred=calls)

            def summarize(text: str, max_tokens: int) -> str:
                # A model server that is down leaves the summary to the offline engine (the
                # step said "skipped" and the prune cut the opening request: worse than no
                # server at all); the step says why.
                try:
                    return engine.summarize(text, max_tokens, model, kind="conversation")
                except EngineError as exc:
                    from selene_dag.llm.extractive import ExtractiveEngine

                    fell_back.append(str(exc))
                    offline = ExtractiveEngine()
                    return offline.summarize(text, max_tokens, model, kind="conversation")

            summarizer = summarize
        # What is summarized is redacted first: a summary never repeats a secret, a model
        # never reads one, its cache never keeps one.
        report = compact_messages(
            conversation, window, model=model, summarizer=summarizer, digest=digest, redactor=redact
        )
        if not fell_back:
            return report
        steps = [
            replace(step, detail=f"{step.detail} (the offline summary: {fell_back[0]})")
            if step.name.startswith("P3")
            else step
            for step in report.steps
        ]
        return replace(report, steps=steps)

    # A model's summaries are cached in the home's llm_cache when the home exists, and the
    # model writes with the store let go. Compact needs no store: one another process
    # holds (a run, an ingest) leaves the cache out after a short wait, not the summary.
    if summarize_with_engine and settings.llm != "extractive" and settings.db_path.exists():
        quick = settings.model_copy(update={"lock_wait": min(settings.lock_wait, CACHE_WAIT)})
        opener: Callable[[], contextlib.AbstractContextManager[duckdb.DuckDBPyConnection]] = (
            (lambda: shared.cursor(quick))
            if shared is not None
            else (lambda: open_store(settings.db_path, wait=quick.lock_wait))
        )
        write_lock = shared.write_lock if shared is not None else None
        calls = ModelCalls()
        try:
            report, _ = with_model_calls_outside(opener, run, write_lock, calls)
        except StoreError:
            report, _ = with_model_calls_outside(
                lambda: contextlib.nullcontext(None), run, None, calls
            )
    else:
        report = run(None, None)
    if conversation and not report.messages:
        raise SeleneError(
            f"a window of {plural(window, 'token')} holds no message of this "
            "conversation: give a larger window"
        )
    return report


# --- ask -----------------------------------------------------------------------------------


# What ages with the clock: a thread is archived after days without activity, and a note's
# tier follows its age and its thread's status.
CLOCK_ASSETS = ("threads", "fidelity_tiers")


def refresh_tiers_if_stale(settings: Settings) -> bool:
    """Bring thread status and fidelity tiers (and what follows them in the notes group:
    digests, the health figures) up to today when they were last computed for another day,
    in one run (persistent instance); True when it ran. Daily automation does
    this where a Dagster daemon runs; without one, tiers stopped aging between ingests.
    Assets never computed since the day was recorded are left to the next ingest."""
    with existing_store(settings) as conn:
        if not _tiers_stale(conn, settings):
            return False
    return _refresh_tiers(settings)


def _tiers_stale(conn: duckdb.DuckDBPyConnection, settings: Settings) -> bool:
    """Whether thread status or tiers were last computed for another day than today."""
    today = settings.now().date()
    days = [recorded_day(conn, asset) for asset in CLOCK_ASSETS]
    return not all(day is None or day == today for day in days)


def _index_stale(conn: duckdb.DuckDBPyConnection) -> bool:
    return index_is_stale(conn) or not index_exists(conn)


def refresh_stale(settings: Settings) -> bool:
    """:func:`refresh_tiers_if_stale`, then :func:`refresh_index_if_stale` (tiers moved
    make the index stale), the store opened once to tell when neither is: what `ask` and
    `serve` do before they read. True when the index was rebuilt."""
    with existing_store(settings) as conn:
        tiers, index = _tiers_stale(conn, settings), _index_stale(conn)
    if tiers:
        _refresh_tiers(settings)
        return refresh_index_if_stale(settings)
    return _refresh_index(settings) if index else False


def _refresh_tiers(settings: Settings) -> bool:
    import dagster as dg

    runs = _defs_runs()
    # With their checks: compression_health's is defined with it and cannot run apart.
    selection = dg.AssetSelection.assets(*CLOCK_ASSETS).downstream() - dg.AssetSelection.assets(
        "search_index"
    )
    result = runs.materialize(
        selection, runs.instance_for(settings), raise_on_error=False, settings=settings
    )
    if not result.success:
        raise RunFailedError(f"bringing tiers up to today failed: {runs.failure_message(result)}")
    return True


def refresh_index_if_stale(settings: Settings) -> bool:
    """Materialize ``search_index`` (persistent instance, no checks) when its stored corpus
    version differs from the corpus now; True when it ran. The store is closed meanwhile."""
    with existing_store(settings) as conn:
        if not _index_stale(conn):
            return False
    return _refresh_index(settings)


def _refresh_index(settings: Settings) -> bool:
    import dagster as dg  # only a stale index pays for importing the Dagster layer

    runs = _defs_runs()
    selection = dg.AssetSelection.assets("search_index").without_checks()
    result = runs.materialize(
        selection, runs.instance_for(settings), raise_on_error=False, settings=settings
    )
    if not result.success:
        raise RunFailedError(f"refreshing search_index failed: {runs.failure_message(result)}")
    return True


def ask_in(
    conn: duckdb.DuckDBPyConnection,
    settings: Settings,
    question: str,
    budget: int,
    *,
    model: str | None = None,
    sources: str | Sequence[str] | None = None,
    write_lock: contextlib.AbstractContextManager[Any] | None = None,
    calls: ModelCalls | None = None,
) -> AskResult:
    """Answer ``question`` through ``conn`` and stamp ``last_accessed_at`` of the notes in
    the pack (under ``write_lock`` when given). ``calls``: a model's calls are deferred
    (:func:`~selene_dag.llm.outside.with_model_calls_outside`, which :func:`ask` and
    :func:`ask_shared` use)."""
    check_budget(budget, "budget")
    model = target_model(settings, model)
    if sources is not None and not isinstance(sources, str):
        sources = ",".join(sources)
    if isinstance(question, str):  # a model's prompt cannot carry a lone surrogate either
        question = replace_lone_surrogates(question)
    now = settings.now()
    started = time.perf_counter()
    expansion, rewrite_note = _rewrite(conn, settings, question, write_lock, calls)
    rewrite_ms = (time.perf_counter() - started) * 1000
    # A server that failed the rewrite is not asked again for the same question.
    ranker, rerank_problems = (
        _passage_ranker(conn, settings, write_lock, calls) if not rewrite_note else (None, [])
    )
    result = ask_pack(
        conn,
        question,
        budget,
        model=model,
        sources=sources,
        now=now,
        expansion=expansion,
        passage_ranker=ranker,
    )
    if settings.llm != "extractive":
        # The model's rewrite of the question, before the pack, is part of what ask took.
        result.stats["elapsed_ms"] = round(result.stats["elapsed_ms"] + rewrite_ms, 1)
        result.stats["rewrite"] = expansion or rewrite_note
        result.stats["rerank"] = _rerank_note(result.stats, rerank_problems, rewrite_note)
    if str(result.stats.get("note")).startswith(NOTHING_MATCHED):
        result.stats["note"] = empty_sources_note(conn, sources) or result.stats["note"]
    # A model without its own tokenizer here is counted by an upper estimate: said in the
    # answer (an API caller never sees the server's warning).
    counted = tokenizer_info(model)
    result.stats["tokenizer"] = counted.name
    result.stats["tokens_exact"] = counted.exact
    with write_lock or contextlib.nullcontext():
        result.stats["notes_marked"] = mark_accessed(conn, result.note_ids, now)
    return result


# What fills each source of ask, said when a question found nothing because every source
# it asked is still empty.
_FILL_SOURCE = {
    "notes": "no note in this home yet: `selene-dag ingest PATH` reads a folder of notes",
    "sessions": (
        "no agent session in this home yet: `selene-dag distill run --all` reads the Claude "
        "Code, Codex CLI and Gemini CLI sessions under SELENE_SESSION_ROOTS"
    ),
}


def empty_sources_note(conn: duckdb.DuckDBPyConnection, sources: str | Sequence[str] | None) -> str:
    """For a question that found nothing: what would fill the sources it asked, when none
    of them holds a document in the search index; "" when any holds one."""
    counts = dict(conn.execute("SELECT kind, count(*) FROM search_docs GROUP BY kind").fetchall())
    asked = parse_sources(sources)
    if any(counts.get(SOURCES[source]) for source in asked):
        return ""
    return "; ".join(_fill_note(conn, source) for source in asked)


def _fill_note(conn: duckdb.DuckDBPyConnection, source: str) -> str:
    """What fills ``source``: sessions stored but not cut into chunks yet (a run stopped
    before) are named as such, not as "no session"."""
    if source == "sessions":
        (stored,) = conn.execute(
            "SELECT count(DISTINCT session_key) FROM session_events"
        ).fetchone()
        if stored:
            return (
                f"{plural(stored, 'agent session')} stored but not chunked yet (a run stopped "
                "first): `selene-dag distill run --all` finishes them"
            )
    return _FILL_SOURCE[source]


def _rewrite(
    conn: duckdb.DuckDBPyConnection,
    settings: Settings,
    question: str,
    write_lock: contextlib.AbstractContextManager[Any] | None,
    calls: ModelCalls | None,
) -> tuple[str, str]:
    """The configured model's search words for ``question`` (cached in ``llm_cache``), and
    a note when there are none: the offline engine has none to give, and a model server
    that fails leaves ask on its offline path instead of failing it."""
    if settings.llm == "extractive" or not question.strip():
        return "", ""
    try:
        with write_lock or contextlib.nullcontext():
            engine = get_engine(settings, cache_conn=conn, deferred=calls)
            return engine.rewrite_question(question), ""
    except EngineError as exc:
        return "", f"not rewritten ({exc})"


def _passage_ranker(
    conn: duckdb.DuckDBPyConnection,
    settings: Settings,
    write_lock: contextlib.AbstractContextManager[Any] | None,
    calls: ModelCalls | None,
) -> tuple[PassageRanker | None, list[str]]:
    """The configured model's ranking of ask's best passages (cached in ``llm_cache``),
    and a list that receives why it gave none: a model server that fails leaves the
    passages in their offline order instead of failing ask."""
    if settings.llm == "extractive":
        return None, []
    problems: list[str] = []

    def rank(question: str, passages: Sequence[str]) -> list[int]:
        try:
            with write_lock or contextlib.nullcontext():
                engine = get_engine(settings, cache_conn=conn, deferred=calls)
                return engine.rerank_passages(question, passages)
        except EngineError as exc:
            problems.append(str(exc))
            return []

    return rank, problems


def _rerank_note(stats: dict[str, Any], problems: list[str], rewrite_note: str) -> str:
    if rewrite_note:
        return "not reranked (the model server failed on the rewrite)"
    if problems:
        return f"not reranked ({problems[0]})"
    picked = stats.get("reranked") or []
    if not picked:
        return "the model picked none of the best passages: fused order kept"
    return "passages the model put first (fused ranks): " + ", ".join(map(str, picked))


def ask(
    settings: Settings,
    question: str,
    budget: int,
    *,
    model: str | None = None,
    sources: str | Sequence[str] | None = None,
    refresh: bool = True,
) -> AskResult:
    """Refresh a stale index (when ``refresh``), then answer ``question`` from the store;
    ``stats["index_refreshed"]`` says whether the index was rebuilt first, and
    ``stats["refresh_ms"]`` how long that took (0 when it was not; ``elapsed_ms`` is the
    question's own time)."""
    check_budget(budget, "--budget")
    parse_sources(sources)  # a bad request fails before the store is touched
    target_model(settings, model)
    started = time.perf_counter()
    refreshed = refresh_stale(settings) if refresh else False
    refresh_ms = (time.perf_counter() - started) * 1000 if refreshed else 0.0
    result = _ask_letting_go(
        lambda: existing_store(settings), settings, question, budget, model, sources
    )
    result.stats["index_refreshed"] = refreshed
    result.stats["refresh_ms"] = round(refresh_ms, 1)
    return result


def ask_shared(
    shared: SharedStore,
    settings: Settings,
    question: str,
    budget: int,
    *,
    model: str | None = None,
    sources: str | Sequence[str] | None = None,
) -> AskResult:
    """:func:`ask_in` on the server's shared store (``index_refreshed`` false: the store
    refreshes a stale index when it opens)."""
    result = _ask_letting_go(
        lambda: shared.cursor(settings),
        settings,
        question,
        budget,
        model,
        sources,
        write_lock=shared.write_lock,
    )
    result.stats["index_refreshed"] = False
    result.stats["refresh_ms"] = 0.0
    return result


def _ask_letting_go(
    open_conn: Callable[[], contextlib.AbstractContextManager[duckdb.DuckDBPyConnection]],
    settings: Settings,
    question: str,
    budget: int,
    model: str | None,
    sources: str | Sequence[str] | None,
    write_lock: contextlib.AbstractContextManager[Any] | None = None,
) -> AskResult:
    # A model's rewrite and rerank are made with the store let go: while a process holds
    # the file no other can write, and a model takes seconds to minutes.
    def work(conn: duckdb.DuckDBPyConnection, calls: ModelCalls | None) -> AskResult:
        return ask_in(
            conn,
            settings,
            question,
            budget,
            model=model,
            sources=sources,
            write_lock=write_lock,
            calls=calls,
        )

    result, calls = with_model_calls_outside(open_conn, work, write_lock)
    if calls.ms:
        result.stats["elapsed_ms"] = round(result.stats["elapsed_ms"] + calls.ms, 1)
    return result


def show(settings: Settings, citation: str, around: int = 0) -> Shown:
    """What an ask citation points at, whole: the note's lines or the session's events
    (``citations.show``), with ``around`` lines or events of context on each side."""
    with existing_store(settings) as conn:
        return show_in(conn, citation, around)


def show_in(conn: duckdb.DuckDBPyConnection, citation: str, around: int = 0) -> Shown:
    """:func:`show` on an open connection (the server's). Raises TypeError unless
    ``citation`` is a str."""
    if not isinstance(citation, str):
        raise TypeError(f"citation must be a str, got {type(citation).__name__}")
    citation = replace_lone_surrogates(citation)  # it names nothing, and broke the parser
    return show_citation(conn, citation, around)


def answer(settings: Settings, question: str, pack: str) -> str:
    """The configured model's answer to ``question`` from the context ``pack``."""
    if settings.llm == "extractive":
        raise UsageError("--answer needs a generative model: set SELENE_LLM=ollama")
    if not pack:
        raise NotFoundError("nothing in the notes or sessions matches the question")
    try:
        text, _ = with_model_calls_outside(
            lambda: existing_store(settings),
            lambda conn, calls: get_engine(settings, cache_conn=conn, deferred=calls).answer(
                question, pack
            ),
        )
    except UsageError as exc:
        if "context allowed" not in str(exc):
            raise
        raise UsageError(f"{exc}: ask --answer with a smaller --budget") from None
    return text


def read_questions(path: Path) -> QuestionFile:
    """The questions of an evaluation file and the entries it leaves out
    (``evaluate.read_question_file``). Raises NotFoundError for a missing file, UsageError
    for one without a question or not UTF-8; a missing file that names a set shipped with
    the package (``assets/eval/questions.jsonl`` read outside the checkout) says where the
    package keeps it."""
    try:
        return _user_file(path, read_question_file)
    except NotFoundError as exc:
        shipped = assets_dir() / "eval" / Path(path).name
        if not Path(path).expanduser().exists() and shipped.is_file():
            raise NotFoundError(
                f"{exc}; the set of that name shipped with selene-dag is {shipped}"
            ) from None
        raise


def evaluate_questions(
    settings: Settings,
    questions: Path | Sequence[Question],
    budget: int,
    model: str | None = None,
    sources: str | Sequence[str] | None = None,
) -> EvalReport:
    """Recall of ask beside its baselines on questions (or the file holding them, every
    entry a question: ``evaluate.load_questions``), asked of ``sources`` (as ``ask``
    takes them; default notes and sessions). Raises UsageError when every source asked is
    empty (each question would score 0 for nothing): what fills them."""
    check_budget(budget, "--budget")
    model = target_model(settings, model)
    kinds = parse_sources(sources)
    items = load_questions(questions) if isinstance(questions, Path) else list(questions)
    refresh_index_if_stale(settings)
    with existing_store(settings) as conn:
        if empty := empty_sources_note(conn, kinds):
            raise UsageError(f"nothing to evaluate: {empty}")
        return evaluate(conn, items, budget, model=model, now=settings.now(), sources=kinds)


def questions_for_home(
    settings: Settings, questions: Sequence[Question], sources: str | Sequence[str] | None = None
) -> tuple[list[Question], list[Question]]:
    """``questions`` split into those the home can answer from ``sources`` and those whose
    ``source`` (the note or session they were written about) it does not hold, or that
    ``sources`` leaves out: a set written for another corpus scored every such question 0,
    as if ask had missed it."""
    refresh_index_if_stale(settings)
    with existing_store(settings) as conn:
        kept = applicable(conn, questions, parse_sources(sources))
    chosen = {id(q) for q in kept}
    return kept, [q for q in questions if id(q) not in chosen]


class SharedStore:
    """One connection per database file while requests are in flight; a cursor each.

    ``cursor(settings)`` opens the file on the first concurrent use (after bringing tiers
    and threads up to the day and refreshing a stale ``search_index`` when
    ``refresh_index`` is set), hands out a cursor, and closes
    the connection ``linger`` seconds after the last user is done (0: at once), so a
    client asking in sequence does not pay for opening each time, yet an idle server
    leaves the file to other processes (a Dagster run can write between bursts). While it
    is open no other process can write, so staleness is checked only when it opens. When
    another process waits for the file (``store.others_waiting``), new requests wait, the
    connection closes once the requests in flight are done, and it opens again after that
    process had its turn (a server under steady load kept it for ever: every ingest beside
    it failed); a request that waits longer than ``SELENE_LOCK_WAIT`` fails (503).
    ``write_lock`` serializes the only writes, the access stamps.
    """

    def __init__(self, refresh_index: bool = True, linger: float = 1.0) -> None:
        if linger < 0:
            raise ValueError(f"linger must be >= 0 seconds, got {linger}")
        self.refresh_index = refresh_index
        self.linger = linger
        self.write_lock = threading.Lock()
        self._lock = threading.Lock()
        self._open: dict[Path, _Open] = {}
        self.opened = 0  # how many times a connection was opened (for tests and stats)

    def is_open(self, db_path: Path | str) -> bool:
        """True while a connection to ``db_path`` is held."""
        with self._lock:
            return Path(db_path).resolve() in self._open

    def _acquire(self, settings: Settings) -> tuple[Path, duckdb.DuckDBPyConnection]:
        path = Path(settings.db_path).resolve()
        deadline = time.monotonic() + settings.lock_wait
        while True:
            with self._lock:
                entry = self._open.get(path)
                waiting = others_waiting(path)
                if entry is not None and waiting and not entry.draining:
                    entry.draining = True  # let the waiting process have the file
                    if entry.users == 0:
                        if entry.closer is not None:
                            entry.closer.cancel()
                        self._close(path, entry)
                        entry = None
                if entry is None and not waiting:
                    if self.refresh_index:
                        # A server left running past midnight answered with yesterday's
                        # tiers and threads; the CLI brings them up to the day first.
                        refresh_stale(settings)
                    entry = self._open[path] = _Open(connect(path, wait=settings.lock_wait))
                    self.opened += 1
                if entry is not None and not entry.draining:
                    if entry.closer is not None:
                        entry.closer.cancel()
                        entry.closer = None
                    entry.users += 1
                    return path, entry.conn
            if time.monotonic() >= deadline:
                raise StoreError(
                    f"{path} is wanted by another process (it waits, as {path.name}.waiting-<pid> "
                    f"beside it says), which kept it longer than SELENE_LOCK_WAIT "
                    f"({settings.lock_wait:g} s); ask again once its run is done"
                )
            time.sleep(_WAIT_PAUSE)

    def _release(self, path: Path) -> None:
        with self._lock:
            entry = self._open[path]
            entry.users -= 1
            if entry.users > 0:
                return
            if entry.draining or self.linger == 0:
                self._close(path, entry)
                return
            timer = threading.Timer(self.linger, self._close_if_idle, args=(path, entry))
            timer.daemon = True
            entry.closer = timer
            timer.start()

    def _close_if_idle(self, path: Path, entry: _Open) -> None:
        with self._lock:
            if self._open.get(path) is entry and entry.users == 0:
                self._close(path, entry)

    def _close(self, path: Path, entry: _Open) -> None:
        del self._open[path]
        close_store(entry.conn, path)

    def close(self) -> None:
        """Close every connection now (server shutdown)."""
        with self._lock:
            for path, entry in list(self._open.items()):
                if entry.closer is not None:
                    entry.closer.cancel()
                self._close(path, entry)

    @contextmanager
    def cursor(self, settings: Settings) -> Iterator[duckdb.DuckDBPyConnection]:
        """A cursor of the shared connection to ``settings.db_path`` for one request."""
        path, conn = self._acquire(settings)
        try:
            cur = conn.cursor()
            try:
                cur.execute("SET TimeZone = 'UTC'")
                yield cur
            finally:
                cur.close()
        finally:
            self._release(path)


@dataclass
class _Open:
    conn: duckdb.DuckDBPyConnection
    users: int = 0
    closer: threading.Timer | None = None
    draining: bool = False  # another process waits: no new user, closed when the last leaves


# How often a request waiting for another process's turn with the file looks again.
_WAIT_PAUSE = 0.05


# --- cache of model calls ------------------------------------------------------------------


def cache_stats(settings: Settings) -> list[CacheStatsRow]:
    """Entries of ``llm_cache`` per engine, model and task."""
    with existing_store(settings) as conn:
        return cache_stat_rows(conn)


def cache_clear(settings: Settings, engine: str | None = None, model: str | None = None) -> int:
    """Delete cached calls (all, or one engine / model); returns how many."""
    with existing_store(settings) as conn:
        return clear_cache_rows(conn, engine=engine, model=model)


# --- sessions ------------------------------------------------------------------------------


def distill_scan(settings: Settings) -> list[dict[str, Any]]:
    """Every session file under the roots with its state (new, grown, changed, done)."""
    return sessions_report.distill_scan(settings)


def distill_scan_listing(settings: Settings) -> dict[str, list[dict[str, Any]]]:
    """Session files under the roots (``files``) and the files left out with why (``skipped``)."""
    return sessions_report.scan_listing(settings)


def distilled_projects_gone(settings: Settings) -> set[str]:
    """The projects whose distilled file was deleted by hand: ``distill run --all`` writes
    them again (their sessions need not run)."""
    return sessions_report.distilled_files_gone(settings)[1]


def session_file_count(settings: Settings) -> int:
    """How many session files the roots hold (as ``distill run --all`` scans them)."""
    return len(sessions_report.resolve_sessions(settings, (), all_files=True))


def idle_roots_hint(settings: Settings) -> str:
    """For a ``distill run --all`` that ran nothing: one line saying how many files the
    session roots leave out (``distill scan`` says why), or, when they hold no session
    file, which roots were read and which are missing; "" when neither. Reads the roots
    and the files rejected for their content (``sessions.rejected``), not the database."""
    found = scan_report(settings.session_roots)
    left_out = len(found.skipped) + len(sessions_rejected.split(settings, found.files)[1])
    if left_out:
        return (
            f"{plural(left_out, 'file')} under SELENE_SESSION_ROOTS left out: "
            "`selene-dag distill scan` says why"
        )
    if found.files:
        return ""
    return f"no session file under SELENE_SESSION_ROOTS: {describe_session_roots(settings)}"


def describe_session_roots(settings: Settings) -> str:
    """The session roots read, each missing one marked; when a missing one looks like
    several joined with the wrong separator (a comma), the separator to use."""
    missing = [r for r in settings.session_roots if not Path(r.path).expanduser().is_dir()]
    roots = ", ".join(
        f"{root.platform + '=' if root.platform else ''}{root.path}"
        + (
            (" (a file, not a folder)" if Path(root.path).expanduser().exists() else " (missing)")
            if root in missing
            else ""
        )
        for root in settings.session_roots
    )
    if any("," in str(root.path) for root in missing):
        roots += f" — separate several folders with '{os.pathsep}'"
    return roots


def distill_status(settings: Settings) -> dict[str, Any]:
    """Files per state and rows per sessions table."""
    return sessions_report.distill_status(settings)


def distill_report(settings: Settings, session: str | None = None) -> list[dict[str, Any]]:
    """Per session: events, chunks, importance, consensus, distilled tokens."""
    return sessions_report.distill_report(settings, session)


def distill_assess(settings: Settings, chunk_id: str) -> dict[str, Any]:
    """Every available assessor on one stored chunk now, and the consensus. ``chunk_id``:
    a chunk's id (``chunk:`` prefix allowed), or its citation as ``distill report`` lists
    it (``<key> events a-b``, read as ``show`` reads citations)."""
    from selene_dag.sessions.chunker import chunk_id as id_of_chunk
    from selene_dag.sessions.steps import SessionNotFoundError

    try:
        cited = parse_citation(chunk_id)
    except UsageError:
        cited = None
    if cited is None or cited.kind != "session" or len(cited.ranges) != 1:
        return sessions_report.distill_assess(settings, chunk_id)
    ((first, last),) = cited.ranges
    try:
        return sessions_report.distill_assess(settings, id_of_chunk(cited.ref, first, last))
    except SessionNotFoundError as exc:
        raise SessionNotFoundError(
            f"no chunk with citation {chunk_id!r} (distill report lists the best chunks)"
        ) from exc


def distill_seed(
    settings: Settings,
    platform: str,
    session: str | None = None,
    *,
    out_dir: Path | None = None,
    max_tokens: int | None = None,
    question: str | None = None,
) -> dict[str, Any]:
    """A fresh, resumable session file for ``platform`` from a distilled session, within
    ``max_tokens`` (default: the SELENE_DISTILL_TOKEN_BUDGET setting). With ``question``,
    from the chunks of every session (of ``session`` only, when given) that answer it
    best: see :mod:`selene_dag.retrieval.question_seed`. Raises NotFoundError when no
    scored chunk matches the question."""
    if max_tokens is not None:
        check_budget(max_tokens, "--max-tokens")
    if question is None:
        return sessions_report.distill_seed(
            settings, platform, session, out_dir=out_dir, max_tokens=max_tokens
        )
    return _seed_for_question(settings, platform, question, session, out_dir, max_tokens)


def _seed_for_question(
    settings: Settings,
    platform: str,
    question: str,
    session: str | None,
    out_dir: Path | None,
    max_tokens: int | None,
) -> dict[str, Any]:
    from selene_dag.retrieval.question_seed import (
        NoChunkChosenError,
        QuestionSeed,
        seed_for_question,
    )
    from selene_dag.sessions.distiller import DistillerConfig
    from selene_dag.sessions.generators import check_platform
    from selene_dag.sessions.steps import SessionNotFoundError
    from selene_dag.sessions.store import scored_sessions_named

    check_platform(platform)
    if not question.strip():
        raise UsageError("--question is empty: ask what the new session should know about")
    refresh_index_if_stale(settings)

    def work(
        conn: duckdb.DuckDBPyConnection, calls: ModelCalls | None
    ) -> tuple[QuestionSeed | None, list[str], str, bool]:
        # SELENE_DISTILL_RERANK=0 keeps the full-text order. A model server reads the
        # best candidates; without one, the CLI assessors on PATH rate them.
        ranker, problems, who = None, [], "model"
        if settings.distill_rerank:
            ranker, problems = _passage_ranker(conn, settings, None, calls)
            if ranker is None:
                ranker, problems = _cli_ranker(settings)
                who = "CLI assessors"
        key = None
        if session:
            matches = scored_sessions_named(conn, session)
            if not matches:
                try:
                    sessions_report.resolve_sessions(settings, [session])
                except (SessionNotFoundError, UsageError):
                    raise SessionNotFoundError(
                        f"no session matches {session!r} (`selene-dag distill report` lists "
                        "the sessions distilled, `selene-dag distill scan` the files found)"
                    ) from None
                raise SessionNotFoundError(
                    f"{session!r} is not distilled yet: run `selene-dag distill run "
                    f"{session}` first"
                )
            key = matches[0].session_key
        try:
            seeded = seed_for_question(
                conn,
                question,
                platform,
                out_dir or settings.distilled_dir / "seeds",
                DistillerConfig.from_settings(settings, max_tokens),
                settings.now(),
                model=settings.model,
                session_key=key,
                ranker=ranker,
                weights=(settings.distill_question_weight, settings.distill_static_weight),
            )
        except NoChunkChosenError as exc:
            found = f"{plural(exc.candidates, 'session chunk')} found for {question!r}"
            if exc.below_minimum == exc.candidates:
                raise NotFoundError(
                    f"{found}, none with a score of at least {exc.min_consensus:g} "
                    "(SELENE_DISTILL_MIN_CONSENSUS): lower it, or ask with other words"
                ) from exc
            raise NotFoundError(
                f"{found}, none fits in {plural(exc.max_tokens, 'token')} with the session's "
                "opening message: give a larger --max-tokens"
            ) from exc
        return seeded, problems, who, ranker is not None

    # A model's rerank is made with the store let go (an ingest meanwhile runs at once).
    (seeded, problems, who, reranked), _ = with_model_calls_outside(
        lambda: existing_store(settings), work
    )
    if seeded is None:
        raise NotFoundError(
            f"no scored session chunk matches {question!r}: run `selene-dag distill run --all` "
            "first, or ask with other words"
        )
    result = seeded.result
    return {
        "question": question,
        "platform": platform,
        "path": str(result.path),
        "sessions": list(seeded.sessions),
        "candidates": seeded.candidates,
        "chunks": len(result.distilled.chunks),
        "tokens": result.tokens,
        "budget": result.distilled.max_tokens,
        "question_words": list(seeded.words),
        "question_words_found": list(seeded.words_found),
        "rerank": (
            _seed_rerank_note(seeded.reranked, problems, who)
            if reranked
            else "not reranked (SELENE_DISTILL_RERANK=0)"
            if not settings.distill_rerank
            else "not reranked (no model server, and no CLI assessor on PATH)"
        ),
    }


# A candidate the CLI assessors rate at least this relevant to the question (their mean,
# 1–10) is lifted; the most relevant first.
CLI_RELEVANT = 6.0


def _cli_ranker(settings: Settings) -> tuple[PassageRanker | None, list[str]]:
    """The CLI assessors on PATH (SELENE_CLI_ASSESSORS) rating candidates for a question
    (seed 003's question-aware re-assessment): each candidate's mean relevance over the
    CLIs that rated it; those at ``CLI_RELEVANT`` or more come first, most relevant first.
    None when no CLI assessor is on PATH. The list receives why no CLI rated anything."""
    from selene_dag.llm.cli_assessors import assess_with_clis, available_assessors

    names = available_assessors(list(settings.cli_assessors)) if settings.cli_assessors else []
    if not names:
        return None, []
    problems: list[str] = []

    def rank(question: str, passages: Sequence[str]) -> list[int]:
        scores: dict[int, float] = {}
        for i, text in enumerate(passages):
            rated = [
                r.assessment.relevance
                for r in assess_with_clis(
                    text,
                    names,
                    settings.assessor_timeout,
                    context=question,
                    max_workers=settings.assessor_concurrency,
                )
                if r.ok and r.assessment is not None
            ]
            if rated:
                scores[i] = sum(rated) / len(rated)
        if not scores:
            problems.append(f"no CLI assessor ({', '.join(names)}) gave a rating")
        lifted = [i for i, score in scores.items() if score >= CLI_RELEVANT]
        return sorted(lifted, key=lambda i: (-scores[i], i))

    return rank, problems


def seed_rerank_notice(settings: Settings) -> str:
    """One line saying that the CLI assessors will rate a question seed's candidates (they
    take seconds each), or "" when they will not (a model server does it, or it is off)."""
    from selene_dag.llm.cli_assessors import available_assessors

    if not settings.distill_rerank or settings.llm != "extractive" or not settings.cli_assessors:
        return ""
    names = available_assessors(list(settings.cli_assessors))
    if not names:
        return ""
    return (
        f"rating the best candidates for the question with {', '.join(names)} "
        "(SELENE_DISTILL_RERANK=0 skips that)"
    )


def _seed_rerank_note(reranked: Sequence[int], problems: list[str], who: str = "model") -> str:
    if problems:
        return f"not reranked ({problems[0]})"
    if not reranked:
        return f"the {who} picked none of the best candidates: full-text order kept"
    return f"candidates the {who} put first (full-text ranks): " + ", ".join(map(str, reranked))


def kept_no_chunk_hint(rows: Sequence[Mapping[str, Any]]) -> str:
    """Lines counting the sessions of ``rows`` (``distill run`` or ``distill report`` rows)
    whose distilled file kept none of their chunks, by why, and the setting that decides:
    none reached the minimum consensus, or each that did is larger than the budget leaves
    (a chunk is kept whole or not at all); "" when there is none."""
    empty = [r for r in rows if r.get("distilled_chunks") == 0 and r.get("chunks")]
    lines = []
    unrated = [r for r in empty if r.get("dropped_chunks") == 0]
    if unrated:
        least = min(r["min_consensus"] for r in unrated)
        lines.append(
            f"{plural(len(unrated), 'session')} kept no chunk: none reached consensus {least:g}; "
            "SELENE_DISTILL_MIN_CONSENSUS lowers it (then run `selene-dag distill run --all`)"
        )
    too_big = [r for r in empty if r.get("dropped_chunks")]
    if too_big:
        budget = min(r.get("budget") or 0 for r in too_big)
        lines.append(
            f"{plural(len(too_big), 'session')} kept no chunk: each chunk that reached consensus "
            f"is larger than the budget of {budget:,} tokens leaves (a chunk is kept whole "
            "or not at all); SELENE_DISTILL_TOKEN_BUDGET raises it (then run "
            "`selene-dag distill run --all`)"
        )
    return "\n".join(lines)


def shrank_hint(rows: Sequence[Mapping[str, Any]]) -> str:
    """One line naming the session files of ``rows`` (``distill run`` rows) that were
    shorter than when last read (replaced by an older copy, or cut): their stored events
    now follow the shorter file, which a transcript that only grows never asks for; ""
    when there is none."""
    cut = [r for r in rows if r.get("shrank")]
    if not cut:
        return ""
    counts = ", ".join(
        f"{r['session_key']} {r['shrank']['events_before']:,} → {r['shrank']['events'] or 0:,}"
        for r in cut[:5]
    ) + (f" and {len(cut) - 5:,} more" if len(cut) > 5 else "")
    one = len(cut) == 1
    return (
        f"{plural(len(cut), 'session file')} {'is' if one else 'are'} shorter than when last "
        f"read (replaced or cut): {'its' if one else 'their'} stored events now follow "
        f"{'it' if one else 'them'} ({counts} events). Agents only append to transcripts: "
        "if an older copy was put back, the events it lacks are gone from this home"
    )


def model_unrated_hint(settings: Settings, rows: Sequence[Mapping[str, Any]]) -> str:
    """With a model server configured, one line counting the chunks of the sessions of
    ``rows`` (``distill run`` rows that ran) the model did not rate (its answer was
    unusable twice: the run's log names each; the other assessors' ratings decide); ""
    when it rated all, or with the offline engine. Rows only distilled again (their
    ``model_rated`` None) are not counted: their chunks were not assessed in this run."""
    if settings.llm == "extractive":
        return ""
    # Rows whose chunks this run assessed (not those only distilled again).
    ran = [r for r in rows if r.get("ok") and r.get("chunks") and r.get("model_rated") is not None]
    missing = sum(max(0, r["chunks"] - r["model_rated"]) for r in ran)
    if missing <= 0:
        return ""
    return (
        f"{plural(missing, 'chunk')} of {plural(len(ran), 'session')} without the model's "
        "rating: its answer was unusable (the run's log names each: `selene-dag dev`, Runs); "
        "the other assessors' "
        "ratings decide"
    )


def distill_run(
    settings: Settings,
    ids: Sequence[str] = (),
    all_files: bool = False,
    run_config: dict[str, Any] | None = None,
    instance: Any = None,
    on_batch: Callable[[int, int], None] | None = None,
    on_index: Callable[[float], None] | None = None,
) -> list[dict[str, Any]]:
    """Materialize the sessions spine for the chosen files, in batches (one run each)
    against ``instance`` (default: the home's persistent instance). Named files (session
    key, the tool's session id, or a path) always run; ``all_files`` runs only the files
    that are new, changed, never completed or computed by older code, and distills again
    (that step only) the files distilled under other SELENE_DISTILL_* settings. One row per
    file that ran: key, platform, path, ok, error, distilled (the file's path), and the
    chunks it kept, left out for the budget, and had, with the minimum consensus that
    decided (``distilled_chunks``, ``dropped_chunks``, ``chunks``, ``min_consensus``).
    ``on_batch(done, total)`` reports progress after each run; with ``all_files``, the files
    whose token counts are in another model than SELENE_MODEL's run again too. With
    ``on_index``, a search index left stale by the files that ran is brought up to date
    (as ``ingest`` does), and ``on_index(seconds)`` is told how long that took. Raises
    UsageError for ids with ``all_files``."""
    if all_files and ids:
        raise UsageError(
            f"--all runs every session file; name sessions ({', '.join(ids)}) or give --all"
        )
    files = sessions_report.resolve_sessions(settings, ids, all_files)
    # Dagster's last verdict that no file needs a run stands while nothing it rests on
    # moved (see selene_dag.last_verdict): then Dagster is not loaded.
    key = None
    verdicts = all_files and run_config is None and instance is None
    if verdicts:
        key = last_verdict.current_key(settings, "distill", notes=False)
        if last_verdict.holds(settings, key):
            return []
    runs = _defs_runs()
    instance = instance or runs.instance_for(settings)
    again: list[ScannedFile] = []
    projects_gone: set[str] = set()
    if all_files:
        files, again, projects_gone = _distill_todo(settings, runs, instance, files, run_config)
    if not files and not again and not projects_gone:
        if key is not None and last_verdict.current_key(settings, "distill", notes=False) == key:
            last_verdict.remember(settings, key)
        return []
    outcome: dict[str, str | None] = {}
    # A transcript only grows: one shorter than when it was read was replaced or cut, and
    # its stored events follow it (the user is told how many it had).
    stored = sessions_report.stored_files(settings) if files else {}
    shrank = {
        f.session_key: stored[f.session_key]["events"]
        for f in files
        if f.session_key in stored and f.size < stored[f.session_key]["size"]
    }
    if files:
        outcome |= runs.materialize_sessions(
            settings, [f.session_key for f in files], instance, run_config, on_batch=on_batch
        )
        sessions_rejected.remember(settings, [(f, outcome.get(f.session_key) or "") for f in files])
    scored = {f.session_key for f in files}  # the whole spine ran: chunks assessed again
    if again:
        outcome |= runs.materialize_distillations(
            settings, [f.session_key for f in again], instance, on_batch=on_batch
        )
        files += again
    # The projects of the sessions that ran get their distilled session again (every
    # project's own chunks compete in one file), and only those.
    ran = [key for key, error in outcome.items() if error is None]
    projects = sessions_report.projects_of(settings, ran) if ran else set()
    projects |= projects_gone
    if projects and (failure := runs.materialize_projects(settings, sorted(projects), instance)):
        raise RunFailedError(f"distilling the sessions' projects failed: {failure}")
    if on_index is not None and (ran or projects_gone):
        index_started = time.perf_counter()
        if refresh_index_if_stale(settings):
            on_index(time.perf_counter() - index_started)
    distilled = sessions_report.distillations_by_session(settings) or {}
    events_now = sessions_report.stored_files(settings) if shrank else {}
    rows = []
    for f in files:
        row = distilled.get(f.session_key, {})
        rows.append(
            {
                "session_key": f.session_key,
                "platform": f.platform,
                "path": f.path,
                "ok": outcome[f.session_key] is None,
                "error": outcome[f.session_key],
                "distilled": row.get("distilled_path"),
                "distilled_chunks": row.get("distilled_chunks"),
                "dropped_chunks": row.get("dropped_chunks"),
                "chunks": row.get("chunks"),
                "min_consensus": row.get("min_consensus"),
                "budget": row.get("budget"),
                "model_rated": row.get("model_rated") if f.session_key in scored else None,
                "shrank": (
                    {
                        "events_before": shrank[f.session_key],
                        "events": events_now.get(f.session_key, {}).get("events"),
                    }
                    if f.session_key in shrank
                    else None
                ),
            }
        )
    if verdicts and all(r["ok"] for r in rows):
        # Dagster is loaded already: ask it once more, so that the next unchanged `--all`
        # (a scheduled one) need not load it (4 s instead of 0.7 s on 424 files).
        after = last_verdict.current_key(settings, "distill", notes=False)
        scanned = sessions_report.resolve_sessions(settings, (), True)
        if (
            after is not None
            and _distill_todo(settings, runs, instance, scanned, run_config) == ([], [], set())
            and last_verdict.current_key(settings, "distill", notes=False) == after
        ):
            last_verdict.remember(settings, after)
    return rows


def _distill_todo(
    settings: Settings,
    runs: Any,
    instance: Any,
    files: list[ScannedFile],
    run_config: dict[str, Any] | None,
) -> tuple[list[ScannedFile], list[ScannedFile], set[str]]:
    """Of ``files`` (every scanned file), those ``distill run --all`` runs (new, changed,
    never completed, computed by older code, counted in another model or rated by another
    engine) and those it distills again only (distilled under other settings, or their
    distilled file gone); and the projects whose distilled file is gone (written again)."""
    changed = {
        row["session_key"]
        for row in sessions_report.distill_scan(settings)
        if row["state"] != "done"
    } | sessions_report.counted_in_another_model(settings)
    changed |= sessions_report.rated_by_another_engine(settings)
    # A file rejected for its content, unchanged since, is listed by `distill scan` with
    # the files left out, not read again (sessions.rejected).
    files = sessions_rejected.split(settings, files)[0]
    todo = set(runs.sessions_to_run(instance, [f.session_key for f in files], changed))
    otherwise = (
        sessions_report.distilled_with_other_settings(settings) if run_config is None else set()
    )
    sessions_gone, projects_gone = sessions_report.distilled_files_gone(settings)
    otherwise |= sessions_gone
    again = [f for f in files if f.session_key in otherwise - todo]
    return [f for f in files if f.session_key in todo], again, projects_gone


# --- demo ----------------------------------------------------------------------------------


DEMO_HOME = Path(".selene-demo")


def demo_now(notes_path: Path) -> datetime:
    """The demo's pinned 'now': midnight UTC of the day after the corpus's newest note."""
    result = read_notes(notes_path)
    newest = max(d for n in result.notes for d in (n.created_at, n.updated_at) if d is not None)
    day = newest.astimezone(UTC).date() + timedelta(days=1)
    return datetime(day.year, day.month, day.day, tzinfo=UTC)


def demo_settings(settings: Settings, home: Path) -> Settings:
    """``settings`` pointed at the bundled corpus in ``home``; "now" pinned to the day after
    the newest note unless SELENE_NOW is set."""
    notes = bundled_notes()
    changes: dict[str, Any] = {"home": home, "notes_dir": notes}
    roots = bundled_session_roots()
    if roots:
        changes["session_roots"] = roots
    if settings.now_override is None:
        changes["now_override"] = demo_now(notes)
    return settings.replace(**changes)


def check_demo_home(settings: Settings) -> None:
    """Raise UsageError for a home the demo must not take: one whose store holds notes or
    sessions other than the bundled corpus (the demo would mix 577 notes into it and pin
    its day), one with notes of its own in ``notes/`` (the demo's home reads the bundled
    corpus instead), or one whose ``demo`` is not the demo's marker file. A home the
    demo marked is taken without opening its store; a store named by SELENE_DB outside
    the home is always looked into."""
    home = settings.home
    marker = home / DEMO_MARKER_FILE
    refuse = f"give the demo a home of its own (selene-dag demo --home {DEMO_HOME})"
    if marker.exists() and not is_demo_home(home):
        raise UsageError(f"{marker} is not the demo's marker file: {refuse}")
    built_from = _demo_built_from(home)
    if built_from is not None and built_from != bundled_notes() and built_from.exists():
        # Another installation's corpus (a checkout's, then a pip install's): its notes
        # and sessions would be stored a second time beside this one's.
        raise UsageError(
            f"{home} holds the demo built from another installation's corpus ({built_from}): "
            f"remove that home to build the demo here again, or {refuse}"
        )
    if is_demo_home(home) and settings.db_path == home / "selene.duckdb":
        return
    if settings.db_path.exists():
        others = _notes_and_sessions_not_bundled(settings)
        if others:
            raise UsageError(
                f"{settings.db_path} holds {others} from outside the demo's corpus: the demo "
                f"would add its 577 notes to them and pin the day; {refuse}"
            )
    notes = home / "notes"
    if not is_demo_home(home) and notes.is_dir() and any(notes.iterdir()):
        raise UsageError(
            f"{home} has notes of its own in {notes}: the demo's home reads the bundled "
            f"notes instead; {refuse}"
        )


# The demo's home names the bundled notes file it was built from (one installation's).
DEMO_CORPUS_FILE = "demo-corpus"


def _demo_built_from(home: Path) -> Path | None:
    """The bundled notes file the demo in ``home`` was built from; None when unknown."""
    try:
        named = (home / DEMO_CORPUS_FILE).read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return Path(named) if named else None


def _notes_and_sessions_not_bundled(settings: Settings) -> str:
    """``"12 notes and 3 sessions"`` (the parts that are not 0) of the store that are not
    read from the bundled corpus, deleted notes counted apart (``"12 notes (2 more
    deleted)"``); "" when there are none."""
    notes_file = str(bundled_notes())
    session_folder = str(bundled_notes().parent.parent / "sessions") + os.sep
    counts: list[int] = []
    with open_store(settings.db_path, read_only=True, wait=settings.lock_wait) as conn:
        for sql, value in (
            ("SELECT count(*) FROM notes WHERE source <> ? AND deleted_at IS NULL", notes_file),
            ("SELECT count(*) FROM notes WHERE source <> ? AND deleted_at IS NOT NULL", notes_file),
            ("SELECT count(*) FROM session_files WHERE NOT starts_with(path, ?)", session_folder),
        ):
            try:
                counts.append(conn.execute(sql, [value]).fetchone()[0])
            except duckdb.CatalogException:  # a store older than the table, or empty
                counts.append(0)
    live, deleted, sessions = counts
    notes = plural(live, "note") if live else ""
    if deleted:
        notes = f"{notes} ({deleted:,} more deleted)" if live else plural(deleted, "deleted note")
    parts = [part for part in (notes, plural(sessions, "session") if sessions else "") if part]
    return " and ".join(parts)


@dataclass
class DemoReport:
    """What the demo built (or found up to date) and the figures it prints.
    ``remembered`` is True when the verdict "nothing to run" was Dagster's from the end of
    the last run, still standing (see :mod:`selene_dag.last_verdict`), so Dagster was not
    loaded."""

    settings: Settings
    up_to_date: bool
    seconds: float
    counts: dict[str, int] = field(default_factory=dict)
    health: dict[str, Any] = field(default_factory=dict)
    digests: list[tuple[str, str]] = field(default_factory=list)
    ran: list[str] = field(default_factory=list)
    remembered: bool = False


@dataclass
class _DemoWork:
    """What Dagster reports the demo must run now."""

    sessions: list[str] = field(default_factory=list)
    stale: dict[str, str] = field(default_factory=dict)
    daily: tuple[str, str] | None = None

    def __bool__(self) -> bool:
        return bool(self.sessions or self.stale or self.daily)


def _demo_sessions(runs: Any, instance: Any, settings: Settings, force: bool) -> list[str]:
    if not bundled_session_roots():
        return []
    scanned = sessions_report.distill_scan(settings)
    changed = {row["session_key"] for row in scanned if row["state"] != "done"}
    keys = [row["session_key"] for row in scanned]
    return keys if force else runs.sessions_to_run(instance, keys, changed)


def _demo_daily(
    runs: Any, instance: Any, settings: Settings, force: bool
) -> tuple[str, str] | None:
    from selene_dag.defs.notes import demo_partition_range

    first, last = demo_partition_range(settings.now())
    return (first, last) if runs.daily_range_to_run(instance, first, last, force=force) else None


def _demo_work(runs: Any, instance: Any, settings: Settings) -> _DemoWork:
    import dagster as dg

    return _DemoWork(
        sessions=_demo_sessions(runs, instance, settings, False),
        stale=runs.stale_plan(instance, settings, dg.AssetSelection.all()),
        daily=_demo_daily(runs, instance, settings, False),
    )


def demo(settings: Settings, *, force: bool = False) -> DemoReport:
    """Materialize the whole graph on the bundled corpus in ``settings.home`` (use
    :func:`demo_settings` first), against the home's persistent Dagster instance, so
    `selene-dag dev` on that home shows what the demo built. Only what Dagster reports
    stale or missing runs: a second run with nothing changed starts no step. After a run,
    Dagster is asked again; its verdict "nothing to run" is remembered with what it rests
    on, and a later demo for which all of that is unchanged reports from the database
    without loading Dagster (``force`` runs everything whatever the verdict). The home
    keeps the demo's "now" (its ``now`` file): every later command on it sees that day."""
    started = time.perf_counter()
    check_demo_home(settings)
    settings.home.mkdir(parents=True, exist_ok=True)
    (settings.home / PINNED_NOW_FILE).write_text(settings.now().isoformat() + "\n")
    (settings.home / DEMO_MARKER_FILE).write_text(DEMO_MARKER_TEXT, encoding="utf-8")
    (settings.home / DEMO_CORPUS_FILE).write_text(f"{bundled_notes()}\n", encoding="utf-8")
    if not force and last_verdict.holds(settings, last_verdict.current_key(settings, "demo")):
        return _demo_report(settings, [], started, remembered=True)
    import dagster as dg

    runs = _defs_runs()
    instance = runs.instance_for(settings)
    last_verdict.clear(settings)
    ran: list[str] = []
    # Sessions first, so the rollups in the unpartitioned run see every scored session.
    todo = _demo_sessions(runs, instance, settings, force)
    if todo:
        rows = distill_run(settings, todo, instance=instance)
        failed = [row for row in rows if not row["ok"]]
        if failed:
            raise RunFailedError(f"demo session {failed[0]['path']} failed: {failed[0]['error']}")
        ran += [f"session {key}" for key in todo]
    outcome = runs.materialize_stale(instance, settings, dg.AssetSelection.all(), force=force)
    if not outcome.success:
        raise RunFailedError(f"demo run failed: {runs.failure_message(outcome.result)}")
    ran += outcome.selected
    daily = _demo_daily(runs, instance, settings, force)
    if daily is not None:
        first, last = daily
        result = runs.materialize_daily_range(instance, first, last, settings=settings)
        if not result.success:
            raise RunFailedError(f"demo daily summaries failed: {runs.failure_message(result)}")
        ran.append(f"daily_summaries {first}..{last}")
    # Dagster's verdict on the home as the run left it, remembered when nothing is left to
    # run and nothing it rests on moved while Dagster was asked.
    before = last_verdict.current_key(settings, "demo")
    if (
        before is not None
        and not _demo_work(runs, instance, settings)
        and last_verdict.current_key(settings, "demo") == before
    ):
        last_verdict.remember(settings, before)
    return _demo_report(settings, ran, started)


def _demo_report(
    settings: Settings, ran: list[str], started: float, *, remembered: bool = False
) -> DemoReport:
    report = DemoReport(
        settings, not ran, time.perf_counter() - started, ran=ran, remembered=remembered
    )
    with open_store(settings.db_path, wait=settings.lock_wait) as conn:
        report.counts = table_counts(conn)
        report.health = compression_health(conn, settings.now())
        report.digests = conn.execute(
            "SELECT name, thread_digest FROM threads WHERE thread_digest IS NOT NULL "
            "ORDER BY note_count DESC LIMIT 2"
        ).fetchall()
    return report
