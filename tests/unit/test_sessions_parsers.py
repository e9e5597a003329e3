"""Parsers on the real fixture files: counts compared with counts derived from the raw JSON."""

from __future__ import annotations

import itertools
import json
from collections import Counter
from pathlib import Path

import pytest

from selene_dag.errors import UsageError
from selene_dag.sessions.parsers import ParseStats, detect_platform, iter_events, parse_file
from tests.support.sessions import (
    ALL_FILES,
    CLAUDE_FILES,
    CODEX_FILES,
    GEMINI_FILES,
    REAL_CODEX,
    raw_lines,
)

_WRAPPERS = ("<command-", "<bash-", "<local-command-")


def _claude_expected(path: Path) -> Counter:
    c: Counter = Counter()
    seen: set[str] = set()
    for obj in raw_lines(path):
        uuid = obj.get("uuid") or ""
        real_id = len(uuid) >= 8 and " " not in uuid
        if real_id and uuid in seen:
            continue  # a record repeated across a resume counts once
        if real_id:
            seen.add(uuid)
        t = obj.get("type")
        content = (obj.get("message") or {}).get("content")
        if t == "attachment" and (obj.get("attachment") or {}).get("type") == "queued_command":
            c["user_prompt"] += 1  # typed while the agent worked
        if t == "user":
            compact = bool(obj.get("isCompactSummary"))
            plain = not obj.get("isMeta") and not compact
            if isinstance(content, str):
                c["user_prompt"] += plain and not content.lstrip().startswith(_WRAPPERS)
                c["summary"] += compact
            for block in content if isinstance(content, list) else []:
                if block.get("type") == "text":
                    wrapper = (block.get("text") or "").lstrip().startswith(_WRAPPERS)
                    c["user_prompt"] += plain and not wrapper
                    c["summary"] += compact
                elif block.get("type") in ("image", "document") and isinstance(
                    (block.get("source") or {}).get("data"), str
                ):  # a pasted screenshot: a placeholder of the prompt
                    c["user_prompt"] += plain
                    c["summary"] += compact
                elif block.get("type") == "tool_result":
                    c["tool_result"] += 1
                    c["result_errors"] += bool(block.get("is_error"))
        elif t == "assistant":
            for block in content if isinstance(content, list) else []:
                c["tool_use"] += block.get("type") == "tool_use"
                c["assistant_text"] += block.get("type") == "text"
        elif t in ("summary", "custom-title"):
            c["summary"] += 1
        elif t == "system" and obj.get("subtype") == "compact_boundary":
            c["compact_boundary"] += 1
        c["sidechain_lines"] += bool(obj.get("isSidechain"))
    return c


@pytest.mark.parametrize("path", CLAUDE_FILES, ids=lambda p: p.name[:40])
def test_claude_counts_match_raw_json(path: Path) -> None:
    expected = _claude_expected(path)
    result = parse_file(path)
    kinds = Counter(e.kind for e in result.events)
    assert result.platform == "claude"
    assert result.errors == 0
    for kind in (
        "user_prompt",
        "tool_use",
        "tool_result",
        "assistant_text",
        "summary",
        "compact_boundary",
    ):
        assert kinds[kind] == expected[kind], kind
    assert (
        sum(e.is_error for e in result.events if e.kind == "tool_result")
        == expected["result_errors"]
    )
    assert [e.seq for e in result.events] == list(range(len(result.events)))
    if expected["sidechain_lines"] == len(raw_lines(path)):
        assert all(e.is_sidechain for e in result.events)


def test_claude_session_title_and_api_refusal_keep_their_text() -> None:
    path = next(p for p in CLAUDE_FILES if p.name == "agent-sessions_small.jsonl")
    events = parse_file(path).events
    titles = [e.text for e in events if e.raw_type == "custom-title"]
    assert titles == ["Stage0 small fixture"]
    refusals = [e for e in events if e.raw_type == "system/api_refusal"]
    assert [(e.kind, e.is_error, e.text) for e in refusals] == [
        ("error", True, "API refusal (policy): Refused for policy reasons.")
    ]


