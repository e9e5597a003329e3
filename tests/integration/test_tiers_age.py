"""Tiers age with the clock without a daemon: context, health and ask bring thread status
and tiers up to the day they run (seed 000's daily evaluation), once per day."""

from __future__ import annotations

import json
from pathlib import Path

from selene_dag import service
from selene_dag.config import load_settings
from selene_dag.defs.runs import instance_for
from selene_dag.store import open_store, recorded_day


def _notes(folder: Path) -> Path:
    folder.mkdir()
    lines = [
        {
            "id": f"n{i}",
            "title": f"Kayak trip {i}",
            "content": f"We paddled the kayak trip number {i} along the river. "
            f"The permit for trip {i} was renewed at the harbour office.",
            "topic": "kayak",
            "created_at": "2026-07-10T00:00:00Z",
            "updated_at": "2026-07-14T00:00:00Z",
        }
        for i in range(6)
    ]
    path = folder / "notes.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    return path


def _tiers_and_threads(settings) -> tuple[dict[str, int], dict[str, int]]:
    with open_store(settings.db_path) as conn:
        tiers = dict(
            conn.execute(
                "SELECT fidelity_tier, count(*) FROM processed_notes GROUP BY 1"
            ).fetchall()
        )
        threads = dict(conn.execute("SELECT status, count(*) FROM threads GROUP BY 1").fetchall())
    return tiers, threads


def test_context_a_year_later_shows_aged_tiers_and_archived_threads(
    tmp_path: Path, home: Path
) -> None:
    path = _notes(tmp_path / "notes")
    then = load_settings(home=home, now_override="2026-07-15")
    service.ingest(then, path)
    tiers, threads = _tiers_and_threads(then)
    assert set(tiers) <= {"full", "high"} and threads.get("active", 0) >= 1

    # A year later, with no ingest and no daemon in between: context runs the day's
    # evaluation first (the thread went quiet: archived; the notes are old: summary).
    later = load_settings(home=home, now_override="2027-07-20")
    runs_before = len(instance_for(later).get_runs())
    pack = service.context(later, 2000)
    tiers, threads = _tiers_and_threads(later)
    assert threads.get("active", 0) == 0 and threads.get("archived", 0) >= 1
    assert "full" not in tiers and "high" not in tiers, tiers
    # Their stored tiers aged; with room for every note whole, context raises them.
    assert pack.counts["full"] == sum(tiers.values()) == len(pack.shown)
    tight = service.context(later, pack.total_tokens // 3)
    assert tight.counts["full"] == 0 < tight.counts["summary"] + tight.counts["skeleton"]
    with open_store(later.db_path) as conn:
        # context stamps nothing: a note it shows is not "used" (stamping every note a
        # budget reached kept them warm for ever); ask's notes are.
        stamped = "SELECT count(*) FROM processed_notes WHERE last_accessed_at IS NOT NULL"
        assert conn.execute(stamped).fetchone()[0] == 0
        assert recorded_day(conn, "fidelity_tiers").isoformat() == "2027-07-20"
        assert recorded_day(conn, "threads").isoformat() == "2027-07-20"
    assert len(instance_for(later).get_runs()) == runs_before + 1
    # The same day again: nothing runs but ask's refresh of the index, whose documents'
    # tiers moved, once.
    service.health(later)
    assert len(instance_for(later).get_runs()) == runs_before + 1
    first = service.ask(later, "kayak permit", 300).stats
    assert first["index_refreshed"] is True and first["refresh_ms"] > 0
    again = service.ask(later, "kayak permit", 300).stats
    assert again["index_refreshed"] is False and again["refresh_ms"] == 0
    assert len(instance_for(later).get_runs()) == runs_before + 2


def test_a_server_running_into_a_new_day_serves_aged_tiers(tmp_path: Path, home: Path) -> None:
    """`serve` answered /context and /health with the tiers of the day they were computed
    for until a CLI command ran; it brings them up to the day when it opens the store, as
    the CLI does."""
    from fastapi.testclient import TestClient

    from selene_dag.api import create_app

    path = _notes(tmp_path / "notes")
    then = load_settings(home=home, now_override="2026-07-15")
    service.ingest(then, path)
    later = load_settings(home=home, now_override="2027-07-20")
    with TestClient(create_app(lambda: later)) as client:
        health = client.get("/health/compression").json()
    tiers, threads = _tiers_and_threads(later)
    assert threads.get("active", 0) == 0 and threads.get("archived", 0) >= 1
    assert "full" not in tiers and "high" not in tiers, tiers
    assert health["tiers"].get("full", 0) == 0 and health["tiers"].get("high", 0) == 0, health
