"""The event streams of headless runs saved to a file (seed 003 §4, parser items 5 and 6):
``codex exec --json`` (shapes of codex-rs/exec/src/exec_events.rs: ``thread.started``,
``turn.*``, ``item.*`` with agent_message, reasoning, command_execution, file_change,
mcp_tool_call, web_search, todo_list and error items) and ``gemini --output-format
stream-json`` (docs/cli/headless.md: init, message with deltas, tool_use, tool_result,
error, result). Detected from their content like the agents' own session files."""

from __future__ import annotations

import json
from pathlib import Path

from selene_dag.config import SessionRoot
from selene_dag.sessions.parsers import detect_platform, parse_file
from selene_dag.sessions.scanner import scan_roots

THREAD = "0199a213-81c0-7800-8aa1-bbab2a035a53"
CODEX_EXEC = [
    {"type": "thread.started", "thread_id": THREAD},
    {"type": "turn.started"},
    {
        "type": "item.completed",
        "item": {"id": "item_0", "type": "reasoning", "text": "**Looking at the tests**"},
    },
    {
        "type": "item.started",
        "item": {
            "id": "item_1",
            "type": "command_execution",
            "command": "bash -lc 'pytest -q'",
            "aggregated_output": "",
            "exit_code": None,
            "status": "in_progress",
        },
    },
    {
        "type": "item.completed",
        "item": {
            "id": "item_1",
            "type": "command_execution",
            "command": "bash -lc 'pytest -q'",
            "aggregated_output": "1 failed, 41 passed\n",
            "exit_code": 1,
            "status": "failed",
        },
    },
    {
        "type": "item.completed",
        "item": {
            "id": "item_2",
            "type": "file_change",
            "changes": [
                {"path": "src/app.py", "kind": "update"},
                {"path": "tests/test_app.py", "kind": "add"},
            ],
            "status": "completed",
        },
    },
    {
        "type": "item.completed",
        "item": {
            "id": "item_3",
            "type": "mcp_tool_call",
            "server": "docs",
            "tool": "search",
            "arguments": {"query": "retry policy"},
            "result": {
                "content": [{"type": "text", "text": "Retries use exponential backoff."}],
                "structured_content": None,
            },
            "error": None,
            "status": "completed",
        },
    },
    {
        "type": "item.completed",
        "item": {"id": "item_4", "type": "web_search", "query": "pytest flaky retry plugin"},
    },
    {
        "type": "item.completed",
        "item": {
            "id": "item_5",
            "type": "todo_list",
            "items": [
                {"text": "Fix the failing test", "completed": True},
                {"text": "Run the suite", "completed": False},
            ],
        },
    },
    "not json",
    {
        "type": "item.completed",
        "item": {
            "id": "item_6",
            "type": "agent_message",
            "text": "The flaky test now retries twice.",
        },
    },
    {
        "type": "turn.completed",
        "usage": {"input_tokens": 1200, "cached_input_tokens": 200, "output_tokens": 345},
    },
    {"type": "turn.started"},
    {"type": "error", "message": "stream disconnected before completion"},
    {"type": "turn.failed", "error": {"message": "The model is overloaded"}},
]
GEMINI_STREAM = [
    {
        "type": "init",
        "timestamp": "2026-05-02T10:00:00.000Z",
        "session_id": "f3b1c2d4",
        "model": "gemini-2.5-pro",
    },
    {
        "type": "message",
        "timestamp": "2026-05-02T10:00:01.000Z",
        "role": "user",
        "content": "Why does the build fail on CI?",
    },
    {
        "type": "tool_use",
        "timestamp": "2026-05-02T10:00:02.000Z",
        "tool_name": "read_file",
        "tool_id": "read-1",
        "parameters": {"file_path": "ci/build.yml"},
    },
    {
        "type": "tool_result",
        "timestamp": "2026-05-02T10:00:03.000Z",
        "tool_id": "read-1",
        "status": "success",
        "output": "runs-on: ubuntu-20.04",
    },
    {
        "type": "tool_use",
        "timestamp": "2026-05-02T10:00:04.000Z",
        "tool_name": "run_shell_command",
        "tool_id": "sh-1",
        "parameters": {"command": "make build"},
    },
    {
        "type": "tool_result",
        "timestamp": "2026-05-02T10:00:05.000Z",
        "tool_id": "sh-1",
        "status": "error",
        "output": "",
        "error": {"type": "exit", "message": "make: *** [build] Error 2"},
    },
    {
        "type": "message",
        "timestamp": "2026-05-02T10:00:06.000Z",
        "role": "assistant",
        "content": "The runner image ",
        "delta": True,
    },
    {
        "type": "message",
        "timestamp": "2026-05-02T10:00:06.100Z",
        "role": "assistant",
        "content": "ubuntu-20.04 is retired.",
        "delta": True,
    },
    {
        "type": "error",
        "timestamp": "2026-05-02T10:00:07.000Z",
        "severity": "warning",
        "message": "Loop detected, stopping",
    },
    {
        "type": "result",
        "timestamp": "2026-05-02T10:00:08.000Z",
        "status": "success",
        "stats": {"total_tokens": 900, "duration_ms": 8000, "tool_calls": 2},
    },
]


