"""The ``selene-dag`` command (typer + rich).

Contract (DESIGN.md, Interfaces): exit code 0 on success, 1 on a user error with one clear
line on stderr and never a traceback. Commands that print a context pack write only the pack
on stdout; accounting and progress go to stderr.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from rich.console import Console
from rich.table import Table

from selene_dag.config import Settings, SettingsError, load_settings

app = typer.Typer(
    name="selene-dag",
    help="Token-budgeted LLM context from notes and AI coding-agent sessions, as Dagster assets.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
# Piped output gets a wide console: rich would otherwise squeeze tables into 80 columns.
err = Console(stderr=True, soft_wrap=True, width=None if sys.stderr.isatty() else 200)
out = Console(width=None if sys.stdout.isatty() else 200)

F = TypeVar("F", bound=Callable[..., Any])


class UserError(Exception):
    """A problem the user can fix; printed as one line on stderr, exit code 1."""


def _user_errors() -> tuple[type[BaseException], ...]:
    from selene_dag.store import StoreError

    errors: list[type[BaseException]] = [UserError, SettingsError, StoreError, FileNotFoundError]
    try:
        from selene_dag.llm.engine import EngineError

        errors.append(EngineError)
    except ImportError:  # the model layer is optional at import time of the CLI
        pass
    return tuple(errors)


def guarded(fn: F) -> F:
    """Turn known errors into one stderr line and exit code 1 (never a traceback)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except typer.Exit:
            raise
        except _user_errors() as exc:
            err.print(f"[bold red]error:[/] {exc}", highlight=False, soft_wrap=True)
            raise typer.Exit(1) from None
        except ValueError as exc:
            err.print(f"[bold red]error:[/] {exc}", highlight=False, soft_wrap=True)
            raise typer.Exit(1) from None

    return wrapper  # type: ignore[return-value]


def _settings(home: Path | None = None) -> Settings:
    if home is not None:
        os.environ["SELENE_HOME"] = str(home)
    return load_settings()


def _bundled_notes() -> Path:
    from selene_dag.paths import assets_dir

    return assets_dir() / "demo" / "notes" / "til.jsonl"


def _bundled_session_roots() -> str:
    from selene_dag.paths import assets_dir

    base = assets_dir() / "demo" / "sessions"
    roots = [f"{p.name}={p}" for p in sorted(base.iterdir()) if p.is_dir()] if base.is_dir() else []
    return os.pathsep.join(roots)


def demo_now(notes_path: Path) -> datetime:
    """The demo's pinned 'now': midnight UTC of the day after the corpus's newest note."""
    from selene_dag.notes.ingest import read_notes

    result = read_notes(notes_path)
    newest = max(max(n.created_at, n.updated_at) for n in result.notes)
    day = newest.astimezone(UTC).date() + timedelta(days=1)
    return datetime(day.year, day.month, day.day, tzinfo=UTC)


def _print_counts(counts: dict[str, int], title: str) -> None:
    table = Table(title=title)
    table.add_column("table")
    table.add_column("rows", justify="right")
    for name, rows in counts.items():
        if name == "schema_migrations":
            continue
        table.add_row(name, f"{rows:,}")
    err.print(table)


def _print_health(document: dict[str, Any], console: Console = err) -> None:
    table = Table(title="compression health")
    table.add_column("figure")
    table.add_column("value", justify="right")
    for tier, count in document["tiers"].items():
        table.add_row(f"notes at {tier}", f"{count:,}")
    essences = document["essences"]
    table.add_row(
        "essences computed",
        f"{essences['computed']:,} / {essences['total']:,} ({essences['percent']} %)",
    )
    digests = document["threadDigests"]
    table.add_row(
        "active threads with a digest", f"{digests['withDigest']} / {digests['activeThreads']}"
    )
    console.print(table)


