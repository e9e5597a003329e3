"""Chat messages as compaction reads them: content given as parts, JSONL files, null
content, byte order marks."""

import json
from pathlib import Path

import pytest

from selene_dag.context import compact_messages, count_tokens
from selene_dag.context.messages import content_text, load_conversation, validate_messages

M = "gpt-4"


def test_content_parts_become_text_and_other_keys_stay() -> None:
    messages = [
        {"role": "system", "content": "Be brief."},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is in this screenshot?"},
                {"type": "image", "source": {"type": "base64", "data": "AAAA"}},
            ],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Let me read the log."},
                {"type": "tool_use", "id": "t1", "name": "Read", "input": {"path": "a.log"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "t1",
                    "content": [{"type": "text", "text": "ERROR disk full"}],
                }
            ],
        },
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1"}]},
        {"role": "user", "content": ["plain", "strings"]},
    ]
    out = validate_messages(messages)
    assert out[0] == messages[0]
    assert out[1]["content"] == "What is in this screenshot?\n\n[image]"
    assert out[2]["content"] == 'Let me read the log.\n\n[tool_use Read] {"path": "a.log"}'
    # A tool's result reads as a session file's does: never taken for the latest request.
    assert out[3]["content"] == "[tool_result] ERROR disk full"
    assert out[4] == {"role": "assistant", "content": "", "tool_calls": [{"id": "c1"}]}
    assert out[5]["content"] == "plain\n\nstrings"
    assert messages[1]["content"][0]["type"] == "text"  # the input is not changed


@pytest.mark.parametrize(
    ("content", "reason"),
    [(42, "string or a list of parts, got int"), ([3], "object or a string, got int")],
)
def test_unreadable_content_names_the_message(content: object, reason: str) -> None:
    with pytest.raises(ValueError, match=f"message 1: .*{reason}"):
        validate_messages([{"role": "user", "content": "ok"}, {"role": "user", "content": content}])
    with pytest.raises(ValueError, match="no 'content'"):
        validate_messages([{"role": "user"}])
    assert content_text(None) == ""


def test_compaction_of_parts_fits_the_window() -> None:
    messages = [
        {
            "role": "user" if i % 2 else "assistant",
            "content": [
                {"type": "text", "text": f"Step {i}: the build failed on module {i}. " * 8}
            ],
        }
        for i in range(80)
    ]
    report = compact_messages(messages, 1_000, M)
    assert report.tokens_after <= 1_000 and report.messages
    # A message kept whole keeps its parts; one the prune cut, or the summary, is text.
    whole = [m for m in report.messages if m in messages]
    assert whole and all(isinstance(m["content"], list) for m in whole)
    texts = [content_text(m["content"]) for m in report.messages]
    assert sum(count_tokens(t, M) + 4 for t in texts) == report.tokens_after


def test_jsonl_file_names_the_lines_it_skips(tmp_path: Path) -> None:
    path = tmp_path / "chat.jsonl"
    lines = [
        json.dumps({"role": "user", "content": "Why does the deploy fail?"}),
        "",
        "{not json",
        json.dumps({"role": "assistant", "content": "The disk is full."}),
        json.dumps({"content": "no role"}),
        json.dumps([1, 2]),
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    conversation = load_conversation(path)
    assert conversation.form == "jsonl"
    assert [m["content"] for m in conversation.messages] == [
        "Why does the deploy fail?",
        "The disk is full.",
    ]
    assert conversation.notices == [
        "line 3 skipped: not JSON (Expecting property name enclosed in double quotes)",
        "line 5 skipped: 'role' must be a non-empty string",
        "line 6 skipped: expected an object, got list",
    ]
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"a": 1}\n{"b": 2}\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"no message in its lines \(line 1 skipped: 'role'"):
        load_conversation(bad)


def test_a_byte_order_mark_is_not_part_of_the_json(tmp_path: Path) -> None:
    path = tmp_path / "chat.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps([{"role": "user", "content": "hi"}]).encode())
    conversation = load_conversation(path)
    assert conversation.messages == [{"role": "user", "content": "hi"}]
    assert conversation.form == "json" and conversation.notices == []


