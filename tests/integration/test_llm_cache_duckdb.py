"""The llm_cache table in a real DuckDB file: persistence, commits, stats, clear."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from selene_dag.config import load_settings
from selene_dag.llm import get_engine
from selene_dag.llm.cache import LLMCache, cache_clear, cache_stats
from selene_dag.llm.extractive import ExtractiveEngine
from selene_dag.store import connect

NOTES = [("Grid layout", "CSS grid places items in rows and columns. It beats floats for layout.")]


def test_second_run_is_served_from_the_file(tmp_path: Path) -> None:
    db = tmp_path / "selene.duckdb"
    conn = connect(db)
    first = ExtractiveEngine(cache=LLMCache(conn))
    result = first.analyze_note(*NOTES[0])
    assert (first.calls_made, first.calls_cached) == (1, 0)
    conn.close()

    conn = connect(db)
    second = ExtractiveEngine(cache=LLMCache(conn))
    assert second.analyze_note(*NOTES[0]) == result
    assert (second.calls_made, second.calls_cached) == (0, 1)
    rows = cache_stats(conn)
    assert [(r.engine, r.task, r.entries) for r in rows] == [("extractive", "analyze_note", 1)]
    conn.close()


def test_get_engine_keeps_extractive_calls_in_memory(tmp_path: Path) -> None:
    conn = connect(tmp_path / "selene.duckdb")
    engine = get_engine(load_settings({}), cache_conn=conn)
    engine.analyze_note(*NOTES[0])
    assert conn.execute("SELECT count(*) FROM llm_cache").fetchone()[0] == 0
    conn.close()


def test_put_commits_even_if_the_callers_transaction_rolls_back(tmp_path: Path) -> None:
    db = tmp_path / "selene.duckdb"
    conn = connect(db)
    engine = ExtractiveEngine(cache=LLMCache(conn))
    conn.execute("BEGIN TRANSACTION")
    engine.summarize("One sentence here. Another sentence there.", 20)
    conn.execute("ROLLBACK")
    assert conn.execute("SELECT count(*) FROM llm_cache").fetchone()[0] == 1
    conn.close()


def test_stats_and_clear_by_engine_and_model(tmp_path: Path) -> None:
    conn = connect(tmp_path / "selene.duckdb")
    cache = LLMCache(conn)
    engine = ExtractiveEngine(cache=cache)
    engine.analyze_note(*NOTES[0])
    engine.assess_chunk("error in store.py, fixed by retrying")
    engine.assess_chunk("ok thanks")
    stats = {(r.task, r.entries) for r in cache_stats(conn)}
    assert stats == {("analyze_note", 1), ("assess_chunk", 2)}
    assert cache_clear(conn, engine="ollama") == 0
    assert cache_clear(conn, engine="extractive", model="other") == 0
    assert cache_clear(conn, engine="extractive") == 3
    assert cache_stats(conn) == [] and len(cache) == 0
    conn.close()


def test_missing_table_is_a_clear_error(tmp_path: Path) -> None:
    raw = duckdb.connect(str(tmp_path / "bare.duckdb"))
    with pytest.raises(ValueError, match=r"store\.connect"):
        LLMCache(raw)
    with pytest.raises(ValueError, match="llm_cache"):
        cache_stats(raw)
    raw.close()


def test_deferred_puts_are_seen_at_once_and_written_together(tmp_path: Path) -> None:
    conn = connect(tmp_path / "selene.duckdb")
    cache = LLMCache(conn)
    engine = ExtractiveEngine(cache=cache)
    with cache.deferred():
        result = engine.analyze_note(*NOTES[0])
        assert conn.execute("SELECT count(*) FROM llm_cache").fetchone()[0] == 0
        assert engine.analyze_note(*NOTES[0]) == result  # served from the pending entry
        assert (engine.calls_made, engine.calls_cached) == (1, 1)
        assert cache.flush() == 1
        assert conn.execute("SELECT count(*) FROM llm_cache").fetchone()[0] == 1
        engine.analyze_note("Another", "A second note about flexbox and its axes.")
    # Leaving the block writes what is left.
    assert conn.execute("SELECT count(*) FROM llm_cache").fetchone()[0] == 2
    conn.close()
