"""Conversations of a ChatGPT or Claude.ai data export (``conversations.json``), one note each.

ChatGPT keeps a conversation as a tree of message nodes (``mapping``; every edit or
regeneration is a branch): the conversation shown is the path from ``current_node`` up to
the root. Claude.ai keeps a list of ``chat_messages``, a branch named by
``current_leaf_message_uuid`` when the export has one. Only what the people said is kept:
the user's and the assistant's text (a pasted file's extracted text too), consecutive
messages of one speaker as one turn; system prompts, hidden messages, tool traffic (calls
to search or code tools and their results) and the model's reasoning are left out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from selene_dag import text as _text
from selene_dag.config import parse_datetime

SPEAKERS = {"user": "User", "human": "User", "assistant": "Assistant"}
# ChatGPT content types that hold what the assistant or the user said.
_CHATGPT_SAID = {"text", "multimodal_text", "code"}
_UNTITLED_WORDS = 8


@dataclass(frozen=True)
class ExportedChat:
    """One conversation of an export: its 1-based position in the export, its id (None
    when the export gives none), title, dates and turns ``(speaker, text)`` in order."""

    position: int
    id: str | None
    title: str
    created_at: datetime | None
    updated_at: datetime | None
    turns: tuple[tuple[str, str], ...]

    def text(self) -> str:
        """The conversation as dialogue: ``Speaker: text`` turns, a blank line apart."""
        return "\n\n".join(f"{speaker}: {said}" for speaker, said in self.turns)


def export_kind(data: object) -> str | None:
    """``"chatgpt"`` or ``"claude"`` when ``data`` (a decoded JSON file) is such an export's
    list of conversations, else None. Judged by the first conversation's keys."""
    if not isinstance(data, list) or not data or not isinstance(data[0], Mapping):
        return None
    first = data[0]
    if "mapping" in first:
        return "chatgpt"
    if "chat_messages" in first:
        return "claude"
    return None


def exported_chats(data: list[Any], kind: str) -> tuple[list[ExportedChat], list[tuple[int, str]]]:
    """The conversations of an export of ``kind`` (``export_kind``), and the ones that could
    not be read as ``(1-based position, reason)``. A conversation without a word said is
    left out silently (an empty chat the app created)."""
    read = _chatgpt_chat if kind == "chatgpt" else _claude_chat
    chats: list[ExportedChat] = []
    problems: list[tuple[int, str]] = []
    for number, item in enumerate(data, 1):
        if not isinstance(item, Mapping):
            problems.append((number, f"expected a conversation object, got {type(item).__name__}"))
            continue
        try:
            chat = read(number, item)
        except (TypeError, ValueError, KeyError, AttributeError) as exc:
            problems.append((number, f"unreadable conversation ({type(exc).__name__}: {exc})"))
            continue
        if chat.turns:
            chats.append(chat)
    return chats, problems


def _merged(turns: Iterable[tuple[str, str] | None]) -> tuple[tuple[str, str], ...]:
    """The turns said, consecutive ones of one speaker joined (an answer given in several
    messages, around a tool call, is one turn)."""
    out: list[tuple[str, str]] = []
    for turn in turns:
        if turn is None:
            continue
        if out and out[-1][0] == turn[0]:
            out[-1] = (turn[0], f"{out[-1][1]}\n\n{turn[1]}")
        else:
            out.append(turn)
    return tuple(out)


def _title(value: object, turns: tuple[tuple[str, str], ...]) -> str:
    if isinstance(value, str) and value.strip():
        return value.strip()
    first = next((said for speaker, said in turns if speaker == "User"), "")
    words = first.split()
    return " ".join(words[:_UNTITLED_WORDS]) + (" …" if len(words) > _UNTITLED_WORDS else "")


def _id(value: object) -> str | None:
    if not isinstance(value, str | int) or isinstance(value, bool):
        return None
    return str(value).strip() or None


