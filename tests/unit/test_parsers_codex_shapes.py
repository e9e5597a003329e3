"""Codex shapes of issue #18 item 4 on a hand-written rollout in the shapes of openai/codex's
protocol (``EventMsg::Error``/``StreamError``, ``UpdatePlanArgs {explanation, plan:
[{step, status}]}`` from ``codex-rs/protocol/src/plan_tool.rs``, ``CompactedItem {message,
replacement_history}``, ``item_completed`` with a ``Plan`` item)."""

from __future__ import annotations

from selene_dag.sessions.parsers import parse_file
from selene_dag.sessions.parsers.codex import compacted_text, error_text, plan_text
from tests.support.sessions import FIXTURES

SHAPES = FIXTURES / "codex" / "shapes_errors_plans_compaction.jsonl"


def _events():
    result = parse_file(SHAPES)
    return result, {e.line: e for e in result.events}


def test_error_messages_from_every_place() -> None:
    _, events = _events()
    assert events[5].kind == "error" and events[5].is_error
    assert events[5].text.startswith("unexpected status 429")  # under error.message
    assert events[6].text.startswith("stream disconnected")  # stream_error.message
    assert error_text({"type": "error", "error": "boom"}) == "boom"
    assert error_text({"type": "error", "codex_error_info": "context_window_exceeded"}) == (
        "context_window_exceeded"
    )
    assert error_text({"type": "error"}) == ""


def test_plan_text_is_kept() -> None:
    _, events = _events()
    assert events[4].text.splitlines() == [
        "Small migration, three steps",
        "[completed] Read config.py",
        "[in_progress] Port Settings to BaseSettings",
        "[pending] Run the test suite",
    ]
    assert events[10].kind == "assistant_text" and "Run pytest" in events[10].text
    assert plan_text({"plan": [{"step": "x", "status": "pending"}]}) == "[pending] x"


def test_compacted_history_keeps_only_what_is_new() -> None:
    result, events = _events()
    boundary = events[8]
    assert boundary.kind == "compact_boundary"
    assert boundary.text.startswith("Summary of the work so far")
    # The prompt the history repeats is already in the file: kept once.
    prompts = [e for e in result.events if e.kind == "user_prompt"]
    assert [e.text for e in prompts] == ["Migrate the settings loader to pydantic"]
    assert "Migrate the settings loader" not in boundary.text
    seen = {"old prompt"}
    history = {
        "message": "m",
        "replacement_history": [
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": t}]}
            for t in ("old prompt", "new summary", "new summary")
        ],
    }
    assert compacted_text(history, seen) == "m\n\nnew summary"


def test_real_fixture_compactions_and_errors_have_text() -> None:
    result = parse_file(FIXTURES / "codex" / "agent-sessions_small.jsonl")
    errors = [e for e in result.events if e.raw_type == "event_msg/error"]
    assert errors and all(e.text for e in errors)
    compactions = [e for e in result.events if e.raw_type == "compacted"]
    assert compactions and any(e.text for e in compactions)
    plans = [e for e in result.events if e.raw_type == "event_msg/item_completed" and e.text]
    assert plans  # its Plan item


def test_a_malformed_compaction_costs_nothing(tmp_path) -> None:
    import json

    path = tmp_path / "rollout-bad.jsonl"
    records = [
        {
            "timestamp": "2026-02-10T09:00:00Z",
            "type": "compacted",
            "payload": {"message": "m", "replacement_history": 7},
        },
        {
            "timestamp": "2026-02-10T09:00:01Z",
            "type": "event_msg",
            "payload": {"type": "plan_update", "plan": 3},
        },
        {
            "timestamp": "2026-02-10T09:00:02Z",
            "type": "response_item",
            "payload": {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "still here"}],
            },
        },
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    result = parse_file(path, "codex")
    assert [e.text for e in result.events if e.kind == "compact_boundary"] == ["m"]
    assert result.errors == 1  # the plan of the wrong shape
    assert result.events[-1].text == "still here"


def _rollout(tmp_path, *payloads: tuple[str, dict]) -> list:
    import json

    meta = {
        "type": "session_meta",
        "payload": {"id": "019c0000-aaaa-7bbb-8ccc-000000000009", "cwd": "/home/dev/app"},
    }
    lines = [meta] + [{"type": kind, "payload": payload} for kind, payload in payloads]
    path = tmp_path / "rollout-2026-02-10T09-00-00-019c0000-aaaa-7bbb-8ccc-000000000009.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return parse_file(path, "codex").events


def test_an_exec_command_failure_after_its_header_is_an_error(tmp_path) -> None:
    # Codex's exec_command writes its exit code on the third line (success set all the
    # same): a failed command was stored as a success.
    header = "Chunk ID: 4f2a1c\nWall time: 2.5 seconds\nProcess exited with code {}\nOutput:\n"
    events = _rollout(
        tmp_path,
        ("response_item", {"type": "function_call", "name": "exec_command", "call_id": "a",
                           "arguments": "{\"cmd\": \"npm test\"}"}),
        ("response_item", {"type": "function_call_output", "call_id": "a",
                           "output": header.format(1) + "FAIL test/login.test.ts"}),
        ("response_item", {"type": "function_call", "name": "exec_command", "call_id": "b",
                           "arguments": "{\"cmd\": \"ls\"}"}),
        ("response_item", {"type": "function_call_output", "call_id": "b",
                           "output": header.format(0) + "README.md"}),
    )  # fmt: skip
    results = [e for e in events if e.kind == "tool_result"]
    assert [e.is_error for e in results] == [True, False]


def test_a_prompt_with_a_pasted_image_is_stored_once_without_its_tags(tmp_path) -> None:
    question = "Why does the login endpoint return 500?"
    events = _rollout(
        tmp_path,
        ("response_item", {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "<image name=[Image #1]>"},
            {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo="},
            {"type": "input_text", "text": "</image>"},
            {"type": "input_text", "text": question},
        ]}),
        ("event_msg", {"type": "user_message", "message": question,
                       "local_images": ["/home/dev/shot.png"]}),
    )  # fmt: skip
    prompts = [e for e in events if e.kind == "user_prompt"]
    assert len(prompts) == 1 and question in prompts[0].text
    assert "<image" not in prompts[0].text and "</image>" not in prompts[0].text
