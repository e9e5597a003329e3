"""A transcript that grows is re-read counting and redacting only its new events: token
counts of the stored events (their text, and their line in a chunk) are taken over when
they are in the same model, and their texts when the same redaction rules wrote them; every
count stays exactly what tokenizing gives, every text what a first read stores. Real
transcript, real runs."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import dagster as dg

from selene_dag import service
from selene_dag.config import load_settings
from selene_dag.context.tokens import count_tokens
from selene_dag.redact import RULES_VERSION
from selene_dag.sessions.chunker import build_chunks, chunk_line
from selene_dag.sessions.scanner import scan_roots
from selene_dag.sessions.steps import KnownTokens, normalize_events
from selene_dag.sessions.store import load_chunks, load_events, load_session_file
from selene_dag.store import connect
from tests.support.sessions import REAL_CLAUDE, plant_secrets, secret_values

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


def _stored(settings, key: str) -> list[tuple[int, str, str]]:
    conn = connect(settings.db_path)
    try:
        assert load_session_file(conn, key).redaction == RULES_VERSION
        return [(e.seq, e.kind, e.text) for e in load_events(conn, key)]
    finally:
        conn.close()


def test_a_grown_transcript_stores_what_a_first_read_stores(tmp_path: Path) -> None:
    # Secrets in both halves: the first half's are stored redacted, and its events are
    # taken as stored when the file grows; the second half's are redacted when they come.
    planted = plant_secrets(REAL_CLAUDE, tmp_path / "planted.jsonl")
    lines = planted.read_text(encoding="utf-8").splitlines(keepends=True)
    secrets = len(secret_values())
    cut = len(lines) - secrets // 2
    assert secrets >= 4 and cut < len(lines)
    grown, whole = tmp_path / "grown" / "claude", tmp_path / "whole" / "claude"
    grown.mkdir(parents=True)
    whole.mkdir(parents=True)
    (grown / REAL_CLAUDE.name).write_text("".join(lines[:cut]), encoding="utf-8")
    shutil.copy(planted, whole / REAL_CLAUDE.name)

    def settings_for(root: Path, home: str):
        return load_settings(
            {
                "SELENE_SESSION_ROOTS": f"claude={root}",
                "SELENE_LLM": "extractive",
                "SELENE_CLI_ASSESSORS": "",
                "SELENE_MODEL": MODEL,
            },
            home=tmp_path / home,
        )

    instance = dg.DagsterInstance.ephemeral()
    growing, fresh = settings_for(grown, "h1"), settings_for(whole, "h2")
    assert service.distill_run(growing, all_files=True, instance=instance)[0]["ok"]
    with (grown / REAL_CLAUDE.name).open("a", encoding="utf-8") as out:
        out.write("".join(lines[cut:]))
    assert service.distill_run(growing, all_files=True, instance=instance)[0]["ok"]
    assert service.distill_run(fresh, all_files=True, instance=instance)[0]["ok"]
    key = scan_roots(growing.session_roots)[0].session_key
    stored = _stored(growing, key)
    assert stored == _stored(fresh, scan_roots(fresh.session_roots)[0].session_key)
    text = "\n".join(t for _, _, t in stored)
    assert not [v for v in secret_values() if v in text]
    assert text.count("[REDACTED:") >= secrets


def test_a_text_redacted_by_the_same_rules_is_taken_as_it_is(tmp_path: Path) -> None:
    # What the store holds was redacted by these rules: a stored text is not redacted
    # again (here one that the rules would change, to show the pass is skipped).
    root = tmp_path / "claude"
    root.mkdir()
    planted = plant_secrets(REAL_CLAUDE, root / REAL_CLAUDE.name)
    (scanned,) = scan_roots(load_settings({"SELENE_SESSION_ROOTS": f"claude={root}"}).session_roots)
    raw = planted.read_text(encoding="utf-8")
    secret = next(v for v in secret_values() if v in raw)
    events, _, redactions = normalize_events(scanned, MODEL)
    assert redactions and not any(secret in e.text for e in events)
    with_secret = next(
        t
        for t in (
            json.loads(line)["message"]["content"]
            for line in raw.splitlines()[-len(secret_values()) :]
        )
        if secret in t
    )
    again, _, fewer = normalize_events(scanned, MODEL, KnownTokens(redacted={with_secret}))
    assert any(e.text == with_secret for e in again)
    assert sum(fewer.values()) == sum(redactions.values()) - 1
