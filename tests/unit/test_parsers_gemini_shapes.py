"""Gemini CLI shapes of issue #18 item 2, written in the record shapes of google-gemini/
gemini-cli ``packages/core/src/services/chatRecordingService.ts`` (commit 016443b5):
``$rewindTo`` drops the target message and everything after it (all messages when the id
is unknown), ``$set.messages`` replaces the messages, sub-agents are recorded under
``chats/<parent session id>/<id>.jsonl`` with ``kind: "subagent"``."""

from __future__ import annotations

import json
from pathlib import Path

from selene_dag.config import SessionRoot
from selene_dag.sessions.parsers import parse_file
from selene_dag.sessions.scanner import scan_roots
from tests.support.sessions import FIXTURES

GEMINI = FIXTURES / "gemini"
PARENT = "7f3e9c2a-1b4d-4e8f-9a6b-2c5d8e1f0a3b"
SUB = GEMINI / "shapes_tree" / "chats" / PARENT / "b81d77e0-5c3a-4f11-8e2d-6a9b0c4d2e7f.jsonl"


def _write(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def _msg(i: int, kind: str, text: str) -> dict:
    return {
        "id": f"m{i}",
        "timestamp": f"2026-04-20T08:0{i}:00.000Z",
        "type": kind,
        "content": text,
    }


HEADER = {"sessionId": "s-1", "projectHash": "abc", "startTime": "2026-04-20T08:00:00.000Z"}


def test_rewind_drops_the_target_and_what_follows(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "session-r.jsonl",
        [
            HEADER,
            _msg(1, "user", "first"),
            _msg(2, "gemini", "reply"),
            _msg(3, "user", "abandoned question"),
            _msg(4, "gemini", "abandoned answer"),
            {"$rewindTo": "m3"},
            _msg(5, "user", "second"),
        ],
    )
    result = parse_file(path)
    assert result.errors == 0
    assert [e.text for e in result.events] == ["first", "reply", "second"]


def test_rewind_to_an_unknown_id_clears_the_history(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "session-u.jsonl",
        [HEADER, _msg(1, "user", "first"), {"$rewindTo": "nope"}, _msg(2, "user", "after")],
    )
    assert [e.text for e in parse_file(path).events] == ["after"]


def test_checkpoint_replaces_the_messages_and_metadata_keeps_them() -> None:
    result = parse_file(GEMINI / "shapes_rewind_checkpoint.jsonl")
    assert result.errors == 0
    texts = [e.text for e in result.events if e.raw_type != "model_change"]
    assert [e.text for e in result.events if e.raw_type == "model_change"] == [
        "Model: gemini-2.5-pro"
    ]
    assert texts[0] == "Why does the cache test fail on CI only?"
    assert texts[1].startswith("Chat compressed")
    assert texts[2:] == ["Now add a regression test", "Added test_cache_uses_utc."]
    # Rewound and replaced messages are gone; a metadata-only $set lost nothing.
    assert not any("Rust" in t for t in texts)


def test_sub_agent_transcript_names_its_parent_and_is_scanned() -> None:
    result = parse_file(SUB)
    assert result.stats.parent_session_id == PARENT
    assert result.stats.session_id == "b81d77e0-5c3a-4f11-8e2d-6a9b0c4d2e7f"
    assert [e.kind for e in result.events if e.raw_type != "model_change"] == [
        "user_prompt",
        "assistant_text",
    ]
    found = scan_roots([SessionRoot(GEMINI / "shapes_tree", "gemini")])
    assert [(Path(f.path).name, f.platform) for f in found] == [(SUB.name, "gemini")]
    assert parse_file(GEMINI / "VibeCodingTracker_gemini.jsonl").stats.parent_session_id is None


def test_parent_link_is_stored(tmp_path: Path) -> None:
    from datetime import UTC, datetime

    from selene_dag.sessions.steps import ingest_session
    from selene_dag.sessions.store import load_session_file
    from selene_dag.store import connect

    (scanned,) = scan_roots([SessionRoot(GEMINI / "shapes_tree", "gemini")])
    conn = connect(tmp_path / "selene.duckdb")
    try:
        ingest_session(conn, scanned, datetime(2026, 5, 1, tzinfo=UTC))
        row = load_session_file(conn, scanned.session_key)
        assert row is not None and row.parent_session_id == PARENT
    finally:
        conn.close()


def test_a_malformed_rewind_costs_only_itself(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "session-bad.jsonl",
        [HEADER, _msg(1, "user", "first"), {"$rewindTo": ["m1"]}, _msg(2, "user", "second")],
    )
    result = parse_file(path)
    assert result.errors == 1
    assert [e.text for e in result.events] == ["first", "second"]


def test_a_tool_call_keeps_the_time_it_ran(tmp_path: Path) -> None:
    # Every call and result took its message's time, though each call records its own.
    reply = _msg(2, "gemini", "reading both")
    reply["toolCalls"] = [
        {"id": "c1", "name": "read_file", "args": {"path": "a.py"}, "status": "success",
         "timestamp": "2026-04-20T08:02:06.000Z", "result": []},
        {"id": "c2", "name": "read_file", "args": {"path": "b.py"}, "status": "success",
         "result": []},
    ]  # fmt: skip
    path = _write(tmp_path / "session-t.jsonl", [HEADER, _msg(1, "user", "read"), reply])
    events = [e for e in parse_file(path).events if e.tool_name == "read_file"]
    assert [str(e.timestamp)[:19] for e in events] == [
        "2026-04-20T08:02:06", "2026-04-20T08:02:06", "2026-04-20T08:02:00", "2026-04-20T08:02:00"
    ]  # fmt: skip
