"""Find session files under the configured roots, cheaply (stat, and the first records of a
file only when its name does not say what it is).

Nothing outside the roots is read: directory symlinks are not followed and a file symlink
whose target lies outside its root is skipped. No file is parsed here.
"""

from __future__ import annotations

import codecs
import hashlib
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from selene_dag.config import SessionRoot
from selene_dag.sessions.parsers.detect import detect_platform_file
from selene_dag.sessions.parsers.model import ParseStats
from selene_dag.text import path_text


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
    absolute = str(Path(path).absolute())
    digest = hashlib.sha1(absolute.encode("utf-8", "surrogateescape")).hexdigest()[:12]
    return f"{platform}-{digest}"


_NAMES = {
    "claude": "Claude Code",
    "codex": "Codex CLI",
    "gemini": "Gemini CLI",
}


def platform_mismatch(path: str, platform: str) -> str | None:
    """Why the file ``path``, taken for a ``platform`` transcript by its name under a
    ``platform=`` root, is not one (its first records are another tool's); None when they
    agree or do not tell. The scan takes such files unread, so this is checked when the
    file is read."""
    try:
        found = detect_platform_file(path)
    except OSError:
        return None  # reading it fails with its own message
    if found is None or found == platform:
        return None
    return f"content is a {_NAMES[found]} transcript, under a {platform}= root"


def not_a_transcript(path: str, platform: str, stats: ParseStats) -> str | None:
    """Why the file ``path``, read as a ``platform`` transcript that gave no text at all
    (``stats`` of that read), is no transcript: its first records are no tool's either
    (random bytes, another program's JSON under a ``platform=`` root). None when they are
    the tool's own (a transcript with nothing said in it yet)."""
    try:
        if detect_platform_file(path) is not None:
            return None
        with open(path, "rb") as handle:
            head = handle.read(2)
    except OSError:
        return None
    if head in (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE):
        return (
            f"not a {_NAMES[platform]} transcript as the tool writes it: the file is UTF-16 "
            "text (Windows PowerShell's `>` and Out-File write it); save it as UTF-8 "
            "(`Out-File -Encoding utf8`) to read it; it is not read"
        )
    unreadable = f"{stats.errors} of {stats.lines} lines unreadable" if stats.errors else ""
    return (
        f"not a {_NAMES[platform]} transcript: no {_NAMES[platform]} record in it"
        f"{f' ({unreadable})' if unreadable else ''}; it is not read"
    )


@dataclass(frozen=True)
class SkippedFile:
    """A ``*.json``/``*.jsonl`` file under a root that is not taken, and why."""

    path: str
    root: str
    reason: str


@dataclass(frozen=True)
class ScanResult:
    """What :func:`scan_report` found: the session files taken and the files skipped."""

    files: list[ScannedFile]
    skipped: list[SkippedFile]


# The sub-agent Claude Code runs to compact a session (subagents/agent-acompact-<id>.jsonl):
# its prompt is Claude Code's own and its answer the summary the session records already.
_CLAUDE_COMPACTION = re.compile(r"agent-acompact-[^/]*\.jsonl\Z")


def gemini_migration(path: str) -> str | None:
    """The file Gemini CLI copies ``path`` into when it resumes the session of a
    ``session-….json`` (``session-….jsonl`` beside it, written on from then; the old file
    is left), or None for any other file."""
    name = os.path.basename(path)
    return path + "l" if name.startswith("session-") and name.endswith(".json") else None


def _migrated_on_disk(path: str) -> bool:
    """Whether the file :func:`gemini_migration` names for ``path`` is there and holds the
    same session (a ``.jsonl`` of another conversation may share the name)."""
    copy = gemini_migration(path)
    if copy is None or not os.path.isfile(copy):
        return False
    found = _gemini_session_id(path)
    return found is not None and found == _gemini_session_id(copy)


_GEMINI_SESSION_ID = re.compile(rb'"sessionId"\s*:\s*"([^"\\]+)"')