@app.command()
@guarded
def demo(
    home: Annotated[
        Path | None,
        typer.Option(help="Folder for the demo (wins over SELENE_HOME; default ./.selene-demo)."),
    ] = None,
    force: Annotated[bool, typer.Option(help="Re-run even when nothing changed.")] = False,
) -> None:
    """Materialize the whole graph on the bundled corpus and print a report.

    A second run on the same home recomputes nothing when the inputs, the settings and
    every asset's code version are unchanged (their fingerprint is kept in demo.json).
    """
    import json

    import dagster as dg

    from selene_dag.defs.assets_notes import demo_partition_range
    from selene_dag.defs.runner import (
        failure_message,
        graph_fingerprint,
        materialize,
        materialize_daily_range,
        unpartitioned_selection,
    )
    from selene_dag.sessions.commands import distill_run
    from selene_dag.store import open_store, table_counts

    # --home wins over SELENE_HOME; with neither, the demo gets a home of its own.
    home = home or Path(os.environ.get("SELENE_HOME") or ".selene-demo")
    os.environ["SELENE_HOME"] = str(home)
    notes = _bundled_notes()
    os.environ["SELENE_NOTES_DIR"] = str(notes)
    sessions = _bundled_session_roots()
    if sessions:
        os.environ["SELENE_SESSION_ROOTS"] = sessions
    if not os.environ.get("SELENE_NOW"):
        os.environ["SELENE_NOW"] = demo_now(notes).isoformat()
    settings = load_settings()
    err.print(
        f"selene-dag demo → {settings.home} (engine {settings.llm}, model {settings.model}, "
        f"now {settings.now().isoformat()})"
    )
    started = time.perf_counter()
    stamp_path = settings.home / "demo.json"
    fingerprint = graph_fingerprint(settings)
    up_to_date = (
        not force
        and settings.db_path.exists()
        and stamp_path.exists()
        and json.loads(stamp_path.read_text()).get("fingerprint") == fingerprint
    )
    # The demo's home is its own: an in-memory instance avoids ~2,000 SQLite event writes.
    instance = dg.DagsterInstance.ephemeral()
    if up_to_date:
        err.print(
            "demo: nothing changed since the last run (same inputs, settings and code): nothing to recompute"
        )
    else:
        stamp_path.unlink(missing_ok=True)  # a run that fails half-way must not look complete
        with err.status("materializing the graph…"):
            # Sessions first, so the rollups in the unpartitioned run see every scored session.
            sessions_done = (
                distill_run(settings, all_files=True, instance=instance) if sessions else []
            )
            failed = [row for row in sessions_done if not row["ok"]]
            if failed:
                raise UserError(f"demo session {failed[0]['path']} failed: {failed[0]['error']}")
            result = materialize(unpartitioned_selection(), instance, raise_on_error=False)
            if not result.success:
                raise UserError(f"demo run failed: {failure_message(result)}")
            first, last = demo_partition_range(settings.now())
            result = materialize_daily_range(instance, first, last)
            if not result.success:
                raise UserError(f"demo daily summaries failed: {failure_message(result)}")
        stamp_path.write_text(json.dumps({"fingerprint": fingerprint}), encoding="utf-8")
    elapsed = time.perf_counter() - started
    from selene_dag.notes.health import compression_health

    with open_store(settings.db_path) as conn:
        counts = table_counts(conn)
        document = compression_health(conn, settings.now())
        digests = conn.execute(
            "SELECT name, thread_digest FROM threads WHERE thread_digest IS NOT NULL "
            "ORDER BY note_count DESC LIMIT 2"
        ).fetchall()
    _print_counts(counts, "selene-dag demo: rows per table")
    _print_health(document)
    for name, digest in digests:
        err.print(f"[bold]{name}[/] digest: {digest}", highlight=False)
    notes_count = counts.get("notes", 0)
    verb = "up to date" if up_to_date else "materialized"
    out.print(f"demo: {notes_count} notes {verb} in {settings.db_path} ({elapsed:.1f} s)")
    out.print(f"next: SELENE_HOME={settings.home} selene-dag context --budget 4000")


