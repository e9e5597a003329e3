"""Claude Code shapes of issue #18 item 3 on a hand-written fixture in the real record shape
(fields as in claude-code-log's real transcripts and agent-sessions' fixture): a rewind,
parallel tool calls, a record repeated across a resume, command wrappers and attachments."""

from __future__ import annotations

from selene_dag.sessions.chunker import build_chunks
from selene_dag.sessions.parsers import parse_file
from selene_dag.sessions.parsers.claude import abandoned_records, command_wrapper
from tests.support.sessions import CLAUDE_FILES, FIXTURES

SHAPES = FIXTURES / "claude" / "shapes_rewind_resume_attachments.jsonl"


def _by_line():
    result = parse_file(SHAPES)
    return result, {e.line: e for e in result.events}


def test_rewound_branch_is_marked_and_left_out_of_chunks() -> None:
    result, events = _by_line()
    abandoned = sorted(line for line, e in events.items() if e.abandoned)
    assert abandoned == [8, 9]  # the prompt rewound away from, and the reply to it
    assert result.stats.abandoned == 2
    assert events[10].kind == "user_prompt" and not events[10].abandoned
    chunks = build_chunks(result.events, "claude-test")
    text = "\n".join(c.text for c in chunks)
    assert "Keep the old release folder" in text
    assert "delete the old release folder" not in text and "rm -rf." not in text


def test_parallel_tool_calls_are_not_a_rewind() -> None:
    _, events = _by_line()
    assert not any(events[line].abandoned for line in (3, 4, 5, 6, 7))
    for path in CLAUDE_FILES:  # real transcripts: parallel calls fork, nothing is rewound
        if path != SHAPES:
            assert parse_file(path).stats.abandoned == 0, path.name


def test_a_record_repeated_across_a_resume_counts_once() -> None:
    result, _ = _by_line()
    assert result.stats.duplicates == 1
    assert [e.line for e in result.events].count(11) == 1
    assert 12 not in {e.line for e in result.events}


def test_command_wrappers_are_commands_not_prompts() -> None:
    _, events = _by_line()
    assert (events[13].kind, events[13].raw_type, events[13].text) == (
        "system",
        "user/command",
        "/compact keep the deploy notes",
    )
    assert (events[14].raw_type, events[14].text) == (
        "user/command_output",
        "Compacted (ctrl+o to see full summary)",
    )
    assert (events[15].raw_type, events[15].text) == ("user/command", "./deploy.sh --dry-run")
    assert events[16].text == "sending incremental file list\nindex.html"
    assert command_wrapper("Please explain <bash-input> tags") is None
    assert command_wrapper("fix the bug") is None


def test_attachments_keep_their_text() -> None:
    _, events = _by_line()
    queued = events[17]
    assert (queued.kind, queued.role, queued.text) == ("user_prompt", "user", "then run the tests")
    edited = events[18]
    assert "RSYNC_FLAGS=-n" in edited.text and edited.file_paths == ("/repo/deploy.sh",)
    blocked = events[19]
    assert blocked.kind == "hook" and blocked.is_error
    assert "rm -rf is not allowed" in blocked.text
    assert events[20].text == "completed: npm test: 42 passing"


def test_attachment_fixture_from_agent_sessions_has_no_empty_texts() -> None:
    # agent-sessions' fixture holds ~30 attachment types with their text fields (trimmed).
    result = parse_file(FIXTURES / "claude" / "agent-sessions_small.jsonl")
    kinds = {e.raw_type: e for e in result.events if e.raw_type.startswith("attachment/")}
    for name in ("queued_command", "edited_text_file", "hook_blocking_error", "task_status"):
        assert kinds[f"attachment/{name}"].text, name
    assert kinds["attachment/queued_command"].kind == "user_prompt"


