"""A transcript that grows is re-read counting only its new events: token counts of the
stored events (their text, and their line in a chunk) are taken over when they are in the
same model, and every count stays exactly what tokenizing gives. Real transcript, real runs."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import dagster as dg

from selene_dag import service
from selene_dag.config import load_settings
from selene_dag.context.tokens import count_tokens
from selene_dag.sessions.chunker import build_chunks, chunk_line
from selene_dag.sessions.scanner import scan_roots
from selene_dag.sessions.steps import KnownTokens, normalize_events
from selene_dag.sessions.store import load_chunks, load_events, load_session_file
from selene_dag.store import connect
from tests.support.sessions import REAL_CLAUDE

MODEL = "mistral:7b"


def _check_counts(conn, key: str, model: str = MODEL) -> int:
    events = load_events(conn, key)
    assert events
    lines = 0
    for event in events:
        assert event.tokens == count_tokens(event.text, model)
        if event.line_tokens is not None:
            lines += 1
            assert event.line_tokens == count_tokens(chunk_line(event), model)
    fresh = build_chunks([replace(e, line_tokens=None) for e in events], key, model=model)
    stored = load_chunks(conn, key)
    assert [(c.id, c.token_count) for c in stored] == [(c.id, c.token_count) for c in fresh]
    return lines


def test_a_grown_transcript_keeps_exact_counts(tmp_path: Path) -> None:
    root = tmp_path / "sessions" / "claude"
    root.mkdir(parents=True)
    lines = REAL_CLAUDE.read_text(encoding="utf-8").splitlines(keepends=True)
    half = len(lines) // 2
    target = root / REAL_CLAUDE.name
    target.write_text("".join(lines[:half]), encoding="utf-8")
    settings = load_settings(
        {
            "SELENE_SESSION_ROOTS": f"claude={root}",
            "SELENE_LLM": "extractive",
            "SELENE_CLI_ASSESSORS": "",
            "SELENE_MODEL": MODEL,
        },
        home=tmp_path / "home",
    )
    instance = dg.DagsterInstance.ephemeral()
    assert service.distill_run(settings, all_files=True, instance=instance)[0]["ok"]
    conn = connect(settings.db_path)
    try:
        key = scan_roots(settings.session_roots)[0].session_key
        assert load_session_file(conn, key).token_model == MODEL
        before = len(load_events(conn, key))
        assert _check_counts(conn, key) > 0
    finally:
        conn.close()
    with target.open("a", encoding="utf-8") as out:
        out.write("".join(lines[half:]))
    assert service.distill_run(settings, all_files=True, instance=instance)[0]["ok"]
    conn = connect(settings.db_path)
    try:
        assert len(load_events(conn, key)) > before
        assert _check_counts(conn, key) > 0
    finally:
        conn.close()
    # Another target model: the unchanged file runs again, every count in its tokens
    # (none taken over from the other model's).
    other = settings.replace(model="gpt-4")
    assert [
        r["session_key"] for r in service.distill_run(other, all_files=True, instance=instance)
    ] == [key]
    conn = connect(settings.db_path)
    try:
        assert load_session_file(conn, key).token_model == "gpt-4"
        assert _check_counts(conn, key, "gpt-4") > 0
    finally:
        conn.close()
    assert service.distill_run(other, all_files=True, instance=instance) == []
    shutil.rmtree(tmp_path / "home")


def test_known_counts_are_taken_as_they_are(tmp_path: Path) -> None:
    # What the store holds is trusted (it was counted in the same model): a count given for
    # a text is used without tokenizing it again.
    root = tmp_path / "claude"
    root.mkdir()
    shutil.copy(REAL_CLAUDE, root / REAL_CLAUDE.name)
    scanned = scan_roots(load_settings({"SELENE_SESSION_ROOTS": f"claude={root}"}).session_roots)
    events, _, _ = normalize_events(scanned[0], MODEL)
    first = events[0]
    known = KnownTokens(texts={first.text: 123_456})
    if first.line_tokens is not None:
        known.lines[chunk_line(first)] = 654_321
    again, _, _ = normalize_events(scanned[0], MODEL, known)
    assert again[0].tokens == 123_456
    assert again[0].line_tokens in (None, 654_321)
    assert [e.tokens for e in again[1:]] == [e.tokens for e in events[1:]]