@app.command()
@guarded
def ingest(
    path: Annotated[Path, typer.Argument(help="Folder (or file) of markdown / JSONL notes.")],
    home: Annotated[Path | None, typer.Option(help="SELENE_HOME to ingest into.")] = None,
) -> None:
    """Ingest notes from PATH and materialize the notes group so ask/context see them."""
    from selene_dag.defs.runner import (
        failure_message,
        instance_for,
        materialize,
        unpartitioned_selection,
    )

    if not path.exists():
        raise UserError(f"{path} does not exist")
    os.environ["SELENE_NOTES_DIR"] = str(path.resolve())
    settings = _settings(home)
    started = time.perf_counter()
    import dagster as dg

    with err.status(f"ingesting {path}…"):
        # The notes group and the search index, so `ask` and `context` see the notes at once.
        selection = dg.AssetSelection.groups("notes", "context") & unpartitioned_selection()
        result = materialize(selection, instance_for(settings), raise_on_error=False)
    if not result.success:
        raise UserError(f"ingest failed: {failure_message(result)}")
    meta = {}
    for mat in result.asset_materializations_for_node("raw_notes"):
        meta = {k: getattr(v, "value", v) for k, v in mat.metadata.items()}
    err.print(
        f"ingested {path}: {meta.get('notes', '?')} notes ({meta.get('inserted', 0)} new, "
        f"{meta.get('changed', 0)} changed, {meta.get('marked_deleted', 0)} deleted, "
        f"{meta.get('bad_inputs', 0)} bad inputs skipped) in {time.perf_counter() - started:.1f} s"
    )


@app.command()
@guarded
def dev(
    port: Annotated[int, typer.Option(help="Port of the Dagster UI.")] = 3000,
    host: Annotated[str, typer.Option(help="Address to bind (loopback by default).")] = "127.0.0.1",
) -> None:
    """Start the Dagster UI and daemon (schedules and sensors live) on 127.0.0.1."""
    from selene_dag.defs.runner import prepare_dagster_home

    settings = load_settings()
    dagster_home = prepare_dagster_home(settings)
    exe = shutil.which("dagster") or str(Path(sys.executable).parent / "dagster")
    workspace = Path("workspace.yaml")
    target = ["-w", str(workspace)] if workspace.is_file() else ["-m", "selene_dag.definitions"]
    env = {**os.environ, "DAGSTER_HOME": str(dagster_home)}
    err.print(f"Dagster UI on http://{host}:{port} (DAGSTER_HOME={dagster_home})")
    raise typer.Exit(subprocess.call([exe, "dev", *target, "-h", host, "-p", str(port)], env=env))


def _read_store(settings: Settings):
    from selene_dag.store import open_store

    if not settings.db_path.exists():
        raise UserError(
            f"no database at {settings.db_path}: run `selene-dag ingest PATH` or `selene-dag demo` first"
        )
    return open_store(settings.db_path)


@app.command()
@guarded
def context(
    budget: Annotated[int, typer.Option(help="Token budget of the pack.")] = 16_000,
    model: Annotated[str | None, typer.Option(help="Target model (default SELENE_MODEL).")] = None,
) -> None:
    """Print the tiered context of all notes (stdout: the pack only; accounting on stderr)."""
    from selene_dag.notes.context_notes import load_context_notes, mark_accessed, pack_all_notes

    if budget <= 0:
        raise UserError("--budget must be a positive number of tokens")
    settings = load_settings()
    model = model or settings.model
    started = time.perf_counter()
    with _read_store(settings) as conn:
        notes = load_context_notes(conn)
        if not notes:
            raise UserError("no notes yet: run `selene-dag ingest PATH` first")
        pack = pack_all_notes(notes, budget, model)
        used = [
            note_id for note_id, tier in pack.tiers.items() if tier in ("full", "high", "summary")
        ]
        mark_accessed(conn, used, settings.now())
    sys.stdout.write(pack.text + "\n")
    tiers = ", ".join(f"{tier} {count}" for tier, count in pack.counts.items() if count)
    err.print(
        f"{pack.total_tokens:,} / {budget:,} {model} tokens; {len(notes)} notes ({tiers}); "
        f"{time.perf_counter() - started:.2f} s",
        highlight=False,
    )


