"""Helpers of the operations tests: subprocess materializations, corpus slices, snapshots.

A materialization in a child process runs the real definitions through
``selene_dag.defs.runs.materialize`` with an ephemeral instance, configured only by the
environment (SELENE_HOME, SELENE_NOTES_DIR, SELENE_LLM, ...), exactly like the CLI does.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb

REPO = Path(__file__).resolve().parents[2]
DEMO_NOTES = REPO / "assets" / "demo" / "notes" / "til.jsonl"
BIN = Path(sys.executable).parent
SELENE_CLI = str(BIN / "selene-dag")
FIXED_NOW = "2026-07-15T00:00:00+00:00"

# Child: materialize the asset keys given as arguments; exit 0 on success, 3 on failure,
# with the run's one-line failure message on stderr.
MATERIALIZE_CHILD = """
import sys, warnings
warnings.filterwarnings("ignore")
import dagster as dg
from selene_dag.defs.runs import failure_message, materialize
result = materialize(sys.argv[1:], dg.DagsterInstance.ephemeral(), raise_on_error=False)
if not result.success:
    print(failure_message(result), file=sys.stderr)
    sys.exit(3)
print("ok")
"""


def write_notes_slice(path: Path, count: int | None = None) -> Path:
    """Write the first ``count`` demo notes (all when None) as one JSONL file at ``path``."""
    lines = DEMO_NOTES.read_text(encoding="utf-8").splitlines()
    chosen = lines if count is None else lines[:count]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(chosen) + "\n", encoding="utf-8")
    return path


def child_env(home: Path, notes: Path, **extra: str) -> dict[str, str]:
    """Environment of a child run: this process's env without SELENE_*, plus the given ones."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SELENE_")}
    env.pop("DAGSTER_HOME", None)
    env.update(
        {
            "SELENE_HOME": str(home),
            "SELENE_NOTES_DIR": str(notes),
            "SELENE_NOW": FIXED_NOW,
            "SELENE_SESSION_ROOTS": str(home / "no-sessions"),
            "SELENE_CLI_ASSESSORS": "",
            "PYTHONWARNINGS": "ignore",
        }
    )
    env.update(extra)
    return env


def start_materialize(assets: list[str], env: dict[str, str]) -> subprocess.Popen[str]:
    """Start a child process materializing ``assets``; it leads its own process group."""
    return subprocess.Popen(
        [sys.executable, "-c", MATERIALIZE_CHILD, *assets],
        env=env,
        cwd=str(REPO),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def run_materialize(
    assets: list[str], env: dict[str, str], timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """Materialize ``assets`` in a child process and wait for it (bounded by ``timeout``)."""
    proc = start_materialize(assets, env)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_group(proc)
        raise
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def kill_group(proc: subprocess.Popen[str], sig: int = signal.SIGKILL) -> None:
    """Send ``sig`` to the child's process group and reap the child."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, sig)
    proc.wait(timeout=30)


def wait_until(predicate: Callable[[], bool], timeout: float, step: float = 0.05) -> bool:
    """Poll ``predicate`` until it is true or ``timeout`` seconds pass; return its last value."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(step)
    return predicate()


def analysis_snapshot(db_path: Path) -> dict[str, tuple]:
    """``{note_id: (essence, concepts, primary_theme, source_hash)}`` of processed_notes."""
    conn = duckdb.connect(str(db_path), read_only=True)
    try:
        rows = conn.execute(
            "SELECT note_id, essence, concepts, primary_theme, source_hash FROM processed_notes"
        ).fetchall()
    finally:
        conn.close()
    return {row[0]: tuple(row[1:]) for row in rows}


def inconsistent_analyses(db_path: Path) -> list[tuple]:
    """processed_notes rows that are not a complete analysis of their note's current content.

    A complete row names an existing note, carries that note's content hash, an essence of
    more than 10 characters, at least one concept, a theme and the engine that made it.
    """
    conn = duckdb.connect(str(db_path), read_only=True)
    try:
        return conn.execute(
            "SELECT p.note_id, p.source_hash, n.content_hash, p.essence, p.concepts, p.engine "
            "FROM processed_notes p LEFT JOIN notes n ON n.id = p.note_id "
            "WHERE n.id IS NULL OR p.source_hash IS DISTINCT FROM n.content_hash "
            "OR p.essence IS NULL OR length(p.essence) <= 10 OR p.concepts IS NULL "
            "OR len(p.concepts) = 0 OR p.primary_theme IS NULL OR p.engine IS NULL"
        ).fetchall()
    finally:
        conn.close()


def table_count(db_path: Path, table: str) -> int:
    """Row count of ``table`` read through a read-only connection."""
    conn = duckdb.connect(str(db_path), read_only=True)
    try:
        return int(conn.execute(f'SELECT count(*) FROM "{table}"').fetchone()[0])
    finally:
        conn.close()


def chat_prompts(bodies: list[dict]) -> list[str]:
    """The prompt text of every /api/chat request a FakeOllama received."""
    return [
        "\n".join(str(m.get("content", "")) for m in body.get("messages") or [])
        for body in bodies
        if body.get("path") == "/api/chat"
    ]


def note_titles(notes: Path) -> list[str]:
    """Titles of the notes of a JSONL file, in file order."""
    return [
        json.loads(line)["title"]
        for line in notes.read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]


def start_dagster_dev(dagster_home: Path, port: int, env: dict[str, str]) -> subprocess.Popen:
    """Start ``dagster dev -m selene_dag.definitions`` on 127.0.0.1:``port`` in its own group."""
    dagster_home.mkdir(parents=True, exist_ok=True)
    (dagster_home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n", encoding="utf-8")
    log = (dagster_home / "dagster-dev.log").open("wb")
    return subprocess.Popen(
        [
            str(BIN / "dagster"),
            "dev",
            "-m",
            "selene_dag.definitions",
            "-h",
            "127.0.0.1",
            "-p",
            str(port),
        ],
        env={**env, "DAGSTER_HOME": str(dagster_home)},
        cwd=str(dagster_home),
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def stop_group(proc: subprocess.Popen, grace: float = 20) -> None:
    """SIGTERM the process group, then SIGKILL what is left after ``grace`` seconds."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=grace)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)


@contextmanager
def lock_held(db: Path, release_after: float | None = None) -> Iterator[None]:
    """Another process holds ``db``'s write lock in the body; it lets go when the body ends,
    or ``release_after`` seconds into it."""
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(f"""
            import duckdb, sys
            c = duckdb.connect({str(db)!r})
            print("ready", flush=True)
            sys.stdin.read()
        """),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    timer = None
    try:
        assert holder.stdout.readline().strip() == "ready"
        if release_after is not None:
            timer = threading.Timer(release_after, holder.stdin.close)
            timer.start()
        yield
    finally:
        if timer is not None:
            timer.join()
        if not holder.stdin.closed:
            holder.stdin.close()
        holder.wait(timeout=10)