def test_the_model_of_a_session_is_named_when_it_starts_or_changes() -> None:
    claude = next(p for p in CLAUDE_FILES if "326189cf" in p.name)
    events = parse_file(claude).events
    named = [e for e in events if e.raw_type == "model_change"]
    assert [e.text for e in named] == ["Model: claude-sonnet-4-20250514"]
    assert named[0].kind == "system" and named[0].seq < min(
        e.seq for e in events if e.kind == "assistant_text"
    )
    small = next(p for p in CLAUDE_FILES if p.name == "agent-sessions_small.jsonl")
    changes = [e.text for e in parse_file(small).events if e.raw_type == "model_change"]
    assert changes and not any("<synthetic>" in t for t in changes)
    assert all(a != b for a, b in itertools.pairwise(changes))
    codex = next(p for p in CODEX_FILES if p.name.startswith("rollout-"))
    turns = [e.text for e in parse_file(codex).events if e.raw_type == "turn_context"]
    assert [t for t in turns if t] == ["Model: gpt-5.1-codex (high)"]


def test_claude_tool_use_names_and_file_paths() -> None:
    path = next(p for p in CLAUDE_FILES if "7acd37a8" in p.name)
    expected_names: Counter = Counter()
    expected_paths = set()
    for obj in raw_lines(path):
        if obj.get("type") == "assistant":
            for block in obj["message"]["content"]:
                if block.get("type") == "tool_use":
                    expected_names[block["name"]] += 1
                    fp = block["input"].get("file_path")
                    if fp:
                        expected_paths.add(fp)
    events = parse_file(path).events
    assert Counter(e.tool_name for e in events if e.kind == "tool_use") == expected_names
    assert {p for e in events for p in e.file_paths} == expected_paths


def _codex_expected(path: Path) -> dict:
    items, ui = Counter(), Counter()
    tool_use = tool_result = errors = 0
    for obj in raw_lines(path):
        p = obj.get("payload") or {}
        if obj.get("type") == "response_item":
            t = p.get("type")
            if t == "message" and p.get("role") == "user":
                text = "\n".join(c["text"] for c in p["content"] if "text" in c)
                if not text.startswith("<environment_context>"):
                    items[text.strip()] += 1
            tool_use += t in (
                "function_call",
                "custom_tool_call",
                "web_search_call",
                "tool_search_call",
                "image_generation_call",
                "local_shell_call",
            )
            if t in ("function_call_output", "custom_tool_call_output", "tool_search_output"):
                tool_result += 1
                out = p.get("output")
                if isinstance(out, str) and out.startswith("{"):
                    code = json.loads(out).get("metadata", {}).get("exit_code")
                    errors += bool(code)
        elif obj.get("type") == "event_msg" and p.get("type") == "user_message":
            ui[p["message"].strip()] += 1
    prompts = Counter({t: max(items[t], ui[t]) for t in set(items) | set(ui)})
    return {"prompts": prompts, "tool_use": tool_use, "tool_result": tool_result, "errors": errors}


@pytest.mark.parametrize("path", CODEX_FILES, ids=lambda p: p.name[:40])
def test_codex_counts_match_raw_json(path: Path) -> None:
    expected = _codex_expected(path)
    result = parse_file(path)
    assert result.platform == "codex"
    assert result.errors == 0
    prompts = Counter(e.text.strip() for e in result.events if e.kind == "user_prompt")
    assert prompts == expected["prompts"]
    assert sum(e.kind == "tool_use" for e in result.events) == expected["tool_use"]
    results = [e for e in result.events if e.kind == "tool_result"]
    assert len(results) == expected["tool_result"]
    assert sum(e.is_error for e in results) == expected["errors"]


def test_codex_reasoning_is_not_double_counted() -> None:
    raw = raw_lines(REAL_CODEX)
    summaries = [
        s["text"]
        for o in raw
        if o["payload"].get("type") == "reasoning"
        for s in o["payload"]["summary"]
    ]
    agent = [o["payload"]["text"] for o in raw if o["payload"].get("type") == "agent_reasoning"]
    assert sorted(summaries) == sorted(agent)  # the file really duplicates them
    stats = ParseStats()
    events = list(iter_events(REAL_CODEX, stats=stats))
    reasoning = [e.text for e in events if e.raw_type.endswith("reasoning") and e.text]
    assert sorted(reasoning) == sorted(summaries)
    assert stats.duplicates == len(agent) + 1  # + the prompt echoed as event_msg/user_message
    assert stats.session_id == raw[0]["payload"]["id"]
    assert stats.project == raw[0]["payload"]["cwd"]


