"""Gemini CLI chat parser (``~/.gemini/tmp/<projectHash>/chats/session-*.json[l]``).

Two layouts: one JSON document ``{sessionId, projectHash, startTime, lastUpdated, messages}``
and the append-only JSONL log (header record, message records, ``{"$set": {...}}`` patches,
``{"$rewindTo": id}`` markers), replayed as Gemini CLI's own loader does
(``chatRecordingService.ts``): a message is re-written with the same ``id`` when it changes
(tool calls and their results are appended later), so the last record of an id wins and
keeps the position of the first; ``$rewindTo`` drops that message and every message after
it (all of them when the id is unknown); a ``$set`` carrying ``messages`` is a checkpoint
that replaces the messages before it; other ``$set`` keys are metadata. Both layouts are
read whole before events are yielded: memory grows with the file, which is fine for
Gemini chats (kilobytes to a few MB).

Sub-agent transcripts live in ``chats/<parent session id>/<id>.jsonl`` with a header of
``kind: "subagent"``; their ``ParseStats.parent_session_id`` names the parent.

Mapping: ``user`` -> ``user_prompt``; ``gemini``/``model``/``assistant`` -> thoughts
(``other``), then ``assistant_text`` (when non-empty), then per tool call a ``tool_use`` and a
``tool_result`` (error when the status is not success, the response has an error, or a shell
output reports a non-zero exit code); ``info``/``warning`` -> ``system``; ``error`` ->
``error``; anything else -> ``other``. An answer from another model than the one before
is preceded by a ``system`` event ``Model: <model>`` (raw type ``model_change``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from selene_dag.sessions.parsers._common import (
    ModelChanges,
    dumps,
    guarded_events,
    iter_json_lines,
    loads_lenient,
    paths_from_input,
    to_text,
    type_of,
)
from selene_dag.sessions.parsers.headless import gemini_stream_events, is_gemini_stream
from selene_dag.sessions.parsers.model import EventBuilder, ParseStats, SessionEvent

_EXIT_CODE = re.compile(r"Exit Code: (\d+)")
_ASSISTANT_TYPES = {"gemini", "model", "assistant"}


def _content_text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if content is None and "parts" in message:
        content = message.get("parts")
    return to_text(content)


def _result_text(call: dict[str, Any]) -> tuple[str, bool]:
    is_error = str(call.get("status", "success")).lower() not in ("success", "")
    parts: list[str] = []
    for item in call.get("result") or []:
        resp = (
            item.get("functionResponse", {}).get("response", {}) if isinstance(item, dict) else {}
        )
        if isinstance(resp, dict):
            if resp.get("error"):
                is_error = True
                parts.append(to_text(resp.get("error")))
            if "output" in resp:
                parts.append(to_text(resp.get("output")))
    text = "\n".join(p for p in parts if p)
    if not text:
        text = to_text(call.get("resultDisplay"))
    match = _EXIT_CODE.search(text)
    if match and match.group(1) != "0":
        is_error = True
    return text, is_error


def _message_events(message: dict[str, Any], line: int, b: EventBuilder) -> Iterator[SessionEvent]:
    mtype = type_of(message)
    ts = message.get("timestamp")
    common = {"line": line, "timestamp": ts}
    if mtype == "user":
        yield b.make(
            role="user", kind="user_prompt", text=_content_text(message), raw_type="user", **common
        )
    elif mtype in _ASSISTANT_TYPES:
        thoughts = [
            ": ".join(str(t[k]) for k in ("subject", "description") if t.get(k))
            for t in message.get("thoughts") or []
            if isinstance(t, dict)
        ]
        if any(thoughts):
            text = "\n".join(t for t in thoughts if t)
            yield b.make(
                role="assistant", kind="other", text=text, raw_type=f"{mtype}/thoughts", **common
            )
        text = _content_text(message)
        if text:
            yield b.make(
                role="assistant", kind="assistant_text", text=text, raw_type=str(mtype), **common
            )
        for call in message.get("toolCalls") or []:
            if not isinstance(call, dict):
                continue
            args = call.get("args")
            args_text = dumps(args)
            # A call carries the time it ran (a message's calls run one after another).
            at = {**common, "timestamp": call.get("timestamp") or ts}
            yield b.make(
                role="assistant",
                kind="tool_use",
                text=args_text,
                tool_name=call.get("name"),
                file_paths=paths_from_input(args, args_text),
                raw_type=f"{mtype}/toolCall",
                **at,
            )
            result, is_error = _result_text(call)
            yield b.make(
                role="tool",
                kind="tool_result",
                text=result,
                tool_name=call.get("name"),
                is_error=is_error,
                raw_type=f"{mtype}/toolResult",
                **at,
            )
    elif mtype in ("info", "warning"):
        yield b.make(
            role="system", kind="system", text=_content_text(message), raw_type=str(mtype), **common
        )
    elif mtype == "error":
        yield b.make(
            role="system",
            kind="error",
            text=_content_text(message),
            is_error=True,
            raw_type="error",
            **common,
        )
    else:
        yield b.make(role="system", kind="other", text="", raw_type=str(mtype), **common)


def _header(obj: dict[str, Any], stats: ParseStats, b: EventBuilder, path: Path) -> None:
    if isinstance(obj.get("sessionId"), str):
        stats.session_id = b.session_id = obj["sessionId"]
    if isinstance(obj.get("projectHash"), str):
        stats.project = obj["projectHash"]
    parent = path.parent
    nested = obj.get("kind") == "subagent" or parent.parent.name == "chats"
    if nested and parent.name != "chats":
        stats.parent_session_id = parent.name


def _collect_jsonl(
    path: Path, stats: ParseStats, b: EventBuilder
) -> list[tuple[int, dict[str, Any]]]:
    """The messages of a JSONL chat after replaying its records, in order, with the line
    where each first appeared."""
    messages: dict[str, tuple[int, dict[str, Any]]] = {}
    anonymous = 0

    def add(line: int, msg: dict[str, Any]) -> None:
        nonlocal anonymous
        key = msg.get("id")
        if not isinstance(key, str):
            anonymous += 1
            key = f"\0anon{anonymous}"
        first_line = messages[key][0] if key in messages else line
        messages[key] = (first_line, msg)

    for line, obj in iter_json_lines(path, stats):
        if "$rewindTo" in obj:
            target = obj["$rewindTo"]
            if not isinstance(target, str):
                stats.record_error(line, "$rewindTo is not a message id")
                continue
            keys = list(messages)
            cut = keys.index(target) if target in messages else 0
            for key in keys[cut:]:
                del messages[key]
        elif "$set" in obj:
            patch = obj["$set"]
            if isinstance(patch, dict) and isinstance(patch.get("messages"), list):
                messages.clear()
                for msg in patch["messages"]:
                    if isinstance(msg, dict):
                        add(line, msg)
        elif "type" in obj:
            add(line, obj)
        elif "sessionId" in obj:
            _header(obj, stats, b, path)
        else:
            stats.record_error(
                line, "record is neither a header, a message, a $set nor a $rewindTo"
            )
    return list(messages.values())


# A byte-order mark (a file saved by an editor, or by PowerShell): orjson refuses it.
_BOM = b"\xef\xbb\xbf"


def _has_jsonl_records(path: Path) -> bool:
    """True when some line of the file is a JSON object on its own (the JSONL chat format)."""
    with path.open("rb") as handle:
        for raw in handle:
            if not raw.strip():
                continue
            try:
                if isinstance(orjson.loads(raw), dict):
                    return True
            except orjson.JSONDecodeError:
                continue
    return False


_STREAM_SNIFF_LINES = 5


def _first_record_is_stream(path: Path) -> bool:
    """Whether the first JSON object among the file's first lines is a stream-json event."""
    with path.open("rb") as handle:
        for n, raw in enumerate(handle):
            if n >= _STREAM_SNIFF_LINES:
                break
            try:
                obj = orjson.loads(raw.removeprefix(b"\xef\xbb\xbf"))
            except orjson.JSONDecodeError:
                continue
            return isinstance(obj, dict) and is_gemini_stream(obj)
    return False


