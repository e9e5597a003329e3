"""Dagster's last verdict that a home has nothing to run, remembered with what it rests on.

Asking Dagster what is stale means importing it and opening the home's instance: about
1.5 s before the first question, most of a re-run that has nothing to do. So after a run
the command asks Dagster once more; when Dagster reports nothing stale or missing, that
verdict is written to ``$SELENE_HOME/last_verdict.json`` with a key of everything the
answer depends on:

- the inputs: the notes folder's data version (the one its observation records) and,
  for a command that reads them, the size and modification time of every session file
  under the session roots and of every distilled file the home holds;
- the settings (all of them) and the day of "now" (tiers and health are computed per day);
- the code: selene-dag's Python sources, SQL and prompts, and the installed distributions
  (Dagster, DuckDB, … by name and version);
- the instance's history: its last event and its last run (a materialization from the UI,
  a sensor's run, a runless observation all move it) and its ``dagster.yaml``;
- the database file (a deleted or replaced one is another database).

A later command whose key is equal gets the same answer without asking; any difference,
or a missing or unreadable file, asks Dagster. Reading the key costs milliseconds: the
notes' bytes are hashed as their observation does, the rest is metadata.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from collections.abc import Iterable
from contextlib import closing
from importlib.util import find_spec
from pathlib import Path

from selene_dag.config import Settings
from selene_dag.files import write_whole
from selene_dag.notes.ingest import notes_folder_version
from selene_dag.paths import assets_dir, sql_dir
from selene_dag.sessions.scanner import scan_roots

VERDICT_FILE = "last_verdict.json"
_PACKAGE_DIR = Path(__file__).resolve().parent


def _digest(parts: Iterable[bytes]) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(len(part).to_bytes(8, "little"))
        digest.update(part)
    return digest.hexdigest()[:32]


def _files(root: Path, suffixes: tuple[str, ...]) -> list[Path]:
    if not root.is_dir():
        return []
    return sorted(
        p
        for p in root.rglob("*")
        if p.suffix in suffixes and p.is_file() and "_data" not in p.relative_to(root).parts
    )


def code_digest(roots: Iterable[tuple[Path, tuple[str, ...]]] | None = None) -> str:
    """A hash of the code a verdict was given for: every file of ``roots`` (folder and the
    suffixes read there; default selene-dag's Python sources, its SQL, prompts and
    tokenizer tables) by relative path and bytes, and the names of the distributions
    installed beside Dagster (their ``.dist-info`` folders hold name and version)."""
    if roots is None:
        assets = assets_dir()
        roots = (
            (_PACKAGE_DIR, (".py",)),
            (sql_dir(), (".sql",)),
            (assets / "prompts", (".md", ".txt", ".json")),
            (assets / "tokenizers", (".json", ".txt", ".tiktoken", ".model")),
        )
    parts: list[bytes] = []
    for root, suffixes in roots:
        for path in _files(root, suffixes):
            parts.append(path.relative_to(root).as_posix().encode("utf-8", "surrogatepass"))
            parts.append(path.read_bytes())
    spec = find_spec("dagster")
    if spec is not None and spec.origin:
        site = Path(spec.origin).parent.parent
        parts += sorted(p.name.encode() for p in site.glob("*.dist-info"))
    return _digest(parts)


def _last_row(database: Path, query: str) -> str:
    # As a URI (read-only), quoted: a home's path may hold "?" or "#".
    uri = database.resolve().as_uri() + "?mode=ro"
    with closing(sqlite3.connect(uri, uri=True)) as conn:
        return repr(conn.execute(query).fetchone())


def instance_position(dagster_home: Path) -> str:
    """Where the instance's history stands: its last event id (the index of asset events),
    its last run and when a run last changed, and its ``dagster.yaml``. Raises OSError or
    ``sqlite3.Error`` when a file is missing or unreadable."""
    history = dagster_home / "history"
    events = history / "runs" / "index.db"
    runs = history / "runs.db"
    for path in (events, runs):
        if not path.is_file():
            raise FileNotFoundError(path)
    return _digest(
        [
            _last_row(events, "SELECT max(id) FROM event_logs").encode(),
            _last_row(runs, "SELECT max(id), max(update_timestamp) FROM runs").encode(),
            (dagster_home / "dagster.yaml").read_bytes(),
        ]
    )


def _session_files(settings: Settings) -> bytes:
    files = scan_roots(settings.session_roots)
    rows = []
    for file in sorted(files, key=lambda f: f.path):
        try:
            stat = os.stat(file.path)
        except OSError as exc:
            rows.append(f"{file.path}\0{exc}")
            continue
        rows.append(f"{file.path}\0{stat.st_size}\0{stat.st_mtime_ns}")
    return "\n".join(rows).encode("utf-8", "surrogatepass")


def _distilled_files(settings: Settings) -> bytes:
    """The distilled files in the home, by path, size and modification time: a file deleted
    by hand is written again by the next run."""
    rows = []
    for path in sorted(settings.distilled_dir.rglob("*")):
        try:
            stat = path.stat()
        except OSError as exc:
            rows.append(f"{path}\0{exc}")
            continue
        rows.append(f"{path}\0{stat.st_size}\0{stat.st_mtime_ns}")
    return "\n".join(rows).encode("utf-8", "surrogatepass")


def _database(settings: Settings) -> bytes:
    try:
        stat = settings.db_path.stat()
    except OSError:
        return b"none"
    return f"{stat.st_dev}:{stat.st_ino}".encode()


def current_key(
    settings: Settings, scope: str, *, notes: bool = True, sessions: bool = True
) -> dict[str, str] | None:
    """The key a verdict on ``scope`` (the command, e.g. ``"demo"``) holds for in
    ``settings.home`` now; None when the home has no instance history to read. Without
    ``notes`` or ``sessions`` the notes folder or the session files are left out of it,
    for a command whose runs never read them (``ingest`` reads no session: an agent
    writing its transcript would otherwise void its verdict)."""
    try:
        position = instance_position(settings.dagster_home.resolve())
    except (OSError, sqlite3.Error):
        return None
    return {
        "scope": scope,
        "notes": notes_folder_version(settings.notes_dir, settings.home) if notes else "",
        "sessions": _digest([_session_files(settings)]) if sessions else "",
        "distilled": _digest([_distilled_files(settings)]) if sessions else "",
        "settings": _digest([settings.model_dump_json().encode()]),
        "day": settings.now().date().isoformat(),
        "code": code_digest(),
        "instance": position,
        "database": _database(settings).decode(),
    }


def _verdict_path(settings: Settings) -> Path:
    return settings.home / VERDICT_FILE


def _stored(settings: Settings) -> dict[str, dict[str, str]]:
    """The verdicts stored in the home, by scope; none when the file is missing or is not
    what :func:`remember` writes."""
    try:
        stored = json.loads(_verdict_path(settings).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(stored, dict):
        return {}
    return {scope: key for scope, key in stored.items() if isinstance(key, dict)}


def remember(settings: Settings, key: dict[str, str]) -> None:
    """Store ``key`` as the one Dagster last found nothing to run for in its scope (the
    verdicts of other scopes kept while their instance position is this one; the file
    replaced whole, so a reader never sees half of it)."""
    verdicts = {
        scope: other
        for scope, other in _stored(settings).items()
        if other.get("instance") == key["instance"]
    }
    verdicts[key["scope"]] = key
    path = _verdict_path(settings)
    write_whole(path, json.dumps(verdicts, sort_keys=True, indent=1) + "\n")


def holds(settings: Settings, key: dict[str, str] | None) -> bool:
    """True when ``key`` is the one stored by :func:`remember` for its scope: Dagster's
    verdict that nothing has to run still stands. False for no key, no file or a file not
    readable."""
    if key is None:
        return False
    return _stored(settings).get(key["scope"]) == key


def clear(settings: Settings) -> None:
    """Remove the stored verdicts (before a run that will change what they rested on)."""
    _verdict_path(settings).unlink(missing_ok=True)
