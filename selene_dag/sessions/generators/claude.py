"""Claude Code session file (``<sessionId>.jsonl``) that ``claude --resume`` can load.

Lines: a ``summary`` line, a ``system``/``compact_boundary`` line (as after ``/compact``),
the preamble as the compact-summary user message, one user message per chunk with its
text wrapped in ``<system-reminder>``, and a closing assistant message. Every line but the
summary carries the real envelope (``isSidechain: false``, ``userType``, ``cwd``,
``sessionId``, ``version``, ``uuid``) and ``parentUuid`` links each line to the previous one.
"""

from __future__ import annotations

from typing import Any

import orjson

from selene_dag.sessions.generators._base import ACK_TEXT, SeedMeta

VERSION = "2.1.114"
EXTENSION = ".jsonl"
REMINDER_OPEN = "<system-reminder>\n"
REMINDER_CLOSE = "\n</system-reminder>"


def wrap(text: str) -> str:
    """Wrap chunk text the way Claude Code wraps injected context."""
    return f"{REMINDER_OPEN}{text}{REMINDER_CLOSE}"


def unwrap(text: str) -> str:
    """Inverse of :func:`wrap` (text without the wrapper is returned unchanged)."""
    if text.startswith(REMINDER_OPEN) and text.endswith(REMINDER_CLOSE):
        return text[len(REMINDER_OPEN) : -len(REMINDER_CLOSE)]
    return text


def file_name(meta: SeedMeta) -> str:
    """Claude Code names a transcript after its session id."""
    return f"{meta.session_id}{EXTENSION}"


def render(texts: list[str], meta: SeedMeta, pre_tokens: int = 0) -> str:
    """The JSONL text of the session; ``texts[0]`` is the preamble, the rest chunk texts."""
    sid = meta.session_id
    ts = meta.created_at
    envelope = {
        "isSidechain": False,
        "userType": "external",
        "cwd": meta.cwd,
        "sessionId": sid,
        "version": VERSION,
        "gitBranch": "",
    }
    records: list[dict[str, Any]] = []
    boundary = meta.uuid(0)
    records.append(
        {
            "parentUuid": None,
            "logicalParentUuid": None,
            **envelope,
            "type": "system",
            "subtype": "compact_boundary",
            "content": "Conversation compacted",
            "isMeta": False,
            "timestamp": ts,
            "uuid": boundary,
            "level": "info",
            "compactMetadata": {"trigger": "manual", "preTokens": pre_tokens},
        }
    )
    parent = boundary
    for i, text in enumerate(texts, start=1):
        record: dict[str, Any] = {
            "parentUuid": parent,
            **envelope,
            "type": "user",
            "message": {"role": "user", "content": text if i == 1 else wrap(text)},
            "uuid": meta.uuid(i),
            "timestamp": ts,
        }
        if i == 1:
            record["isCompactSummary"] = True
            record["isVisibleInTranscriptOnly"] = True
        records.append(record)
        parent = record["uuid"]
    last = meta.uuid(len(texts) + 1)
    records.append(
        {
            "parentUuid": parent,
            **envelope,
            "type": "assistant",
            "message": {
                "id": f"msg_distilled_{last.replace('-', '')[:24]}",
                "type": "message",
                "role": "assistant",
                "model": "<synthetic>",
                "content": [{"type": "text", "text": ACK_TEXT}],
                "stop_reason": "end_turn",
                "stop_sequence": None,
                "usage": {"input_tokens": 0, "output_tokens": 0},
            },
            "requestId": f"req_distilled_{last.replace('-', '')[:24]}",
            "uuid": last,
            "timestamp": ts,
        }
    )
    summary = {"type": "summary", "summary": meta.title, "leafUuid": last}
    lines = [orjson.dumps(summary)] + [orjson.dumps(r) for r in records]
    return b"\n".join(lines).decode() + "\n"