def test_codex_legacy_layout(tmp_path: Path) -> None:
    lines = [
        {"id": "legacy-1", "timestamp": "2025-09-01T10:00:00Z", "instructions": None, "git": {}},
        {"record_type": "state"},
        {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": "fix the bug"}],
        },
        {
            "type": "reasoning",
            "id": "r1",
            "summary": [{"type": "summary_text", "text": "thinking"}],
            "content": None,
            "encrypted_content": "x",
        },
        {
            "type": "function_call",
            "name": "shell",
            "arguments": '{"command":["ls"]}',
            "call_id": "c1",
        },
        {
            "type": "function_call_output",
            "call_id": "c1",
            "output": '{"output":"boom","metadata":{"exit_code":1}}',
        },
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "done"}],
        },
    ]
    path = tmp_path / "rollout-legacy.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    assert detect_platform(path) == "codex"
    result = parse_file(path)
    kinds = [e.kind for e in result.events]
    assert kinds == [
        "system",
        "other",
        "user_prompt",
        "other",
        "tool_use",
        "tool_result",
        "assistant_text",
    ]
    assert result.events[5].is_error and result.events[5].text == "boom"
    assert result.stats.session_id == "legacy-1"
    assert all(e.timestamp == "2025-09-01T10:00:00.000Z" for e in result.events)


def _gemini_final_messages(path: Path) -> list[dict]:
    text = path.read_text(encoding="utf-8")
    try:
        return json.loads(text)["messages"]
    except json.JSONDecodeError:
        pass
    final: dict[str, dict] = {}
    for line in text.splitlines():
        obj = json.loads(line)
        if "$rewindTo" in obj:  # Gemini CLI drops the target and everything after it
            ids = list(final)
            for key in ids[ids.index(obj["$rewindTo"]) if obj["$rewindTo"] in ids else 0 :]:
                del final[key]
        elif isinstance(obj.get("$set", {}).get("messages"), list):  # a checkpoint replaces
            final = {m["id"]: m for m in obj["$set"]["messages"]}
        elif "type" in obj and "id" in obj:
            final[obj["id"]] = obj
    return list(final.values())


@pytest.mark.parametrize("path", GEMINI_FILES, ids=lambda p: p.name[:40])
def test_gemini_counts_match_raw_json(path: Path) -> None:
    messages = _gemini_final_messages(path)
    result = parse_file(path)
    assert result.platform == "gemini"
    assert result.errors == 0
    kinds = Counter(e.kind for e in result.events)
    assert kinds["user_prompt"] == sum(m["type"] == "user" for m in messages)
    calls = [c for m in messages for c in m.get("toolCalls", [])]
    assert kinds["tool_use"] == kinds["tool_result"] == len(calls)
    assert Counter(e.tool_name for e in result.events if e.kind == "tool_use") == Counter(
        c["name"] for c in calls
    )
    # A system event names the model whenever an answer comes from another one.
    changes, current = [], None
    for m in messages:
        model = m.get("model") if m["type"] in ("gemini", "model", "assistant") else None
        if isinstance(model, str) and model and not model.startswith("<") and model != current:
            changes.append(f"Model: {model}")
            current = model
    assert kinds["system"] == sum(m["type"] == "info" for m in messages) + len(changes)
    assert [e.text for e in result.events if e.raw_type == "model_change"] == changes


def test_gemini_jsonl_last_record_of_an_id_wins() -> None:
    path = next(p for p in GEMINI_FILES if p.name == "VibeCodingTracker_gemini.jsonl")
    ids = [json.loads(line).get("id") for line in path.read_text().splitlines()]
    repeated = [i for i, n in Counter(ids).items() if i and n > 1]
    assert repeated  # the raw file re-writes messages
    events = parse_file(path).events
    assert sum(e.kind == "tool_use" for e in events) > 0
    lines = [e.line for e in events]
    assert lines == sorted(lines)


def test_malformed_lines_are_counted_and_skipped(tmp_path: Path) -> None:
    source = CLAUDE_FILES[1]
    lines = source.read_text(encoding="utf-8").splitlines()
    broken = [*lines[:3], "{not json", "[1, 2]", '{"type": "user", "message": ', *lines[3:]]
    path = tmp_path / "broken.jsonl"
    path.write_text("\n".join(broken) + "\n", encoding="utf-8")
    good, bad = parse_file(source), parse_file(path)
    assert bad.errors == 3
    assert len(bad.error_samples) == 3 and bad.error_samples[0].startswith("line 4:")
    assert [e.text for e in bad.events] == [e.text for e in good.events]