@app.command()
@guarded
def compact(
    messages: Annotated[
        Path, typer.Argument(help="JSON list of {role, content, stage?, completed?}.")
    ],
    window: Annotated[int, typer.Option(help="Context window of the target model, in tokens.")],
    model: Annotated[str | None, typer.Option(help="Target model (default SELENE_MODEL).")] = None,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write here instead of stdout.")
    ] = None,
) -> None:
    """Compact a conversation with seed 004's P1–P4 chain; print what each step removed."""
    import json

    from selene_dag.context.compaction import compact_messages, load_conversation
    from selene_dag.llm import get_engine

    if window <= 0:
        raise UserError("--window must be a positive number of tokens")
    settings = load_settings()
    model = model or settings.model
    conversation, digest = load_conversation(messages)
    engine = get_engine(settings)

    def summarizer(text: str, max_tokens: int) -> str:
        return engine.summarize(text, max_tokens, model, kind="conversation")

    report = compact_messages(
        conversation, window, model=model, summarizer=summarizer, digest=digest
    )
    payload = json.dumps({"messages": report.messages}, ensure_ascii=False, indent=2)
    if output:
        output.write_text(payload + "\n", encoding="utf-8")
    else:
        sys.stdout.write(payload + "\n")
    table = Table(
        title=f"compaction: {report.tokens_before:,} → {report.tokens_after:,} tokens (window {window:,})"
    )
    for column in ("step", "removed", "tokens before", "tokens after", "detail"):
        table.add_column(column)
    for step in report.steps:
        table.add_row(
            step.name,
            str(step.removed),
            f"{step.tokens_before:,}",
            f"{step.tokens_after:,}",
            step.detail,
        )
    err.print(table)
    err.print(
        f"resolved at: {report.resolved_at}"
        + (" — shrink stage detail" if report.shrink_stage_detail else "")
    )


@app.command()
@guarded
def health(
    as_json: Annotated[
        bool, typer.Option("--json", help="Print seed 000's JSON document.")
    ] = False,
) -> None:
    """Compression health: tier distribution, essence progress, thread digests."""
    import json

    from selene_dag.notes.health import compression_health

    settings = load_settings()
    with _read_store(settings) as conn:
        document = compression_health(conn, settings.now())
    if as_json:
        sys.stdout.write(json.dumps(document, indent=2) + "\n")
        return
    _print_health(document, console=out)


cache_app = typer.Typer(help="The cache of model calls (llm_cache).", no_args_is_help=True)
app.add_typer(cache_app, name="cache")


@cache_app.command("stats")
@guarded
def cache_stats_command() -> None:
    """Entries per engine, model and task, with time and tokens spent."""
    from selene_dag.llm.cache import cache_stats

    settings = load_settings()
    with _read_store(settings) as conn:
        rows = cache_stats(conn)
    table = Table(title=f"llm_cache in {settings.db_path}")
    for column in (
        "engine",
        "model",
        "task",
        "entries",
        "time (s)",
        "prompt tokens",
        "output tokens",
    ):
        table.add_column(column)
    for r in rows:
        table.add_row(
            r.engine,
            r.model,
            r.task,
            f"{r.entries:,}",
            f"{r.total_duration_ms / 1000:,.1f}",
            f"{r.prompt_tokens or 0:,}",
            f"{r.output_tokens or 0:,}",
        )
    out.print(table if rows else "llm_cache is empty")


@cache_app.command("clear")
@guarded
def cache_clear_command(
    engine: Annotated[str | None, typer.Option(help="Only this engine (e.g. ollama).")] = None,
    model: Annotated[str | None, typer.Option(help="Only this model.")] = None,
) -> None:
    """Delete cached calls (all, or one engine / model)."""
    from selene_dag.llm.cache import cache_clear

    settings = load_settings()
    with _read_store(settings) as conn:
        deleted = cache_clear(conn, engine=engine, model=model)
    out.print(f"deleted {deleted:,} cached calls")