def _write(path: Path, records: list) -> Path:
    lines = [r if isinstance(r, str) else json.dumps(r) for r in records]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_codex_exec_stream(tmp_path: Path) -> None:
    path = _write(tmp_path / "exec-run.jsonl", CODEX_EXEC)
    assert detect_platform(path) == "codex"
    parsed = parse_file(path)
    assert parsed.stats.session_id == THREAD and parsed.stats.errors == 1  # the bad line
    shown = [
        (e.kind, e.tool_name, e.is_error, e.text.splitlines()[0] if e.text else "")
        for e in parsed.events
    ]
    assert shown == [
        ("system", None, False, f"Codex exec thread {THREAD}"),
        ("assistant_text", None, False, "**Looking at the tests**"),
        ("tool_use", "shell", False, "bash -lc 'pytest -q'"),
        ("tool_result", "shell", True, "1 failed, 41 passed"),
        ("tool_use", "apply_patch", False, "update src/app.py"),
        ("tool_use", "docs.search", False, '{"query":"retry policy"}'),
        ("tool_result", "docs.search", False, "Retries use exponential backoff."),
        ("tool_use", "web_search", False, "pytest flaky retry plugin"),
        ("system", None, False, "[x] Fix the failing test"),
        ("assistant_text", None, False, "The flaky test now retries twice."),
        (
            "other",
            None,
            False,
            "turn tokens: input_tokens 1200, cached_input_tokens 200, output_tokens 345",
        ),
        ("error", None, True, "stream disconnected before completion"),
        ("error", None, True, "The model is overloaded"),
    ]
    result = parsed.events[3]
    assert result.text.endswith("(exit code 1)")
    assert parsed.events[4].file_paths == ("src/app.py", "tests/test_app.py")
    assert [e.seq for e in parsed.events] == list(range(len(parsed.events)))


def test_gemini_stream_json(tmp_path: Path) -> None:
    path = _write(tmp_path / "headless.jsonl", GEMINI_STREAM)
    assert detect_platform(path) == "gemini"
    parsed = parse_file(path)
    assert parsed.stats.session_id == "f3b1c2d4" and parsed.stats.errors == 0
    shown = [(e.kind, e.role, e.tool_name, e.is_error, e.text) for e in parsed.events]
    assert shown == [
        ("system", "system", None, False, "Gemini CLI headless session, model gemini-2.5-pro"),
        ("user_prompt", "user", None, False, "Why does the build fail on CI?"),
        ("tool_use", "assistant", "read_file", False, '{"file_path":"ci/build.yml"}'),
        ("tool_result", "tool", "read_file", False, "runs-on: ubuntu-20.04"),
        ("tool_use", "assistant", "run_shell_command", False, '{"command":"make build"}'),
        ("tool_result", "tool", "run_shell_command", True, "make: *** [build] Error 2"),
        # Two delta chunks of one answer are one event.
        ("assistant_text", "assistant", None, False, "The runner image ubuntu-20.04 is retired."),
        ("error", "system", None, True, "Loop detected, stopping"),
        ("other", "system", None, False, "result: success"),
    ]
    assert parsed.events[2].file_paths == ("ci/build.yml",)
    assert parsed.events[1].timestamp == "2026-05-02T10:00:01.000Z"


def test_saved_streams_are_found_in_a_session_folder(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()
    _write(runs / "codex-exec.jsonl", CODEX_EXEC)
    _write(runs / "gemini-stream.jsonl", GEMINI_STREAM)
    found = scan_roots((SessionRoot(path=runs, platform=None),))
    assert sorted((Path(f.path).name, f.platform) for f in found) == [
        ("codex-exec.jsonl", "codex"),
        ("gemini-stream.jsonl", "gemini"),
    ]


def test_a_banner_line_or_a_byte_order_mark_before_the_stream(tmp_path: Path) -> None:
    # The CLI may print a line before its events ("Loaded cached credentials."), and an
    # editor may save a byte-order mark: the stream is still read as one (the whole file
    # was read as empty records before).
    lines = "\n".join(json.dumps(r) for r in GEMINI_STREAM) + "\n"
    banner = tmp_path / "banner.jsonl"
    banner.write_text("Loaded cached credentials.\n" + lines, encoding="utf-8")
    parsed = parse_file(banner)
    assert parsed.platform == "gemini" and parsed.stats.errors == 1  # the banner
    assert [e.kind for e in parsed.events][:2] == ["system", "user_prompt"]
    marked = tmp_path / "bom.jsonl"
    marked.write_bytes(b"\xef\xbb\xbf" + lines.encode())
    parsed = parse_file(marked)
    assert parsed.stats.errors == 0 and len(parsed.events) == 9
