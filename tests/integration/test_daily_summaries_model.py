"""With a model server, daily summaries ask the model only for the last month's days of two
notes or more: a first run over years of notes asked it once per day (473 calls for the
demo notes)."""

from __future__ import annotations

from datetime import UTC, date, datetime
from pathlib import Path

from selene_dag.config import load_settings
from selene_dag.llm.factory import get_engine
from selene_dag.notes.daily import summarize_days
from selene_dag.notes.folders import ingest_scope
from selene_dag.notes.ingest import read_notes
from selene_dag.notes.writer import write_notes
from selene_dag.store import open_store
from tests.support.fake_ollama import FakeOllama

NOW = datetime(2026, 7, 15, tzinfo=UTC)


def test_the_model_summarizes_only_recent_days_of_several_notes(tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    days = {"2024-03-01": 3, "2026-07-01": 2, "2026-07-10": 1}  # old, recent, a lone note
    for day, count in days.items():
        for i in range(count):
            (folder / f"{day}-{i}.md").write_text(
                f"---\ncreated: {day}\n---\n# Note {i} of {day}\nText {i} about otters.\n"
            )
    db = tmp_path / "selene.duckdb"
    with FakeOllama() as server:
        env = {"SELENE_LLM": "ollama", "SELENE_OLLAMA_HOST": server.url}
        settings = load_settings(env, home=tmp_path)
        with open_store(db) as conn:
            scope = ingest_scope(conn, folder)
            write_notes(conn, read_notes(folder, scope), scope, NOW)
            engine = get_engine(settings, cache_conn=conn)
            summaries = summarize_days(
                conn, date(2024, 1, 1), date(2026, 8, 1), engine, model_since=date(2026, 6, 14)
            )
        calls = server.requests["/api/chat"] + server.requests["/api/generate"]
    assert [s.day.isoformat() for s in summaries] == list(days)
    assert calls == 1  # 2026-07-01 alone
    by_day = {s.day.isoformat(): s.summary for s in summaries}
    assert by_day["2024-03-01"].splitlines()[1].startswith("- Note 0 of 2024-03-01")  # listed
    assert not by_day["2026-07-01"].splitlines()[1].startswith("- ")  # the model's summary
