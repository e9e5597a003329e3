"""Pieces of a document, their relevance to a question, and the budget shared piece by
piece among ranked documents (retrieval/passages.py, retrieval/allocate.py)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from selene_dag.context.levels import Level, LevelConfig
from selene_dag.context.tokens import count_tokens
from selene_dag.retrieval.allocate import DocPlan, allocate, document_weight
from selene_dag.retrieval.passages import (
    FLOOR,
    join_pieces,
    piece_relevance,
    segment,
    title_share,
)
from selene_dag.retrieval.terms import CoverageMatcher, idf

MODEL = "mistral:7b"

NOTE = """# Compiling spellfix

I wanted the extension. First sentence here. Then another one!

Compile it like this:

```bash
gcc -I. -g -fPIC -shared spellfix.c -o spellfix.so
ls -la
```

    indented code line
    second indented line

## Unrelated section

Gardening is nice.
"""


def test_segment_keeps_code_blocks_sections_and_sentences() -> None:
    pieces = segment(NOTE)
    texts = [p.text for p in pieces]
    assert texts[0] == "# Compiling spellfix" and pieces[0].kind == "heading"
    assert "First sentence here." in texts and "Then another one!" in texts
    gcc = texts.index("gcc -I. -g -fPIC -shared spellfix.c -o spellfix.so")
    assert pieces[gcc].kind == "code" and pieces[gcc].block == pieces[gcc - 1].block >= 0
    assert pieces[gcc - 1].text == "```bash"
    indented = texts.index("    indented code line")
    assert pieces[indented].kind == "code"
    assert pieces[indented].block == pieces[indented + 1].block != pieces[gcc].block
    garden = texts.index("Gardening is nice.")
    assert pieces[garden].section == 2 and pieces[gcc].section == 1
    assert segment("") == [] and segment("\n\n  \n") == []


def test_code_after_a_matching_sentence_carries_its_relevance() -> None:
    pieces = segment(NOTE)
    texts = [p.text for p in pieces]
    rel = piece_relevance(pieces, CoverageMatcher(["compile"]), {})
    gcc = texts.index("gcc -I. -g -fPIC -shared spellfix.c -o spellfix.so")
    garden = texts.index("Gardening is nice.")
    # "Compile it like this:" matches; the command after it has no question word.
    assert rel[gcc] > 0.5 > rel[garden] == FLOOR
    assert rel[texts.index("Compile it like this:")] == 1.0
    assert all(0.0 <= r <= 1.0 for r in rel)


def test_a_matching_heading_lends_to_its_section_and_rare_words_weigh_more() -> None:
    pieces = segment("# Intro\n\nx\n\n## Gardening tips\n\nWater daily.\n\nPython here.\n")
    texts = [p.text for p in pieces]
    rel = piece_relevance(pieces, CoverageMatcher(["gardening", "python"]), {})
    assert rel[texts.index("Water daily.")] > FLOOR
    weights = {"garden": idf(1, 600), "python": idf(300, 600)}
    weighted = piece_relevance(pieces, CoverageMatcher(["gardening", "python"]), weights)
    assert weighted[texts.index("## Gardening tips")] > weighted[texts.index("Python here.")]
    assert idf(1, 600) > idf(300, 600) > 0


def test_a_note_titled_after_the_question_leads_with_its_opening() -> None:
    pieces = segment("# Intro\n\nFirst.\nSecond.\nThird.\n" + "More.\n" * 100)
    matcher = CoverageMatcher(["unix", "milliseconds"])
    share = title_share("Unix timestamp in milliseconds", matcher, {})
    assert share == 1.0 and title_share("Gardening", matcher, {}) == 0.0
    plain = piece_relevance(pieces, matcher, {})
    titled = piece_relevance(pieces, matcher, {}, share)
    assert titled[1] > titled[4] > titled[40] and titled[1] > plain[1]
    assert titled[-1] == plain[-1] == FLOOR  # the far end is back to the floor


def test_join_pieces_marks_gaps() -> None:
    pieces = segment("One. Two. Three.\nfour\nfive\nsix")
    assert join_pieces(pieces, [0, 1]) == "One. Two."
    assert join_pieces(pieces, [0, 2]) == "One. … Three."
    assert join_pieces(pieces, [3, 5]) == "four\n…\nsix"
    assert join_pieces(pieces, []) == ""


def _plan(text: str, weight: float, level: Level = Level.FULL, terms=("spellfix",)) -> DocPlan:
    pieces = segment(text)
    rel = piece_relevance(pieces, CoverageMatcher(list(terms)), {})
    return DocPlan(level, weight, pieces, rel, header_cost=8, line_cost=6)


def _count(text: str) -> int:
    return count_tokens(text, MODEL)


def test_allocate_prefers_the_leaders_lines_then_runner_ups_best() -> None:
    leader = _plan("spellfix build.\n" + "filler words here.\n" * 30, 1.0)
    runner = _plan("spellfix module notes.\n" + "other filler.\n" * 30, document_weight(0.9))
    used = allocate([leader, runner], 60, _count, LevelConfig())
    assert used <= 60
    assert 0 in leader.chosen and 0 in runner.chosen  # both matching lines first
    assert len(leader.chosen) > len(runner.chosen)


def test_allocate_caps_summary_level_and_gives_lines_to_lower_levels() -> None:
    config = LevelConfig(summary_max_tokens=20)
    summary = _plan("spellfix " * 5 + "\n" + "spellfix again.\n" * 20, 1.0, Level.SUMMARY)
    keywords = _plan("anything", 0.5, Level.KEYWORDS)
    allocate([summary, keywords], 1000, _count, config)
    assert summary.body_tokens <= 20
    assert keywords.line and not keywords.chosen


@settings(max_examples=60, deadline=None)
@given(
    sizes=st.lists(st.integers(min_value=1, max_value=40), min_size=1, max_size=6),
    budget=st.integers(min_value=0, max_value=400),
    weights=st.lists(st.floats(min_value=0.0, max_value=1.0), min_size=6, max_size=6),
)
def test_allocate_never_plans_over_budget(sizes: list[int], budget: int, weights) -> None:
    plans = [
        _plan("\n".join(f"spellfix line {i} " + "word " * (i % 7) for i in range(n)), w)
        for n, w in zip(sizes, weights, strict=False)
    ]
    used = allocate(plans, budget, _count, LevelConfig())
    assert used <= budget
    recount = 0
    for plan in plans:
        if plan.chosen:
            recount += plan.header_cost + sum(_count(plan.pieces[i].text) + 2 for i in plan.chosen)
    assert recount == used


def test_document_weight_falls_steeply() -> None:
    assert document_weight(1.0) == 1.0
    assert 0.4 < document_weight(0.9) < 0.6
    assert document_weight(0.5) < 0.02
    assert document_weight(-1.0) == 0.0 and document_weight(2.0) == 1.0
