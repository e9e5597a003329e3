"""Generators: shapes match the real files, and our parser reads each output back."""

from __future__ import annotations

import hashlib
import itertools
import json
from dataclasses import replace
from pathlib import Path

import pytest

from selene_dag.errors import UsageError
from selene_dag.sessions.chunker import build_chunks
from selene_dag.sessions.distiller import DistillerConfig, ScoredChunk, distill
from selene_dag.sessions.generators import SeedMeta, message_texts, render_session, write_session
from selene_dag.sessions.generators.claude import unwrap
from selene_dag.sessions.parsers import detect_platform, parse_file
from selene_dag.sessions.scoring import score_events
from tests.support.sessions import REAL_CLAUDE, REAL_CODEX, REAL_GEMINI, raw_lines

META = SeedMeta(
    "claude-0123456789ab",
    "claude",
    ("326189cf",),
    "/home/user/proj",
    "2026-01-02T03:04:05Z",
    "Distilled",
)


@pytest.fixture(scope="module")
def distilled():
    events = parse_file(REAL_CLAUDE).events
    score_events(events)
    chunks = build_chunks(events, META.key)
    return distill([ScoredChunk(c, 7.0) for c in chunks], DistillerConfig(max_tokens=6000))


@pytest.mark.parametrize("platform", ["claude", "codex", "gemini"])
def test_round_trip(platform: str, distilled, tmp_path: Path) -> None:
    path = write_session(platform, distilled, META, tmp_path)
    assert detect_platform(path) == platform
    result = parse_file(path)
    assert result.errors == 0
    expected = message_texts(distilled, META)
    if platform == "claude":
        got = [e.text for e in result.events if e.kind == "summary" and e.raw_type == "user"]
        got += [unwrap(e.text) for e in result.events if e.kind == "user_prompt"]
    else:
        got = [e.text for e in result.events if e.kind == "user_prompt"]
    assert got == expected
    assert len(got) == len(distilled.chunks) + 1
    assert sum(e.kind == "assistant_text" for e in result.events) == 1


def test_claude_shape(distilled) -> None:
    _, text = render_session("claude", distilled, META)
    lines = [json.loads(line) for line in text.splitlines()]
    assert lines[0]["type"] == "summary" and lines[0]["leafUuid"] == lines[-1]["uuid"]
    assert lines[1]["subtype"] == "compact_boundary" and lines[1]["parentUuid"] is None
    for prev, cur in itertools.pairwise(lines[1:]):
        assert cur["parentUuid"] == prev["uuid"]
    real_user = next(o for o in raw_lines(REAL_CLAUDE) if o["type"] == "user")
    for line in lines[1:]:
        assert line["isSidechain"] is False
        assert line["sessionId"] == META.session_id
        assert set(real_user) - {"isMeta", "message", "type", "toolUseResult"} <= set(line) | {
            "gitBranch"
        }
    for line in lines[3:-1]:
        assert line["message"]["content"].startswith("<system-reminder>\n")


def test_codex_shape(distilled) -> None:
    name, text = render_session("codex", distilled, META)
    assert name.startswith("rollout-2026-01-02T03-04-05-") and name.endswith(".jsonl")
    lines = [json.loads(line) for line in text.splitlines()]
    real_meta = raw_lines(REAL_CODEX)[0]["payload"]
    assert set(real_meta) - {"git"} <= set(lines[0]["payload"])
    assert all(set(line) == {"timestamp", "type", "payload"} for line in lines)
    # `codex resume` lists a rollout only with a user_message event in its first 10 records.
    head = [line["payload"].get("type") for line in lines[:10] if line["type"] == "event_msg"]
    assert "user_message" in head
    events = [line["payload"] for line in lines if line["type"] == "event_msg"]
    assert [e["message"] for e in events if e["type"] == "user_message"] == message_texts(
        distilled, META
    )


def test_gemini_shape(distilled) -> None:
    name, text = render_session("gemini", distilled, META)
    doc = json.loads(text)
    header = raw_lines(REAL_GEMINI)[0]
    assert set(header) <= set(doc)
    assert name.startswith("session-2026-01-02T03-04-")
    assert [m["type"] for m in doc["messages"]][-1] == "gemini"
    assert doc["projectHash"] == hashlib.sha256(META.cwd.encode()).hexdigest()
    # A Gemini source knows its project by the hash alone: kept as it is, not hashed again.
    known_by_hash = replace(META, cwd=doc["projectHash"])
    assert (
        json.loads(render_session("gemini", distilled, known_by_hash)[1])["projectHash"]
        == (doc["projectHash"])
    )


def test_deterministic_and_bad_platform(distilled) -> None:
    assert render_session("codex", distilled, META) == render_session("codex", distilled, META)
    with pytest.raises(UsageError, match="platform"):
        render_session("cursor", distilled, META)


def test_a_timestamp_that_is_not_iso_makes_a_safe_file_name(distilled, tmp_path: Path) -> None:
    # A Codex file with slash-dated timestamps once made `distill run` write
    # distilled/codex/rollout-2025/10/31 …jsonl.tmp (issue #18 item 6).
    odd = SeedMeta(META.key, "codex", ("x",), "/p", "2025/10/31 17:00:00", "Distilled")
    path = write_session("codex", distilled, odd, tmp_path)
    assert path.parent == tmp_path and path.is_file()
    assert " " not in path.name and "/" not in path.name
    assert path.name.startswith("rollout-2025-10-31-17-00-00-")
    assert detect_platform(path) == "codex"
