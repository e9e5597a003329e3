"""The ``selene-dag`` command (typer + rich): each command parses its arguments, calls one
use case of :mod:`selene_dag.service` and renders the result.

Exit code 0 on success, 1 on a user error (a :class:`~selene_dag.errors.SeleneError`)
with one clear line on stderr. Any other exception is a bug and keeps its traceback;
``--debug`` prints the traceback of user errors too. Commands that print a context pack
write only the pack on stdout; accounting and progress go to stderr.
"""

from __future__ import annotations

import errno
import functools
import inspect
import io
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path, PurePath, PureWindowsPath
from typing import IO, Annotated, Any, TypeVar

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from selene_dag import __version__, service
from selene_dag.config import Settings, load_settings
from selene_dag.errors import SeleneError, UsageError, with_home, write_failure
from selene_dag.llm.engine import EngineError
from selene_dag.notes.digests import MIN_THREAD_NOTES
from selene_dag.sessions.generators.gemini import is_project_hash
from selene_dag.store import refuse_newer_store, waiting_notice
from selene_dag.text import plural


def _flags_without_type() -> None:
    """Typer's help shows a type beside every option, flags too (``--debug <bool>``), as if
    a flag took a value; a flag is shown bare, as click shows it."""
    option = getattr(getattr(typer, "core", None), "TyperOption", None)
    shown = getattr(option, "display_type_rich", None)
    if option is None or shown is None:  # a Typer that shows no type column
        return

    def display_type_rich(self: Any, ctx: Any) -> str | None:
        return None if self.is_flag or self.count else shown(self, ctx)

    option.display_type_rich = display_type_rich


_flags_without_type()

app = typer.Typer(
    name="selene-dag",
    help="Token-budgeted LLM context from notes and AI coding-agent sessions, as Dagster assets.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
cache_app = typer.Typer(help="The cache of model calls (llm_cache).", no_args_is_help=True)
distill_app = typer.Typer(
    help="Session distillation: scan, run, status, report, assess, seed.", no_args_is_help=True
)
app.add_typer(cache_app, name="cache")
app.add_typer(distill_app, name="distill")


# Piped output gets a wide console: rich would otherwise squeeze tables into 80 columns.
# No markup and no emoji codes: what is printed holds the user's text (paths, questions,
# messages), and a "[/bold]" in it raised from inside rich; styles are given as Text.
def _width(stream: Any) -> int | None:
    """A console's width: the terminal's, else COLUMNS when set (a pipe's reader may say
    how wide), else 200."""
    if stream is not None and stream.isatty():  # None: started with the stream closed
        return None
    columns = os.environ.get("COLUMNS", "").strip()
    return int(columns) if columns.isdigit() and int(columns) >= 40 else 200


# The exit code of a command whose reader closed its output (`| head -1`), as a program
# that SIGPIPE stops gives (128 + 13): rich's own was 1, a user error's, with no line.
PIPE_CLOSED = 141


def _stdout_to_nowhere() -> None:
    """Point stdout at the null device: what is still buffered for a reader that left is
    dropped, not reported again when Python flushes it at exit."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


class _Console(Console):
    def on_broken_pipe(self) -> None:
        self.quiet = True
        _stdout_to_nowhere()
        raise SystemExit(PIPE_CLOSED)


err = _Console(
    stderr=True,
    soft_wrap=True,
    width=_width(sys.stderr),
    markup=False,
    emoji=False,  # "n:fire:" is a folder's name, not an emoji
)
out = _Console(width=_width(sys.stdout), markup=False, emoji=False)


def _command() -> str:
    """How to run this command again: ``selene-dag`` when that is what the PATH finds, else
    the path it was run by (``.venv/bin/selene-dag`` outside the virtual environment)."""
    ran = os.path.abspath(sys.argv[0])
    found = shutil.which("selene-dag")
    return "selene-dag" if found and os.path.abspath(found) == ran else sys.argv[0]


def _error_line(message: str) -> Text:
    """``error: <message>``, the word in bold red, the message as it is."""
    return Text.assemble(("error:", "bold red"), f" {message}")


def _for_home(message: str, home: Path | None) -> str:
    """``message`` with ``--home HOME`` added to each `selene-dag …` command it suggests
    when the command ran with ``--home`` (``$SELENE_HOME`` carries over by itself)."""
    return message if home is None else with_home(message, home)


F = TypeVar("F", bound=Callable[..., Any])
_DEBUG = {"on": False}


def guarded(fn: F) -> F:
    """Turn a :class:`SeleneError` into one stderr line and exit code 1; anything else is a
    bug and propagates with its traceback."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            with waiting_notice(_say_waiting):
                return fn(*args, **kwargs)
        except BrokenPipeError:  # the reader of stdout left (`| head -1`): nothing to say
            _stdout_to_nowhere()
            raise typer.Exit(PIPE_CLOSED) from None
        except SeleneError as exc:
            if _DEBUG["on"]:
                traceback.print_exc()
            # A full disk under a user error (a folder that cannot be made): the disk's line.
            line = write_failure(exc) or _for_home(str(exc), kwargs.get("home"))
            err.print(_error_line(line), highlight=False, soft_wrap=True)
            raise typer.Exit(1) from None
        except Exception as exc:
            # A full disk is the user's to fix, wherever the write failed: one line too.
            line = write_failure(exc)
            if line is None:
                raise
            if _DEBUG["on"]:
                traceback.print_exc()
            err.print(_error_line(line), highlight=False, soft_wrap=True)
            raise typer.Exit(1) from None

    return wrapper  # type: ignore[return-value]


def _say_waiting(path: Path, wait: float) -> None:
    # On a terminal only: a script reads one line, the error, when the wait runs out.
    if err.is_terminal:
        err.print(
            f"waiting for {path}: another process is writing to it (DuckDB allows one "
            f"writer); up to {wait:g} s (SELENE_LOCK_WAIT), Ctrl-C to stop…",
            highlight=False,
        )


def _version(value: bool) -> None:
    if value:
        typer.echo(f"selene-dag {__version__}")
        raise typer.Exit()


@app.callback()
def main_options(
    debug: Annotated[
        bool, typer.Option("--debug", help="Print the traceback of every error.")
    ] = False,
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Print the version."),
    ] = False,
) -> None:
    """Token-budgeted LLM context from notes and AI coding-agent sessions, as Dagster assets."""
    _DEBUG["on"] = debug


def _settings(home: Path | None = None) -> Settings:
    return load_settings(home=home)


# The home a reading command reads: every command takes it, as ingest does.
HomeOption = Annotated[
    Path | None,
    typer.Option("--home", help="SELENE_HOME to read (default: $SELENE_HOME, else ./.selene)."),
]


def _print_counts(counts: dict[str, int], title: str) -> None:
    table = Table(title=title)
    table.add_column("table")
    table.add_column("rows", justify="right")
    for name, rows in counts.items():
        if name != "schema_migrations":
            table.add_row(name, f"{rows:,}")
    err.print(table)


def _print_health(
    document: dict[str, Any], console: Console = err, home: Path | None = None
) -> None:
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
    if "eligible" in digests:
        table.add_row(
            f"active threads large enough for one ({MIN_THREAD_NOTES}+ notes)",
            f"{digests['eligible']}",
        )
    console.print(table)
    if digests.get("eligibleWithoutDigest"):
        console.print(
            f"{plural(digests['eligibleWithoutDigest'], 'thread')} large enough without a "
            "digest: the engine's digest was under three sentences and was rejected (tried "
            "again when notes change), or it is not made yet",
            highlight=False,
            soft_wrap=True,
        )
    for folder in document.get("noteFolders", []):
        gone = (
            ""
            if folder["exists"]
            else _for_home("; the folder is gone (`selene-dag forget` it)", home)
        )
        console.print(
            f"notes folder {folder['key']}: {folder['path']}, "
            f"{plural(folder['notes'], 'note')}{gone}",
            highlight=False,
            soft_wrap=True,
        )
    skipped = document.get("skippedInputs")
    if skipped and skipped["count"]:
        console.print(f"input problems in the last ingests: {skipped['count']:,} (newest first)")
        for row in skipped["newest"]:
            where = f"{row['file']}:{row['line']}" if row["line"] else row["file"]
            console.print(f"  {where}: {row['reason']}", highlight=False, soft_wrap=True)
        more = skipped["count"] - len(skipped["newest"])
        if more > 0:
            console.print(f"  … and {more:,} more")
    sessions = document.get("sessions")
    if sessions and sessions["files"]:
        console.print(
            f"sessions: {plural(sessions['files'], 'file')}, {sessions['events']:,} events, "
            f"{plural(sessions['chunks'], 'chunk')}, {sessions['distilled']:,} distilled",
            highlight=False,
        )
        if sessions["filesWithUnreadableLines"]:
            console.print(
                f"session files with unreadable lines: {sessions['filesWithUnreadableLines']:,} "
                f"({plural(sessions['unreadableLines'], 'line')} skipped; most first)",
                highlight=False,
            )
            for row in sessions["worst"]:
                console.print(
                    f"  {row['file']}: {plural(row['lines'], 'line')}; {row['first']}",
                    highlight=False,
                    soft_wrap=True,
                )