def test_unknown_record_types_become_other(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    records = [
        {
            "type": "user",
            "sessionId": "s",
            "parentUuid": None,
            "message": {"role": "user", "content": "hi"},
        },
        {"type": "brand-new-thing", "sessionId": "s", "parentUuid": None, "data": {"x": 1}},
    ]
    path.write_text("\n".join(json.dumps(r) for r in records))
    events = parse_file(path).events
    assert [(e.kind, e.raw_type) for e in events] == [
        ("user_prompt", "user"),
        ("other", "brand-new-thing"),
    ]


@pytest.mark.parametrize("path", ALL_FILES, ids=lambda p: p.name[:40])
def test_detection_uses_content_not_name(path: Path, tmp_path: Path) -> None:
    expected = path.parent.name
    renamed = tmp_path / "whatever.txt"
    renamed.write_bytes(path.read_bytes())
    assert detect_platform(renamed) == expected


def test_detection_rejects_other_json(tmp_path: Path) -> None:
    path = tmp_path / "package.json"
    path.write_text('{"name": "x", "version": "1.0.0"}')
    with pytest.raises(ValueError, match="not a Claude Code"):
        detect_platform(path)
    with pytest.raises(UsageError, match="unknown platform"):
        list(iter_events(path, platform="cursor"))


def test_codex_streaming_is_lazy(tmp_path: Path) -> None:
    # Codex rollouts stream (Claude transcripts are read whole to resolve rewound branches).
    source = CODEX_FILES[-1].read_text(encoding="utf-8")
    path = tmp_path / "big.jsonl"
    path.write_text(source * 10, encoding="utf-8")
    stats = ParseStats()
    gen = iter_events(path, "codex", stats)
    first = [next(gen) for _ in range(5)]
    assert len(first) == 5
    assert stats.lines < 20  # only the head of a 2,790-line file has been read


def test_an_image_in_a_tool_result_becomes_a_short_placeholder(tmp_path) -> None:
    # Claude Code writes a screenshot it read as an image block inside the tool result;
    # Codex's view_image output is an input_image with a data URL (issue #18 item 5).
    import base64

    from selene_dag.sessions.parsers._common import to_text

    data = base64.b64encode(b"\x89PNG" + bytes(30_000)).decode()
    record = {
        "parentUuid": None,
        "sessionId": "s1",
        "uuid": "u2",
        "type": "user",
        "timestamp": "2026-01-02T03:04:05Z",
        "message": {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "t1",
                    "content": [
                        {"type": "text", "text": "Read the screenshot"},
                        {
                            "type": "image",
                            "source": {"type": "base64", "media_type": "image/png", "data": data},
                        },
                    ],
                }
            ],
        },
    }
    path = tmp_path / "shot.jsonl"
    path.write_text(json.dumps(record) + "\n", encoding="utf-8")
    [event] = [e for e in parse_file(path).events if e.kind == "tool_result"]
    assert event.text == "Read the screenshot\n[image image/png, 29 KB]"
    codex = {"type": "input_image", "image_url": f"data:image/jpeg;base64,{data}"}
    assert to_text([codex]) == "[image image/jpeg, 29 KB]"
    assert data[:40] not in to_text({"output": [codex]})


@pytest.mark.parametrize(
    ("text", "failed"),
    [
        ("Exit code: 2\nWall time: 0.3 seconds\nOutput:\nboom", True),
        ("Exit code: 0\nWall time: 0.3 seconds\nOutput:\nok", False),
        ("tool call error: unknown tool", True),
        ("error: Failed to find expected lines in src/app.py", True),
        ("failed in sandbox MacosSeatbelt with execution error: exit code: 2", True),
        ("patch rejected by user", True),
        ("Success. Updated the following files:\nM src/app.py", False),
        ("All tests passed; the word error: appears later in this output", False),
    ],
)
def test_codex_failures_written_as_text_are_errors(text: str, failed: bool) -> None:
    # In a real 1.7 MB Codex session 20 such failures were scored as successes (issue #18).
    from selene_dag.sessions.parsers.codex import failed_in_text

    assert failed_in_text(text) is failed


def _claude_prompt(content: object) -> dict:
    """One Claude Code user record holding ``content``."""
    return {
        "parentUuid": None,
        "sessionId": "s1",
        "uuid": "u1",
        "type": "user",
        "timestamp": "2026-01-02T03:04:05Z",
        "message": {"role": "user", "content": content},
    }


