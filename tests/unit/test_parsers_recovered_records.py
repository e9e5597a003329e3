"""Records the parsers used to lose or leave without text: a record cut short by a crash
with the next one written on its line, a summary repeated by each resume, bare strings in
a content list, tool results without their tool's name, the API's own tools (web search),
reasoning written out in full, Codex reviews, and the first Codex CLI's one-document
rollouts (``rollout-*.json``)."""

from __future__ import annotations

import json
from pathlib import Path

from selene_dag.config import SessionRoot
from selene_dag.sessions.parsers import detect_platform, parse_file
from selene_dag.sessions.scanner import scan_roots
from tests.support.sessions import CLAUDE_FILES, REAL_CODEX

SID = "5f0c1d2e-0000-4000-8000-00000000000a"


def _claude(uuid: str, parent: str | None, rtype: str, content: object, **extra: object) -> dict:
    message = {"role": rtype, "content": content}
    if rtype == "assistant":
        message["model"] = "claude-sonnet-4-5"
    record = {"type": rtype, "uuid": uuid, "parentUuid": parent, "sessionId": SID}
    return record | {"message": message, "timestamp": "2026-03-01T10:00:00Z"} | extra


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def test_a_record_cut_short_loses_only_itself(tmp_path: Path) -> None:
    first = _claude("aaaaaaaa-1", None, "user", "deploy the docs site")
    cut = json.dumps(_claude("aaaaaaaa-2", "aaaaaaaa-1", "user", [{"type": "text", "text": "x"}]))
    after = _claude("aaaaaaaa-3", "aaaaaaaa-1", "assistant", [{"type": "text", "text": "Done."}])
    path = _write(tmp_path / "s.jsonl", [json.dumps(first), cut[:90] + json.dumps(after)])
    result = parse_file(path)
    assert [e.text for e in result.events if e.kind != "system"] == [
        "deploy the docs site",
        "Done.",
    ]
    assert result.stats.errors == 1 and "cut short" in result.stats.error_samples[0]
    assert result.stats.lines == 2


def test_a_broken_line_holding_an_object_is_no_record(tmp_path: Path) -> None:
    first = _claude("aaaaaaaa-1", None, "user", "hello")
    path = _write(tmp_path / "s.jsonl", [json.dumps(first), 'Error: {"code": 1, "x": 2}'])
    result = parse_file(path, "claude")
    assert [e.text for e in result.events] == ["hello"]
    assert result.stats.errors == 1 and "cut short" not in result.stats.error_samples[0]


def test_a_summary_repeated_by_a_resume_is_kept_once(tmp_path: Path) -> None:
    summary = json.dumps({"type": "summary", "summary": "Docs deploy", "leafUuid": "aaaaaaaa-1"})
    prompt = json.dumps(_claude("aaaaaaaa-1", None, "user", "deploy the docs site"))
    result = parse_file(_write(tmp_path / "s.jsonl", [summary, prompt, summary]), "claude")
    assert [e.text for e in result.events if e.kind == "summary"] == ["Docs deploy"]
    assert result.stats.duplicates == 1


def test_bare_strings_in_a_content_list_are_text(tmp_path: Path) -> None:
    lines = [
        json.dumps(
            _claude(
                "aaaaaaaa-1", None, "user", ["pin the version", {"type": "text", "text": "to 3.2"}]
            )
        ),
        json.dumps(_claude("aaaaaaaa-2", "aaaaaaaa-1", "assistant", ["Pinned to 3.2."])),
    ]
    events = parse_file(_write(tmp_path / "s.jsonl", lines), "claude").events
    assert [(e.kind, e.text) for e in events if e.kind != "system"] == [
        ("user_prompt", "pin the version"),
        ("user_prompt", "to 3.2"),
        ("assistant_text", "Pinned to 3.2."),
    ]


