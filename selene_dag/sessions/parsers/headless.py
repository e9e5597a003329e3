"""The event streams the agents print when run headless (seed 003's parser mapping):
``codex exec --json`` and ``gemini --output-format stream-json``, saved to a file.

Codex (one JSON object per line, no timestamps, no prompt): ``thread.started`` names the
thread (a ``system`` event); ``item.completed`` carries each finished item:
``agent_message`` and ``reasoning`` -> ``assistant_text``; ``command_execution`` -> a
``tool_use`` (the command) and a ``tool_result`` (its output; an error for a non-zero exit
code or a failed or declined command); ``file_change`` -> a ``tool_use`` naming each
change, its paths as file paths; ``mcp_tool_call`` -> ``tool_use`` and ``tool_result``;
``web_search`` -> ``tool_use``; ``todo_list`` -> the plan (``system``, checkboxes);
``error`` -> ``error``. ``turn.completed`` records the turn's token usage (``other``),
``turn.failed`` and ``error`` are errors; ``turn.started``, ``item.started`` and
``item.updated`` are superseded by the completed item and give no event.

Gemini (one JSON object per line): ``init`` names the session and model (``system``);
``message`` -> ``user_prompt`` or ``assistant_text``, consecutive ``delta`` chunks of one
answer joined into one event; ``tool_use`` -> ``tool_use`` (its parameters as JSON);
``tool_result`` -> ``tool_result`` (an error when its status is ``error``), named by the
call with its ``tool_id``; ``error`` -> ``error``; ``result`` -> ``other`` (an ``error``
when its status is not ``success``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from selene_dag.sessions.parsers._common import dumps, guarded_events, paths_from_input, to_text
from selene_dag.sessions.parsers.model import EventBuilder, ParseStats, SessionEvent

CODEX_EXEC_TYPES = frozenset(
    {
        "thread.started",
        "turn.started",
        "turn.completed",
        "turn.failed",
        "item.started",
        "item.updated",
        "item.completed",
    }
)
GEMINI_STREAM_TYPES = frozenset({"init", "message", "tool_use", "tool_result", "result"})
_FAILED = ("failed", "declined")


def is_codex_exec(obj: dict[str, Any]) -> bool:
    """Whether a record is an event of ``codex exec --json``."""
    kind = obj.get("type")
    return isinstance(kind, str) and kind in CODEX_EXEC_TYPES and "payload" not in obj


def is_gemini_stream(obj: dict[str, Any]) -> bool:
    """Whether a record is an event of ``gemini --output-format stream-json``."""
    kind = obj.get("type")
    if not isinstance(kind, str):
        return False
    if kind == "init":
        return "session_id" in obj and "model" in obj
    if kind in ("tool_use", "tool_result"):
        return "tool_id" in obj
    if kind == "message":
        return obj.get("role") in ("user", "assistant") and "content" in obj and "id" not in obj
    if kind == "result":
        return "stats" in obj or "status" in obj
    return False


def codex_exec_events(
    obj: dict[str, Any], b: EventBuilder, stats: ParseStats, line: int
) -> Iterator[SessionEvent]:
    """The events of one ``codex exec --json`` record (see the module docstring), made as
    they are read: a record of unexpected shape raises while its events are taken, which
    ``guarded_events`` counts as that record's error."""
    yield from _codex_exec_events(obj, b, stats, line)


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _codex_exec_events(
    obj: dict[str, Any], b: EventBuilder, stats: ParseStats, line: int
) -> list[SessionEvent]:
    kind = str(obj.get("type"))
    common: dict[str, Any] = {"line": line, "timestamp": None, "raw_type": kind}
    if kind == "thread.started":
        thread = obj.get("thread_id")
        if isinstance(thread, str) and stats.session_id is None:
            stats.session_id = b.session_id = thread
        return [b.make(role="system", kind="system", text=f"Codex exec thread {thread}", **common)]
    if kind == "turn.completed":
        usage = obj.get("usage") if isinstance(obj.get("usage"), dict) else {}
        text = ", ".join(f"{k} {v}" for k, v in usage.items() if isinstance(v, int | float))
        return [b.make(role="system", kind="other", text=f"turn tokens: {text}".strip(), **common)]
    if kind == "turn.failed":
        error = obj.get("error") if isinstance(obj.get("error"), dict) else {}
        text = to_text(error.get("message")) or "the turn failed"
        return [b.make(role="system", kind="error", text=text, is_error=True, **common)]
    if kind != "item.completed":
        return []
    item = obj.get("item")
    if not isinstance(item, dict):
        stats.record_error(line, "item.completed without an item")
        return []
    itype = str(item.get("type", ""))
    common["raw_type"] = f"item/{itype}"
    failed = item.get("status") in _FAILED
    if itype in ("agent_message", "reasoning"):
        text = to_text(item.get("text"))
        return (
            [b.make(role="assistant", kind="assistant_text", text=text, **common)] if text else []
        )
    if itype == "command_execution":
        command = to_text(item.get("command"))
        code = item.get("exit_code")
        error = failed or (isinstance(code, int) and code != 0)
        output = to_text(item.get("aggregated_output"))
        if isinstance(code, int) and code != 0:
            output = f"{output}\n(exit code {code})".strip()
        return [
            b.make(role="assistant", kind="tool_use", text=command, tool_name="shell", **common),
            b.make(
                role="tool",
                kind="tool_result",
                text=output,
                tool_name="shell",
                is_error=error,
                **common,
            ),
        ]
    if itype == "file_change":
        changes = [c for c in _list(item.get("changes")) if isinstance(c, dict)]
        lines = [f"{c.get('kind', 'update')} {c.get('path', '')}".strip() for c in changes]
        paths = tuple(str(c["path"]) for c in changes if isinstance(c.get("path"), str))
        return [
            b.make(
                role="assistant",
                kind="tool_use",
                text="\n".join(lines) + ("\n(failed)" if failed else ""),
                tool_name="apply_patch",
                file_paths=paths,
                is_error=failed,
                **common,
            )
        ]
    if itype == "mcp_tool_call":
        name = f"{item.get('server', 'mcp')}.{item.get('tool', '?')}"
        arguments = item.get("arguments")
        result = item.get("result") if isinstance(item.get("result"), dict) else {}
        error = item.get("error") if isinstance(item.get("error"), dict) else None
        output = to_text(error.get("message")) if error else to_text(result.get("content"))
        return [
            b.make(
                role="assistant",
                kind="tool_use",
                text=dumps(arguments) if arguments is not None else "",
                tool_name=name,
                file_paths=paths_from_input(arguments),
                **common,
            ),
            b.make(
                role="tool",
                kind="tool_result",
                text=output,
                tool_name=name,
                is_error=bool(error) or failed,
                **common,
            ),
        ]
    if itype == "web_search":
        query = to_text(item.get("query"))
        return [
            b.make(role="assistant", kind="tool_use", text=query, tool_name="web_search", **common)
        ]
    if itype == "todo_list":
        steps = [s for s in _list(item.get("items")) if isinstance(s, dict)]
        text = "\n".join(
            f"[{'x' if s.get('completed') else ' '}] {to_text(s.get('text'))}" for s in steps
        )
        return [b.make(role="assistant", kind="system", text=text, **common)] if text else []
    if itype == "error":
        text = to_text(item.get("message"))
        return [b.make(role="system", kind="error", text=text, is_error=True, **common)]
    return [b.make(role="system", kind="other", text="", **common)]


