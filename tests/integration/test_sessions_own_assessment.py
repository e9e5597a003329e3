"""A transcript that a CLI assessor left behind (its first prompt is selene-dag's own
assessment prompt) is recorded but contributes no events: the pipeline never feeds on
its own output."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from selene_dag.config import load_settings
from selene_dag.llm.cli_assessors import build_prompt
from selene_dag.sessions.scanner import scan_roots
from selene_dag.sessions.steps import ingest_session, is_own_assessment
from selene_dag.store import connect
from tests.support.sessions import REAL_CLAUDE

NOW = datetime(2026, 5, 1, tzinfo=UTC)


def _first_prompt_replaced(target: Path, prompt: str) -> None:
    # A real Claude transcript whose first user prompt is replaced by ``prompt``.
    lines = REAL_CLAUDE.read_text(encoding="utf-8").splitlines()
    out, done = [], False
    for line in lines:
        record = json.loads(line)
        message = record.get("message") if isinstance(record, dict) else None
        prompt_record = record.get("type") == "user" and not record.get("isMeta")
        if not done and prompt_record and isinstance(message, dict):
            message["content"] = prompt
            done = True
        out.append(json.dumps(record))
    assert done
    target.write_text("\n".join(out) + "\n", encoding="utf-8")


def test_assessment_transcript_keeps_no_events(tmp_path: Path) -> None:
    project = tmp_path / "claude" / "-proj"
    project.mkdir(parents=True)
    _first_prompt_replaced(project / "exhaust.jsonl", build_prompt("user: fix the bug"))
    _first_prompt_replaced(project / "real.jsonl", "Please fix the failing parser test.")
    settings = load_settings(
        {"SELENE_HOME": str(tmp_path / "home"), "SELENE_SESSION_ROOTS": f"claude={project.parent}"}
    )
    conn = connect(settings.db_path)
    try:
        results = {
            Path(f.path).name: ingest_session(conn, f, NOW)
            for f in scan_roots(settings.session_roots)
        }
        stored = dict(
            conn.execute(
                "SELECT f.path, count(e.seq) FROM session_files f LEFT JOIN session_events e "
                "USING (session_key) GROUP BY f.path"
            ).fetchall()
        )
    finally:
        conn.close()
    assert results["exhaust.jsonl"].own_assessment and results["exhaust.jsonl"].events == 0
    assert not results["real.jsonl"].own_assessment and results["real.jsonl"].events > 0
    assert {Path(p).name: n for p, n in stored.items()} == {
        "exhaust.jsonl": 0,
        "real.jsonl": results["real.jsonl"].events,
    }
    assert not is_own_assessment([])
