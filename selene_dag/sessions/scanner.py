"""Find session files under the configured roots, cheaply (stat + a small head read).

Nothing outside the roots is read: directory symlinks are not followed and a file symlink
whose target lies outside its root is skipped. No file is parsed here.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from selene_dag.config import SessionRoot
from selene_dag.sessions.parsers.detect import detect_platform_file


@dataclass(frozen=True)
class ScannedFile:
    """One session file found by :func:`scan_roots`.

    ``session_key`` is ``<platform>-<sha1(absolute path)[:12]>``: stable across scans, short,
    and made only of ``[a-z0-9-]`` so it is a valid Dagster dynamic partition key.
    """

    path: str
    platform: str
    size: int
    mtime: float
    session_key: str
    root: str


def session_key(platform: str, path: Path | str) -> str:
    """Stable partition key of a session file: platform plus a hash of its absolute path."""
    digest = hashlib.sha1(str(Path(path).absolute()).encode("utf-8")).hexdigest()[:12]
    return f"{platform}-{digest}"


def _candidate(name: str, parent: str, platform: str | None) -> bool:
    if name.endswith(".meta.json") or name.startswith("."):
        return False
    if platform == "claude":
        return name.endswith(".jsonl")
    if platform == "codex":
        return name.endswith(".jsonl")
    if platform == "gemini":
        if not name.endswith((".json", ".jsonl")):
            return False
        return name.startswith("session-") or os.path.basename(parent) == "chats"
    return name.endswith((".json", ".jsonl"))


def _walk(root: str) -> Iterator[tuple[os.DirEntry[str], str]]:
    stack = [root]
    while stack:
        current = stack.pop()
        try:
            with os.scandir(current) as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(entry.path)
                    elif entry.is_file():
                        yield entry, current
        except (PermissionError, FileNotFoundError, NotADirectoryError):
            continue


def _inside(path: str, root_real: str) -> bool:
    real = os.path.realpath(path)
    return real == root_real or real.startswith(root_real.rstrip(os.sep) + os.sep)


def _detect(path: str) -> str | None:
    try:
        return detect_platform_file(path)
    except OSError:
        return None


def scan_roots(roots: Iterable[SessionRoot]) -> list[ScannedFile]:
    """Return the session files under ``roots``, newest first (by mtime, then path).

    A root with ``platform`` None accepts any ``*.json``/``*.jsonl`` whose content is
    recognised (files that are not sessions are left out). Missing roots are skipped.
    """
    found: dict[str, ScannedFile] = {}
    for root in roots:
        base = str(Path(root.path).expanduser().absolute())
        if not os.path.isdir(base):
            continue
        base_real = os.path.realpath(base)
        for entry, parent in _walk(base):
            if not _candidate(entry.name, parent, root.platform):
                continue
            if entry.is_symlink() and not _inside(entry.path, base_real):
                continue
            platform = root.platform or _detect(entry.path)
            if platform is None or entry.path in found:
                continue
            try:
                st = entry.stat()
            except OSError:
                continue
            found[entry.path] = ScannedFile(
                path=entry.path,
                platform=platform,
                size=st.st_size,
                mtime=st.st_mtime,
                session_key=session_key(platform, entry.path),
                root=base,
            )
    return sorted(found.values(), key=lambda f: (-f.mtime, f.path))


def scan(settings: object | None = None) -> list[ScannedFile]:
    """Scan the roots of ``settings`` (default: :func:`selene_dag.config.load_settings`)."""
    if settings is None:
        from selene_dag.config import load_settings

        settings = load_settings()
    return scan_roots(settings.session_roots)  # type: ignore[attr-defined]


def is_under_roots(path: Path | str, roots: Iterable[SessionRoot]) -> bool:
    """True when ``path`` (resolved) lies inside one of ``roots`` (resolved)."""
    real = os.path.realpath(path)
    return any(_inside(real, os.path.realpath(Path(r.path).expanduser())) for r in roots)
