"""Detect a session file's platform from its content (never from its name)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from selene_dag.sessions.parsers.model import PLATFORMS

_HEAD_BYTES = 65536
_HEAD_LINES = 20
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
    rtype = obj.get("type")
    if "payload" in obj and rtype in _CODEX_TYPES:
        return "codex"
    if "projectHash" in obj or "$set" in obj:
        return "gemini"
    if "parentUuid" in obj or "leafUuid" in obj or ("sessionId" in obj and rtype in _CLAUDE_TYPES):
        return "claude"
    if first and rtype is None and "id" in obj and ("instructions" in obj or "git" in obj):
        return "codex"
    if "record_type" in obj:
        return "codex"
    if rtype in ("gemini", "info") and "id" in obj:
        return "gemini"
    if rtype in _CLAUDE_TYPES and rtype not in ("user", "system", "message"):
        return "claude"
    return None


def detect_platform_bytes(head: bytes) -> str | None:
    """Platform of a transcript from its first bytes, or None when they do not tell."""
    lines = [line for line in head.split(b"\n")[:_HEAD_LINES] if line.strip()]
    votes: dict[str, int] = {}
    for index, line in enumerate(lines):
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if isinstance(obj, dict):
            platform = _classify(obj, first=index == 0)
            if platform:
                votes[platform] = votes.get(platform, 0) + 1
    if votes:
        return max(votes, key=lambda p: votes[p])
    stripped = head.lstrip()
    if (
        stripped.startswith(b"{")
        and b'"sessionId"' in head
        and (b'"projectHash"' in head or b'"messages"' in head)
    ):
        return "gemini"
    return None


def detect_platform(path: Path | str) -> str:
    """Return ``claude``, ``codex`` or ``gemini`` for a session file, judged by its content.

    Reads at most the first 64 KiB. Raises ValueError when the content matches no platform.
    """
    path = Path(path)
    with path.open("rb") as handle:
        head = handle.read(_HEAD_BYTES)
    platform = detect_platform_bytes(head)
    if platform is None:
        raise ValueError(f"{path}: not a Claude Code, Codex CLI or Gemini CLI session file")
    assert platform in PLATFORMS
    return platform
