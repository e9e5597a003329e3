"""Timestamps of session records (issue #18 item 6): ISO-8601, slash-dated and epoch
values normalized to ISO-8601 UTC; junk gives None, and a session without a usable time
takes its file's modification time."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from selene_dag.sessions.parsers import parse_file
from selene_dag.sessions.parsers.timestamps import normalize_timestamp
from selene_dag.sessions.steps import session_meta
from selene_dag.sessions.store import SessionFileRow


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("2025-10-31T17:00:00.123Z", "2025-10-31T17:00:00.123Z"),
        ("2025-10-31T17:00:00Z", "2025-10-31T17:00:00.000Z"),
        ("2025-10-31T19:00:00+02:00", "2025-10-31T17:00:00.000Z"),
        ("2025-10-31 17:00:00", "2025-10-31T17:00:00.000Z"),
        ("2025/10/31 17:00:00", "2025-10-31T17:00:00.000Z"),
        ("2025/10/31", "2025-10-31T00:00:00.000Z"),
        (1761930000, "2025-10-31T17:00:00.000Z"),
        (1761930000123, "2025-10-31T17:00:00.123Z"),
        ("1761930000", "2025-10-31T17:00:00.000Z"),
        (1761930000.5, "2025-10-31T17:00:00.500Z"),
    ],
)
def test_times_are_normalized_to_iso_utc(raw: object, expected: str) -> None:
    assert normalize_timestamp(raw) == expected


@pytest.mark.parametrize(
    "raw", [None, "", "junk", "zz-yesterday", "2025/13/45 99:00:00", True, 0, "1", [], {}, 1e20]
)
def test_junk_gives_none(raw: object) -> None:
    assert normalize_timestamp(raw) is None


def test_parsed_events_carry_normalized_times(tmp_path: Path) -> None:
    path = tmp_path / "rollout-slash.jsonl"
    records = [
        {
            "timestamp": "2025/10/31 17:00:00",
            "type": "session_meta",
            "payload": {"id": "s1", "cwd": "/x"},
        },
        {
            "timestamp": 1761930060,
            "type": "response_item",
            "payload": {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "hi"}],
            },
        },
        {
            "timestamp": "not a time",
            "type": "response_item",
            "payload": {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "yo"}],
            },
        },
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    stamps = [e.timestamp for e in parse_file(path, "codex").events]
    assert stamps == ["2025-10-31T17:00:00.000Z", "2025-10-31T17:01:00.000Z", None]


def test_a_session_without_times_takes_its_file_mtime() -> None:
    mtime = datetime(2024, 2, 3, 4, 5, 6, tzinfo=UTC).timestamp()
    row = SessionFileRow(
        session_key="codex-000000000000",
        path="/x/rollout.jsonl",
        platform="codex",
        project="/x",
        source_session_id="s1",
        size=1,
        mtime=mtime,
        sha256="0",
        events=0,
        parse_errors=0,
        error_samples=[],
        duplicates=0,
        redactions=0,
        scanned_at=datetime.now(UTC),
        parsed_at=datetime.now(UTC),
    )
    assert session_meta(row, "k", []).created_at == "2024-02-03T04:05:06.000Z"
    assert os.path.sep not in session_meta(row, "k", []).created_at
