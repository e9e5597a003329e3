"""Claude Code transcript parser (``~/.claude/projects/<slug>/<session>.jsonl``).

Mapping (one event per content block, so an assistant line with a text block and a
``tool_use`` block gives two events):

* ``user``: string content -> ``user_prompt`` (``isMeta`` lines -> ``system``,
  ``isCompactSummary`` -> ``summary``); ``text`` blocks likewise; ``tool_result`` blocks ->
  ``tool_result`` (``is_error`` from the block); ``image`` -> ``other``.
* ``assistant``: ``text`` -> ``assistant_text``; ``tool_use`` -> ``tool_use`` (text = the
  JSON input, ``file_paths`` from path-like keys); ``thinking`` and anything else -> ``other``.
* ``system``: ``compact_boundary`` -> ``compact_boundary``; ``api_error``/``error`` ->
  ``error``; ``stop_hook_summary`` and old-style hook progress lines -> ``hook``; the rest
  -> ``system``.
* ``attachment``: ``hook_*`` -> ``hook``, others -> ``system``. ``summary`` -> ``summary``.
* Metadata lines (file-history-snapshot, queue-operation, permission-mode, last-prompt,
  progress, titles, ...) and unknown types -> ``other`` with empty text (``last-prompt``
  and ``queue-operation`` repeat a prompt already recorded, so their text is not kept).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from selene_dag.sessions.parsers._common import (
    dumps,
    guarded_events,
    iter_json_lines,
    paths_from_input,
    strip_ansi,
    to_text,
    type_of,
)
from selene_dag.sessions.parsers.model import EventBuilder, ParseStats, SessionEvent

_OLD_HOOK = re.compile(
    r"\b(PreToolUse|PostToolUse|Stop|SubagentStop|SessionStart|SessionEnd|UserPromptSubmit"
    r"|Notification|PreCompact)\b"
)
_ERROR_SUBTYPES = {"api_error", "error", "api_refusal"}


def _user_events(
    obj: dict[str, Any], b: EventBuilder, common: dict[str, Any]
) -> Iterator[SessionEvent]:
    message = obj.get("message") or {}
    content = message.get("content") if isinstance(message, dict) else None
    if obj.get("isCompactSummary"):
        text_kind, role = "summary", "system"
    elif obj.get("isMeta"):
        text_kind, role = "system", "system"
    else:
        text_kind, role = "user_prompt", "user"
    if isinstance(content, str):
        yield b.make(role=role, kind=text_kind, text=content, raw_type="user", **common)
        return
    if not isinstance(content, list):
        yield b.make(role="user", kind="other", text="", raw_type="user", **common)
        return
    for block in content:
        btype = block.get("type") if isinstance(block, dict) else None
        if btype == "text":
            yield b.make(
                role=role,
                kind=text_kind,
                text=block.get("text") or "",
                raw_type="user/text",
                **common,
            )
        elif btype == "tool_result":
            yield b.make(
                role="tool",
                kind="tool_result",
                text=to_text(block.get("content")),
                is_error=bool(block.get("is_error")),
                raw_type="user/tool_result",
                **common,
            )
        else:
            yield b.make(role="user", kind="other", text="", raw_type=f"user/{btype}", **common)


def _assistant_events(
    obj: dict[str, Any], b: EventBuilder, common: dict[str, Any]
) -> Iterator[SessionEvent]:
    message = obj.get("message") or {}
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        yield b.make(
            role="assistant", kind="assistant_text", text=content, raw_type="assistant", **common
        )
        return
    for block in content if isinstance(content, list) else []:
        btype = block.get("type") if isinstance(block, dict) else None
        if btype == "text":
            yield b.make(
                role="assistant",
                kind="assistant_text",
                text=block.get("text") or "",
                raw_type="assistant/text",
                **common,
            )
        elif btype == "tool_use":
            tool_input = block.get("input")
            text = dumps(tool_input)
            yield b.make(
                role="assistant",
                kind="tool_use",
                text=text,
                tool_name=block.get("name"),
                file_paths=paths_from_input(tool_input, text),
                raw_type="assistant/tool_use",
                **common,
            )
        elif btype == "thinking":
            yield b.make(
                role="assistant",
                kind="other",
                text=block.get("thinking") or "",
                raw_type="assistant/thinking",
                **common,
            )
        else:
            yield b.make(
                role="assistant", kind="other", text="", raw_type=f"assistant/{btype}", **common
            )


def _system_event(obj: dict[str, Any], b: EventBuilder, common: dict[str, Any]) -> SessionEvent:
    subtype = obj.get("subtype")
    raw_type = f"system/{subtype}" if subtype else "system"
    content = strip_ansi(to_text(obj.get("content")))
    if subtype == "compact_boundary":
        return b.make(
            role="system", kind="compact_boundary", text=content, raw_type=raw_type, **common
        )
    if subtype in _ERROR_SUBTYPES:
        text = content or to_text(obj.get("error"))
        return b.make(
            role="system", kind="error", text=text, is_error=True, raw_type=raw_type, **common
        )
    if subtype == "stop_hook_summary":
        infos = obj.get("hookInfos") or []
        text = "\n".join(str(i.get("command", "")) for i in infos if isinstance(i, dict))
        return b.make(role="system", kind="hook", text=text, raw_type=raw_type, **common)
    if subtype is None and obj.get("toolUseID") and _OLD_HOOK.search(content):
        return b.make(role="system", kind="hook", text=content, raw_type=raw_type, **common)
    return b.make(role="system", kind="system", text=content, raw_type=raw_type, **common)


def _attachment_event(obj: dict[str, Any], b: EventBuilder, common: dict[str, Any]) -> SessionEvent:
    att = obj.get("attachment") if isinstance(obj.get("attachment"), dict) else {}
    atype = str(att.get("type", ""))
    raw_type = f"attachment/{atype}"
    if atype.startswith("hook"):
        text = "\n".join(
            t
            for t in (
                to_text(att.get("content")),
                to_text(att.get("stdout")),
                to_text(att.get("stderr")),
            )
            if t
        )
        return b.make(role="system", kind="hook", text=text, raw_type=raw_type, **common)
    return b.make(
        role="system", kind="system", text=to_text(att.get("content")), raw_type=raw_type, **common
    )


def iter_claude(path: Path, stats: ParseStats) -> Iterator[SessionEvent]:
    """Stream the events of a Claude Code JSONL transcript (see the module docstring)."""
    b = EventBuilder("claude", path.stem)
    for line, obj in iter_json_lines(path, stats):
        rtype = type_of(obj)
        sid = obj.get("sessionId")
        if isinstance(sid, str) and stats.session_id is None:
            stats.session_id = sid
            b.session_id = sid
        if stats.project is None and isinstance(obj.get("cwd"), str):
            stats.project = obj["cwd"]
        ts = obj.get("timestamp")
        common = {
            "line": line,
            "timestamp": ts,
            "is_sidechain": bool(obj.get("isSidechain")),
        }
        if rtype == "user":
            yield from guarded_events(_user_events(obj, b, common), line, stats)
        elif rtype == "assistant":
            yield from guarded_events(_assistant_events(obj, b, common), line, stats)
        elif rtype == "system":
            yield from guarded_events((_system_event(obj, b, common) for _ in (0,)), line, stats)
        elif rtype == "attachment":
            yield from guarded_events(
                (_attachment_event(obj, b, common) for _ in (0,)), line, stats
            )
        elif rtype == "summary":
            yield b.make(
                role="system",
                kind="summary",
                text=to_text(obj.get("summary")),
                raw_type="summary",
                **common,
            )
        else:
            yield b.make(
                role="system", kind="other", text="", raw_type=str(obj.get("type")), **common
            )