def test_an_image_pasted_into_a_prompt_becomes_a_placeholder_of_the_prompt(tmp_path) -> None:
    # A screenshot pasted into a Claude Code prompt was an empty "other" event: the
    # transcript never said the user showed one.
    import base64

    data = base64.b64encode(b"\x89PNG" + bytes(30_000)).decode()
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}}
    record = _claude_prompt([{"type": "text", "text": "why this?"}, image])
    path = tmp_path / "pasted.jsonl"
    path.write_text(json.dumps(record) + "\n", encoding="utf-8")
    prompts = [e for e in parse_file(path).events if e.kind == "user_prompt"]
    assert [e.text for e in prompts] == ["why this?", "[image image/png, 29 KB]"]
    assert all(data[:40] not in e.text for e in parse_file(path).events)


def test_a_byte_that_is_not_utf8_costs_that_byte_not_its_line(tmp_path) -> None:
    # One invalid byte inside a JSON string (a terminal's output cut inside a character)
    # made the whole line unreadable: the session's first prompt was lost.
    line = (
        json.dumps(_claude_prompt("deploy the caf@ branch")).encode().replace(b"caf@", b"caf\xe9")
    )
    path = tmp_path / "bad-byte.jsonl"
    path.write_bytes(line + b"\n" + b"{not json\n")
    result = parse_file(path)
    assert [e.text for e in result.events if e.kind == "user_prompt"] == [
        "deploy the caf\ufffd branch"
    ]
    assert result.errors == 1  # the line that is not JSON still counts


def test_shapes_a_parser_qa_found_mishandled(tmp_path: Path) -> None:
    # A JavaScript string cut inside an emoji is saved as a lone escape: orjson refused the
    # whole record (a tool's result lost, counted as a parse error).
    claude = tmp_path / "claude.jsonl"
    record = {
        "type": "user",
        "uuid": "u1",
        "parentUuid": None,
        "sessionId": "s",
        "timestamp": "2025-10-31T17:01:00Z",
        "message": {"role": "user", "content": "party PLACEHOLDER end"},
    }
    claude.write_text(json.dumps(record).replace("PLACEHOLDER", "\\ud83c") + "\n")
    parsed = parse_file(claude, "claude")
    assert parsed.stats.errors == 0 and parsed.events[0].text == "party \ufffd end"

    # A Gemini image part was kept as its base64; a Gemini chat opening with a BOM was no
    # transcript at all.
    image = "iVBORw0KGgo" + "A" * 4000
    chat = {
        "sessionId": "g",
        "projectHash": "ab" * 32,
        "messages": [
            {
                "id": "m1",
                "type": "user",
                "timestamp": "2025-12-01T09:00:00Z",
                "content": [
                    {"text": "Explain the heron scheduler"},
                    {"inlineData": {"mimeType": "image/png", "data": image}},
                ],
            }
        ],
    }
    gemini = tmp_path / "session-2025-12-01T09-00-bom1.json"
    gemini.write_bytes(b"\xef\xbb\xbf" + json.dumps(chat).encode())
    assert detect_platform(gemini) == "gemini"
    (prompt,) = parse_file(gemini).events
    assert prompt.text == "Explain the heron scheduler\n[image image/png, 3 KB]"

    # A Codex prompt's image vanished without a word; its two copies stay one event.
    url = "data:image/png;base64," + image
    lines = [
        {"type": "session_meta", "payload": {"id": "c", "timestamp": "2025-11-17T15:30:28Z"}},
        {
            "type": "response_item",
            "payload": {
                "type": "message",
                "role": "user",
                "content": [
                    {"type": "input_text", "text": "Look at this:"},
                    {"type": "input_image", "image_url": url},
                ],
            },
        },
        {
            "type": "event_msg",
            "payload": {"type": "user_message", "message": "Look at this:", "images": [url]},
        },
    ]
    codex = tmp_path / "rollout-2025-11-17T15-30-28-019a93b9-aaaa-7600-98ff-940e6b99603c.jsonl"
    codex.write_text("".join(json.dumps(line) + "\n" for line in lines))
    prompts = [e for e in parse_file(codex, "codex").events if e.kind == "user_prompt"]
    assert [e.text for e in prompts] == ["Look at this:\n[image image/png, 3 KB]"]
