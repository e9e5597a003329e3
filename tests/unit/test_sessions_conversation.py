"""A session transcript as chat messages (compact's input): real Claude Code, Codex CLI
and Gemini CLI files from the fixtures."""

import json
from itertools import pairwise
from pathlib import Path

import pytest

from selene_dag.sessions.conversation import session_conversation
from selene_dag.sessions.parsers import parse_file

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "sessions"
REAL = [
    FIXTURES / "claude" / "claude-code-log_7acd37a8-2745-4b58-a8a9-46164b22ad9e.jsonl",
    FIXTURES / "codex" / "rollout-2025-11-17T15-30-28-019a93b9-f380-7600-98ff-940e6b99603c.jsonl",
    FIXTURES / "gemini" / "VibeCodingTracker_894772f_test_conversation_gemini.json",
]


@pytest.mark.parametrize("path", REAL, ids=lambda p: p.parent.name)
def test_real_transcripts_become_alternating_messages(path: Path) -> None:
    events = parse_file(path).events
    conversation = session_conversation(path)
    assert conversation.form == path.parent.name
    roles = [m["role"] for m in conversation.messages]
    assert set(roles) <= {"user", "assistant", "system"}  # no "tool" message without its call id
    results = [m["content"] for m in conversation.messages if "[tool_result" in m["content"]]
    assert results and all(
        m["role"] == "user" for m in conversation.messages if m["content"] in results
    )
    # One role, one message; but a prompt after a tool's result is a message of its own.
    messages = conversation.messages
    assert all(
        a["role"] != b["role"]
        or ("[tool_result" in a["content"]) != ("[tool_result" in b["content"])
        for a, b in pairwise(messages)
    )
    asked = "\n".join(m["content"] for m in conversation.messages if m["role"] == "user")
    prompts = [e.text.strip() for e in events if e.kind == "user_prompt" and not e.abandoned]
    assert prompts and all(p in asked for p in prompts)
    text = "\n".join(m["content"] for m in conversation.messages)
    calls = [e for e in events if e.kind == "tool_use" and not e.abandoned]
    assert calls and all(f"[tool_use {e.tool_name}]" in text for e in calls)
    hooks = [e.text for e in events if e.kind == "hook" and len(e.text) > 20]
    assert not any(h in text for h in hooks)


def test_a_slash_commands_prompt_is_a_user_message() -> None:
    conversation = session_conversation(REAL[0])  # starts with /init
    first = conversation.messages[0]
    assert first["role"] == "user"
    assert first["content"].startswith("Please analyze this codebase and create a CLAUDE.md")


def test_rewound_branches_and_side_chains_are_left_out() -> None:
    conversation = session_conversation(
        FIXTURES / "claude" / "shapes_rewind_resume_attachments.jsonl"
    )
    text = "\n".join(m["content"] for m in conversation.messages)
    assert "Keep the old release folder" in text
    assert "Also delete the old release folder" not in text  # the user rewound it
    small = session_conversation(FIXTURES / "claude" / "agent-sessions_small.jsonl")
    contents = [m["content"] for m in small.messages]
    assert "Hello" not in contents  # a sub-agent's side chain inside the parent file
    assert "Listing the files." in "\n".join(contents)


def test_a_subagents_own_transcript_is_its_conversation() -> None:
    # Every record of a subagent's file is on the sidechain: it was refused as holding
    # "no prompt, reply or tool call".
    path = FIXTURES / "claude" / "claude-code-log_ef958aa1_subagents_agent-a4ca7529859c158c2.jsonl"
    events = parse_file(path).events
    assert events and all(e.is_sidechain for e in events)
    conversation = session_conversation(path)
    assert conversation.messages[0]["role"] == "user"
    prompts = [e.text.strip() for e in events if e.kind == "user_prompt" and not e.abandoned]
    assert prompts and prompts[0] in conversation.messages[0]["content"]


def test_an_agents_own_compaction_summary_stays_as_a_system_message() -> None:
    conversation = session_conversation(FIXTURES / "codex" / "shapes_errors_plans_compaction.jsonl")
    summaries = [m for m in conversation.messages if m["role"] == "system"]
    assert len(summaries) == 1
    assert summaries[0]["content"].startswith("[SUMMARY OF EARLIER CONVERSATION]\nSummary of")


def test_secrets_are_redacted_and_malformed_records_named(tmp_path: Path) -> None:
    key = "sk-ant-api03-" + "a1B2c3D4e5" * 4
    record = {
        "parentUuid": None,
        "isSidechain": False,
        "sessionId": "s1",
        "type": "user",
        "uuid": "u1",
        "timestamp": "2026-03-02T10:00:00.000Z",
        "message": {"role": "user", "content": f"deploy with ANTHROPIC key {key} please"},
    }
    path = tmp_path / "s1.jsonl"
    path.write_text(json.dumps(record) + "\n{broken\n", encoding="utf-8")
    conversation = session_conversation(path)
    assert key not in conversation.messages[0]["content"]
    assert "[REDACTED:" in conversation.messages[0]["content"]
    assert any(n.startswith("secrets redacted: 1 ") for n in conversation.notices)
    assert any("line 2" in n and "skipped" in n for n in conversation.notices)


def test_a_file_without_conversation_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "hooks.jsonl"
    record = {"type": "summary", "summary": "A title", "leafUuid": "x"}
    path.write_text(json.dumps(record) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match="holds no prompt, reply or tool call"):
        session_conversation(path)


def test_a_prompt_after_a_tool_result_is_the_latest_request(tmp_path: Path) -> None:
    """A prompt typed right after a tool's result was joined to the result's message, so
    compaction did not see it as the latest question and a small window dropped it."""
    from selene_dag.context.compaction import compact_messages, latest_request

    path = tmp_path / "s.jsonl"
    records = [
        {
            "type": "user",
            "uuid": "u1",
            "parentUuid": None,
            "sessionId": "s",
            "timestamp": "2026-01-01T00:00:00Z",
            "message": {"role": "user", "content": "List the files, please."},
        },
        {
            "type": "assistant",
            "uuid": "a1",
            "parentUuid": "u1",
            "sessionId": "s",
            "timestamp": "2026-01-01T00:00:01Z",
            "message": {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}
                ],
            },
        },
        {
            "type": "user",
            "uuid": "r1",
            "parentUuid": "a1",
            "sessionId": "s",
            "timestamp": "2026-01-01T00:00:02Z",
            "message": {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "t1", "content": "a.txt\n" * 300}
                ],
            },
        },
        {
            "type": "user",
            "uuid": "u2",
            "parentUuid": "r1",
            "sessionId": "s",
            "timestamp": "2026-01-01T00:00:03Z",
            "message": {"role": "user", "content": "Which port does the db use?"},
        },
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    messages = session_conversation(path, "claude").messages
    assert messages[latest_request(messages)]["content"] == "Which port does the db use?"
    report = compact_messages(messages, 120, model="mistral:7b")
    assert report.messages[-1]["content"] == "Which port does the db use?"
