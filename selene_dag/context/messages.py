"""Chat messages as compaction reads them: checked, their content made text, read from a
file (a JSON list, ``{"messages": [...], "digest": [...]}``, or JSONL, one message a line).

A message is a mapping with a non-empty string ``role`` and a ``content`` (which a message
that calls tools may leave out, as chat APIs let an assistant message do). Reading a file
(``load_conversation``, ``parse_messages``) checks the messages and keeps them as given;
``validate_messages`` and compaction read content as text. Content given the way chat
APIs take it, a list of parts, is read as one string: text parts joined by a
blank line, a tool call written as ``[tool_use NAME] {input}``, a tool result as its text,
Anthropic's reasoning as ``[thinking] text`` (it goes out with the message, so it counts),
any other part (an image, a file) as ``[TYPE]``. A ``null`` content (an assistant message
that only calls tools) is the empty string. Every other key of a message is kept as it is;
its tool calls (``tool_calls``, ``function_call``) count toward the window.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from selene_dag.text import reject_lone_surrogates

Message = dict[str, Any]


def content_text(content: object) -> str:
    """The text of a message's ``content``: a string as it is, ``None`` as "", a list of
    parts joined by blank lines (see the module docstring). Raises ValueError for any
    other value."""
    if isinstance(content, str):
        return content
    if content is None:
        return ""
    if isinstance(content, list):
        return "\n\n".join(t for t in (_part_text(p) for p in content) if t)
    raise ValueError(f"'content' must be a string or a list of parts, got {type(content).__name__}")


def _part_text(part: object) -> str:
    if isinstance(part, str):
        return part
    if not isinstance(part, Mapping):
        raise ValueError(f"a content part must be an object or a string, got {type(part).__name__}")
    kind = part.get("type")
    if isinstance(part.get("text"), str):
        return part["text"]
    if kind == "tool_use":
        arguments = json.dumps(part.get("input", {}), ensure_ascii=False, sort_keys=True)
        return f"[tool_use {part.get('name') or 'tool'}] {arguments}"
    if kind == "tool_result":  # as a session file's results read: not a request
        return f"[tool_result] {content_text(part.get('content'))}".rstrip()
    # Anthropic's reasoning parts go out with the message: their text counts as its own.
    if kind == "thinking" and isinstance(part.get("thinking"), str):
        return f"[thinking] {part['thinking']}"
    if kind == "redacted_thinking" and isinstance(part.get("data"), str):
        return f"[redacted_thinking] {part['data']}"
    return f"[{kind or 'part'}]"


# Fields besides content that a model reads: the calls an assistant message makes (OpenAI's
# chat format keeps them out of content, which is then null).
CALL_FIELDS = ("tool_calls", "function_call")


def call_text(message: Mapping[str, Any]) -> str:
    """The tool calls a message makes (``CALL_FIELDS``) as JSON lines, "" when none: they
    count toward the window as its content does."""
    return "\n".join(
        json.dumps(message[key], ensure_ascii=False, sort_keys=True)
        for key in CALL_FIELDS
        if message.get(key)
    )


def counted_text(message: Mapping[str, Any]) -> str:
    """Everything of a message a model reads: its content (``content_text`` of a list of
    parts, null or left out), then its tool calls."""
    content = message.get("content")
    text = content if content.__class__ is str else content_text(content)
    calls = call_text(message)
    return f"{text}\n{calls}" if calls else text


def validate_messages(messages: object) -> list[Message]:
    """A copy of ``messages`` after checking each is a mapping with a non-empty str ``role``
    and a ``content`` (left out only beside tool calls: read as null); content becomes a
    string (``content_text``). Raises TypeError or ValueError naming the first bad message."""
    if isinstance(messages, str | bytes) or not isinstance(messages, Sequence):
        raise TypeError("messages must be a list of {role, content} objects")
    out: list[Message] = []
    for i, msg in enumerate(messages):
        if not isinstance(msg, Mapping):
            raise ValueError(f"message {i}: expected an object, got {type(msg).__name__}")
        if not isinstance(msg.get("role"), str) or not msg.get("role"):
            raise ValueError(f"message {i}: 'role' must be a non-empty string")
        if "content" not in msg and not any(msg.get(key) for key in CALL_FIELDS):
            raise ValueError(f"message {i}: no 'content'")
        try:
            text = content_text(msg.get("content"))
            _check_tool_ids(msg)
            _reject_surrogates_in(msg)  # content, calls, a name: a chat API reads them all
        except ValueError as exc:
            raise ValueError(f"message {i}: {exc}") from None
        out.append({**msg, "content": text})
    return out


def _reject_surrogates_in(value: Mapping[str, Any]) -> None:
    """``reject_lone_surrogates`` of every string inside ``value`` (a message or a digest
    entry), naming the field that holds it."""
    for key, item in value.items():
        if isinstance(key, str):
            reject_lone_surrogates(key, "a field's name")
        for text in _strings(item):
            reject_lone_surrogates(text, repr(key))


def _strings(value: object) -> Iterator[str]:
    """Every string inside ``value`` (a message: its keys and values, nested)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from _strings(key)
            yield from _strings(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _strings(item)


def _check_tool_ids(msg: Mapping[str, Any]) -> None:
    """A result's ``tool_call_id`` and a call's ``id`` are strings when given (results pair
    with their calls by them); ``tool_calls`` is a list of objects."""
    if msg.get("tool_call_id") is not None and not isinstance(msg["tool_call_id"], str):
        raise ValueError("'tool_call_id' must be a string")
    calls = msg.get("tool_calls")
    if calls is None:
        return
    if not isinstance(calls, list) or not all(isinstance(c, Mapping) for c in calls):
        raise ValueError("'tool_calls' must be a list of objects")
    if any(c.get("id") is not None and not isinstance(c["id"], str) for c in calls):
        raise ValueError("a tool call's 'id' must be a string")


def validate_digest(entries: object) -> list[dict[str, Any]]:
    """Copies of the memory digest's ``entries`` after checking each is an object whose
    ``decision`` is a non-empty string and whose ``superseded``, when given, is a boolean
    (or null), no string of it holding a lone surrogate. Raises
    ValueError naming the first bad entry (counted from 0, as messages are)."""
    if not isinstance(entries, list) or not all(isinstance(d, Mapping) for d in entries):
        raise ValueError('"digest" must be a list of {stage, decision} objects')
    digest = [dict(d) for d in entries]
    for n, entry in enumerate(digest):  # numbered from 0, as messages and JSON are
        decision = entry.get("decision")
        if not isinstance(decision, str) or not decision.strip():
            # An entry with no decision was dropped without a word: a typo ("decison")
            # lost the decision the digest is there to carry.
            raise ValueError(
                f'digest entry {n}: "decision" must be a non-empty string '
                "({stage, decision, superseded?})"
            )
        # "false" as a string was true: the decision was left out as superseded.
        if not any(entry.get("superseded") is v for v in (None, True, False)):
            raise ValueError(
                f'digest entry {n}: "superseded" must be true or false, '
                f"got {json.dumps(entry['superseded'], ensure_ascii=False)[:40]}"
            )
        try:
            _reject_surrogates_in(entry)
        except ValueError as exc:
            raise ValueError(f"digest entry {n}: {exc}") from None
    return digest


def parse_messages(data: object) -> tuple[list[Message], list[dict[str, Any]]]:
    """Messages and memory digest from decoded JSON: a list of messages, or an object
    ``{"messages": [...], "digest": [...]?}``. The messages are checked as
    ``validate_messages`` checks them and come back as given (copies: content as a list of
    parts or null stays so, for ``compact_messages`` to give back a message it keeps
    whole). Raises ValueError for any other shape."""
    digest: list[dict[str, Any]] = []
    if isinstance(data, Mapping):
        if "messages" not in data:
            raise ValueError('expected a list of messages or an object with a "messages" list')
        digest = validate_digest(data.get("digest") or data.get("memory_digest") or [])
        data = data["messages"]
    if not isinstance(data, list):
        raise ValueError('expected a list of messages or an object with a "messages" list')
    validate_messages(data)
    return [dict(message) for message in data], digest


@dataclass(frozen=True)
class Conversation:
    """A conversation read from a file: its messages, the memory digest it carries, what
    the reader has to say (lines left out as ``"line N: reason"``, secrets redacted) and
    the form it was read in (``json``, ``jsonl``, or a session transcript's platform)."""

    messages: list[Message]
    digest: list[dict[str, Any]] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    form: str = "json"


def load_conversation(path: str | Path) -> Conversation:
    """The conversation in a JSON file (a list of messages or ``{"messages", "digest"}``)
    or a JSONL file (one message per line; a line that is not a message is skipped and
    named in ``notices``). A byte order mark is ignored.

    Raises FileNotFoundError, or ValueError with a one-line reason when the file holds no
    conversation (or is not UTF-8 text).
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        if exc.msg == "Extra data":  # more than one JSON value: one message per line
            return _jsonl_conversation(path, text)
        raise ValueError(f"{path}: invalid JSON ({exc.msg} at line {exc.lineno})") from None
    if isinstance(data, Mapping) and "messages" not in data and "role" in data:
        return _jsonl_conversation(path, text)  # a JSONL file of one message
    try:
        messages, digest = parse_messages(data)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{path}: {exc}") from None
    return Conversation(messages, digest)


def _jsonl_conversation(path: Path, text: str) -> Conversation:
    messages: list[Message] = []
    skipped: list[str] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            skipped.append(f"line {number} skipped: not JSON ({exc.msg})")
            continue
        try:
            validate_messages([data])
            messages.append(dict(data))  # as given, as parse_messages keeps them
        except ValueError as exc:
            skipped.append(f"line {number} skipped: {str(exc).removeprefix('message 0: ')}")
    if not messages:
        first = f" ({skipped[0]})" if skipped else ""
        raise ValueError(f"{path}: no message in its lines{first}")
    return Conversation(messages, notices=skipped, form="jsonl")


def load_messages(path: str | Path) -> list[Message]:
    """Messages of a conversation file (``load_conversation``)."""
    return load_conversation(path).messages