@contextmanager
def _run_progress(settings: Settings, report: Callable[[str], None]) -> Iterator[None]:
    """On a terminal, report the steps of the run(s) the body executes and the seconds
    elapsed (see ``defs.runs.watching``); elsewhere nothing."""
    if not err.is_terminal:
        yield
        return
    from selene_dag.defs import runs

    started = time.perf_counter()

    def with_elapsed(line: str) -> None:
        report(f"{line} ({time.perf_counter() - started:.0f} s)")

    with runs.watching(runs.instance_for(settings), with_elapsed):
        yield


@contextmanager
def _progress(label: str) -> Iterator[Callable[[int, int], None]]:
    """A progress bar on stderr (terminals only) fed by ``report(done, total)``; gone when
    the work ends, so the last line printed is the summary."""
    if not err.is_terminal:
        yield lambda done, total: None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    with Progress(
        Text(label, style="bold"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=True,
    ) as bar:
        task = bar.add_task(label, total=None)

        def report(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        yield report


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


# Columns of file paths (a scan's, a distilled file's): wrapped in a narrow terminal.
_PATH_COLUMNS = frozenset({"path", "distilled", "source", "file"})


def _rows_table(rows: list[dict[str, Any]], title: str, columns: list[str] | None = None) -> Table:
    """``rows`` as a table: a column of numbers right-aligned, integers with grouped digits,
    decimals to the most any value of the column has (at most 2)."""
    table = Table(title=title)
    columns = columns or (list(rows[0]) if rows else [])
    formats: dict[str, str] = {}
    for column in columns:
        values = [row.get(column) for row in rows if row.get(column) is not None]
        numeric = bool(values) and all(_is_number(v) for v in values)
        if numeric:
            places = max(
                (len(f"{v}".partition(".")[2]) for v in values if isinstance(v, float)), default=0
            )
            formats[column] = f",.{min(places, 2)}f" if places else ","
        # A key is copied into the next command: never cut (`gemini-c8f…` named nothing).
        whole = column in ("session_key", "key") and bool(values)
        table.add_column(
            column,
            justify="right" if numeric else "left",
            no_wrap=whole,
            min_width=max(len(str(v)) for v in values) if whole else None,
            # A path is copied too: wrapped, never cut.
            overflow="fold" if column in _PATH_COLUMNS else "ellipsis",
        )
    for row in rows:
        table.add_row(*(_cell(row.get(c), formats.get(c)) for c in columns))
    return table


def _cell(value: Any, spec: str | None) -> str:
    """A table cell: empty for None, yes or no for a boolean, ``format(value, spec)`` in a
    number column."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    return format(value, spec) if spec is not None else str(value)


def _check_format(value: str, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise UsageError(f"--format must be {' or '.join(allowed)}, got {value!r}")


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
    every asset's code version are unchanged.
    """
    # --home wins over SELENE_HOME; with neither, the demo gets a home of its own.
    home = home or (Path(os.environ["SELENE_HOME"]) if os.environ.get("SELENE_HOME") else None)
    settings = service.demo_settings(load_settings(), home or service.DEMO_HOME)
    service.check_demo_home(settings)
    err.print(
        f"selene-dag demo → {settings.home} (engine {settings.llm}, model {settings.model}, "
        f"now {settings.now().isoformat()})"
    )
    with (
        err.status(Text("materializing the graph…")) as status,
        _run_progress(
            settings, lambda line: status.update(Text(f"materializing the graph… {line}"))
        ),
    ):
        report = service.demo(settings, force=force)
    if report.up_to_date:
        decided = (
            "Dagster's verdict after the last run stands"
            if report.remembered
            else "Dagster reports nothing stale"
        )
        err.print(
            "demo: nothing changed since the last run (same inputs, settings and code): "
            f"nothing to recompute ({decided})"
        )
    _print_counts(report.counts, "selene-dag demo: rows per table")
    _print_health(report.health)
    for name, digest in report.digests:
        err.print(Text.assemble((name, "bold"), f" digest: {digest}"), highlight=False)
    verb = "up to date" if report.up_to_date else "materialized"
    out.print(
        f"demo: {plural(report.counts.get('notes', 0), 'note')} {verb} in {settings.db_path} "
        f"({report.seconds:.1f} s)"
    )
    out.print(f"next: SELENE_HOME={settings.home} {_command()} context --budget 4000")


def _problems(report: service.IngestReport) -> str:
    """The problems the folder's last ingest met, and in how many inputs when fewer."""
    problems = plural(report.skipped_total, "problem")
    inputs = report.skipped_inputs
    return (
        f"{problems} in {plural(inputs, 'input')}"
        if 0 < inputs < report.skipped_total
        else problems
    )


@app.command()
@guarded
def ingest(
    path: Annotated[
        Path,
        typer.Argument(
            help="Folder, file or archive (.zip, .tar, .tar.gz, .tgz, Joplin's .jex) of notes: "
            "markdown, plain text, "
            "Org, HTML, canvas, JSON or JSONL, "
            "or an export of ChatGPT, Claude.ai, Evernote, Notion, Google Keep, Day One, Roam, "
            "Standard Notes, Bear or Joplin."
        ),
    ],
    home: Annotated[Path | None, typer.Option(help="SELENE_HOME to ingest into.")] = None,
) -> None:
    """Ingest notes from PATH and materialize the notes group so ask/context see them."""
    settings = _settings(home)
    with (
        err.status(Text(f"ingesting {path}…")) as status,
        _run_progress(settings, lambda line: status.update(Text(f"ingesting {path}… {line}"))),
    ):
        report = service.ingest(settings, path)
    ran = (
        f"ran {plural(len(report.ran), 'asset')}" if report.ran else "nothing changed, no step ran"
    )
    if report.moved_from:
        err.print(
            f"moved: {report.moved_from} is now {path}; its notes keep their ids",
            highlight=False,
            soft_wrap=True,
        )
    for file, line, reason in report.skipped:
        where = f"{file}:{line}" if line else file
        err.print(f"input {where}: {reason}", highlight=False, soft_wrap=True)
    if report.skipped_total > len(report.skipped):
        more = report.skipped_total - len(report.skipped)
        err.print(f"… and {more:,} more (all in the ingest_errors table; newest in `health`)")
    if report.moved_notes:
        err.print(
            f"{plural(report.moved_notes, 'note')} renamed or moved (the same text under a new "
            f"path): {'it keeps' if report.moved_notes == 1 else 'each keeps'} its essence and "
            "last use",
            highlight=False,
        )
    if report.analysed_offline:
        err.print(
            f"{plural(report.analysed_offline, 'note')} analysed offline: the model's answer "
            "was unusable (the run's log names each: `selene-dag dev`, Runs)",
            highlight=False,
        )
    if report.essences_left:
        err.print(
            f"{plural(report.essences_left, 'note')} left to analyse at "
            "SELENE_ESSENCE_LIMIT (new or changed, or analysed by another engine or model): "
            "the next ingest goes on",
            highlight=False,
        )
    if report.analysed and not report.inserted and not report.changed and not report.restored:
        err.print(
            f"{plural(report.analysed, 'note')} analysed that an earlier ingest left "
            "unanalysed (it failed or stopped, or the engine or model changed)",
            highlight=False,
        )
    others = report.home_notes - report.notes
    home_total = f" (the home holds {report.home_notes:,} in all)" if others > 0 else ""
    err.print(
        f"ingested {path}: {plural(report.notes, 'note')} ({report.inserted:,} new, "
        f"{report.changed:,} changed, "
        + (f"{report.restored:,} restored, " if report.restored else "")
        + f"{report.deleted:,} deleted, "
        f"{_problems(report)}){home_total}; {ran}; "
        f"{report.seconds:.1f} s",
        highlight=False,
        soft_wrap=True,
    )
    prefix = report.id_prefix
    err.print(
        f"note ids: {prefix}<path in the {report.inside}> ({prefix}<id> for a note whose "
        "front matter, JSON or conversation gives one)",
        highlight=False,
        soft_wrap=True,
    )
    if report.other_files or report.empty_folder:
        err.print(service.unread_files_hint(report), highlight=False, soft_wrap=True)
    if report.documents_left_out:
        err.print(service.documents_left_out_hint(report), highlight=False, soft_wrap=True)
    if report.archives_left_out:
        err.print(service.archives_left_out_hint(report), highlight=False, soft_wrap=True)
    if report.passed_over:
        err.print(service.passed_over_hint(report), highlight=False, soft_wrap=True)
    if report.nested and not report.other_files and not report.empty_folder:
        err.print(service.nested_folders_hint(report), highlight=False, soft_wrap=True)
    if not report.notes and report.skipped_total and path.is_file():
        # A file named alone that gave nothing: a failure a script should see.
        older = any(reason.startswith("an older export") for _, _, reason in report.skipped)
        if older:  # read well, and left out on purpose: the line above says why
            raise SeleneError(f"{path}: nothing stored from it (the reason is above)")
        raise SeleneError(f"{path}: no note could be read from it (the problem is above)")


@app.command()
@guarded
def forget(
    folder: Annotated[
        str, typer.Argument(help="The ingested folder: its key (as note ids start) or path.")
    ],
    home: Annotated[Path | None, typer.Option(help="SELENE_HOME to forget it in.")] = None,
) -> None:
    """Forget an ingested notes folder: its notes leave ask, context and health (its files
    are not touched; ingest it again to bring them back)."""
    settings = _settings(home)
    with (
        err.status(Text(f"forgetting {folder}…")) as status,
        _run_progress(settings, lambda line: status.update(Text(f"forgetting {folder}… {line}"))),
    ):
        report = service.forget(settings, folder)
    err.print(
        f"forgot {report.path} (note ids {report.key}/…): "
        f"{plural(report.forgotten, 'note')} marked deleted; the home holds "
        f"{plural(report.home_notes, 'note')}; ran {plural(len(report.ran), 'asset')}; "
        f"{report.seconds:.1f} s",
        highlight=False,
        soft_wrap=True,
    )


# Notices Dagster prints in the processes of `dagster dev` that tell a user of this tool
# nothing: the `dagster dev` command being superseded. Prefixes of the warnings' messages.
# (The beta notices of the definitions are silenced where they are defined: defs/__init__.)
QUIET_DAGSTER_WARNINGS = ("Function `dev_command` is superseded",)


def dev_environment(
    environ: Mapping[str, str],
    dagster_home: Path,
    selene_home: Path,
    settings: Settings | None = None,
) -> dict[str, str]:
    """The environment of the `dagster dev` child process (this process's is never
    written): ``environ`` with its Dagster home, its SELENE_HOME (so that its runs use the
    same database), and PYTHONWARNINGS ignoring :data:`QUIET_DAGSTER_WARNINGS` after any
    filters ``environ`` sets (every Dagster process it starts inherits them). With
    ``settings``, the folders ``environ`` sets (SELENE_DB, SELENE_NOTES_DIR,
    SELENE_SESSION_ROOTS) are made absolute: the child runs in another directory."""
    quiet = [f"ignore:{message}" for message in QUIET_DAGSTER_WARNINGS]
    own = [f for f in environ.get("PYTHONWARNINGS", "").split(",") if f.strip()]
    folders: dict[str, str] = {}
    if settings is not None:
        absolute = {
            "SELENE_DB": str(Path(str(settings.db_path)).resolve()),
            "SELENE_NOTES_DIR": str(Path(str(settings.notes_dir)).resolve()),
            "SELENE_SESSION_ROOTS": os.pathsep.join(
                f"{r.platform}={r.path.resolve()}" if r.platform else str(r.path.resolve())
                for r in settings.session_roots
            ),
        }
        folders = {name: value for name, value in absolute.items() if name in environ}
    return {
        **environ,
        **folders,
        "DAGSTER_HOME": str(dagster_home),
        "SELENE_HOME": str(selene_home),
        "PYTHONWARNINGS": ",".join([*own, *quiet]),
    }


def run_until_stopped(
    command: list[str], env: Mapping[str, str], cwd: Path, keep_open: Sequence[int] = ()
) -> int:
    """Run ``command`` and return its exit code; a SIGTERM or SIGHUP sent to this process
    is passed on to it (`dagster dev` then stops the webserver, daemon and code servers it
    started; killed with the wrapper alone, they kept running), and so is a SIGINT (Ctrl-C
    on a terminal, or sent to this process alone: it was swallowed), each time it comes;
    once it has stopped the code is the first signal's, 128 + its number (143 for SIGTERM,
    130 for SIGINT), as a server's is. The file descriptors of ``keep_open`` stay open in
    it (a lock it holds too)."""
    # Dagster stops on SIGTERM through its SIGINT handler: a SIGINT ignored here (a job
    # started in the background) would be ignored by the child too, and SIGTERM with it.
    interrupt = signal.signal(signal.SIGINT, signal.default_int_handler)
    # A process group of its own: a terminal's Ctrl-C reaches this process only, which
    # passes it on to that group once (sent to both, the child got it twice).
    child = subprocess.Popen(
        command, env=dict(env), cwd=cwd, pass_fds=tuple(keep_open), process_group=0
    )
    stopped_by: list[int] = []

    def pass_on(signum: int, _frame: object) -> None:
        stopped_by.append(signum)
        child.send_signal(signal.SIGTERM)

    previous = {sig: signal.signal(sig, pass_on) for sig in (signal.SIGTERM, signal.SIGHUP)}
    previous[signal.SIGINT] = interrupt
    try:
        while True:
            try:
                code = child.wait()
                return 128 + stopped_by[0] if stopped_by else code
            except KeyboardInterrupt:
                # To its whole group, as a terminal's Ctrl-C reached every process of
                # Dagster's before it had a group of its own: its code server and a run's
                # worker stop too (a code server was left for its 45 s heartbeat).
                stopped_by.append(signal.SIGINT)
                with suppress(ProcessLookupError):  # it has just ended
                    os.killpg(child.pid, signal.SIGINT)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


@app.command()
@guarded
def dev(
    port: Annotated[int, typer.Option(help="Port of the Dagster UI.")] = 3000,
    host: Annotated[str, typer.Option(help="Address to bind (loopback by default).")] = "127.0.0.1",
    home: Annotated[
        Path | None, typer.Option(help="SELENE_HOME to open, with its run history.")
    ] = None,
) -> None:
    """Start the Dagster UI and daemon (automation and sensors live) on 127.0.0.1."""
    _stops_as_a_server()
    from selene_dag.defs.runs import dev_workspace, instance_for

    settings = _settings(home)
    # A port in use: Dagster's UI failed to bind while its daemon ran on, with no UI.
    _listening_socket(host, port).close()
    # The instance's storage is created here, in turn with any other command opening it
    # (Dagster's own processes would create it at once, beside a running `ingest`).
    instance_for(settings).dispose()
    dagster_home = settings.dagster_home.resolve()
    held = _one_dev_per_home(dagster_home)  # open while it runs
    exe = shutil.which("dagster") or str(Path(sys.executable).parent / "dagster")
    target = ["-w", str(dev_workspace(dagster_home))]
    env = dev_environment(os.environ, dagster_home, settings.home.resolve(), settings)
    err.print(f"Dagster UI on http://{host}:{port} (DAGSTER_HOME={dagster_home})")
    missing = "" if settings.notes_dir.exists() else ", which does not exist"
    watched = [f"SELENE_NOTES_DIR={settings.notes_dir}{missing}"]
    watched += [f"{key} ({path})" for path, key in service.watched_folders(settings).items()]
    err.print(f"notes_folder_sensor watches {', '.join(watched)}", highlight=False, soft_wrap=True)
    if others := service.unwatched_folders(settings):
        # Registered for a file ingested alone, or gone: a newcomer expected them watched.
        names = ", ".join(f"{key} ({path})" for path, key in others.items())
        err.print(
            f"not watched (a file ingested alone, or a folder no longer there; `selene-dag "
            f"ingest PATH` reads one again): {names}",
            highlight=False,
            soft_wrap=True,
        )
    # Dagster's processes start in the Dagster home: started here, they put this directory
    # on their import path, and a file in it named like a module they use (gql.py) broke them.
    command = [exe, "dev", *target, "-h", host, "-p", str(port)]
    try:
        # Dagster's processes hold the lock too: a wrapper killed outright (SIGKILL) left
        # them running, and a second dev started a second daemon beside them.
        code = run_until_stopped(command, env, dagster_home, keep_open=(held.fileno(),))
    finally:
        held.close()
    raise typer.Exit(code)


def _one_dev_per_home(dagster_home: Path) -> IO[str]:
    """A lock on ``dagster_home`` held while the returned file is open: a second `dev` on
    the same home ran a second daemon beside the first (Dagster supports one). Raises
    SeleneError naming the running one's process."""
    import fcntl

    handle = (dagster_home / ".selene-dev.lock").open("a+", encoding="utf-8")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.seek(0)
        pid = handle.read().strip() or "?"
        handle.close()
        raise SeleneError(
            f"another selene-dag dev runs on this home (process {pid}, DAGSTER_HOME="
            f"{dagster_home}): one daemon per home; stop it first, or give another --home"
        ) from None
    handle.seek(0)
    handle.truncate()
    handle.write(str(os.getpid()))
    handle.flush()
    return handle


@app.command()
@guarded
def context(
    budget: Annotated[int, typer.Option(help="Token budget of the pack.")] = 16_000,
    model: Annotated[str | None, typer.Option(help="Target model (default SELENE_MODEL).")] = None,
    format: Annotated[
        str, typer.Option("--format", help="md (the pack) or json (the pack and its ids).")
    ] = "md",
    home: HomeOption = None,
) -> None:
    """Print the tiered context: the active threads' digests, then every note at the tier
    the budget affords (stdout: the pack only; accounting on stderr)."""
    _check_format(format, ("md", "json"))
    pack = service.context(_settings(home), budget, model)
    if format == "json":
        sys.stdout.write(json.dumps(pack.to_json(), ensure_ascii=False, indent=2) + "\n")
    elif pack.text:  # an empty pack prints nothing, as ask's does
        _write_pack(pack.text, budget, pack.model)
    tiers = ", ".join(f"{tier} {count}" for tier, count in pack.counts.items() if count)
    threads = f"{plural(len(pack.threads), 'thread')}; " if pack.threads else ""
    err.print(
        f"{pack.total_tokens:,} / {budget:,} {pack.model} tokens; {threads}"
        f"{plural(pack.notes, 'note')}{f' ({tiers})' if tiers else ''}; {pack.seconds:.2f} s",
        highlight=False,
    )
    if pack.note:
        err.print(f"note: {pack.note.replace('the budget', '--budget')}", highlight=False)


def _write_pack(text: str, budget: int, model: str) -> None:
    """Print a pack on stdout, ending its line only when the line break keeps it within
    ``budget`` tokens of ``model``: what is piped to a model never goes over."""
    from selene_dag.context import count_tokens

    end = "\n" if count_tokens(text + "\n", model) <= budget else ""
    sys.stdout.write(text + end)


def _prepare_output(path: Path) -> None:
    """Create the folder of ``path`` so that a run's result can be written there; a path
    that cannot be written is a one-line error before any work is done."""
    blocker = next((p for p in path.parents if p.exists() and not p.is_dir()), None)
    if blocker is not None:
        raise UsageError(f"cannot write {path}: {blocker} is a file, not a folder")
    if path.is_dir():
        raise UsageError(f"cannot write {path}: it is a folder")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None


def _write_file(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` (see ``_prepare_output``)."""
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None


@app.command()
@guarded
def compact(
    messages: Annotated[
        Path,
        typer.Argument(
            help="JSON list of {role, content, stage?, completed?}, or "
            '{"messages": [...], "digest": [{stage, decision, superseded?}]}, a JSONL file of '
            "messages, or a Claude Code, Codex CLI or Gemini CLI session file; - reads stdin."
        ),
    ],
    window: Annotated[int, typer.Option(help="Context window of the target model, in tokens.")],
    model: Annotated[str | None, typer.Option(help="Target model (default SELENE_MODEL).")] = None,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write here instead of stdout.")
    ] = None,
    home: HomeOption = None,
) -> None:
    """Compact a conversation to fit a context window; print what each step removed.

    The steps, in order: drop chitchat, compact finished stages, summarize the oldest
    messages, prune. A message kept whole goes out as it came (content as a list of parts
    too); one cut or summarized is written as text. A session file's prompts, replies,
    tool calls and results are the messages, secrets redacted."""
    if output:
        _prepare_output(output)
    with _readable_file(messages) as readable:
        conversation = service.read_conversation(readable)
    for notice in conversation.notices:
        err.print(f"note: {messages}: {notice}", highlight=False, soft_wrap=True)
    report = service.compact(_settings(home), conversation, window, model)
    payload = json.dumps({"messages": report.messages}, ensure_ascii=False, indent=2)
    if output:
        _write_file(output, payload + "\n")
    else:
        sys.stdout.write(payload + "\n")
    rows = [
        {
            "step": _STEP_CODE.sub("", step.name),
            "removed": step.removed,
            "tokens before": step.tokens_before,
            "tokens after": step.tokens_after,
            "detail": step.detail,
        }
        for step in report.steps
    ]
    title = (
        f"compaction: {report.tokens_before:,} → {report.tokens_after:,} tokens (window {window:,})"
    )
    if not rows:
        threshold = report.compaction_threshold
        err.print(
            f"nothing to compact: {report.tokens_before:,} tokens, at or under the "
            f"{threshold:,} that compaction starts above ({round(100 * threshold / window)}% "
            f"of the window of {window:,})",
            highlight=False,
        )
        return
    err.print(
        _rows_table(rows, title, ["step", "removed", "tokens before", "tokens after", "detail"])
    )
    fits = (
        " (the result fits the window, above the threshold compaction aims under: "
        f"{report.compaction_threshold:,} tokens)"
        if report.resolved_at == "unresolved" and report.tokens_after <= window
        else ""
    )
    resolved = (
        "not resolved: still over the threshold"
        if report.resolved_at == "unresolved"
        else f"resolved by: {_RESOLVED_BY.get(report.resolved_at, report.resolved_at)}"
    )
    err.print(resolved + (" — shrink stage detail" if report.shrink_stage_detail else "") + fits)


# The steps as a user reads them (the JSON answer keeps the chain's codes, P1–P4).
_STEP_CODE = re.compile(r"^P[1-4] ")
_RESOLVED_BY = {
    "none": "nothing to do",
    "P1": "stripping chitchat",
    "P2": "compacting finished stages",
    "P3": "summarizing the oldest messages",
    "P4": "asking the caller to shrink stage detail",
    "prune": "pruning",
}


@app.command()
@guarded
def health(
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the health document as JSON.")
    ] = False,
    format: Annotated[
        str | None,
        typer.Option(
            "--format",
            help="table (the default) or json (as --json; --format json, as ask and show take it).",
            show_default=False,
        ),
    ] = None,
    home: HomeOption = None,
) -> None:
    """Compression health: tier distribution, essence progress, thread digests, the notes
    folders ingested, and the sessions stored (with their files' unreadable lines)."""
    if as_json and format == "table":
        raise UsageError("--json and --format table disagree: give one of them")
    format = format or "table"
    _check_format(format, ("table", "json"))
    document = service.health(_settings(home))
    if as_json or format == "json":
        sys.stdout.write(json.dumps(document, indent=2) + "\n")
        return
    _print_health(document, console=out, home=home)


def _accounting(result: Any) -> str:
    stats = result.stats
    levels = ", ".join(f"{k} {v}" for k, v in stats.get("levels", {}).items() if v)
    # An item shown in part is an excerpt whatever its level: say how many are.
    excerpts = sum(1 for item in result.items if item.excerpt)
    if excerpts:
        levels += f"; {plural(excerpts, 'excerpt')}"
    parts = [
        f"ask: {plural(len(result.items), 'item')} ({levels or 'none'})",
        f"{result.total_tokens:,}/{result.budget:,} tokens of {result.model}"
        + ("" if stats.get("tokens_exact", True) else f" (estimated: {stats['tokenizer']})"),
        plural(stats.get("fts_matches", 0), "FTS match", "FTS matches")
        + (f" + {stats['passage_docs']} by passages" if stats.get("passage_docs") else "")
        + f" → {stats.get('after_dedup', 0)} unique",
        f"{stats.get('elapsed_ms', 0):.0f} ms",
    ]
    if stats.get("index_refreshed"):
        parts.append(_refreshed_first(stats))
    return "; ".join(parts)


def _refreshed_first(stats: Mapping[str, Any]) -> str:
    """How long ask waited for a stale index to be rebuilt before it searched."""
    return f"search_index refreshed first ({stats.get('refresh_ms', 0) / 1000:.1f} s)"


@app.command("ask")
@guarded
def ask_command(
    question: Annotated[str, typer.Argument(help="The question to build context for.")],
    budget: Annotated[int, typer.Option(help="Token budget of the pack (target model).")],
    sources: Annotated[
        str, typer.Option(help="Where to search: notes, sessions, or notes,sessions.")
    ] = "notes,sessions",
    model: Annotated[
        str | None, typer.Option(help="Target model (tokenizer); default SELENE_MODEL.")
    ] = None,
    format: Annotated[str, typer.Option("--format", help="md (the pack) or json.")] = "md",
    answer: Annotated[
        bool, typer.Option("--answer", help="Send the pack to the model and print its answer.")
    ] = False,
    home: HomeOption = None,
) -> None:
    """Question-driven context pack from notes and sessions, within --budget tokens."""
    _check_format(format, ("md", "json"))
    settings = _settings(home)
    if answer and settings.llm == "extractive":
        raise UsageError("--answer needs a generative model: set SELENE_LLM=ollama")
    result = service.ask(settings, question, budget, model=model, sources=sources)
    if result.items or not result.stats.get("note"):  # an empty pack: its note says why
        err.print(_accounting(result), highlight=False, soft_wrap=True)
    elif result.stats.get("index_refreshed"):  # what the wait before it was
        err.print(_refreshed_first(result.stats), highlight=False)
    if result.stats.get("note"):
        note = _for_home(result.stats["note"], home)  # the `selene-dag show` it names
        err.print(f"note: {note}", highlight=False, soft_wrap=True)
    if result.stats.get("rewrite"):
        err.print(f"search words from the model: {result.stats['rewrite']}", highlight=False)
    if result.stats.get("rerank"):
        err.print(f"rerank: {result.stats['rerank']}", highlight=False)
    if answer:
        started = time.perf_counter()
        try:
            reply = service.answer(settings, question, result.text)
        except EngineError:
            # The pack is built: print it, so the question is not asked again for it.
            if format == "json":
                sys.stdout.write(json.dumps(result.to_json(), ensure_ascii=False, indent=2) + "\n")
            elif result.text:
                _write_pack(result.text, budget, result.model)
            err.print("the model did not answer: the pack is printed instead", highlight=False)
            raise
        err.print(f"answer from {settings.model} in {time.perf_counter() - started:.1f} s")
        if format == "json":  # the pack's document with the answer in it
            document = {**result.to_json(), "answer": reply.rstrip("\n")}
            sys.stdout.write(json.dumps(document, ensure_ascii=False, indent=2) + "\n")
        else:
            sys.stdout.write(reply.rstrip("\n") + "\n")
    elif format == "json":
        sys.stdout.write(json.dumps(result.to_json(), ensure_ascii=False, indent=2) + "\n")
    elif result.text:
        _write_pack(result.text, budget, result.model)


@app.command("show")
@guarded
def show_command(
    citation: Annotated[
        list[str],
        typer.Argument(
            help="A citation as ask prints it: 'note <id> lines 12-30, 41', "
            "'<session key> events 3-9', a session key, or a JSON item's id (ask's, or a note id of context's)."
        ),
    ],
    around: Annotated[
        int, typer.Option(help="Lines (of a note) or events (of a session) of context.")
    ] = 0,
    format: Annotated[
        str, typer.Option("--format", help="md (the text) or json (as POST /show answers).")
    ] = "md",
    home: HomeOption = None,
) -> None:
    """Print what a citation of ask points at, whole: a note's lines or a session's events."""
    _check_format(format, ("md", "json"))
    cited = " ".join(citation)
    shown = service.show(_settings(home), cited, around)
    if format == "json":
        sys.stdout.write(json.dumps(shown.to_json(cited), ensure_ascii=False, indent=2) + "\n")
        return
    if shown.source:
        # A transcript's records are its lines (JSONL) or its messages (a JSON file):
        # numbered apart from the events a citation names.
        unit = "lines" if shown.source.endswith(".jsonl") else "messages"
        where = f" ({unit} {shown.records} of the file)" if shown.records else ""
        if shown.file_line_offset:  # front matter opens the file: say how lines relate
            where = (
                f" (the note's lines are its text's: line 1 is the file's line "
                f"{shown.file_line_offset + 1})"
            )
        err.print(f"from {shown.source}{where}", highlight=False, soft_wrap=True)
    if shown.note:
        err.print(f"note: {_for_home(shown.note, home)}", highlight=False, soft_wrap=True)
    sys.stdout.write(shown.text + "\n")


@app.command("eval")
@guarded
def eval_command(
    questions: Annotated[
        Path,
        typer.Argument(
            help="JSONL of {question, must_contain}, or a JSON list of them; - reads stdin."
        ),
    ],
    budget: Annotated[
        list[int] | None,
        typer.Option(help="Token budget of every pack (default 2000); repeat for several budgets."),
    ] = None,
    model: Annotated[
        str | None, typer.Option(help="Target model (tokenizer); default SELENE_MODEL.")
    ] = None,
    format: Annotated[str, typer.Option("--format", help="table or json.")] = "table",
    sources: Annotated[
        str, typer.Option(help="What ask searches: notes, sessions, or notes,sessions.")
    ] = "notes,sessions",
    home: HomeOption = None,
) -> None:
    """Recall of ask beside its baselines, at each --budget.

    The baselines, at the same budget: newest notes first, BM25 top-k documents, and BM25
    over ~200-token passages packed in rank order. A question whose source (the note or
    session it was written about) this home does not hold is left out, and stderr says
    how many."""
    _check_format(format, ("table", "json"))
    from selene_dag.errors import check_budget
    from selene_dag.retrieval.evaluate import repeated_questions
    from selene_dag.retrieval.search import parse_sources

    budgets = [check_budget(b, "--budget") for b in dict.fromkeys(budget or [2000])]
    parse_sources(sources)  # a bad --sources fails before any work
    with _readable_file(questions) as readable:
        loaded = service.read_questions(readable)
    for notice in loaded.notices:
        err.print(f"note: {questions}: {notice}", highlight=False, soft_wrap=True)
    settings = _settings(home)
    asked, elsewhere = service.questions_for_home(settings, loaded.questions, sources)
    if elsewhere:
        err.print(
            f"note: {plural(len(elsewhere), 'question')} left out: their source is not in this "
            f"home, or not among --sources {sources} (the first: {elsewhere[0].source})",
            highlight=False,
            soft_wrap=True,
        )
    if twice := repeated_questions(asked):  # among those asked: the others count for nothing
        err.print(
            f"note: {questions}: {plural(len(twice), 'question')} asked more than once "
            f"(each counts every time), the first: {twice[0]!r}",
            highlight=False,
            soft_wrap=True,
        )
    if not asked:
        raise UsageError(f"{questions}: no question is about a note or session of this home")
    reports = []
    for b in budgets:
        report = service.evaluate_questions(settings, asked, b, model, sources)
        err.print(
            f"eval: {plural(len(report.rows), 'question')} at {b:,} tokens of {report.model}",
            highlight=False,
        )
        reports.append(report)
    if format == "json":
        if len(reports) == 1:
            doc: dict[str, Any] = reports[0].to_json()
        else:
            doc = {"model": reports[0].model, "budgets": [r.to_json() for r in reports]}
        sys.stdout.write(json.dumps(doc, ensure_ascii=False, indent=2) + "\n")
        return
    columns = {
        "ask": "ask",
        "newest_first": "newest-first",
        "bm25_topk": "bm25 top-k",
        "bm25_passages": "bm25 passages",
    }
    console = _Console(width=120, markup=False, emoji=False)
    for report in reports:
        table = Table(title=f"recall at {report.budget:,} tokens")
        table.add_column("question", justify="left")
        for label in columns.values():
            table.add_column(label, justify="right")
        for row in report.rows:
            table.add_row(row["question"], *(f"{row[c]:.2f}" for c in columns))
        overall = report.overall
        table.add_row("overall", *(f"{overall[c]:.3f}" for c in columns), style="bold")
        console.print(table)
        versus = report.versus_passages
        if versus is not None and versus.questions:
            if versus.questions == 1:
                spread = "one question: no interval"
            elif versus.high - versus.low < 1e-9:  # every difference alike (float noise aside)
                spread = f"the same on each of the {versus.questions} questions"
            else:
                spread = (
                    f"95% interval {versus.low:+.3f} to {versus.high:+.3f}, paired over "
                    f"{versus.questions} questions"
                    + ("; too few questions for a close interval" if versus.questions < 10 else "")
                )
            console.print(
                f"ask − bm25 passages: {versus.difference:+.3f} ({spread})",
                highlight=False,
                soft_wrap=True,
            )


@app.command("serve")
@guarded
def serve_command(
    host: Annotated[str, typer.Option(help="Address to bind (loopback by default).")] = (
        "127.0.0.1"
    ),
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8765,
    home: HomeOption = None,
) -> None:
    """HTTP API: /ask, /show, /context, /compact, /health/compression (docs at /docs)."""
    import uvicorn

    _stops_as_a_server()

    from selene_dag.api import create_app

    # Fail early on bad settings, and on a home a newer selene-dag migrated (every request
    # was a 503 from a server that said it was up).
    refuse_newer_store(_settings(home).db_path)
    sock = _listening_socket(host, port)
    err.print(f"selene-dag API on http://{host}:{port} (docs at /docs)")
    app = create_app(lambda: load_settings(home=home)) if home is not None else create_app()
    config = uvicorn.Config(app, host=host, port=port, log_level="warning")
    uvicorn.Server(config).run(sockets=[sock])


def _listening_socket(host: str, port: int) -> socket.socket:
    """A socket bound to ``host``:``port`` (as uvicorn binds one); an address that cannot
    be used is a one-line error before the server starts."""
    if not 0 < port < 65536:  # dev: 0 took a free port no line named; -5 blamed the host
        raise UsageError(f"--port must be within 1..65535, got {port}")
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
    except socket.gaierror as exc:
        raise UsageError(
            f"--host {host}: not an address of this machine ({exc.strerror})"
        ) from None
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise UsageError(
                f"port {port} on {host} is in use (another server?): choose another with --port"
            ) from None
        raise UsageError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    return sock


@cache_app.command("stats")
@guarded
def cache_stats_command(home: HomeOption = None) -> None:
    """Entries per engine, model and task, with time and tokens spent."""
    settings = _settings(home)
    rows = service.cache_stats(settings)
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
    home: HomeOption = None,
) -> None:
    """Delete cached calls (all, or one engine / model)."""
    settings = _settings(home)
    deleted = service.cache_clear(settings, engine=engine, model=model)
    out.print(f"deleted {deleted:,} cached calls")
    if not deleted and (engine or model):  # a typo deleted nothing, and said no more
        held = sorted({(r.engine, r.model) for r in service.cache_stats(settings)})
        err.print(
            "the cache holds "
            + (", ".join(f"--engine {e} --model {m}" for e, m in held) if held else "no call"),
            highlight=False,
            soft_wrap=True,
        )


@distill_app.command("scan")
@guarded
def distill_scan_command(home: HomeOption = None) -> None:
    """List the session files under SELENE_SESSION_ROOTS, then those left out and why.

    Each file with its platform, size, events and state."""
    settings = _settings(home)
    listing = service.distill_scan_listing(settings)
    rows, skipped = listing["files"], listing["skipped"]
    if rows:
        out.print(_rows_table(rows, plural(len(rows), "session file")))
    else:
        roots = service.describe_session_roots(settings)
        out.print(
            f"no session files under SELENE_SESSION_ROOTS: {roots}", highlight=False, soft_wrap=True
        )
    if skipped:
        title = f"{plural(len(skipped), 'file')} skipped"
        out.print(_rows_table(skipped, title, ["path", "reason"]))


@distill_app.command("run")
@guarded
def distill_run_command(
    sessions: Annotated[
        list[str] | None, typer.Argument(help="Session ids, keys or paths.")
    ] = None,
    all_files: Annotated[bool, typer.Option("--all", help="Every scanned file.")] = False,
    home: HomeOption = None,
) -> None:
    """Parse, chunk, score and distill sessions (in batches of files, through Dagster).

    Without SESSIONS or --all, the most recently modified session file runs. With --all
    only files that are new, changed or never completed run."""
    started = time.perf_counter()
    projects_gone = service.distilled_projects_gone(_settings(home)) if all_files else set()
    with _progress("distilling sessions") as report:
        # The search index follows, as after `ingest`: the first `ask` after a large
        # distillation waited for it (40-60 s after 1,000 transcripts).
        indexed: list[float] = []
        rows = service.distill_run(
            _settings(home),
            sessions or [],
            all_files=all_files,
            on_batch=report,
            on_index=indexed.append,
        )
    failed = sum(1 for row in rows if not row["ok"])
    if rows and not sessions and not all_files:
        err.print(
            f"the most recent session file, {rows[0]['path']} (name sessions, or --all, to "
            "choose others)",
            highlight=False,
            soft_wrap=True,
        )
    if rows:
        out.print(
            _rows_table(
                rows, "distill run", ["session_key", "platform", "ok", "distilled", "error"]
            )
        )
    # Nothing ran: the roots are scanned again, only here, to say why.
    idle = service.idle_roots_hint(_settings(home)) if all_files and not rows else ""
    # Only when there is another file (a fresh home's run took them all).
    others = (
        all_files
        and not idle
        and (not rows or service.session_file_count(_settings(home)) > len(rows))
    )
    out.print(
        f"{plural(len(rows) - failed, 'session file')} distilled, {failed:,} failed"
        + (", every other file up to date" if others else "")
        + f" ({time.perf_counter() - started:.1f} s"
        + (f", search index updated in {indexed[0]:.1f} s" if indexed else "")
        + ")"
    )
    if hint := service.kept_no_chunk_hint(rows):
        err.print(hint, highlight=False)
    if projects_gone:
        out.print(
            f"{plural(len(projects_gone), 'project file')} written again (deleted since distilled)",
            highlight=False,
        )
    if cut := service.shrank_hint(rows):
        err.print(f"warning: {cut}", highlight=False, soft_wrap=True)
    if unrated := service.model_unrated_hint(_settings(home), rows):
        err.print(unrated, highlight=False)
    if idle:
        out.print(idle, highlight=False, soft_wrap=True)
    if failed:
        raise typer.Exit(1)


@distill_app.command("status")
@guarded
def distill_status_command(
    as_json: Annotated[bool, typer.Option("--json", help="Print the figures as JSON.")] = False,
    home: HomeOption = None,
) -> None:
    """Session files under the roots by state, and what the database holds."""
    status = service.distill_status(_settings(home))
    if as_json:
        sys.stdout.write(json.dumps(status, indent=2) + "\n")
        return
    labels = {
        "files": "files under SELENE_SESSION_ROOTS",
        "new": "  new (never ingested)",
        "grown": "  grown since ingested",
        "changed": "  rewritten since ingested (not larger)",
        "done": "  ingested, unchanged",
        "session_files": "sessions stored",
        "source_gone": "  stored, source file gone",
        "source_unreadable": "  stored, source file unreadable (permission denied)",
        "session_events": "events",
        "chunks": "chunks",
        "assessments": "assessments",
        "chunk_scores": "chunks with a consensus",
        "distilled_sessions": "distilled sessions",
        "distilled_projects": "distilled projects",
        "not_distilled": "  stored, not distilled yet",
        "last_parsed_at": "last file parsed at",
    }
    rows = [
        {"figure": labels.get(k, k), "value": f"{v:,}" if isinstance(v, int) else str(v or "-")}
        for k, v in status.items()
    ]
    out.print(_rows_table(rows, "distill status"))


_SOURCE_STATE = {"gone": " (source gone)", "unreadable": " (source unreadable)"}


def _chunks(row: dict[str, object]) -> str:
    """A report row's chunks, and how many its distilled file kept."""
    if row.get("distilled_chunks") is None:
        return f"{row['chunks']}"
    return f"{row['chunks']}, {row['distilled_chunks']} kept"


# The platform is the key's prefix; "imp" is the mean importance (0–100), "cons" the mean
# consensus (0–10), "tokens" the distilled tokens of the budget. The project and the day a
# session started need about 110 columns: a narrower terminal gets the rest whole (the key
# a user copies was cut to "claude-…" at 80 columns).
REPORT_COLUMNS = ("session", "project", "started", "events", "chunks", "imp", "cons", "tokens")
NARROW_REPORT_COLUMNS = ("session", "events", "chunks", "imp", "cons", "tokens")
WIDE_REPORT = 110


def _project_name(project: str | None) -> str:
    """A session's project as a report row names it: its folder's name ("-" for none, or
    for a Gemini project hash, which names no folder); a session run on Windows names its
    folder with backslashes (``C:\\Users\\me\\proj``)."""
    if not project or is_project_hash(project):
        return "-"
    kind = PureWindowsPath if "\\" in project else PurePath
    return kind(project.rstrip("/\\")).name or project


@distill_app.command("report")
@guarded
def distill_report_command(
    session: Annotated[str | None, typer.Argument(help="One session (default: all).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print every field as JSON.")] = False,
    home: HomeOption = None,
) -> None:
    """Per session: project and day started (left out on a terminal narrower than 110
    columns), events, chunks, importance, consensus and distilled tokens.

    Chunks, and how many the distilled file kept (--json says how many of the others
    were over the budget and how many under the minimum consensus); mean importance
    (imp, 0–100) and consensus (cons, 0–10); distilled tokens of the budget. SESSION is
    the key in the first column (or the tool's session id, or a path): its best chunks
    are listed too. --json prints every field, each session's best chunks
    included."""
    rows = service.distill_report(_settings(home), session)
    if as_json:
        sys.stdout.write(json.dumps(rows, indent=2, default=str) + "\n")
        return
    if not rows:
        out.print(_for_home("nothing distilled yet: run `selene-dag distill run --all`", home))
        return
    short = [
        {
            "session": row["session_key"],
            "project": _project_name(row["project"]),
            "started": (row["started"] or "-")[:10],
            "events": row["events"],
            "chunks": _chunks(row),
            "imp": row["importance_avg"],
            "cons": row["consensus_avg"],
            "tokens": (
                f"{row['distilled_tokens']:,}/{row['budget']:,}"
                if row.get("distilled_tokens") is not None
                else "-"
            )
            + _SOURCE_STATE.get(row.get("source_state", ""), ""),
        }
        for row in rows
    ]
    # COLUMNS, when set, is the width the output is for (piped or not).
    width = os.environ.get("COLUMNS", "")
    wide = (int(width) if width.isdigit() else out.width) >= WIDE_REPORT
    columns = REPORT_COLUMNS if wide else NARROW_REPORT_COLUMNS
    out.print(_rows_table(short, "distill report", list(columns)))
    if session and rows[0]["top_chunks"]:
        top = [
            {
                "chunk": c["citation"],
                "cons": c["consensus"],
                "imp": c["importance"],
                "begins": c["preview"],
            }
            for c in rows[0]["top_chunks"]
        ]
        out.print(_rows_table(top, "its best chunks (`selene-dag show` prints one whole)"))
    paths = [Path(r["distilled_path"]) for r in rows if r.get("distilled_path")]
    folders = sorted({str(p.parent) for p in paths})
    out.print(
        "distilled files"
        + (f" (in {folders[0]})" if len(folders) == 1 else "")
        + ": "
        + ", ".join(p.name if len(folders) == 1 else str(p) for p in paths),
        highlight=False,
        soft_wrap=True,
    )
    if hint := service.kept_no_chunk_hint(rows):
        err.print(hint, highlight=False)


@distill_app.command("assess")
@guarded
def distill_assess_command(
    chunk_id: Annotated[
        str, typer.Argument(help="A chunk id, or its citation as distill report lists it.")
    ],
    home: HomeOption = None,
) -> None:
    """Run every available assessor on one chunk now and show the consensus."""
    result = service.distill_assess(_settings(home), chunk_id)
    out.print_json(json.dumps(result, default=str))


@distill_app.command("seed")
@guarded
def distill_seed_command(
    platform: Annotated[str, typer.Argument(help="claude, codex or gemini.")],
    session: Annotated[str | None, typer.Argument(help="Session (default: most recent).")] = None,
    out_dir: Annotated[Path | None, typer.Option(help="Folder for the file.")] = None,
    max_tokens: Annotated[
        int | None,
        typer.Option(help="Budget of the seeded session (default: SELENE_DISTILL_TOKEN_BUDGET)."),
    ] = None,
    question: Annotated[
        str | None,
        typer.Option(
            help="Build it from the chunks of every session (or of SESSION) that best answer "
            "this question."
        ),
    ] = None,
    home: HomeOption = None,
) -> None:
    """Write a fresh, resumable session file for PLATFORM from a distilled session (with
    --question, from the chunks of every session that best answer it).

    With --question, the session holds the chunks that best answer the question, from every
    session: each scored 0.6 × its relevance to the question + 0.4 × its consensus. A model
    server (SELENE_LLM=ollama), or else the CLI assessors on PATH, rate the best candidates
    for the question first (SELENE_DISTILL_RERANK=0 skips that)."""
    settings = _settings(home)
    if question and (notice := service.seed_rerank_notice(settings)):
        err.print(notice, highlight=False, soft_wrap=True)
    result = service.distill_seed(
        settings,
        platform,
        session,
        out_dir=out_dir,
        max_tokens=max_tokens,
        question=question,
    )
    out.print_json(json.dumps(result, default=str))
    rerank = str(result.get("rerank") or "")
    if rerank.startswith("not reranked") and not any(
        chosen in rerank for chosen in ("SELENE_DISTILL_RERANK=0", "no model server")
    ):
        # As `ask` says it: the JSON alone hid a server down or an answer unusable.
        err.print(f"rerank: {rerank}", highlight=False, soft_wrap=True)
    words, found = result.get("question_words") or [], result.get("question_words_found") or []
    if words and len(found) * 2 < len(words):
        err.print(
            f"weak match: the chunk that best matches holds {len(found)} of the question's "
            f"{len(words)} search words ({', '.join(found) or 'none'} of {', '.join(words)}): "
            "the sessions may not talk about this",
            highlight=False,
            soft_wrap=True,
        )
    if result.get("path"):
        err.print(
            _resume_hint(platform, Path(str(result["path"]))), highlight=False, soft_wrap=True
        )


def _resume_hint(platform: str, path: Path) -> str:
    """How to resume a seeded session file in its agent's CLI."""
    where = {
        "claude": f"copy it into ~/.claude/projects/<the project's folder>/ and run "
        f"`claude --resume {path.stem}`",
        "codex": "copy it under ~/.codex/sessions/YYYY/MM/DD/ and run `codex resume`",
        "gemini": "copy it into ~/.gemini/tmp/<the project's hash>/chats/ and resume it in "
        "Gemini CLI",
    }
    return f"to resume {path.name}: " + where.get(platform.strip().lower(), "see docs/sessions.md")


def _prose(doc: str) -> str:
    """``doc`` (a docstring) with each paragraph on one line."""
    return "\n\n".join(" ".join(p.split()) for p in inspect.cleandoc(doc).split("\n\n"))


def _docstrings_as_prose(*apps: typer.Typer) -> None:
    """Give each command of ``apps`` that has no explicit help its docstring with every
    paragraph on one line (rewrapped to the terminal's width when shown): Typer prints a
    docstring's line breaks where they stand in the source, mid-sentence."""
    for typer_app in apps:
        for command in typer_app.registered_commands:
            doc = command.callback.__doc__ if command.callback is not None else None
            if command.help is None and doc:
                command.help = _prose(doc)


_docstrings_as_prose(app, cache_app, distill_app)


def _one_line_warning(message: Warning | str, category: type[Warning], *_: Any, **__: Any) -> str:
    return f"warning: {message}\n"


_UTF8 = ("utf-8", "utf8")


@contextmanager
def _readable_file(path: Path) -> Iterator[Path]:
    """``path`` itself, a file; for ``-`` (stdin) or a pipe (``<(…)``, ``/dev/stdin``), a
    temporary file holding what it gives, for the readers look at a file twice (what kind
    it is, then its content). A pipe was "not a file"; ``-`` "does not exist"."""
    if str(path) != "-" and (path.is_file() or not path.exists() or path.is_dir()):
        yield path
        return
    data = sys.stdin.buffer.read() if str(path) == "-" else path.read_bytes()
    try:
        json.loads(data)
        suffix = ".json"  # one document (a list of messages, a Gemini session)
    except ValueError:
        suffix = ".jsonl"
    with tempfile.TemporaryDirectory(prefix="selene-stdin-") as folder:
        target = Path(folder) / f"stdin{suffix}"
        target.write_bytes(data)
        yield target


def home_after_command(args: list[str]) -> list[str]:
    """``args`` with a ``--home DIR`` (or ``--home=DIR``) given before the command moved
    to its options (before a ``--``, if any): every command takes it, and
    ``selene-dag --home DIR ingest …`` was "No such option: --home". A ``--home`` the
    command is given too wins; with no command it is dropped (``--home DIR --help``)."""
    moved: list[str] = []
    rest: list[str] = []
    i = 0
    while i < len(args) and args[i].startswith("-") and args[i] != "--":
        if args[i] == "--home" and i + 1 < len(args):
            moved += args[i : i + 2]
            i += 2
            continue
        if args[i].startswith("--home="):
            moved.append(args[i])
        else:
            rest.append(args[i])
        i += 1
    if not moved:
        return args
    if i == len(args):  # no command: `--home H --help` is the help
        return rest
    tail = args[i:]
    end = tail.index("--") if "--" in tail else len(tail)
    if any(a == "--home" or a.startswith("--home=") for a in tail[:end]):
        return [*rest, *tail]  # the command's own --home wins
    groups = {group.name for group in app.registered_groups}
    if tail[0] in groups and not any(a in _group_commands(tail[0]) for a in tail[1:]):
        # `--home H distill`: the group's own usage, no --home to take. A command named
        # after a `--` (`distill -- run`) keeps the --home before it: refused, as any
        # option there is, rather than run on the default home.
        return [*rest, *tail]
    return [*rest, *tail[:end], *moved, *tail[end:]]


def _file_identity(stream: Any) -> tuple[int, int] | None:
    """The (device, inode) of ``stream``'s file, or None when it has no file."""
    try:
        info = os.fstat(stream.fileno())
    except (AttributeError, OSError, ValueError):
        return None
    return info.st_dev, info.st_ino


def _output_closed(stdout_at_start: tuple[int, int] | None) -> bool:
    """Whether the exit code 1 a library gave is its answer to a reader that left: click
    wraps stdout in its ``PacifyFlushWrapper`` on EPIPE (``--version | true``), rich points
    stdout at the null device (``--help | true``)."""
    if type(sys.stdout).__name__ == "PacifyFlushWrapper":
        return True
    now = _file_identity(sys.stdout)
    return now != stdout_at_start and now == _file_identity_of(os.devnull)


def _file_identity_of(path: str) -> tuple[int, int] | None:
    """The (device, inode) of the file at ``path``, or None when it cannot be read."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_dev, info.st_ino


def home_after_subcommand(args: list[str]) -> list[str]:
    """``args`` with a ``--home DIR`` given between a command group and its command
    (``distill --home DIR status``, "No such option: --home") moved after the command, as
    :func:`home_after_command` moves one given before the group."""
    groups = {group.name for group in app.registered_groups}
    at = next((i for i, a in enumerate(args) if not a.startswith("-")), None)
    if at is None or args[at] not in groups:
        return args
    commands = _group_commands(args[at])
    moved: list[str] = []
    between: list[str] = []
    i = at + 1
    while i < len(args) and args[i] not in commands and args[i] != "--":
        if args[i] == "--home" and i + 1 < len(args):
            moved += args[i : i + 2]
            i += 2
            continue
        (moved if args[i].startswith("--home=") else between).append(args[i])
        i += 1
    if not moved or (i < len(args) and args[i] == "--"):
        return args  # a command after `--` is refused, as any option there is
    if i == len(args):  # no command: `distill --home H` is the group's help
        return [*args[: at + 1], *between]
    return [*args[: at + 1], *between, args[i], *moved, *args[i + 1 :]]


def _group_commands(name: str) -> set[str]:
    """The names of the commands of the command group ``name`` (``distill``: ``run``, …)."""
    for group in app.registered_groups:
        if group.name == name and group.typer_instance is not None:
            return {
                command.name or command.callback.__name__.replace("_", "-")
                for command in group.typer_instance.registered_commands
                if command.callback is not None
            }
    return set()


def main() -> None:
    """Console-script entry point. Usage errors (an unknown command or option, a value of
    the wrong type, a missing option) are one line on stderr with exit code 2; warnings
    are one line, without the source line that raised them."""
    import warnings

    try:  # typer >= 0.2x carries its own copy of click
        from typer._click.exceptions import ClickException
    except ImportError:  # pragma: no cover - older typer uses click itself
        from click.exceptions import ClickException

    # Started with stdout or stderr closed (`>&-`): what goes there is dropped, as Python's
    # own print does (a traceback at the first write).
    for name in ("stdout", "stderr"):
        if getattr(sys, name) is None:
            setattr(sys, name, open(os.devnull, "w", encoding="utf-8"))  # noqa: SIM115
    warnings.filterwarnings("ignore", module="dagster")
    warnings.formatwarning = _one_line_warning  # type: ignore[assignment]
    # An output that is not UTF-8 (a Latin-1 locale, PYTHONIOENCODING): a character it
    # cannot hold ('…', '“') is written as '?' instead of ending the command in a traceback.
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper) and stream.encoding.lower() not in _UTF8:
            stream.reconfigure(errors="replace")
    # A SIGTERM (a service manager stopping a scheduled run, `timeout`) stops a command as
    # Ctrl-C does: the transaction in progress rolls back and the message below is said.
    if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, signal.default_int_handler)
    sys.unraisablehook = interrupt_again(sys.unraisablehook)
    stdout_at_start = _file_identity(sys.stdout)
    try:
        code = app(
            args=home_after_subcommand(home_after_command(sys.argv[1:])), standalone_mode=False
        )
    except SystemExit as exc:
        if exc.code == 1 and _output_closed(stdout_at_start):
            raise SystemExit(PIPE_CLOSED) from None
        raise
    except ClickException as exc:
        context = getattr(exc, "ctx", None)
        message = exc.format_message()
        if type(exc).__name__ == "NoArgsIsHelpError" or (not message and context is not None):
            # No arguments at all: the help. Recent Typer versions have printed it already
            # and raises with no message; click alone carries it as the message.
            if message:
                typer.echo(message)
            elif type(exc).__name__ != "NoArgsIsHelpError" and context is not None:
                typer.echo(context.get_help())
            raise SystemExit(0) from None
        hint = f" (see `{context.command_path} --help`)" if context is not None else ""
        err.print(_error_line(f"{message}{hint}"), highlight=False)
        raise SystemExit(exc.exit_code) from None
    except (typer.Abort, KeyboardInterrupt):
        code = INTERRUPTED
    if code == INTERRUPTED and not _SERVER["on"]:  # typer returns Ctrl-C as this code
        err.print(
            "interrupted: what was finished is kept; run the command again to finish",
            highlight=False,
        )
    try:
        sys.stdout.flush()
    except BrokenPipeError:  # the last of the output, buffered, had no reader left
        _stdout_to_nowhere()
        code = PIPE_CLOSED
    raise SystemExit(code if isinstance(code, int) else 0)


INTERRUPTED = 130  # the exit code of a command stopped by Ctrl-C or SIGTERM


def interrupt_again(
    previous: Callable[[Any], object],
) -> Callable[[Any], object]:
    """A ``sys.unraisablehook`` that raises a dropped KeyboardInterrupt again in the main
    thread, and hands any other exception to ``previous``. Ctrl-C (or SIGTERM) that lands
    while a finalizer runs (a garbage collector's callback) is an exception Python prints
    and drops: the command went on to its end, as if never stopped."""
    import _thread
    import threading

    def hook(unraisable: Any) -> None:
        if isinstance(unraisable.exc_value, KeyboardInterrupt):
            # From another thread, a moment later: the main thread takes it once this
            # hook has returned (raised here, it would be dropped again).
            later = threading.Timer(0.05, _thread.interrupt_main)
            later.daemon = True
            later.start()
            return
        previous(unraisable)

    return hook


_SERVER = {"on": False}


def _stops_as_a_server() -> None:
    """For `serve` and `dev`, which run until stopped: a SIGTERM ends the process as the
    signal does (a service manager's normal stop, exit 143), and Ctrl-C says nothing of
    work to finish."""
    _SERVER["on"] = True
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


if __name__ == "__main__":
    main()