def test_tool_results_name_their_tool(tmp_path: Path) -> None:
    call = {"type": "tool_use", "id": "toolu_01", "name": "Bash", "input": {"command": "ls"}}
    result = {"type": "tool_result", "tool_use_id": "toolu_01", "content": "README.md"}
    lines = [
        json.dumps(_claude("aaaaaaaa-1", None, "assistant", [call])),
        json.dumps(_claude("aaaaaaaa-2", "aaaaaaaa-1", "user", [result])),
    ]
    events = parse_file(_write(tmp_path / "s.jsonl", lines), "claude").events
    assert [(e.kind, e.tool_name) for e in events if e.kind.startswith("tool")] == [
        ("tool_use", "Bash"),
        ("tool_result", "Bash"),
    ]
    for path in [*CLAUDE_FILES[1:], REAL_CODEX]:  # the real transcripts: every result named
        results = [e for e in parse_file(path).events if e.kind == "tool_result"]
        assert results and all(e.tool_name for e in results), path.name


def test_the_apis_own_tools_keep_their_query_and_results(tmp_path: Path) -> None:
    content = [
        {
            "type": "server_tool_use",
            "id": "srvtoolu_1",
            "name": "web_search",
            "input": {"query": "duckdb 1.2 release"},
        },
        {
            "type": "web_search_tool_result",
            "tool_use_id": "srvtoolu_1",
            "content": [
                {
                    "type": "web_search_result",
                    "title": "Announcing DuckDB 1.2",
                    "url": "https://duckdb.org/2025/02/05/announcing-duckdb-120",
                    "encrypted_content": "EqgfCioIARgBIiQ3YTAwMjY1" * 40,
                }
            ],
        },
        {
            "type": "web_search_tool_result",
            "tool_use_id": "srvtoolu_1",
            "content": {"type": "web_search_tool_result_error", "error_code": "max_uses_exceeded"},
        },
    ]
    line = json.dumps(_claude("aaaaaaaa-1", None, "assistant", content))
    events = [
        e
        for e in parse_file(_write(tmp_path / "s.jsonl", [line]), "claude").events
        if e.kind != "system"
    ]
    assert [(e.kind, e.tool_name, e.is_error) for e in events] == [
        ("tool_use", "web_search", False),
        ("tool_result", "web_search", False),
        ("tool_result", "web_search", True),
    ]
    assert "duckdb 1.2 release" in events[0].text
    assert (
        events[1].text
        == "Announcing DuckDB 1.2 https://duckdb.org/2025/02/05/announcing-duckdb-120"
    )
    assert events[2].text == "error: max_uses_exceeded"


def _codex(payload: dict, rtype: str = "response_item") -> str:
    return json.dumps({"timestamp": "2026-03-01T10:00:00Z", "type": rtype, "payload": payload})


def test_codex_outputs_name_their_tool_and_reasoning_written_out_is_kept(tmp_path: Path) -> None:
    lines = [
        _codex(
            {
                "type": "function_call",
                "name": "shell",
                "arguments": '{"command":["ls"]}',
                "call_id": "call_1",
            }
        ),
        _codex({"type": "function_call_output", "call_id": "call_1", "output": "README.md"}),
        _codex(
            {
                "type": "reasoning",
                "summary": [],
                "content": [{"type": "reasoning_text", "text": "The README is at the root."}],
            }
        ),
    ]
    events = parse_file(_write(tmp_path / "r.jsonl", lines), "codex").events
    assert [(e.kind, e.tool_name, e.text) for e in events] == [
        ("tool_use", "shell", '{"command":["ls"]}'),
        ("tool_result", "shell", "README.md"),
        ("other", None, "The README is at the root."),
    ]


def test_a_codex_review_keeps_its_verdict_and_findings(tmp_path: Path) -> None:
    review = {
        "findings": [
            {
                "title": "[P1] Off-by-one in the page loop",
                "body": "The loop stops before the last page.",
                "confidence_score": 0.8,
                "priority": 1,
                "code_location": {
                    "absolute_file_path": "/repo/pager.py",
                    "line_range": {"start": 40, "end": 44},
                },
            },
            {"title": "Unused import", "body": "", "priority": 3, "code_location": None},
        ],
        "overall_correctness": "patch is incorrect",
        "overall_explanation": "One bug in paging.",
        "overall_confidence_score": 0.8,
    }
    lines = [
        _codex(
            {
                "type": "entered_review_mode",
                "target": {"type": "uncommittedChanges"},
                "user_facing_hint": "current changes",
            },
            "event_msg",
        ),
        _codex({"type": "exited_review_mode", "review_output": review}, "event_msg"),
    ]
    events = parse_file(_write(tmp_path / "r.jsonl", lines), "codex").events
    assert [(e.kind, e.text) for e in events] == [
        ("system", "Review started: current changes"),
        (
            "assistant_text",
            "Review: patch is incorrect: One bug in paging.\n"
            "- [P1] Off-by-one in the page loop (/repo/pager.py:40-44)\n"
            "  The loop stops before the last page.\n"
            "- [P3] Unused import",
        ),
    ]


