"""Claude Code transcript parser (``~/.claude/projects/<slug>/<session>.jsonl``).

Mapping (one event per content block, so an assistant line with a text block and a
``tool_use`` block gives two events):

* ``user``: string content -> ``user_prompt`` (``isMeta`` lines -> ``system``,
  ``isCompactSummary`` -> ``summary``); ``text`` blocks likewise; ``tool_result`` blocks ->
  ``tool_result`` (``is_error`` from the block, ``tool_name`` from its call); an image ->
  a placeholder in the prompt; a bare string in the list -> text.
* ``assistant``: ``text`` (or a bare string) -> ``assistant_text``; ``tool_use`` and
  ``server_tool_use`` (a tool the API runs, such as web search) -> ``tool_use`` (text = the
  JSON input, ``file_paths`` from path-like keys); ``*_tool_result`` -> ``tool_result``
  (search results as ``title url`` lines); ``thinking`` and anything else -> ``other``.
* ``system``: ``compact_boundary`` -> ``compact_boundary``; ``api_error``/``error`` ->
  ``error``, ``api_refusal`` -> ``error`` with the refusal's category and explanation;
  ``stop_hook_summary`` and old-style hook progress lines -> ``hook``; the rest ->
  ``system``.
* ``attachment``: ``queued_command`` (a prompt typed while the agent worked) ->
  ``user_prompt``; ``hook_*`` -> ``hook`` (``hook_blocking_error`` an error); the others ->
  ``system``, each keeping its text (``content``, ``prompt``, ``snippet``, ``blockingError``,
  a task's status and description, ...). ``summary`` and ``custom-title`` (the title the
  user gave the session) -> ``summary`` (a summary line a resume wrote again is skipped and
  counted in ``stats.duplicates``).
* Command wrappers in user text are not prompts: a slash command (``<command-name>``) or a
  ``!`` shell command (``<bash-input>``) -> ``system`` with raw type ``user/command``; their
  output and caveats (``<local-command-stdout>``, ``<bash-stdout>``, ...) -> ``system`` with
  raw type ``user/command_output``, tags stripped.
* The model answering: a ``system`` event ``Model: <model>`` (raw type ``model_change``)
  before the first assistant record of a model, and again whenever it changes.
* Metadata lines (file-history-snapshot, queue-operation, permission-mode, last-prompt,
  progress, agent names, ...) and unknown types -> ``other`` with empty text (``last-prompt``
  and ``queue-operation`` repeat a prompt already recorded, so their text is not kept).

A sub-agent's transcript (``<session>/subagents/agent-<id>.jsonl``: sidechain records with an
``agentId``) is the session ``agent-<id>``, whose ``ParseStats.parent_session_id`` is the
session that started it (its records carry that one's ``sessionId``).

Records are linked by ``uuid`` / ``parentUuid``. A record whose ``uuid`` was already seen
(a resume can repeat records) is skipped and counted in ``stats.duplicates``. A rewind
leaves a fork: a record with two or more user-prompt children; every branch but the last
written is abandoned, and the events of its records are marked ``abandoned`` (kept, but
not chunked or scored); a rewind to the first prompt writes a second prompt without a
parent, and the first one's branch is abandoned the same way. Parallel tool calls also fork (an assistant record whose children
are the next tool call and a tool result), but never with two prompts, so they are not
mistaken for rewinds. Events are therefore yielded once the whole file is read; the
caller keeps every event of a file in memory anyway.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from selene_dag.sessions.parsers._common import (
    ModelChanges,
    binary_placeholder,
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
_WRAPPER = re.compile(
    r"<(command-name|command-message|command-args|bash-input|bash-stdout|bash-stderr"
    r"|local-command-stdout|local-command-stderr|local-command-caveat)>"
)
_TAG = re.compile(r"</?[a-z-]+>")
# Record ids are UUIDs; placeholders such as "[trimmed]" in hand-trimmed files link nothing.
_RECORD_ID = re.compile(r"[0-9A-Za-z_-]{8,}")
_ATTACHMENT_TEXT = ("content", "prompt", "text", "snippet", "message", "description")


def _tag_text(text: str, tag: str) -> str:
    found = re.search(rf"<{tag}>(.*?)</{tag}>", text, re.DOTALL)
    return found.group(1).strip() if found else ""


def command_wrapper(text: str) -> tuple[str, str] | None:
    """``("user/command", text)`` for a slash or ``!`` shell command the user ran,
    ``("user/command_output", text)`` for its output or a caveat, None for anything else
    (an ordinary prompt). Only text that opens with a wrapper tag counts."""
    head = text.lstrip()
    found = _WRAPPER.match(head)
    if found is None:
        return None
    if "<command-name>" in head:
        name = _tag_text(head, "command-name")
        args = _tag_text(head, "command-args")
        return "user/command", f"{name} {args}".strip()
    if found.group(1) == "bash-input":
        return "user/command", _tag_text(head, "bash-input")
    return "user/command_output", _TAG.sub("", head).strip()


def _user_events(
    obj: dict[str, Any], b: EventBuilder, common: dict[str, Any], tools: dict[str, str]
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
        wrapped = command_wrapper(content) if text_kind == "user_prompt" else None
        if wrapped is not None:
            yield b.make(role="user", kind="system", text=wrapped[1], raw_type=wrapped[0], **common)
            return
        yield b.make(role=role, kind=text_kind, text=content, raw_type="user", **common)
        return
    if not isinstance(content, list):
        yield b.make(role="user", kind="other", text="", raw_type="user", **common)
        return
    for block in content:
        btype = block.get("type") if isinstance(block, dict) else None
        if btype == "text" or isinstance(block, str):
            text = block if isinstance(block, str) else block.get("text") or ""
            wrapped = command_wrapper(text) if text_kind == "user_prompt" else None
            if wrapped is not None:
                yield b.make(
                    role="user", kind="system", text=wrapped[1], raw_type=wrapped[0], **common
                )
                continue
            yield b.make(role=role, kind=text_kind, text=text, raw_type="user/text", **common)
        elif btype == "tool_result":
            yield b.make(
                role="tool",
                kind="tool_result",
                text=to_text(block.get("content")),
                is_error=bool(block.get("is_error")),
                tool_name=tools.get(str(block.get("tool_use_id"))),
                raw_type="user/tool_result",
                **common,
            )
        elif (placeholder := binary_placeholder(block)) is not None:
            # A pasted screenshot is part of the prompt: named, its data never kept.
            yield b.make(
                role=role, kind=text_kind, text=placeholder, raw_type=f"user/{btype}", **common
            )
        else:
            yield b.make(role="user", kind="other", text="", raw_type=f"user/{btype}", **common)


def _api_error_event(obj: dict[str, Any], b: EventBuilder, common: dict[str, Any]) -> SessionEvent:
    """The error event of an assistant record Claude Code wrote for a failed API call."""
    message = obj.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    text = to_text(content) or str(obj.get("error") or "API error")
    return b.make(
        role="system",
        kind="error",
        text=text,
        is_error=True,
        raw_type="assistant/api_error",
        **common,
    )


def _assistant_events(
    obj: dict[str, Any], b: EventBuilder, common: dict[str, Any], tools: dict[str, str]
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
        if btype == "text" or isinstance(block, str):
            yield b.make(
                role="assistant",
                kind="assistant_text",
                text=block if isinstance(block, str) else block.get("text") or "",
                raw_type="assistant/text",
                **common,
            )
        elif btype in ("tool_use", "server_tool_use"):
            tool_input = block.get("input")
            text = dumps(tool_input)
            name = block.get("name")
            if isinstance(name, str) and isinstance(block.get("id"), str):
                tools[block["id"]] = name
            yield b.make(
                role="assistant",
                kind="tool_use",
                text=text,
                tool_name=name,
                file_paths=paths_from_input(tool_input, text),
                raw_type=f"assistant/{btype}",
                **common,
            )
        elif isinstance(btype, str) and btype.endswith("_tool_result"):
            # A tool the API ran itself (web search, web fetch, code execution).
            result = block.get("content")
            yield b.make(
                role="tool",
                kind="tool_result",
                text=server_result_text(result),
                is_error=bool(block.get("is_error"))
                or (isinstance(result, dict) and str(result.get("type")).endswith("_error")),
                tool_name=tools.get(str(block.get("tool_use_id"))),
                raw_type=f"assistant/{btype}",
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


def server_result_text(content: Any) -> str:
    """The text of a server tool's result: a line ``title url`` per search result (their
    encrypted page contents are not text), a run's output, or an error's code."""
    if isinstance(content, list):
        return "\n".join(t for t in (server_result_text(item) for item in content) if t)
    if not isinstance(content, dict):
        return to_text(content)
    if "url" in content:
        return " ".join(to_text(content.get(k)) for k in ("title", "url") if content.get(k))
    if "error_code" in content:
        return f"error: {to_text(content['error_code'])}"
    parts = [to_text(content.get(k)) for k in ("stdout", "stderr") if content.get(k)]
    if parts:
        return "\n".join(parts)
    return to_text({k: v for k, v in content.items() if k != "encrypted_content"})


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
        if obj.get("apiRefusalExplanation"):
            # The refusal's reason is in its own field; ``content`` only says "refusal".
            category = to_text(obj.get("apiRefusalCategory"))
            reason = to_text(obj.get("apiRefusalExplanation"))
            text = f"API refusal ({category}): {reason}" if category else f"API refusal: {reason}"
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


def _attachment_text(att: dict[str, Any]) -> str:
    if att.get("type") == "task_status":
        parts = [att.get("status"), att.get("description"), att.get("deltaSummary")]
        return ": ".join(str(p) for p in parts if p and p != "None")
    if att.get("type") == "invoked_skills" and isinstance(att.get("skills"), list):
        return "\n".join(to_text(skill) for skill in att["skills"] if isinstance(skill, dict))
    for key in _ATTACHMENT_TEXT:
        text = to_text(att.get(key))
        if text:
            return text
    return ""


def _blocking_error(att: dict[str, Any]) -> str:
    error = att.get("blockingError")
    if isinstance(error, dict):
        parts = [to_text(error.get("blockingError")), to_text(error.get("command"))]
        return "\n".join(p for p in parts if p)
    return to_text(error)


def _attachment_event(obj: dict[str, Any], b: EventBuilder, common: dict[str, Any]) -> SessionEvent:
    att = obj.get("attachment") if isinstance(obj.get("attachment"), dict) else {}
    atype = str(att.get("type", ""))
    raw_type = f"attachment/{atype}"
    if atype == "queued_command":
        text = to_text(att.get("prompt")) or to_text(att.get("content"))
        return b.make(role="user", kind="user_prompt", text=text, raw_type=raw_type, **common)
    if atype.startswith("hook"):
        text = "\n".join(
            t
            for t in (
                to_text(att.get("content")),
                to_text(att.get("stdout")),
                to_text(att.get("stderr")),
                _blocking_error(att),
            )
            if t
        )
        is_error = atype == "hook_blocking_error"
        return b.make(
            role="system", kind="hook", text=text, is_error=is_error, raw_type=raw_type, **common
        )
    paths = (att["filename"],) if isinstance(att.get("filename"), str) else ()
    return b.make(
        role="system",
        kind="system",
        text=_attachment_text(att),
        file_paths=paths,
        raw_type=raw_type,
        **common,
    )


def _is_prompt_record(obj: dict[str, Any]) -> bool:
    """A user record the user typed (not a tool result, meta line or compaction summary)."""
    if obj.get("isMeta") or obj.get("isCompactSummary") or obj.get("isSidechain"):
        return False
    message = obj.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return True
    return isinstance(content, list) and not any(
        isinstance(block, dict) and block.get("type") == "tool_result" for block in content
    )


# The parent of the prompts that open the conversation (no record id is empty).
_ROOT = ""


def abandoned_records(parents: dict[str, str | None], prompts: dict[str, list[str]]) -> set[str]:
    """Uuids of the records on rewound branches: for every record with two or more prompt
    children (``prompts``: parent uuid -> child prompt uuids in file order), each child but
    the last, and everything descending from it (``parents``: uuid -> parent uuid)."""
    roots = {child for children in prompts.values() if len(children) > 1 for child in children[:-1]}
    if not roots:
        return set()
    children: dict[str, list[str]] = {}
    for uuid, parent in parents.items():
        if parent is not None:
            children.setdefault(parent, []).append(uuid)
    out: set[str] = set()
    stack = list(roots)
    while stack:
        uuid = stack.pop()
        if uuid in out:
            continue
        out.add(uuid)
        stack.extend(children.get(uuid, ()))
    return out


def iter_claude(path: Path, stats: ParseStats) -> Iterator[SessionEvent]:
    """The events of a Claude Code JSONL transcript (see the module docstring), yielded
    once the file is read so that rewound branches can be marked."""
    b = EventBuilder("claude", path.stem)
    events: list[tuple[str | None, SessionEvent]] = []
    seen: set[str] = set()
    parents: dict[str, str | None] = {}
    prompts: dict[str, list[str]] = {}
    models = ModelChanges()
    tools: dict[str, str] = {}  # tool call id -> tool name, named again on its result
    summaries: set[str] = set()
    for line, obj in iter_json_lines(path, stats):
        rtype = type_of(obj)
        uuid = obj.get("uuid")
        if not isinstance(uuid, str) or not _RECORD_ID.fullmatch(uuid):
            uuid = None
        if uuid is not None:
            if uuid in seen:
                stats.duplicates += 1
                continue
            seen.add(uuid)
            parent = obj.get("parentUuid")
            parents[uuid] = parent if isinstance(parent, str) else None
            if rtype == "user" and _is_prompt_record(obj):
                # A rewind to the very first prompt starts a second root: the roots'
                # prompts are siblings as a fork's are.
                prompts.setdefault(parent if isinstance(parent, str) else _ROOT, []).append(uuid)
        sid = obj.get("sessionId")
        if isinstance(sid, str) and stats.session_id is None:
            agent = obj.get("agentId")
            if obj.get("isSidechain") is True and isinstance(agent, str) and agent:
                # A sub-agent's transcript carries its parent's session id: the sub-agent
                # is its own session (named as its file is), started by that one.
                stats.parent_session_id = sid
                sid = f"agent-{agent}"
            stats.session_id = sid
            b.session_id = sid
        if stats.project is None and isinstance(obj.get("cwd"), str):
            stats.project = obj["cwd"]
        common = {
            "line": line,
            "timestamp": obj.get("timestamp"),
            "is_sidechain": bool(obj.get("isSidechain")),
        }
        if rtype == "user":
            found = guarded_events(_user_events(obj, b, common, tools), line, stats)
        elif rtype == "assistant" and obj.get("isApiErrorMessage"):
            # Claude Code's own reply when the API failed ("API Error: 529 Overloaded",
            # "Please run /login"), under the model "<synthetic>": an error, not an answer.
            found = guarded_events((_api_error_event(obj, b, common) for _ in (0,)), line, stats)
        elif rtype == "assistant":
            message = obj.get("message")
            model = message.get("model") if isinstance(message, dict) else None
            changed = models.event(b, model, **common)
            found = [changed] if changed else []
            found += guarded_events(_assistant_events(obj, b, common, tools), line, stats)
        elif rtype == "system":
            found = guarded_events((_system_event(obj, b, common) for _ in (0,)), line, stats)
        elif rtype == "attachment":
            found = guarded_events((_attachment_event(obj, b, common) for _ in (0,)), line, stats)
        elif rtype in ("summary", "custom-title"):
            # Both name the session: a generated summary line, or the title the user set.
            title = to_text(obj.get("summary") if rtype == "summary" else obj.get("customTitle"))
            if rtype == "summary" and title in summaries:
                # Each resume writes the session's summaries again.
                stats.duplicates += 1
                continue
            if rtype == "summary":
                summaries.add(title)
            found = [
                b.make(
                    role="system",
                    kind="summary",
                    text=title,
                    raw_type=rtype,
                    **common,
                )
            ]
        else:
            found = [
                b.make(
                    role="system", kind="other", text="", raw_type=str(obj.get("type")), **common
                )
            ]
        events.extend((uuid, event) for event in found)
    abandoned = abandoned_records(parents, prompts)
    for uuid, event in events:
        if uuid is not None and uuid in abandoned:
            event.abandoned = True
            stats.abandoned += 1
        yield event
