"""Detect a session file's platform from its content (never from its name)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from selene_dag.sessions.parsers._common import loads_lenient
from selene_dag.sessions.parsers.codex import is_rollout_document
from selene_dag.sessions.parsers.headless import is_codex_exec, is_gemini_stream
from selene_dag.sessions.parsers.model import PLATFORMS

_HEAD_BYTES = 65536
_HEAD_LINES = 20
# Far above any real header line; a file whose first lines are larger is not a transcript.
_MAX_DETECT_BYTES = 64 * 1024 * 1024
_CODEX_TYPES = {
    "session_meta",
    "response_item",
    "event_msg",
    "turn_context",
    "compacted",
    "world_state",
}
_CLAUDE_TYPES = {
    "user",
    "assistant",
    "system",
    "summary",
    "attachment",
    "file-history-snapshot",
    "queue-operation",
    "permission-mode",
    "last-prompt",
    "progress",
    "custom-title",
    "ai-title",
    "agent-name",
    "mode",
    "worktree-state",
    "pr-link",
}


def _classify(obj: dict[str, Any], first: bool) -> str | None:
    raw = obj.get("type")
    rtype = raw if isinstance(raw, str) else None  # a list or an object is no record type
    if "payload" in obj and rtype in _CODEX_TYPES:
        return "codex"
    if is_codex_exec(obj):
        return "codex"
    if is_gemini_stream(obj):
        return "gemini"
    if "projectHash" in obj or "$set" in obj:
        return "gemini"
    if "parentUuid" in obj or "leafUuid" in obj or ("sessionId" in obj and rtype in _CLAUDE_TYPES):
        return "claude"
    if first and raw is None and "id" in obj and ("instructions" in obj or "git" in obj):
        return "codex"
    if "record_type" in obj:
        return "codex"
    if rtype in ("gemini", "info") and "id" in obj:
        return "gemini"
    if rtype in _CLAUDE_TYPES and rtype not in ("user", "system", "message"):
        return "claude"
    return None


def _vote(lines: list[bytes]) -> str | None:
    votes: dict[str, int] = {}
    for index, line in enumerate(lines):
        try:
            obj = loads_lenient(line)
        except orjson.JSONDecodeError:
            continue
        if isinstance(obj, dict):
            platform = _classify(obj, first=index == 0)
            if platform:
                votes[platform] = votes.get(platform, 0) + 1
    return max(votes, key=lambda p: votes[p]) if votes else None


def detect_platform_bytes(head: bytes) -> str | None:
    """Platform of a transcript from its first bytes, or None when they do not tell."""
    lines = [line for line in head.split(b"\n")[:_HEAD_LINES] if line.strip()]
    found = _vote(lines)
    if found:
        return found
    return _whole_document(head)


def _whole_document(head: bytes) -> str | None:
    stripped = head.removeprefix(b"\xef\xbb\xbf").lstrip()
    if is_rollout_document(stripped):
        return "codex"
    if (
        stripped.startswith(b"{")
        and b'"sessionId"' in head
        and (b'"projectHash"' in head or b'"messages"' in head)
    ):
        return "gemini"
    return None


def detect_platform_file(path: Path | str) -> str | None:
    """Platform of a transcript judged by its first records, or None when they do not tell.

    Reads whole lines (the first ``_HEAD_LINES`` non-empty ones, never more than
    ``_MAX_DETECT_BYTES``): a header line of any real length (a Codex header carrying long
    instructions, a Claude record holding an image) is read and judged, not cut at a byte
    window. A file that is one JSON document falls back to its first 64 KiB.
    """
    lines: list[bytes] = []
    read = 0
    with open(path, "rb") as handle:
        for line in handle:
            read += len(line)
            if line.strip():
                lines.append(line)
            if len(lines) >= _HEAD_LINES or read >= _MAX_DETECT_BYTES:
                break
        found = _vote(lines)
        if found:
            return found
        handle.seek(0)
        return _whole_document(handle.read(_HEAD_BYTES))


def detect_platform(path: Path | str) -> str:
    """Return ``claude``, ``codex`` or ``gemini`` for a session file, judged by its content
    (``detect_platform_file``). Raises ValueError when the content matches no platform."""
    path = Path(path)
    platform = detect_platform_file(path)
    if platform is None:
        raise ValueError(f"{path}: not a Claude Code, Codex CLI or Gemini CLI session file")
    assert platform in PLATFORMS
    return platform