def _document(tmp_path: Path) -> Path:
    doc = {
        "session": {
            "timestamp": "2025-04-20T10:00:00.000Z",
            "id": "0b4c7d1e-legacy",
            "instructions": "",
        },
        "items": [
            {
                "id": "msg_1",
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "rename the --fast flag"}],
            },
            {
                "type": "function_call",
                "name": "shell",
                "arguments": '{"command":["grep","-rn","--fast"]}',
                "call_id": "call_1",
            },
            {
                "type": "function_call_output",
                "call_id": "call_1",
                "output": '{"output":"cli.py:12","metadata":{"exit_code":0}}',
            },
            "not an item",
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "Renamed to --quick."}],
            },
        ],
    }
    path = tmp_path / "sessions" / "rollout-2025-04-20-0b4c7d1e.json"
    path.parent.mkdir()
    path.write_text(json.dumps(doc, indent=2), encoding="utf-8")
    return path


def test_a_first_codex_cli_rollout_document_is_read(tmp_path: Path) -> None:
    path = _document(tmp_path)
    assert detect_platform(path) == "codex"
    result = parse_file(path)
    assert result.stats.session_id == "0b4c7d1e-legacy"
    assert [(e.line, e.kind, e.tool_name, e.text) for e in result.events] == [
        (0, "system", None, "Codex session (legacy format)"),
        (1, "user_prompt", None, "rename the --fast flag"),
        (2, "tool_use", "shell", '{"command":["grep","-rn","--fast"]}'),
        (3, "tool_result", "shell", "cli.py:12"),
        (5, "assistant_text", None, "Renamed to --quick."),
    ]
    assert {e.timestamp for e in result.events} == {"2025-04-20T10:00:00.000Z"}
    assert result.stats.errors == 1  # the item that is no object, counted
    for platform in ("codex", None):  # taken under a codex= root and a bare one
        found = scan_roots([SessionRoot(path=str(path.parent), platform=platform)])
        assert [(f.path, f.platform) for f in found] == [(str(path), "codex")]


def test_a_broken_rollout_document_is_one_error(tmp_path: Path) -> None:
    path = _document(tmp_path)
    path.write_text(path.read_text()[:-40], encoding="utf-8")
    result = parse_file(path, "codex")
    assert result.events == [] and result.stats.errors == 1


def test_a_big_cut_record_and_two_whole_records_on_one_line(tmp_path: Path) -> None:
    # The cut record's own nested objects used up the tries: a cut compaction of 40
    # messages lost the record after it. Two whole records with no break kept only one.
    def envelope(rtype: str, payload: dict) -> dict:
        return {"timestamp": "2026-03-01T10:00:00Z", "type": rtype, "payload": payload}

    def message(text: str) -> dict:
        return {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": text}],
        }

    history = [message(f"m{i}") for i in range(40)]
    cut = json.dumps(envelope("compacted", {"message": "sum", "replacement_history": history}))
    lines = [
        json.dumps(envelope("session_meta", {"id": "s", "cwd": "/t"})),
        cut[:-40] + json.dumps(envelope("response_item", message("NEXT PROMPT"))),
        json.dumps(envelope("response_item", message("one")))
        + json.dumps(envelope("response_item", message("two"))),
    ]
    result = parse_file(_write(tmp_path / "r.jsonl", lines), "codex")
    assert [e.text for e in result.events if e.kind == "user_prompt"] == [
        "NEXT PROMPT",
        "one",
        "two",
    ]
    assert result.stats.errors == 1