def test_tool_calls_count_toward_the_window() -> None:
    from selene_dag.context import message_tokens
    from selene_dag.context.compaction import brute_prune
    from selene_dag.context.messages import counted_text

    call = {
        "id": "c1",
        "type": "function",
        "function": {"name": "write_file", "arguments": json.dumps({"text": "data " * 300})},
    }
    messages = [{"role": "system", "content": "Be brief."}]
    for i in range(12):
        messages.append({"role": "user", "content": f"Write report {i} to disk, please."})
        messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
    checked = validate_messages(messages)
    calls_only = count_tokens(counted_text(checked[2]), M)
    assert calls_only > 300  # the arguments are counted although content is empty
    assert message_tokens(checked, M) > 12 * calls_only
    report = compact_messages(messages, 2_000, M)
    assert message_tokens(report.messages, M) <= 2_000 == report.window
    assert report.tokens_after == message_tokens(report.messages, M)
    # A last message whose calls alone exceed the window goes; its content is cut otherwise.
    long_reply = {"role": "assistant", "content": "words " * 400, "tool_calls": [call]}
    pruned = brute_prune([{"role": "user", "content": "go"}, long_reply], 500, M)
    assert message_tokens(pruned, M) <= 500
    assert pruned[-1].get("tool_calls") == [call] and len(pruned[-1]["content"]) < 2_400
    assert brute_prune([long_reply], 200, M) == []


@pytest.mark.parametrize(
    ("message", "reason"),
    [
        ({"role": "tool", "tool_call_id": [1], "content": "r"}, "'tool_call_id' must be a string"),
        ({"role": "assistant", "content": "", "tool_calls": "ls"}, "list of objects"),
        ({"role": "assistant", "content": "", "tool_calls": [3]}, "list of objects"),
        (
            {"role": "assistant", "content": "", "tool_calls": [{"id": {"a": 1}}]},
            "call's 'id' must be a string",
        ),
    ],
)
def test_tool_ids_that_are_not_strings_name_the_message(message: dict, reason: str) -> None:
    # They pair results with calls: a list or an object as an id was a TypeError deep in
    # the prune (a 500 from POST /compact, a traceback from the CLI).
    with pytest.raises(ValueError, match=f"message 1: .*{reason}"):
        validate_messages([{"role": "user", "content": "q"}, message])
    ollama = {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "f"}}]}
    assert validate_messages([ollama, {"role": "tool", "content": "r"}])[0] == ollama


def test_an_assistant_message_of_tool_calls_alone_may_leave_content_out() -> None:
    # Chat APIs let an assistant message that only calls tools leave `content` out; such a
    # conversation was refused ("no 'content'"). It is read as null and, kept whole, goes
    # out as it came; a message with neither content nor calls is still refused.
    call = {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
    messages = [
        {"role": "user", "content": "List the files."},
        {"role": "assistant", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "a.txt b.txt"},
        {"role": "assistant", "content": "Two files."},
    ]
    assert validate_messages(messages)[1] == {
        "role": "assistant",
        "content": "",
        "tool_calls": [call],
    }
    assert compact_messages(messages, 1_000, M).messages == messages
    long = [{"role": "user", "content": "Tell me about data. " * 40}, *messages] * 20
    report = compact_messages(long, 1_500, M)
    assert report.tokens_after <= 1_500
    assert {"role": "assistant", "tool_calls": [call]} in report.messages
    with pytest.raises(ValueError, match="message 0: no 'content'"):
        validate_messages([{"role": "assistant", "tool_calls": []}])


def test_reasoning_parts_count_toward_the_window() -> None:
    """Anthropic's thinking parts go out with a kept message: they were counted as the
    word "[thinking]", and a compacted conversation held thousands of tokens over its
    window."""
    from selene_dag.context import message_tokens

    thinking = {"type": "thinking", "thinking": "Let me reason about it. " * 120, "signature": "s"}
    messages = [{"role": "system", "content": "Be brief."}]
    for i in range(8):
        messages.append({"role": "user", "content": f"Step {i}: what next?"})
        messages.append(
            {"role": "assistant", "content": [thinking, {"type": "text", "text": f"Do {i}."}]}
        )
    assert "Let me reason" in content_text(messages[2]["content"])
    redacted = {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix" * 20}
    assert "EmwKAhgBEgy3va3pzix" in content_text([redacted])
    report = compact_messages(messages, 1_500, M)
    text = json.dumps(report.messages)
    assert "Let me reason" in text  # kept messages go out whole, reasoning included
    assert message_tokens(report.messages, M) <= 1_500
    shown = sum(
        count_tokens(part["thinking"], M)
        for m in report.messages
        if isinstance(m["content"], list)
        for part in m["content"]
        if part.get("type") == "thinking"
    )
    assert shown <= 1_500