def test_abandoned_records_follow_descendants() -> None:
    parents = {"a": None, "b": "a", "c": "b", "d": "c", "e": "b", "f": "e", "g": "f"}
    # b has two prompt children, c (older) and e (newer): c and its subtree are abandoned.
    assert abandoned_records(parents, {"b": ["c", "e"]}) == {"c", "d"}
    assert abandoned_records(parents, {"b": ["e"]}) == set()


def test_a_sub_agent_is_its_own_session_started_by_its_parent() -> None:
    # Real sub-agent transcript: its records carry the parent's sessionId and agentId.
    sub = FIXTURES / "claude" / "claude-code-log_ef958aa1_subagents_agent-a4ca7529859c158c2.jsonl"
    result = parse_file(sub)
    assert result.stats.session_id == "agent-a4ca7529859c158c2"
    assert result.stats.parent_session_id == "ef958aa1-0e93-49f0-bb71-150f63befcd1"
    assert {e.session_id for e in result.events} == {"agent-a4ca7529859c158c2"}
    # The parent's own transcript (an agentId only on its task results) is not a sub-agent.
    parent = parse_file(
        FIXTURES / "claude" / "claude-code-log_ef958aa1-0e93-49f0-bb71-150f63befcd1.jsonl"
    )
    assert parent.stats.session_id == "ef958aa1-0e93-49f0-bb71-150f63befcd1"
    assert parent.stats.parent_session_id is None


def test_a_rewind_to_the_first_prompt_abandons_the_first_branch(tmp_path) -> None:
    # Claude Code writes the prompt after a rewind to the very start with no parent: a
    # second root. Its first branch was stored as if it were kept.
    import json

    def record(uuid: str, parent: str | None, kind: str, text: str) -> str:
        message = {
            "role": kind,
            "content": text if kind == "user" else [{"type": "text", "text": text}],
        }
        return json.dumps(
            {
                "parentUuid": parent,
                "isSidechain": False,
                "type": kind,
                "uuid": uuid,
                "sessionId": "s1",
                "cwd": "/repo",
                "timestamp": "2026-11-01T10:00:00Z",
                "message": message,
            }
        )

    ids = [f"{n:08x}-0000-4000-8000-000000000000" for n in range(1, 5)]
    path = tmp_path / "s1.jsonl"
    path.write_text(
        "\n".join(
            [
                record(ids[0], None, "user", "delete the old release folder"),
                record(ids[1], ids[0], "assistant", "Running rm -rf on it."),
                record(ids[2], None, "user", "keep the old release folder"),
                record(ids[3], ids[2], "assistant", "Kept it."),
            ]
        )
        + "\n"
    )
    result = parse_file(path)
    assert [(e.text, e.abandoned) for e in result.events] == [
        ("delete the old release folder", True),
        ("Running rm -rf on it.", True),
        ("keep the old release folder", False),
        ("Kept it.", False),
    ]
    assert result.stats.abandoned == 2


def test_claude_codes_api_error_reply_is_an_error_not_an_answer(tmp_path) -> None:
    # Claude Code writes a failed API call as an assistant record of model "<synthetic>".
    import json

    records = [
        {"type": "user", "uuid": "u1", "sessionId": "s", "timestamp": "2026-02-10T09:00:00Z",
         "message": {"role": "user", "content": "fix the login test"}},
        {"type": "assistant", "uuid": "a1", "parentUuid": "u1", "sessionId": "s",
         "timestamp": "2026-02-10T09:00:05Z", "isApiErrorMessage": True, "error": "server_error",
         "message": {"model": "<synthetic>", "role": "assistant",
                     "content": [{"type": "text", "text": "API Error: 529 Overloaded"}]}},
    ]  # fmt: skip
    path = tmp_path / "5b1f0d3e-0000-4000-8000-000000000001.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    events = parse_file(path, "claude").events
    [error] = [e for e in events if "529" in e.text]
    assert error.kind == "error" and error.is_error
    assert not any(e.kind == "assistant_text" for e in events)
    assert not any("<synthetic>" in e.text for e in events)  # no model change to it