def test_a_json_file_opening_with_another_session_object_is_no_rollout(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_text(json.dumps({"session": {"timeout": 30}, "theme": "dark"}, indent=2))
    found = scan_roots([SessionRoot(path=str(tmp_path), platform=None)])
    assert found == []


def test_tool_errors_names_and_titles(tmp_path: Path) -> None:
    content = [
        {"type": "server_tool_use", "id": "srv_2", "name": "fetch", "input": {"url": "https://x"}},
        {"type": "mcp_tool_result", "tool_use_id": "srv_2", "is_error": True, "content": "denied"},
    ]
    lines = [
        json.dumps({"type": "custom-title", "customTitle": "Docs deploy", "sessionId": SID}),
        json.dumps({"type": "summary", "summary": "Docs deploy", "leafUuid": "aaaaaaaa-1"}),
        json.dumps(_claude("aaaaaaaa-1", None, "assistant", content)),
    ]
    events = parse_file(_write(tmp_path / "s.jsonl", lines), "claude").events
    assert [e.text for e in events if e.kind == "summary"] == ["Docs deploy", "Docs deploy"]
    result = next(e for e in events if e.kind == "tool_result")
    assert (result.tool_name, result.is_error, result.text) == ("fetch", True, "denied")
    codex = [
        _codex({"type": "tool_search_call", "call_id": "call_9", "arguments": {"q": "x"}}),
        _codex({"type": "tool_search_output", "call_id": "call_9", "tools": ["a"]}),
    ]
    events = parse_file(_write(tmp_path / "r.jsonl", codex), "codex").events
    assert [e.tool_name for e in events] == ["tool_search", "tool_search"]


def test_every_whole_record_of_a_line_is_read(tmp_path: Path) -> None:
    # Three whole records on one line kept only the last; a whole one before a cut one
    # was lost with it; a cut one before two whole ones lost the middle one.
    def record(n: int) -> str:
        parent = f"aaaaaaaa-{n - 1}" if n > 1 else None
        return json.dumps(_claude(f"aaaaaaaa-{n}", parent, "user", f"prompt {n}"))

    lines = [
        record(1),
        record(2) + record(3) + record(4),
        record(5) + record(6)[:70],
        record(7)[:60] + record(8) + record(9),
    ]
    result = parse_file(_write(tmp_path / "s.jsonl", lines), "claude")
    texts = [e.text for e in result.events if e.kind == "user_prompt"]
    assert texts == [f"prompt {n}" for n in (1, 2, 3, 4, 5, 8, 9)]
    assert result.stats.errors == 2  # the two cut records, counted
    assert result.stats.lines == 9 - 2


def test_a_record_read_from_a_glued_line_is_read_as_every_line(tmp_path: Path) -> None:
    # Half an emoji (a lone surrogate escape) is U+FFFD there too: the store takes no
    # lone surrogate.
    first = json.dumps(_claude("aaaaaaaa-1", None, "user", "one"))
    second = json.dumps(_claude("aaaaaaaa-2", "aaaaaaaa-1", "user", "EMOJI"))
    glued = first[:50] + second.replace("EMOJI", "launch \\ud83c")
    result = parse_file(_write(tmp_path / "s.jsonl", [first, glued]), "claude")
    assert [e.text for e in result.events] == ["one", "launch \ufffd"]


def test_broken_lines_deep_or_doubly_cut_are_counted_not_a_crash(tmp_path: Path) -> None:
    # A record nested past Python's recursion limit, glued to the next, crashed the parse;
    # two cut records on a line counted one error; a leading blank read as a cut.
    def record(n: int, text: str = "") -> str:
        parent = f"aaaaaaaa-{n - 1}" if n > 1 else None
        return json.dumps(_claude(f"aaaaaaaa-{n}", parent, "user", text or f"prompt {n}"))

    deep = '{"type": "user", "x": ' + "[" * 5000 + "]" * 5000 + "}"
    lines = [
        record(1),
        deep[:-3] + record(2),
        record(3)[:60] + record(4) + record(5)[:60] + record(6),
        " " + record(7) + record(8),
    ]
    result = parse_file(_write(tmp_path / "s.jsonl", lines), "claude")
    texts = [e.text for e in result.events if e.kind == "user_prompt"]
    assert texts == [f"prompt {n}" for n in (1, 2, 4, 6, 7, 8)]
    assert result.stats.errors == 3  # the deep one and the two cuts; none for the blank


def test_many_glued_records_a_glued_first_line_and_trailing_junk(tmp_path: Path) -> None:
    # Each record read charged the rest of the line to the work bound: a line of 300
    # whole records kept a few dozen. A file's first line had no records before it to
    # compare shapes with, and a whole record followed by junk was lost with the junk.
    def record(n: int) -> str:
        parent = f"aaaaaaaa-{n - 1}" if n > 1 else None
        return json.dumps(_claude(f"aaaaaaaa-{n}", parent, "user", f"prompt {n} " + "x" * 900))

    lines = [
        record(1) + record(2),
        "".join(record(n) for n in range(3, 303)),
        record(303) + "\x00\x00garbage",
    ]
    result = parse_file(_write(tmp_path / "s.jsonl", lines), "claude")
    texts = [e.text.split()[1] for e in result.events if e.kind == "user_prompt"]
    assert texts == [str(n) for n in range(1, 304)]
    assert result.stats.errors == 1  # the junk after record 303


def test_an_object_before_junk_unlike_the_files_records_is_no_record(tmp_path: Path) -> None:
    # A log line's object before a traceback is not one of the transcript's records.
    first = json.dumps(_claude("aaaaaaaa-1", None, "user", "hello"))
    broken = '{"level": "error", "msg": "boom"} Traceback (most recent call last):'
    result = parse_file(_write(tmp_path / "s.jsonl", [first, broken, "{} junk"]), "claude")
    assert [e.text for e in result.events] == ["hello"]
    assert result.stats.errors == 2


def test_a_summary_glued_to_the_first_prompt_on_the_first_line(tmp_path: Path) -> None:
    # The first line's first record (a summary) was the only shape to compare with, so
    # the prompt glued after it, sharing one key with it, was counted as cut and lost.
    summary = json.dumps({"type": "summary", "summary": "Docs deploy", "leafUuid": "x"})
    prompt = json.dumps(_claude("aaaaaaaa-1", None, "user", "deploy the docs site"))
    result = parse_file(_write(tmp_path / "s.jsonl", [summary + prompt]), "claude")
    assert [e.text for e in result.events if e.kind in ("summary", "user_prompt")] == [
        "Docs deploy",
        "deploy the docs site",
    ]
    assert result.stats.errors == 0


def test_an_object_after_a_whole_record_is_a_record_only_when_it_ends_as_one(
    tmp_path: Path,
) -> None:
    # After a whole record, an empty object (it crashed the read: its first key was
    # taken), an object sharing no key with the records, and one followed by the rest of a
    # record whose opening was lost are no records: each is a cut, counted.
    first = json.dumps(_claude("aaaaaaaa-1", None, "user", "deploy the docs site"))
    second = json.dumps(_claude("aaaaaaaa-2", "aaaaaaaa-1", "assistant", "Deploying."))
    third = json.dumps(_claude("aaaaaaaa-3", "aaaaaaaa-2", "user", "thanks"))
    nested = '{"type": "tool_use", "id": "t1", "name": "Bash", "input": {}}]}, "uuid": "x"}'
    for glue in ("{}", '{"foo": 1}', nested):
        result = parse_file(_write(tmp_path / "s.jsonl", [first, second + glue + third]), "claude")
        texts = [e.text for e in result.events if e.kind in ("user_prompt", "assistant_text")]
        assert texts == ["deploy the docs site", "Deploying.", "thanks"], glue
        assert result.stats.errors == 1, glue
        assert not [e for e in result.events if e.kind == "other"], glue


def test_a_cut_record_opening_the_file_loses_only_itself(tmp_path: Path) -> None:
    # A file's first line opening with a cut record (the first run crashed while writing)
    # gave no shape to look for, so the records glued after it were lost with it.
    first = json.dumps(_claude("aaaaaaaa-1", None, "user", "deploy the docs site"))
    second = json.dumps(_claude("aaaaaaaa-2", "aaaaaaaa-1", "assistant", "Deploying."))
    third = json.dumps(_claude("aaaaaaaa-3", "aaaaaaaa-2", "user", "thanks"))
    for cut_at in (40, first.index('"content"') + 12, len(first) - 30):
        lines = [first[:cut_at] + second, third]
        result = parse_file(_write(tmp_path / "s.jsonl", lines), "claude")
        texts = [e.text for e in result.events if e.kind in ("user_prompt", "assistant_text")]
        assert texts == ["Deploying.", "thanks"], cut_at
        assert result.stats.errors == 1