def iter_gemini(path: Path, stats: ParseStats) -> Iterator[SessionEvent]:
    """Yield the events of a Gemini chat file (single JSON or JSONL; read whole, see above)."""
    b = EventBuilder("gemini", path.stem)
    first: Any = None
    with path.open("rb") as handle:
        for raw in handle:
            if raw.strip():
                try:
                    first = orjson.loads(raw.removeprefix(_BOM))
                except orjson.JSONDecodeError:
                    first = None
                break
    ordered: list[tuple[int, dict[str, Any]]]
    # `--output-format stream-json` saved to a file: told by its first JSON record, which
    # may follow a line the CLI printed first (a banner) or a byte-order mark.
    if _first_record_is_stream(path):
        yield from gemini_stream_events(iter_json_lines(path, stats), b, stats)
        return
    if isinstance(first, dict) and "messages" not in first:
        ordered = _collect_jsonl(path, stats, b)
    else:
        try:
            doc = loads_lenient(path.read_bytes().removeprefix(_BOM))
        except orjson.JSONDecodeError as exc:
            # Not one JSON document: a JSONL file whose first line is broken. Read it line by
            # line so one bad line costs that line, not the whole file.
            if _has_jsonl_records(path):
                yield from _with_models(_collect_jsonl(path, stats, b), stats, b)
                return
            stats.lines += 1
            stats.record_error(1, f"invalid JSON ({exc.msg})")
            return
        stats.lines += 1
        if not isinstance(doc, dict) or not isinstance(doc.get("messages"), list):
            stats.record_error(1, "expected an object with a 'messages' list")
            return
        _header(doc, stats, b, path)
        ordered = [(i + 1, m) for i, m in enumerate(doc["messages"]) if isinstance(m, dict)]
    yield from _with_models(ordered, stats, b)


def _with_models(
    ordered: list[tuple[int, dict[str, Any]]], stats: ParseStats, b: EventBuilder
) -> Iterator[SessionEvent]:
    """The events of ``ordered`` messages, a ``Model: …`` system event first whenever an
    answer comes from another model than the one before."""
    models = ModelChanges()
    for line, message in ordered:
        if type_of(message) in _ASSISTANT_TYPES:
            changed = models.event(
                b, message.get("model"), line=line, timestamp=message.get("timestamp")
            )
            if changed:
                yield changed
        yield from guarded_events(_message_events(message, line, b), line, stats)
