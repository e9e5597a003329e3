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

from selene_dag.settings import Settings, SettingsError, load_settings

app = typer.Typer(
    name="selene-dag",
    help="Token-budgeted LLM context from notes and AI coding-agent sessions, as Dagster assets.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
err = Console(stderr=True)
out = Console()

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


@app.command()
@guarded
def demo(
    home: Annotated[
        Path | None, typer.Option(help="Folder for the demo database (default ./.selene-demo).")
    ] = None,
) -> None:
    """Materialize the whole graph on the bundled corpus and print a report."""
    import dagster as dg

    from selene_dag.defs.assets_notes import demo_partition_range
    from selene_dag.defs.runner import (
        failure_message,
        materialize,
        materialize_daily_range,
        unpartitioned_selection,
    )
    from selene_dag.sessions.commands import distill_run
    from selene_dag.store import open_store, table_counts

    home = home or Path(".selene-demo")
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
    # The demo's home is its own: an in-memory instance avoids ~2,000 SQLite event writes.
    instance = dg.DagsterInstance.ephemeral()
    with err.status("materializing the graph…"):
        result = materialize(unpartitioned_selection(), instance, raise_on_error=False)
        if not result.success:
            raise UserError(f"demo run failed: {failure_message(result)}")
        first, last = demo_partition_range(settings.now())
        result = materialize_daily_range(instance, first, last)
        if not result.success:
            raise UserError(f"demo daily summaries failed: {failure_message(result)}")
        sessions_done = distill_run(settings, all_files=True, instance=instance) if sessions else []
        failed = [row for row in sessions_done if not row["ok"]]
        if failed:
            raise UserError(f"demo session {failed[0]['path']} failed: {failed[0]['error']}")
    elapsed = time.perf_counter() - started
    with open_store(settings.db_path) as conn:
        counts = table_counts(conn)
    _print_counts(counts, "selene-dag demo")
    notes_count = counts.get("notes", 0)
    out.print(f"demo: {notes_count} notes materialized into {settings.db_path} in {elapsed:.1f} s")


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
    )

    if not path.exists():
        raise UserError(f"{path} does not exist")
    os.environ["SELENE_NOTES_DIR"] = str(path.resolve())
    settings = _settings(home)
    started = time.perf_counter()
    import dagster as dg

    with err.status(f"ingesting {path}…"):
        result = materialize(
            dg.AssetSelection.groups("notes"), instance_for(settings), raise_on_error=False
        )
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


def main() -> None:
    """Console-script entry point."""
    import warnings

    warnings.filterwarnings("ignore", module="dagster")
    warnings.filterwarnings("ignore", message=".*is currently in beta.*")
    app()


if __name__ == "__main__":
    main()
