"""In-memory cache and keys."""

from __future__ import annotations

import pytest

from selene_dag.llm.cache import CacheEntry, LLMCache, cache_key, canonical_json


def test_canonical_json_ignores_key_order() -> None:
    assert canonical_json({"b": 1, "a": [1, {"d": 2, "c": 3}]}) == canonical_json(
        {"a": [1, {"c": 3, "d": 2}], "b": 1}
    )
    with pytest.raises(TypeError):
        canonical_json({"x": object()})


def test_key_changes_with_every_part() -> None:
    base = cache_key("ollama", "mistral:7b", "summarize", "summarize@1:abc", {"text": "t"})
    variants = [
        cache_key("extractive", "mistral:7b", "summarize", "summarize@1:abc", {"text": "t"}),
        cache_key("ollama", "llama3:8b", "summarize", "summarize@1:abc", {"text": "t"}),
        cache_key("ollama", "mistral:7b", "answer", "summarize@1:abc", {"text": "t"}),
        cache_key("ollama", "mistral:7b", "summarize", "summarize@2:abd", {"text": "t"}),
        cache_key("ollama", "mistral:7b", "summarize", "summarize@1:abc", {"text": "u"}),
    ]
    assert base not in variants and len(set(variants)) == len(variants)


def test_memory_cache_round_trip() -> None:
    cache = LLMCache(None)
    assert not cache.persistent and cache.get("k") is None
    cache.put(CacheEntry("k", "e", "m", "t", "r", {"a": [1, 2]}, 1.5, 3, 4))
    hit = cache.get("k")
    assert hit is not None and hit.output == {"a": [1, 2]} and len(cache) == 1


def test_cache_rejects_non_duckdb_connections() -> None:
    with pytest.raises(TypeError):
        LLMCache("not a connection")  # type: ignore[arg-type]


def test_a_lone_surrogate_is_named_not_taken_for_a_type_error() -> None:
    import pytest

    from selene_dag.llm.extractive import ExtractiveEngine

    with pytest.raises(ValueError, match="lone surrogate"):
        ExtractiveEngine().analyze_note("x", "lone \ud800 s")


def test_an_integer_past_64_bits_is_cached_not_a_crash(tmp_path) -> None:
    # A model's rerank answer held 10**30: writing it to the cache raised TypeError and
    # `ask` printed a traceback instead of falling back to the offline order.
    from selene_dag.store import connect

    assert (
        canonical_json({"b": [1, 10**30], "a": "x"}) == '{"a":"x","b":[1,' + "1" + "0" * 30 + "]}"
    )
    conn = connect(tmp_path / "selene.duckdb")
    cache = LLMCache(conn)
    key = cache_key("ollama", "mistral:7b", "rerank", "rerank@1", {"q": "x"})
    cache.put(
        CacheEntry(key, "ollama", "mistral:7b", "rerank", "rerank@1", {"ranking": [2, 10**30]})
    )
    assert cache.get(key).output["ranking"][0] == 2
    conn.close()
