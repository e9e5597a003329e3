"""Relevance levels and progressive demotion (seed 002 acceptance criteria), keywords."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from selene_dag.context import (
    Level,
    LevelConfig,
    LevelItem,
    compress_context,
    count_tokens,
    estimate_compressed_size,
    extract_keywords,
)

M = "mistral:7b"
TEXT = (
    "DuckDB stores every note in a single file. The fidelity tier decides how a note is "
    "rendered in the prompt. Essences are short distillations computed by the model. "
    "Thread digests summarize active threads. The token budget is counted with the exact "
    "Mistral tokenizer so that the pack never exceeds the context window. "
)


def item(i: int, score: float, reps: int = 6) -> LevelItem:
    return LevelItem(f"n{i}", TEXT * reps, score, title=f"Title {i}", citation=f"notes/{i}.md")


def test_levels_from_scores_default_thresholds() -> None:
    cfg = LevelConfig()
    assert cfg.level_for(0.81) is Level.FULL
    assert cfg.level_for(0.8) is Level.SUMMARY and cfg.level_for(0.5) is Level.SUMMARY
    assert cfg.level_for(0.49) is Level.KEYWORDS and cfg.level_for(0.3) is Level.KEYWORDS
    assert cfg.level_for(0.29) is Level.REFERENCE


def test_each_level_rendered_when_budget_is_ample() -> None:
    items = [item(1, 0.9), item(2, 0.6), item(3, 0.4), item(4, 0.1)]
    r = compress_context(items, 100_000, M)
    levels = {li.item.id: li.level for li in r.items}
    assert levels == {
        "n1": Level.FULL,
        "n2": Level.SUMMARY,
        "n3": Level.KEYWORDS,
        "n4": Level.REFERENCE,
    }
    by = {li.item.id: li for li in r.items}
    assert TEXT * 6 in by["n1"].text  # exact content
    assert by["n2"].tokens <= 150 + 20  # ~150 tokens + header
    assert by["n3"].text.splitlines()[1].startswith("Keywords: ")
    assert by["n3"].tokens <= 30 + 20
    assert by["n4"].tokens <= 10
    assert "[notes/1.md] Title 1" in r.text  # citation header
    assert r.total_tokens == count_tokens(r.text, M)


def test_progressive_demotion_lowest_relevance_first() -> None:
    items = [item(i, s) for i, s in enumerate([0.95, 0.9, 0.85, 0.82])]
    full = compress_context(items, 100_000, M)
    assert all(li.level is Level.FULL for li in full.items)
    tight = compress_context(items, full.total_tokens // 2, M)
    assert tight.total_tokens <= full.total_tokens // 2
    levels = [tight.level_of(f"n{i}") for i in range(4)]
    order = [Level.FULL, Level.SUMMARY, Level.KEYWORDS, Level.REFERENCE, None]
    ranks = [order.index(lv) for lv in levels]
    assert ranks == sorted(ranks)  # higher relevance never below lower relevance
    assert ranks[-1] > 0


def test_stats_count_levels_and_savings() -> None:
    items = [item(1, 0.9), item(2, 0.6), item(3, 0.4), item(4, 0.1), item(5, 0.05)]
    r = compress_context(items, 100_000, M)
    assert r.stats.counts == {
        "full": 1,
        "summary": 1,
        "keywords": 1,
        "reference": 2,
        "excluded": 0,
    }
    assert r.stats.original_tokens == sum(li.original_tokens for li in r.items)
    assert r.stats.compressed_tokens == sum(li.tokens for li in r.items)
    assert r.stats.tokens_saved == r.stats.original_tokens - r.stats.compressed_tokens > 0


def test_all_high_relevance_fills_budget_with_full_content() -> None:
    items = [item(i, 0.99, reps=2) for i in range(3)]
    r = compress_context(items, 100_000, M)
    assert [li.level for li in r.items] == [Level.FULL] * 3
    assert r.stats.tokens_saved == 0


def test_all_low_relevance_become_references() -> None:
    r = compress_context([item(i, 0.1) for i in range(5)], 100_000, M)
    assert all(li.level is Level.REFERENCE for li in r.items)


def test_a_reference_keeps_its_whole_citation_even_past_ten_tokens() -> None:
    # seed 002: REFERENCE is "just title/source link", ~10 tokens; a link cut short points
    # nowhere, so a long citation is kept whole and only the title gives way.
    cite = "claude-614925ea6a51 events 101-127"
    long = LevelItem("c", TEXT, 0.1, title="claude session -experiments/worktrees", citation=cite)
    r = compress_context([long, item(1, 0.1)], 100_000, M)
    texts = {li.item.id: li.text for li in r.items}
    assert count_tokens(f"[{cite}]", M) > 10
    assert texts["c"] == f"[{cite}]"
    assert count_tokens(texts["n1"], M) <= 10  # a short citation keeps the ~10-token line
    assert r.total_tokens <= 100_000


def test_single_chunk_is_not_compressed_needlessly() -> None:
    short = LevelItem("one", "A short note about DuckDB.", 0.6, title="Only")
    r = compress_context([short], 1000, M)
    assert r.items[0].level is Level.FULL and "A short note about DuckDB." in r.text


def test_budget_never_exceeded_and_reserved_tokens_respected() -> None:
    items = [item(i, s) for i, s in enumerate([0.9, 0.7, 0.6, 0.45, 0.35, 0.2])]
    for budget in (0, 5, 40, 120, 400, 900):
        cfg = LevelConfig(reserved_tokens=20)
        r = compress_context(items, budget, M, cfg)
        assert count_tokens(r.text, M) <= max(0, budget - 20)


def test_injected_summarizer_is_used_and_bounded() -> None:
    calls = []

    def summarizer(text: str, max_tokens: int) -> str:
        calls.append(max_tokens)
        return "SUMMARY " * 500  # too long on purpose

    r = compress_context([item(1, 0.6)], 10_000, M, summarizer=summarizer)
    assert calls == [150] and "SUMMARY" in r.text
    assert r.items[0].tokens <= 150 + 20


def test_estimate_is_close_and_needs_no_summarizer() -> None:
    items = [item(1, 0.9), item(2, 0.6), item(3, 0.4), item(4, 0.1)]
    est = estimate_compressed_size(items, model=M)
    real = compress_context(items, 100_000, M).total_tokens
    assert real * 0.7 <= est <= real * 1.5


def test_configurable_thresholds() -> None:
    cfg = LevelConfig(full_threshold=0.95, summary_threshold=0.9, keywords_threshold=0.1)
    assert cfg.level_for(0.92) is Level.SUMMARY and cfg.level_for(0.2) is Level.KEYWORDS
    with pytest.raises(ValueError):
        LevelConfig(full_threshold=0.2, summary_threshold=0.5)


def test_bad_input() -> None:
    with pytest.raises(ValueError):
        compress_context([], -1, M)
    with pytest.raises(TypeError):
        compress_context([{"id": 1}], 10, M)  # type: ignore[list-item]
    with pytest.raises(TypeError):
        LevelItem("x", None, 0.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        LevelItem("x", "y", float("nan"))


# --------------------------------------------------------------------------- keywords


def test_keywords_are_meaningful_and_never_stop_words() -> None:
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    words = extract_keywords(TEXT * 3, k=6)
    assert len(words) == 6
    assert not set(words) & ENGLISH_STOP_WORDS
    assert {"note", "tier", "token", "duckdb", "fidelity", "essences"} & set(words)
    assert extract_keywords(TEXT * 3, k=6) == words  # deterministic


def test_keywords_with_corpus_prefers_distinctive_terms() -> None:
    corpus = ["the note is stored", "a note about notes", "note note note"]
    words = extract_keywords("note about sentencepiece tokenizer note", k=2, corpus=corpus)
    assert "note" not in words and "sentencepiece" in words


def test_keywords_edge_cases() -> None:
    assert extract_keywords("the and of which", k=3) == []
    assert extract_keywords("", k=3) == []
    with pytest.raises(TypeError):
        extract_keywords(None)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        extract_keywords("text", k=0)


@settings(max_examples=30, deadline=None)
@given(
    scores=st.lists(st.floats(min_value=0.0, max_value=1.0), min_size=1, max_size=6),
    reps=st.lists(st.integers(min_value=1, max_value=8), min_size=6, max_size=6),
    budget=st.integers(min_value=5, max_value=1500),
)
def test_no_room_is_left_that_one_promotion_could_use(scores, reps, budget) -> None:
    # Give-back: after packing, promoting any single item one level (never above its
    # earned level nor above a better-scored item) must not fit any more.
    items = [item(i, s, reps=r) for i, (s, r) in enumerate(zip(scores, reps, strict=False))]
    cfg = LevelConfig()
    result = compress_context(items, budget, M, cfg)
    assert result.total_tokens <= budget
    order = [Level.FULL, Level.SUMMARY, Level.KEYWORDS, Level.REFERENCE, None]
    ranked = sorted(items, key=lambda it: -it.score)
    rank = [order.index(result.level_of(it.id)) for it in ranked]
    assert rank == sorted(rank)  # monotonic: better score, never a lower level
    for k, it in enumerate(ranked):
        ceiling = max([order.index(cfg.level_for(it.score)), *rank[:k]])
        if rank[k] <= ceiling:
            continue
        bigger = dict(zip([x.id for x in ranked], rank, strict=True))
        bigger[it.id] = rank[k] - 1
        texts = [
            _render_for(x, order[bigger[x.id]], cfg)
            for x in ranked
            if order[bigger[x.id]] is not None
        ]
        assert count_tokens(cfg.separator.join(texts), M) > budget, it.id


def _render_for(it: LevelItem, level: Level, cfg: LevelConfig) -> str:
    return compress_context(
        [
            LevelItem(
                it.id,
                it.content,
                1.0
                if level is Level.FULL
                else {
                    Level.SUMMARY: cfg.summary_threshold,
                    Level.KEYWORDS: cfg.keywords_threshold,
                    Level.REFERENCE: 0.0,
                }[level],
                it.title,
                it.citation,
            )
        ],
        10**6,
        M,
        cfg,
    ).text


def test_a_keywords_line_holds_whole_words() -> None:
    # The line was cut at 30 tokens mid-word ("ünïc" for "ünïcödé"), which reads as
    # another word: now the words that fit whole.
    text = "Emoji test: the déjà vu of ünïcödé. Café naïve 日本語のメモ. " * 3
    words = extract_keywords(text, k=8)
    r = compress_context([LevelItem("k", text, 0.4, title="T", citation="k.md")], 10_000, M)
    line = r.items[0].text.splitlines()[1]
    assert line.startswith("Keywords: ") and count_tokens(line, M) <= 30
    shown = line.removeprefix("Keywords: ").split(", ")
    assert shown == words[: len(shown)] and 0 < len(shown) < len(words), (line, words)


def test_library_calls_refuse_wrong_types_with_clear_errors() -> None:
    # Each raised AttributeError, or an error naming Python's internals.
    from selene_dag.context import (
        compress_context,
        extractive_summary,
        pack_with_threads,
        prepare_notes,
    )
    from selene_dag.llm.extractive.engine import ExtractiveEngine

    with pytest.raises(TypeError, match="text must be a str"):
        extractive_summary(None, 10)
    with pytest.raises(TypeError, match="config must be a LevelConfig"):
        compress_context([], 100, config="x")
    prepared = prepare_notes([{"id": "a", "title": "t", "content": "c"}])
    with pytest.raises(TypeError, match="thread_share must be a number"):
        pack_with_threads(prepared, [], 100, thread_share="x")
    for share in (float("nan"), 2, -1):
        with pytest.raises(ValueError, match="thread_share must be from 0 to 1"):
            pack_with_threads(prepared, [], 100, thread_share=share)
    for notes, message in (("abc", "list of"), (None, "list of"), ([{"t": 1}], "note 0")):
        with pytest.raises(TypeError, match=message):
            list(ExtractiveEngine().analyze_notes(notes))