def gemini_stream_events(
    records: Iterator[tuple[int, dict[str, Any]]], b: EventBuilder, stats: ParseStats
) -> Iterator[SessionEvent]:
    """The events of a ``gemini --output-format stream-json`` file's records; a record of
    unexpected shape is counted as an error and costs that record only."""
    tools: dict[str, str] = {}
    pending: tuple[int, Any, list[str]] | None = None  # an answer's delta chunks so far

    def flush() -> list[SessionEvent]:
        nonlocal pending
        if pending is None:
            return []
        line, when, parts = pending
        pending = None
        text = "".join(parts).strip()
        if not text:
            return []
        made = b.make(
            role="assistant",
            kind="assistant_text",
            text=text,
            line=line,
            timestamp=when,
            raw_type="message/assistant",
        )
        return [made]

    for line, obj in records:
        if obj.get("type") == "message" and obj.get("role") == "assistant" and obj.get("delta"):
            text = to_text(obj.get("content"))
            if pending is None:
                pending = (line, obj.get("timestamp"), [text])
            else:
                pending[2].append(text)
            continue
        yield from flush()
        yield from guarded_events(_gemini_record(obj, line, b, stats, tools), line, stats)
    yield from flush()


def _gemini_record(
    obj: dict[str, Any], line: int, b: EventBuilder, stats: ParseStats, tools: dict[str, str]
) -> Iterator[SessionEvent]:
    """The events of one stream-json record other than an answer's delta chunk."""
    kind = obj.get("type")
    common: dict[str, Any] = {
        "line": line,
        "timestamp": obj.get("timestamp"),
        "raw_type": str(kind),
    }
    if kind == "init":
        session = obj.get("session_id")
        if isinstance(session, str) and stats.session_id is None:
            stats.session_id = b.session_id = session
        text = f"Gemini CLI headless session, model {obj.get('model', '?')}"
        yield b.make(role="system", kind="system", text=text, **common)
    elif kind == "message":
        text = to_text(obj.get("content"))
        user = obj.get("role") == "user"
        common["raw_type"] = f"message/{obj.get('role')}"
        if text:
            yield b.make(
                role="user" if user else "assistant",
                kind="user_prompt" if user else "assistant_text",
                text=text,
                **common,
            )
    elif kind == "tool_use":
        name = str(obj.get("tool_name") or "?")
        tools[str(obj.get("tool_id"))] = name
        parameters = obj.get("parameters")
        yield b.make(
            role="assistant",
            kind="tool_use",
            text=dumps(parameters) if parameters is not None else "",
            tool_name=name,
            file_paths=paths_from_input(parameters),
            **common,
        )
    elif kind == "tool_result":
        error = obj.get("error") if isinstance(obj.get("error"), dict) else None
        output = to_text(obj.get("output"))
        if error and not output:
            output = to_text(error.get("message"))
        yield b.make(
            role="tool",
            kind="tool_result",
            text=output,
            tool_name=tools.get(str(obj.get("tool_id"))),
            is_error=obj.get("status") == "error" or error is not None,
            **common,
        )
    elif kind == "error":
        text = to_text(obj.get("message")) or "error"
        yield b.make(role="system", kind="error", text=text, is_error=True, **common)
    elif kind == "result":
        status = to_text(obj.get("status"))
        failed = bool(status) and status != "success"
        error = obj.get("error") if isinstance(obj.get("error"), dict) else {}
        text = to_text(error.get("message")) if failed else ""
        yield b.make(
            role="system",
            kind="error" if failed else "other",
            text=text or (f"result: {status}" if status else ""),
            is_error=failed,
            **common,
        )
    else:
        yield b.make(role="system", kind="other", text="", **common)
