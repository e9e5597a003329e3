"""Priority packing (seed 001): pack_context and compress_to_fit."""

from __future__ import annotations

import pytest

from selene_dag.context import (
    PRIORITY_COMPRESSED_HISTORY,
    PRIORITY_LONG_TERM,
    PRIORITY_OUTLINE,
    PRIORITY_RECENT,
    PRIORITY_SYSTEM,
    ContextTier,
    compress_to_fit,
    count_tokens,
    create_context_tier,
    pack_context,
)
from tests.support.context import text_of_tokens

MODELS = ["gpt-4o", "mistral:7b"]


def _tiers(model: str, sizes=(100, 200, 300)) -> list[ContextTier]:
    system, recent, history = (text_of_tokens(n, model) for n in sizes)
    # given out of priority order on purpose
    return [
        ContextTier("history", history, PRIORITY_COMPRESSED_HISTORY),
        ContextTier("system", system, PRIORITY_SYSTEM),
        ContextTier("recent", recent, PRIORITY_RECENT),
    ]


def test_priority_constants() -> None:
    assert (PRIORITY_SYSTEM, PRIORITY_RECENT, PRIORITY_OUTLINE) == (100, 90, 70)
    assert (PRIORITY_COMPRESSED_HISTORY, PRIORITY_LONG_TERM) == (50, 30)


@pytest.mark.parametrize("model", MODELS)
def test_everything_fits_unchanged(model: str) -> None:
    tiers = _tiers(model)
    r = pack_context(tiers, 600, model)
    assert [t.label for t in r.packed] == ["system", "recent", "history"]
    assert [t.tokens for t in r.packed] == [100, 200, 300]
    assert {t.label: t.content for t in r.packed} == {t.label: t.content for t in tiers}
    assert r.total_tokens == 600 and r.overflow is False and r.dropped == []


@pytest.mark.parametrize("model", MODELS)
def test_history_trimmed_to_100(model: str) -> None:
    tiers = _tiers(model)
    r = pack_context(tiers, 400, model)
    by = {t.label: t for t in r.packed}
    assert by["system"].content == tiers[1].content and by["recent"].content == tiers[2].content
    assert 95 <= by["history"].tokens <= 100
    assert tiers[0].content.startswith(by["history"].content)
    assert r.total_tokens <= 400 and r.overflow is False


@pytest.mark.parametrize("model", MODELS)
def test_recent_trimmed_history_removed(model: str) -> None:
    tiers = _tiers(model)
    r = pack_context(tiers, 150, model)
    assert [t.label for t in r.packed] == ["system", "recent"]
    assert r.packed[0].tokens == 100 and 45 <= r.packed[1].tokens <= 50
    assert r.dropped == ["history"]
    assert r.total_tokens <= 150 and r.overflow is False


@pytest.mark.parametrize("model", MODELS)
def test_system_alone_over_budget_overflows(model: str) -> None:
    system = text_of_tokens(500, model)
    r = pack_context([ContextTier("system", system, PRIORITY_SYSTEM)], 100, model)
    assert r.overflow is True
    assert 95 <= r.packed[0].tokens <= 100 and r.total_tokens <= 100


def test_equal_priorities_keep_input_order_and_separator_budget() -> None:
    m = "mistral:7b"
    tiers = [ContextTier(f"t{i}", text_of_tokens(30, m), 50) for i in range(4)]
    r = pack_context(tiers, 100, m, separator="\n\n")
    assert [t.label for t in r.packed][:3] == ["t0", "t1", "t2"]
    assert count_tokens(r.text, m) == r.total_tokens <= 100


@pytest.mark.parametrize("model", MODELS)
def test_compress_to_fit_drops_whole_tiers(model: str) -> None:
    tiers = _tiers(model)
    kept = compress_to_fit(tiers, 400, model)
    assert [t.label for t in kept] == ["system", "recent"]
    assert [t.tokens for t in kept] == [100, 200]
    assert compress_to_fit(tiers, 600, model)[2].content == tiers[0].content
    only = compress_to_fit(tiers, 50, model)
    assert [t.label for t in only] == ["system"] and only[0].tokens <= 50
    assert compress_to_fit(tiers, 0, model) == []


def test_create_context_tier_counts_tokens() -> None:
    t = create_context_tier("s", "hello world", PRIORITY_SYSTEM, "blue", "gpt-4")
    assert t.tokens == 2 and t.color == "blue"


def test_bad_input() -> None:
    with pytest.raises(ValueError):
        pack_context([], -1)
    with pytest.raises(TypeError):
        pack_context(None, 10)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        pack_context(["x"], 10)  # type: ignore[list-item]
    with pytest.raises(TypeError):
        ContextTier("a", None, 1)  # type: ignore[arg-type]
    # A NaN priority sorted nowhere: the system tier was dropped for a lower one.
    with pytest.raises(ValueError, match="priority must not be NaN"):
        ContextTier("n", "y", float("nan"))
    assert pack_context([], 10).packed == []
