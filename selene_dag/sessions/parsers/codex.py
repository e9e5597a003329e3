"""Codex CLI rollout parser (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``).

Three layouts are read: the first (one JSON document ``{session, items}``, written by the
TypeScript CLI as ``rollout-*.json``), the current envelope ``{timestamp, type, payload}`` (``session_meta``,
``turn_context``, ``response_item``, ``event_msg``, ``compacted``) and the legacy layout
(first line ``{id, timestamp, instructions, git}``, then bare items such as
``{type: "message", ...}`` and ``{"record_type": "state"}``).

Duplicated content: Codex writes the same prompt, reply and reasoning summary twice — as a
``response_item`` (what the model saw) and as an ``event_msg`` (``user_message``,
``agent_message``, ``agent_reasoning``, what the UI showed), in either order. We keep
whichever copy comes first and skip its twin from the other source (matched on channel and
exact text, within a bounded window), counting skips in ``ParseStats.duplicates``. A prompt
genuinely sent twice is kept twice. Other ``event_msg`` echoes of tool calls
(``exec_command_end``, ``patch_apply_end``, ``mcp_tool_call_end``...) and the
``item_completed`` copies of items duplicate the ``function_call``/``function_call_output``
items, so they become ``other`` with no text; a completed ``Plan`` item keeps its text.

A ``turn_context`` that sets a new model becomes a ``system`` event ``Model: <model>
(<effort>)``; the others carry no text.

A tool's output names the tool of its call (``call_id``). Reasoning with no summary keeps
its written-out ``content`` (models that show their reasoning). A review keeps its verdict
and findings (``exited_review_mode``).

Errors carry their message wherever Codex put it (``message``, ``error.message``, an
``error`` string, ``codex_error_info``). A ``plan_update`` keeps its explanation and steps.
A ``compacted`` record keeps its message and the texts of its ``replacement_history`` that
the file does not already hold (the history repeats earlier prompts verbatim; what is new
is the summary written at compaction).
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from selene_dag.sessions.parsers._common import (
    ModelChanges,
    binary_placeholder,
    dumps,
    guarded_events,
    iter_json_lines,
    loads_lenient,
    paths_from_input,
    to_text,
    type_of,
)
from selene_dag.sessions.parsers.headless import codex_exec_events, is_codex_exec
from selene_dag.sessions.parsers.model import EventBuilder, ParseStats, SessionEvent

_CONTEXT_PREFIXES = ("<environment_context>", "<user_instructions>", "# AGENTS.md", "<permissions")
_TOOL_CALLS = {"function_call", "custom_tool_call", "local_shell_call"}
_TOOL_OUTPUTS = {"function_call_output", "custom_tool_call_output", "tool_search_output"}
_OTHER_CALLS = {"web_search_call", "tool_search_call", "image_generation_call"}
_WINDOW = 512


class _Twins:
    """Pairs records that carry the same text from the two sources (response_item/event_msg)."""

    def __init__(self) -> None:
        self._pending: OrderedDict[tuple[str, str], list[str]] = OrderedDict()

    def is_twin(self, channel: str, text: str, source: str) -> bool:
        """True when an earlier record from the other source had this text (consumes it)."""
        key = (channel, text.strip())
        sources = self._pending.get(key)
        if sources:
            for i, s in enumerate(sources):
                if s != source:
                    del sources[i]
                    if not sources:
                        del self._pending[key]
                    return True
        self._pending.setdefault(key, []).append(source)
        self._pending.move_to_end(key)
        while len(self._pending) > _WINDOW:
            self._pending.popitem(last=False)
        return False


# How Codex's own tools report a failure in plain text, at the start of their output:
# "Exit code: 2" (shell), "tool call error: …", "error: Failed to find expected lines …"
# (apply_patch), "failed in sandbox …", "patch rejected …", "apply_patch verification failed";
# exec_command's output after its header ("Chunk ID: …\nWall time: …\nProcess exited with
# code 1\n…Output:"), its success flag set all the same.
_TEXT_FAILURE = re.compile(
    r"\A\s*(?:(?:chunk id|wall time):[^\n]*\n){0,3}"
    r"(?:exit code:\s*(?!0\b)-?\d+|process exited with code\s*(?!0\b)-?\d+|"
    r"tool call error|error:|failed in sandbox|patch rejected|apply_patch verification failed)",
    re.IGNORECASE,
)


# The texts Codex writes around a pasted image's part ("<image name=[Image #1]>", "</image>"):
# kept, the prompt's copy in the item differed from its event's and both were stored.
_IMAGE_TAG = re.compile(r"\s*</?image\b[^>]*>\s*\Z")


def failed_in_text(text: str) -> bool:
    """True when a tool output's opening says it failed, the way Codex's tools write it."""
    return bool(_TEXT_FAILURE.match(text[:300]))


def _output_error(payload: dict[str, Any], raw: Any) -> tuple[str, bool]:
    """Text and error flag of a tool output (string JSON ``{output, metadata.exit_code}``;
    a plain-text output whose opening reports a failure counts as an error too)."""
    is_error = payload.get("success") is False or payload.get("status") == "failed"
    if isinstance(raw, str) and raw.startswith("{"):
        try:
            parsed = orjson.loads(raw)
        except orjson.JSONDecodeError:
            return raw, is_error
        if isinstance(parsed, dict):
            meta = parsed.get("metadata")
            code = meta.get("exit_code") if isinstance(meta, dict) else None
            if isinstance(code, int) and code != 0:
                is_error = True
            text = to_text(parsed.get("output", parsed))
            return text, is_error or failed_in_text(text)
    text = to_text(raw)
    return text, is_error or failed_in_text(text)


def _item_events(
    item: dict[str, Any],
    b: EventBuilder,
    twins: _Twins,
    stats: ParseStats,
    common: dict[str, Any],
    tools: dict[str, str],
) -> Iterator[SessionEvent]:
    itype = type_of(item)
    raw_type = f"response_item/{itype}"
    if itype == "message":
        role = item.get("role")
        content = item.get("content")
        blocks = content if isinstance(content, list) else []
        said = to_text(
            [
                c
                for c in blocks
                if isinstance(c, dict) and "text" in c and not _IMAGE_TAG.match(str(c["text"]))
            ]
        )
        # An image as its placeholder (it vanished without a word); twins match on the
        # words, which both copies hold.
        text = _with_images(said, [c for c in blocks if isinstance(c, dict)])
        if role == "user":
            if text.lstrip().startswith(_CONTEXT_PREFIXES):
                yield b.make(role="system", kind="system", text=text, raw_type=raw_type, **common)
            elif twins.is_twin("user", said, "item"):
                stats.duplicates += 1
            else:
                yield b.make(
                    role="user", kind="user_prompt", text=text, raw_type=raw_type, **common
                )
        elif role == "assistant":
            if twins.is_twin("assistant", text, "item"):
                stats.duplicates += 1
            else:
                yield b.make(
                    role="assistant", kind="assistant_text", text=text, raw_type=raw_type, **common
                )
        else:
            yield b.make(role="system", kind="system", text=text, raw_type=raw_type, **common)
    elif itype == "reasoning":
        summaries = [s.get("text", "") for s in item.get("summary") or [] if isinstance(s, dict)]
        if not summaries:
            # A model that writes its reasoning out rather than a summary of it.
            content = item.get("content")
            said = (
                to_text([c for c in content if isinstance(c, dict)])
                if isinstance(content, list)
                else ""
            )
            summaries = [said] if said else []
        if not summaries:
            yield b.make(role="assistant", kind="other", text="", raw_type=raw_type, **common)
        for text in summaries:
            if twins.is_twin("reasoning", text, "item"):
                stats.duplicates += 1
            else:
                yield b.make(role="assistant", kind="other", text=text, raw_type=raw_type, **common)
    elif itype in _TOOL_CALLS:
        raw_args = item.get("arguments", item.get("input", item.get("action")))
        text = raw_args if isinstance(raw_args, str) else dumps(raw_args)
        try:
            parsed = orjson.loads(text) if text.startswith("{") else None
        except orjson.JSONDecodeError:
            parsed = None
        name = item.get("name") or itype
        if isinstance(item.get("call_id"), str) and isinstance(name, str):
            tools[item["call_id"]] = name
        yield b.make(
            role="assistant",
            kind="tool_use",
            text=text,
            tool_name=name,
            file_paths=paths_from_input(parsed, text),
            raw_type=raw_type,
            **common,
        )
    elif itype in _OTHER_CALLS:
        if isinstance(item.get("call_id"), str):
            tools[item["call_id"]] = itype.removesuffix("_call")
        text = dumps(
            item.get("action") or item.get("arguments") or item.get("revised_prompt") or {}
        )
        name = itype.removesuffix("_call")
        yield b.make(
            role="assistant",
            kind="tool_use",
            text=text,
            tool_name=name,
            raw_type=raw_type,
            **common,
        )
    elif itype in _TOOL_OUTPUTS:
        raw = item.get("output", item.get("tools"))
        text, is_error = _output_error(item, raw)
        yield b.make(
            role="tool",
            kind="tool_result",
            text=text,
            is_error=is_error,
            tool_name=tools.get(str(item.get("call_id"))),
            raw_type=raw_type,
            **common,
        )
    elif itype == "agent_message":
        yield b.make(
            role="assistant",
            kind="other",
            text=to_text(item.get("content")),
            raw_type=raw_type,
            **common,
        )
    else:
        yield b.make(role="system", kind="other", text="", raw_type=raw_type, **common)


def error_text(payload: dict[str, Any]) -> str:
    """The message of an error event, wherever it is: ``message``, ``error.message``, an
    ``error`` string, or ``codex_error_info``."""
    error = payload.get("error")
    for value in (
        payload.get("message"),
        error.get("message") if isinstance(error, dict) else error,
        payload.get("codex_error_info"),
    ):
        text = to_text(value).strip() if value is not None else ""
        if text:
            return text
    return dumps(error) if isinstance(error, dict) else ""


def plan_text(payload: dict[str, Any]) -> str:
    """A ``plan_update`` as text: the explanation, then one ``[status] step`` line per step."""
    lines = [to_text(payload.get("explanation"))]
    for item in payload.get("plan") or []:
        if isinstance(item, dict):
            lines.append(f"[{item.get('status', '?')}] {to_text(item.get('step'))}")
    return "\n".join(line for line in lines if line)


def _is_plan(item: Any) -> bool:
    return isinstance(item, dict) and str(item.get("type", "")).lower() == "plan"


def compacted_text(payload: dict[str, Any], seen: set[str]) -> str:
    """A ``compacted`` record's message, then the texts of its replacement history that
    are not in ``seen`` (texts of prompts and replies already in the file)."""
    parts = [to_text(payload.get("message")).strip()]
    history = payload.get("replacement_history")
    for item in history if isinstance(history, list) else []:
        if not isinstance(item, dict) or type_of(item) != "message":
            continue
        blocks = item.get("content") if isinstance(item.get("content"), list) else []
        text = to_text([c for c in blocks if isinstance(c, dict) and "text" in c]).strip()
        if text and text not in seen and not text.startswith(_CONTEXT_PREFIXES):
            parts.append(text)
            seen.add(text)
    return "\n\n".join(dict.fromkeys(p for p in parts if p))


def review_text(output: Any) -> str:
    """A review's verdict as text: its overall correctness and explanation, then one line
    per finding (``[P1] title (path:start-end)`` and its body)."""
    if not isinstance(output, dict):
        return "Review ended"
    head = ": ".join(
        t
        for t in (
            to_text(output.get("overall_correctness")),
            to_text(output.get("overall_explanation")),
        )
        if t
    )
    lines = [f"Review: {head}" if head else "Review"]
    for finding in output.get("findings") or []:
        if not isinstance(finding, dict):
            continue
        where = finding.get("code_location")
        place = ""
        if isinstance(where, dict):
            span = where.get("line_range")
            place = to_text(where.get("absolute_file_path"))
            if isinstance(span, dict) and place:
                place += f":{span.get('start', '?')}-{span.get('end', '?')}"
        priority = finding.get("priority")
        title = to_text(finding.get("title"))
        # The model usually writes the priority into the title already.
        tag = f"[P{priority}] " if isinstance(priority, int) and not title.startswith("[") else ""
        lines.append(f"- {tag}{title}" + (f" ({place})" if place else ""))
        body = to_text(finding.get("body")).strip()
        if body:
            lines.append(f"  {body}")
    return "\n".join(lines)


def _with_images(text: str, blocks: list[dict[str, Any]]) -> str:
    """``text`` followed by a placeholder line per image block of ``blocks``."""
    shown = [p for p in (binary_placeholder(block) for block in blocks) if p]
    return "\n".join([text, *shown]) if shown and text else "\n".join(shown) or text


def _event_msg(
    payload: dict[str, Any],
    b: EventBuilder,
    twins: _Twins,
    stats: ParseStats,
    common: dict[str, Any],
) -> Iterator[SessionEvent]:
    etype = type_of(payload)
    raw_type = f"event_msg/{etype}"
    if etype in ("user_message", "agent_message", "agent_reasoning"):
        channel, role, kind = {
            "user_message": ("user", "user", "user_prompt"),
            "agent_message": ("assistant", "assistant", "assistant_text"),
            "agent_reasoning": ("reasoning", "assistant", "other"),
        }[etype]
        said = to_text(payload.get("message", payload.get("text")))
        if twins.is_twin(channel, said, "event"):
            stats.duplicates += 1
            return
        images = payload.get("images") if etype == "user_message" else None
        urls = (
            [{"image_url": url} for url in images if isinstance(url, str)]
            if isinstance(images, list)
            else []
        )
        text = _with_images(said, urls)
        yield b.make(role=role, kind=kind, text=text, raw_type=raw_type, **common)
    elif etype in ("error", "stream_error") or etype.endswith("_error"):
        yield b.make(
            role="system",
            kind="error",
            text=error_text(payload),
            is_error=True,
            raw_type=raw_type,
            **common,
        )
    elif etype == "plan_update":
        yield b.make(
            role="assistant", kind="system", text=plan_text(payload), raw_type=raw_type, **common
        )
    elif etype == "item_completed" and _is_plan(payload.get("item")):
        text = to_text(payload["item"].get("text"))
        yield b.make(
            role="assistant", kind="assistant_text", text=text, raw_type=raw_type, **common
        )
    elif etype == "exited_review_mode":
        text = review_text(payload.get("review_output"))
        yield b.make(
            role="assistant", kind="assistant_text", text=text, raw_type=raw_type, **common
        )
    elif etype == "entered_review_mode":
        hint = to_text(payload.get("user_facing_hint")) or to_text(payload.get("target"))
        text = f"Review started: {hint}" if hint else "Review started"
        yield b.make(role="system", kind="system", text=text, raw_type=raw_type, **common)
    elif etype == "context_compacted":
        yield b.make(role="system", kind="compact_boundary", text="", raw_type=raw_type, **common)
    elif etype == "turn_aborted":
        text = f"turn aborted: {payload.get('reason', '')}"
        yield b.make(role="system", kind="system", text=text, raw_type=raw_type, **common)
    else:
        yield b.make(role="system", kind="other", text="", raw_type=raw_type, **common)


# The first Codex CLI (TypeScript) saved each session as one JSON document.
_DOCUMENT = re.compile(
    rb'\A(?:\xef\xbb\xbf)?\s*\{\s*"session"\s*:\s*\{\s*"(?:timestamp|id)"\s*:\s*"'
)


def is_rollout_document(head: bytes) -> bool:
    """True when ``head`` (a file's first bytes) opens a rollout saved as one JSON document
    (``{"session": {timestamp, id, instructions}, "items": [...]}``)."""
    return _DOCUMENT.match(head) is not None


def _document_events(path: Path, b: EventBuilder, stats: ParseStats) -> Iterator[SessionEvent]:
    """The events of a rollout saved as one JSON document: its items as the legacy layout's
    bare items, each numbered by its place in ``items``, all at the session's time."""
    stats.lines += 1
    try:
        doc = loads_lenient(path.read_bytes().removeprefix(b"\xef\xbb\xbf"))
    except orjson.JSONDecodeError as exc:
        stats.record_error(1, f"invalid JSON ({exc.msg})")
        return
    session = doc.get("session") if isinstance(doc, dict) else None
    items = doc.get("items") if isinstance(doc, dict) else None
    if not isinstance(session, dict) or not isinstance(items, list):
        stats.record_error(1, "expected an object with a 'session' object and an 'items' list")
        return
    if isinstance(session.get("id"), str):
        stats.session_id = b.session_id = session["id"]
    ts = session.get("timestamp")
    yield b.make(
        role="system",
        kind="system",
        text="Codex session (legacy format)",
        raw_type="legacy_meta",
        line=0,
        timestamp=ts,
    )
    twins, tools = _Twins(), {}
    for number, item in enumerate(items, 1):
        if not isinstance(item, dict):
            stats.record_error(number, f"expected a JSON object, got {type(item).__name__}")
            continue
        common = {"line": number, "timestamp": ts}
        yield from guarded_events(_item_events(item, b, twins, stats, common, tools), number, stats)


def iter_codex(path: Path, stats: ParseStats) -> Iterator[SessionEvent]:
    """Stream the events of a Codex rollout (current or legacy layout; see module docstring)."""
    b = EventBuilder("codex", path.stem)
    with path.open("rb") as handle:
        if is_rollout_document(handle.read(4096)):
            yield from _document_events(path, b, stats)
            return
    twins = _Twins()
    seen: set[str] = set()  # texts of prompts and replies, for compacted histories
    models = ModelChanges()
    tools: dict[str, str] = {}  # call id -> tool name, named again on its output
    legacy_ts: object = None
    first = True
    for line, obj in iter_json_lines(path, stats):
        is_first, first = first, False
        rtype = obj.get("type")
        payload = obj.get("payload")
        ts = obj.get("timestamp")
        common = {"line": line, "timestamp": ts if ts is not None else legacy_ts}
        if isinstance(payload, dict) and isinstance(rtype, str):
            if rtype == "session_meta":
                if stats.session_id is None and isinstance(payload.get("id"), str):
                    stats.session_id = b.session_id = payload["id"]
                if stats.project is None and isinstance(payload.get("cwd"), str):
                    stats.project = payload["cwd"]
                text = f"Codex session in {payload.get('cwd', '?')} (cli {payload.get('cli_version', '?')})"
                yield b.make(role="system", kind="system", text=text, raw_type=rtype, **common)
            elif rtype == "turn_context" and (
                changed := models.event(
                    b,
                    payload.get("model"),
                    detail=str(payload.get("effort") or ""),
                    raw_type=rtype,
                    **common,
                )
            ):
                yield changed
            elif rtype == "response_item":
                for event in guarded_events(
                    _item_events(payload, b, twins, stats, common, tools), line, stats
                ):
                    if event.kind in ("user_prompt", "assistant_text"):
                        seen.add(event.text.strip())
                    yield event
            elif rtype == "event_msg":
                for event in guarded_events(
                    _event_msg(payload, b, twins, stats, common), line, stats
                ):
                    if event.kind in ("user_prompt", "assistant_text"):
                        seen.add(event.text.strip())
                    yield event
            elif rtype == "compacted":
                text = compacted_text(payload, seen)
                yield b.make(
                    role="system", kind="compact_boundary", text=text, raw_type=rtype, **common
                )
            else:
                yield b.make(role="system", kind="other", text="", raw_type=rtype, **common)
        elif rtype is None and "record_type" not in obj and "id" in obj and is_first:
            # Legacy header line: {id, timestamp, instructions, git}.
            legacy_ts = ts
            if isinstance(obj.get("id"), str):
                stats.session_id = b.session_id = obj["id"]
            common["timestamp"] = legacy_ts
            yield b.make(
                role="system",
                kind="system",
                text="Codex session (legacy format)",
                raw_type="legacy_meta",
                **common,
            )
        elif is_codex_exec(obj):  # `codex exec --json` printed to a file
            yield from guarded_events(codex_exec_events(obj, b, stats, line), line, stats)
        elif rtype == "error" and isinstance(obj.get("message"), str) and len(obj) == 2:
            yield b.make(
                role="system",
                kind="error",
                text=obj["message"],
                is_error=True,
                raw_type=rtype,
                **common,
            )
        elif "record_type" in obj:
            yield b.make(
                role="system",
                kind="other",
                text="",
                raw_type=f"record_type/{obj['record_type']}",
                **common,
            )
        elif isinstance(rtype, str):
            yield from guarded_events(
                _item_events(obj, b, twins, stats, common, tools), line, stats
            )
        else:
            stats.record_error(line, "record has neither 'type' nor 'payload'")