def _epoch(value: object) -> datetime | None:
    """A date given as seconds since 1970 (ChatGPT) or as ISO text; None when unreadable."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        try:
            return datetime.fromtimestamp(value, tz=UTC) if value > 0 else None
        except (OverflowError, OSError, ValueError):  # milliseconds, or far out of range
            return None
    return _iso(value)


def _iso(value: object) -> datetime | None:
    if not isinstance(value, str) or not value.strip():
        return None
    try:
        return parse_datetime(value)
    except ValueError:
        return None


# --- ChatGPT -------------------------------------------------------------------------------


def _chatgpt_chat(position: int, item: Mapping[str, Any]) -> ExportedChat:
    mapping = item.get("mapping") or {}
    if not isinstance(mapping, Mapping):
        raise TypeError("'mapping' is not an object")
    branch = _chatgpt_branch(mapping, item.get("current_node"))
    turns = _merged(_chatgpt_turn(node) for node in branch)
    return ExportedChat(
        position=position,
        id=_id(item.get("conversation_id") or item.get("id")),
        title=_title(item.get("title"), turns),
        created_at=_epoch(item.get("create_time")),
        updated_at=_epoch(item.get("update_time")),
        turns=turns,
    )


def _chatgpt_branch(mapping: Mapping[str, Any], current: object) -> list[Mapping[str, Any]]:
    """The nodes from the root to ``current`` (the branch the app shows); without a known
    current node, the messages by their time."""
    if isinstance(current, str) and current in mapping:
        path: list[Mapping[str, Any]] = []
        seen: set[str] = set()
        node_id: object = current
        while isinstance(node_id, str) and node_id in mapping and node_id not in seen:
            seen.add(node_id)
            node = mapping[node_id]
            path.append(node)
            node_id = node.get("parent")
        return path[::-1]
    nodes = [n for n in mapping.values() if isinstance(n, Mapping) and n.get("message")]
    return sorted(
        nodes,
        key=lambda n: _epoch(n["message"].get("create_time")) or datetime.min.replace(tzinfo=UTC),
    )


def _chatgpt_turn(node: Mapping[str, Any]) -> tuple[str, str] | None:
    message = node.get("message")
    if not isinstance(message, Mapping):
        return None
    speaker = SPEAKERS.get(str((message.get("author") or {}).get("role")))
    metadata = message.get("metadata") or {}
    if speaker is None or metadata.get("is_visually_hidden_from_conversation"):
        return None
    if message.get("recipient") not in (None, "all"):  # a call to a tool (search, python)
        return None
    content = message.get("content") or {}
    kind = content.get("content_type")
    if kind not in _CHATGPT_SAID:
        return None
    if kind == "code":
        code = content.get("text")
        said = f"```\n{code.strip()}\n```" if isinstance(code, str) and code.strip() else ""
    else:
        parts = content.get("parts") or []
        said = "\n\n".join(_chatgpt_part(p) for p in parts if _chatgpt_part(p))
    said = said.strip()
    return (speaker, said) if said else None


def _chatgpt_part(part: object) -> str:
    if isinstance(part, str):
        return part.strip()
    if isinstance(part, Mapping):
        if isinstance(part.get("text"), str):
            return part["text"].strip()
        kind = str(part.get("content_type") or "")
        return "[image]" if "image" in kind else ""
    return ""


# --- Claude.ai -----------------------------------------------------------------------------


def _claude_chat(position: int, item: Mapping[str, Any]) -> ExportedChat:
    messages = [m for m in item.get("chat_messages") or [] if isinstance(m, Mapping)]
    leaf = item.get("current_leaf_message_uuid")
    by_id = {m.get("uuid"): m for m in messages if m.get("uuid")}
    if (
        isinstance(leaf, str)
        and leaf in by_id
        and any("parent_message_uuid" in m for m in messages)
    ):
        branch: list[Mapping[str, Any]] = []
        seen: set[str] = set()
        node: object = leaf
        while isinstance(node, str) and node in by_id and node not in seen:
            seen.add(node)
            branch.append(by_id[node])
            node = by_id[node].get("parent_message_uuid")
        messages = branch[::-1]
    turns = _merged(_claude_turn(m) for m in messages)
    return ExportedChat(
        position=position,
        id=_id(item.get("uuid")),
        title=_title(item.get("name"), turns),
        created_at=_iso(item.get("created_at")),
        updated_at=_iso(item.get("updated_at")),
        turns=turns,
    )


def _claude_turn(message: Mapping[str, Any]) -> tuple[str, str] | None:
    speaker = SPEAKERS.get(str(message.get("sender")))
    if speaker is None:
        return None
    text = message.get("text")
    if not isinstance(text, str) or not text.strip():
        blocks = message.get("content") or []
        text = "\n\n".join(
            b["text"].strip()
            for b in blocks
            if isinstance(b, Mapping) and b.get("type") == "text" and isinstance(b.get("text"), str)
        )
    parts = [text.strip()] if text.strip() else []
    for attachment in message.get("attachments") or []:
        if isinstance(attachment, Mapping) and isinstance(attachment.get("extracted_content"), str):
            name = _text.shorten(str(attachment.get("file_name") or "file"), 80)
            parts.append(f"[attachment {name}]\n{attachment['extracted_content'].strip()}")
    return (speaker, "\n\n".join(parts)) if parts else None
