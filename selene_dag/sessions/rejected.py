"""Session files whose content is no transcript of the tool their root names, remembered
in the home so that ``distill run --all`` does not read them again while they are
unchanged.

A Codex rollout dropped under a ``claude=`` root, or random bytes named ``*.jsonl``, are
taken by the scan from their name alone (reading every file's head at each scan would cost
the sensor its speed); reading them fails with a reason. Remembered here by path, size and
modification time, they are listed with the files the scan leaves out, ``--all`` passes
over them (it failed on every run, so a scheduled run never succeeded), and a changed file
is read again. Naming the file still reads it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path

from selene_dag.config import Settings
from selene_dag.files import write_whole
from selene_dag.sessions.scanner import ScannedFile

REJECTED_FILE = "rejected_sessions.json"
# The failure reasons of a file whose content is no transcript (sessions.scanner).
CONTENT_REJECTED = "; it is not read"


def _path(settings: Settings) -> Path:
    return settings.home / "cache" / REJECTED_FILE


def load(settings: Settings) -> dict[str, tuple[int, float, str]]:
    """``{path: (size, mtime, reason)}`` of the files remembered ({} when none or when the
    file cannot be read)."""
    try:
        data = json.loads(_path(settings).read_text(encoding="utf-8"))
        return {p: (int(v[0]), float(v[1]), str(v[2])) for p, v in data.items()}
    except (OSError, ValueError, TypeError, KeyError, IndexError, AttributeError):
        return {}


def reason_for(known: Mapping[str, tuple[int, float, str]], f: ScannedFile) -> str | None:
    """Why ``f`` was rejected, while it is the same size and age as then; else None."""
    entry = known.get(f.path)
    if entry is None or (entry[0], entry[1]) != (f.size, f.mtime):
        return None
    return entry[2]


def split(
    settings: Settings, files: Iterable[ScannedFile]
) -> tuple[list[ScannedFile], list[tuple[ScannedFile, str]]]:
    """``files`` cut into those to read and those rejected for their content while
    unchanged since, each with its reason."""
    known = load(settings)
    kept: list[ScannedFile] = []
    rejected: list[tuple[ScannedFile, str]] = []
    for f in files:
        reason = reason_for(known, f)
        if reason is None:
            kept.append(f)
        else:
            rejected.append((f, reason))
    return kept, rejected


def remember(settings: Settings, failed: Iterable[tuple[ScannedFile, str]]) -> None:
    """Remember the files of ``failed`` (file, failure reason) rejected for their content,
    and forget those of the rest (a file that now reads, or fails for another reason)."""
    known = load(settings)
    changed = False
    for f, reason in failed:
        # "session_events: <path>: <why>": the file's own reason, the why alone kept (a
        # run's summary of several files' reasons is no file's).
        own = f"{f.path}: "
        at = reason.find(own) if reason else -1
        why = reason[at + len(own) :] if at >= 0 else ""
        if CONTENT_REJECTED in why and ": " not in reason[:at].rstrip(": ").strip():
            known[f.path] = (f.size, f.mtime, why)
            changed = True
        elif known.pop(f.path, None) is not None:
            changed = True
    if changed:
        path = _path(settings)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_whole(path, json.dumps({p: list(v) for p, v in known.items()}))