def _gemini_session_id(path: str) -> bytes | None:
    """The session id a Gemini CLI file names first (its header), or None."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(65536)
    except OSError:
        return None
    found = _GEMINI_SESSION_ID.search(head)
    return found.group(1) if found else None


def _considered(name: str) -> bool:
    return (
        name.endswith((".json", ".jsonl"))
        and not name.endswith(".meta.json")
        and not name.startswith(".")
    )


def _conventional(name: str, parent: str, platform: str | None) -> bool:
    """True when the tool itself names its transcripts like this: taken without a read."""
    if platform in ("claude", "codex"):
        return name.endswith(".jsonl")
    if platform == "gemini":
        return name.startswith("session-") or os.path.basename(parent) == "chats"
    return False


def _walk(root: str, unreadable: list[str]) -> Iterator[tuple[os.DirEntry[str], str]]:
    """The files under ``root`` with their folder; a folder this user may not read is
    added to ``unreadable`` (its sessions cannot be listed, and the user should know)."""
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
        except PermissionError:
            unreadable.append(current)
        except (FileNotFoundError, NotADirectoryError):
            continue


def _inside(path: str, root_real: str) -> bool:
    real = os.path.realpath(path)
    return real == root_real or real.startswith(root_real.rstrip(os.sep) + os.sep)


def _judge(path: str, platform: str | None) -> tuple[str | None, str]:
    """(platform taken, "") or (None, reason) for a file whose name does not settle it."""
    name = os.path.basename(path)
    if platform in (None, "gemini") and name.startswith("checkpoint") and name.endswith(".json"):
        # Gemini CLI's /chat save: a copy of a conversation its session file records.
        return None, "a Gemini CLI /chat save checkpoint (its session file holds the conversation)"
    try:
        found = detect_platform_file(path)
    except OSError as exc:
        return None, f"unreadable ({exc.strerror or exc})"
    if found is None:
        return None, "not a Claude Code, Codex CLI or Gemini CLI transcript"
    if platform is not None and found != platform:
        return None, f"content is a {_NAMES[found]} transcript, under a {platform}= root"
    return found, ""


def scan_report(roots: Iterable[SessionRoot]) -> ScanResult:
    """Session files under ``roots`` (newest first, by mtime then path) and the skipped ones.

    A file the tool names as its transcript under an explicit ``platform=DIR`` root (Claude
    and Codex ``*.jsonl``, Gemini ``session-*`` or ``chats/*``) is taken from its name alone.
    Any other ``*.json``/``*.jsonl`` file is read and taken when its content detects as the
    root's platform (any platform for a bare root); otherwise it is skipped with the reason.
    An empty file is skipped (until its agent writes to it), and so is a folder this user
    may not read (named among the skipped). Missing roots are ignored.
    """
    found: dict[str, ScannedFile] = {}
    skipped: dict[str, SkippedFile] = {}
    for root in roots:
        base = str(Path(root.path).expanduser().absolute())
        if not os.path.isdir(base):
            continue
        base_real = os.path.realpath(base)
        unreadable: list[str] = []
        for entry, parent in _walk(base, unreadable):
            if not _considered(entry.name) or entry.path in found:
                continue
            if entry.is_symlink() and not _inside(entry.path, base_real):
                continue
            if path_text(entry.path) != entry.path:
                # Stored by its path, which the database takes only as UTF-8 text.
                reason = "its path is not UTF-8: rename it to distill it"
                skipped.setdefault(entry.path, SkippedFile(path_text(entry.path), base, reason))
                continue
            try:
                st = entry.stat()
            except OSError:
                continue
            platform: str | None = root.platform
            if st.st_size == 0:  # an agent creates its transcript before writing to it
                skipped.setdefault(entry.path, SkippedFile(entry.path, base, "empty file"))
                continue
            if root.platform in (None, "gemini") and _migrated_on_disk(entry.path):
                reason = (
                    f"Gemini CLI copied this session into {entry.name}l when it was resumed "
                    "(that file holds the whole conversation)"
                )
                skipped.setdefault(entry.path, SkippedFile(entry.path, base, reason))
                continue
            if _CLAUDE_COMPACTION.match(entry.name) and root.platform in (None, "claude"):
                reason = "Claude Code's compaction of a session (the session holds its summary)"
                skipped.setdefault(entry.path, SkippedFile(entry.path, base, reason))
                continue
            if not _conventional(entry.name, parent, root.platform):
                platform, reason = _judge(entry.path, root.platform)
                if platform is None:
                    skipped.setdefault(entry.path, SkippedFile(entry.path, base, reason))
                    continue
            assert platform is not None
            skipped.pop(entry.path, None)
            found[entry.path] = ScannedFile(
                path=entry.path,
                platform=platform,
                size=st.st_size,
                mtime=st.st_mtime,
                session_key=session_key(platform, entry.path),
                root=base,
            )
        for folder in unreadable:
            reason = "a folder this user may not read (permission denied): its files are not listed"
            skipped.setdefault(folder, SkippedFile(path_text(folder), base, reason))
    files = sorted(found.values(), key=lambda f: (-f.mtime, f.path))
    return ScanResult(files, sorted(skipped.values(), key=lambda f: f.path))


def scan_roots(roots: Iterable[SessionRoot]) -> list[ScannedFile]:
    """The session files of :func:`scan_report` (newest first)."""
    return scan_report(roots).files


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