distill_app = typer.Typer(
    help="Session distillation (seed 003's :distill verbs).", no_args_is_help=True
)
app.add_typer(distill_app, name="distill")


def _rows_table(rows: list[dict[str, Any]], title: str, columns: list[str] | None = None) -> Table:
    table = Table(title=title)
    columns = columns or (list(rows[0]) if rows else [])
    for column in columns:
        table.add_column(column)
    for row in rows:
        table.add_row(*("" if row.get(c) is None else str(row.get(c)) for c in columns))
    return table


@distill_app.command("scan")
@guarded
def distill_scan_command() -> None:
    """List session files under SELENE_SESSION_ROOTS with platform, size, events and state."""
    from selene_dag.sessions.commands import distill_scan

    rows = distill_scan(load_settings())
    out.print(
        _rows_table(rows, f"{len(rows)} session files")
        if rows
        else "no session files under SELENE_SESSION_ROOTS"
    )


@distill_app.command("run")
@guarded
def distill_run_command(
    sessions: Annotated[
        list[str] | None, typer.Argument(help="Session ids, keys or paths.")
    ] = None,
    all_files: Annotated[bool, typer.Option("--all", help="Every scanned file.")] = False,
) -> None:
    """Parse, chunk, score and distill sessions (materializes the sessions spine)."""
    from selene_dag.sessions.commands import distill_run

    rows = distill_run(load_settings(), sessions or [], all_files=all_files)
    out.print(
        _rows_table(rows, "distill run", ["session_key", "platform", "ok", "distilled", "error"])
    )
    if not all(row["ok"] for row in rows):
        raise typer.Exit(1)


@distill_app.command("status")
@guarded
def distill_status_command() -> None:
    """Files per state and rows per sessions table."""
    from selene_dag.sessions.commands import distill_status

    status = distill_status(load_settings())
    out.print(_rows_table([{"figure": k, "value": v} for k, v in status.items()], "distill status"))


@distill_app.command("report")
@guarded
def distill_report_command(
    session: Annotated[str | None, typer.Argument(help="One session (default: all).")] = None,
) -> None:
    """Per session: events, chunks, importance, consensus, distilled tokens."""
    from selene_dag.sessions.commands import distill_report

    rows = distill_report(load_settings(), session)
    out.print(
        _rows_table(rows, "distill report")
        if rows
        else "nothing distilled yet: run `selene-dag distill run --all`"
    )


@distill_app.command("assess")
@guarded
def distill_assess_command(chunk_id: Annotated[str, typer.Argument(help="A chunk id.")]) -> None:
    """Run every available assessor on one chunk now and show the consensus."""
    import json

    from selene_dag.sessions.commands import distill_assess

    result = distill_assess(load_settings(), chunk_id)
    out.print_json(json.dumps(result, default=str))


@distill_app.command("seed")
@guarded
def distill_seed_command(
    platform: Annotated[str, typer.Argument(help="claude, codex or gemini.")],
    session: Annotated[str | None, typer.Argument(help="Session (default: most recent).")] = None,
    out_dir: Annotated[Path | None, typer.Option(help="Folder for the file.")] = None,
    max_tokens: Annotated[int, typer.Option(help="Budget of the seeded session.")] = 80_000,
) -> None:
    """Write a fresh, resumable session file for PLATFORM from a distilled session."""
    import json

    from selene_dag.sessions.commands import distill_seed

    result = distill_seed(
        load_settings(), platform, session, out_dir=out_dir, max_tokens=max_tokens
    )
    out.print_json(json.dumps(result, default=str))


def _register_retrieval() -> None:
    from selene_dag.retrieval.commands import register

    register(app)


def main() -> None:
    """Console-script entry point."""
    import warnings

    warnings.filterwarnings("ignore", module="dagster")
    warnings.filterwarnings("ignore", message=".*is currently in beta.*")
    app()


_register_retrieval()


if __name__ == "__main__":
    main()
