"""Gemini CLI chat (``session-<time>-<id8>.json``, single-JSON layout) for ``/chat resume``.

``{sessionId, projectHash, startTime, lastUpdated, kind: "main", messages}`` with the
preamble and one ``user`` message per chunk (``content: [{text}]``) and a closing ``gemini``
message. ``projectHash`` is the SHA-256 of the project directory, as Gemini CLI computes it
(the source's own hash when the project is known only by it).
"""

from __future__ import annotations

import hashlib

import orjson

from selene_dag.sessions.generators._base import ACK_TEXT, SeedMeta

EXTENSION = ".json"


def file_name(meta: SeedMeta) -> str:
    """Gemini names chats ``session-YYYY-MM-DDTHH-MM-<first 8 of id>.json``."""
    stamp = meta.created_at[:16].replace(":", "-")
    return f"session-{stamp}-{meta.session_id[:8]}{EXTENSION}"


def is_project_hash(text: str) -> bool:
    """Whether ``text`` is a Gemini project hash (the SHA-256 of a folder, 64 hex digits):
    a Gemini session knows its project only by it."""
    return len(text) == 64 and all(c in "0123456789abcdef" for c in text)


def project_hash(cwd: str) -> str:
    """The SHA-256 of the project folder ``cwd``; a ``cwd`` that is such a hash already (a
    Gemini source session's project) as it is."""
    return cwd if is_project_hash(cwd) else hashlib.sha256(cwd.encode("utf-8")).hexdigest()


def render(texts: list[str], meta: SeedMeta) -> str:
    """The chat JSON text; ``texts[0]`` is the preamble, the rest chunk texts."""
    ts = meta.created_at
    messages = [
        {"id": meta.uuid(i), "timestamp": ts, "type": "user", "content": [{"text": text}]}
        for i, text in enumerate(texts)
    ]
    messages.append(
        {
            "id": meta.uuid(len(texts)),
            "timestamp": ts,
            "type": "gemini",
            "content": ACK_TEXT,
            "thoughts": [],
            "tokens": {"input": 0, "output": 0, "cached": 0, "thoughts": 0, "tool": 0, "total": 0},
            "model": "selene-dag-distilled",
        }
    )
    doc = {
        "sessionId": meta.session_id,
        "projectHash": project_hash(meta.cwd),
        "startTime": ts,
        "lastUpdated": ts,
        "kind": "main",
        "messages": messages,
    }
    return orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode() + "\n"
