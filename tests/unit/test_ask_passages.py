"""Pieces of a document, their relevance to a question, and the budget shared piece by
piece among ranked documents (retrieval/passages.py, retrieval/allocate.py)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from selene_dag.context.levels import Level, LevelConfig
from selene_dag.context.tokens import count_tokens
from selene_dag.retrieval import allocate as allocate_module
from selene_dag.retrieval.allocate import DocPlan, allocate, document_weight, piece_value
from selene_dag.retrieval.pack import fuse_documents
from selene_dag.retrieval.passages import (
    FLOOR,
    join_pieces,
    piece_relevance,
    segment,
    span_values,
    title_share,
)
from selene_dag.retrieval.search import PassageHit
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


def test_a_nested_list_item_keeps_its_indentation() -> None:
    # An outline's child bullet lost its indentation in a cut excerpt and read as its
    # parent's sibling; a prose line indented in a list keeps none (it never had a level).
    texts = [p.text for p in segment("- Phase 1\n\t- Move topic a\n\t\t+ owner: team a\n  - two\n")]
    assert texts == ["- Phase 1", "\t- Move topic a", "\t\t+ owner: team a", "  - two"]
    # A numbered item's number stays with its first sentence (it was a piece of its own).
    assert [p.text for p in segment("1.  Install it. Then run it.\n\t2) Set the port.\n")] == [
        "1.  Install it.",
        "Then run it.",
        "\t2) Set the port.",
    ]
    assert [p.text for p in segment("Intro.\n  continued prose.\n")] == [
        "Intro.",
        "continued prose.",
    ]


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


def test_escaped_line_breaks_of_quoted_json_end_pieces() -> None:
    # A tool input quoted in a transcript: its prompt's line breaks are backslash-n.
    line = (
        '[assistant/tool_use Task] {"prompt":"Three teammates wrote one doc each:\\n\\n'
        "- `alice/research-plan-mode` (plan mode)\\n- `carol/research-beads` (Beads)\\n"
        'Report back."}'
    )
    pieces = segment(line)
    texts = [p.text for p in pieces]
    assert "- `carol/research-beads` (Beads)" in texts
    assert len(pieces) == 4
    # Neighbours join back with their own escaped break; a gap is marked as in prose.
    assert join_pieces(pieces, list(range(len(pieces)))) == line.replace("\\n\\n", "\\n")
    carol = texts.index("- `carol/research-beads` (Beads)")
    assert join_pieces(pieces, [0, carol]) == f"{texts[0]} … {texts[carol]}"
    relevance = piece_relevance(pieces, CoverageMatcher(["carol", "beads", "branch"]), {})
    assert max(range(len(pieces)), key=relevance.__getitem__) == carol


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


def test_allocate_caps_summary_level_and_gives_lines_to_lower_levels(monkeypatch) -> None:
    monkeypatch.setattr(allocate_module, "SPILL", False)
    config = LevelConfig(summary_max_tokens=20)
    summary = _plan("spellfix " * 5 + "\n" + "spellfix again.\n" * 20, 1.0, Level.SUMMARY)
    keywords = _plan("anything", 0.5, Level.KEYWORDS)
    allocate([summary, keywords], 1000, _count, config)
    assert summary.body_tokens <= 20
    assert keywords.line and not keywords.chosen


def test_allocate_spills_spare_room_into_summary_documents_before_lines() -> None:
    config = LevelConfig(summary_max_tokens=20)
    text = "spellfix " * 5 + "\n" + "spellfix again.\n" * 20
    full = _plan("spellfix build.\n" + "filler words here.\n" * 5, 1.0)
    summary = _plan(text, 0.5, Level.SUMMARY)
    keywords = _plan("anything", 0.5, Level.KEYWORDS)
    # Room for everything: the SUMMARY document goes past its ceiling, the line still fits.
    used = allocate([full, summary, keywords], 1000, _count, config)
    assert used <= 1000
    assert summary.body_tokens > 20 and len(summary.chosen) == len(summary.pieces)
    assert keywords.line
    # Tight room: the ceilings are met first, and spare room goes to pieces before lines.
    full = _plan("spellfix build.\n" + "filler words here.\n" * 5, 1.0)
    summary = _plan(text, 0.5, Level.SUMMARY)
    keywords = _plan("anything", 0.5, Level.KEYWORDS)
    used = allocate([full, summary, keywords], 60, _count, config)
    assert used <= 60
    assert 0 in full.chosen and summary.chosen
    assert not keywords.line


def test_allocate_floor_lets_a_weak_documents_passage_in_first() -> None:
    leader = _plan("spellfix build.\n" + "filler words here.\n" * 30, 1.0)
    weak = _plan("nothing matches here.\n" * 5, 0.01)
    weak.floor = [0.9] + [0.0] * (len(weak.pieces) - 1)
    allocate([leader, weak], 30, _count, LevelConfig())
    assert weak.chosen == [0]
    assert piece_value(weak, 0) == 0.9


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
        elif plan.line:  # nothing of it fitted but its citation line
            recount += plan.line_cost
    assert recount == used


def test_document_weight_falls_steeply() -> None:
    assert document_weight(1.0) == 1.0
    assert 0.4 < document_weight(0.9) < 0.6
    assert document_weight(0.5) < 0.02
    assert document_weight(-1.0) == 0.0 and document_weight(2.0) == 1.0


def test_span_values_take_each_pieces_best_span() -> None:
    assert span_values([0, 10, 20, 30], [(0, 15, 0.5), (10, 25, 0.8)]) == [0.5, 0.8, 0.8, 0.0]


def test_fuse_documents_lifts_passages_of_the_best_bm25_document() -> None:
    hits = [
        PassageHit("p1", "note:a", 0, 10, 5, 0.25, 1, 1),
        PassageHit("p2", "note:b", 0, 10, 5, 0.24, 2, None),
        PassageHit("p3", "note:c", 0, 10, 5, 0.23, None, 2),
    ]
    fused = fuse_documents(hits, ["note:b", "note:a"], 5.0)
    assert [h.passage_id for h in fused] == ["p2", "p1", "p3"]
    assert fused[2].fused == 0.23  # a document BM25 did not find gains nothing


def test_code_lines_come_with_their_fences() -> None:
    # An excerpt of code lines without their fences read as prose in a markdown pack, and
    # one that kept the opening fence only turned the rest of the pack into code.
    text = "Compile it like this:\n\n```bash\nwget https://x/y.tar.gz\ntar xzf y.tar.gz\nmake\n```\n\nThen run it.\n"
    pieces = segment(text)
    code = [i for i, p in enumerate(pieces) if p.text.startswith(("wget", "tar"))]
    assert join_pieces(pieces, code) == "```bash\nwget https://x/y.tar.gz\ntar xzf y.tar.gz\n…\n```"
    intro = [i for i, p in enumerate(pieces) if p.text.startswith(("Compile", "Then"))]
    assert (
        join_pieces(pieces, intro) == "Compile it like this:\n…\nThen run it."
    )  # no code: no fence
    # A text that ends inside a block (a passage cut there): the excerpt closes it.
    open_block = segment("Intro:\n~~~\ncode 1\ncode 2")
    assert join_pieces(open_block, [2]) == "~~~\ncode 1\n~~~"


def test_code_quoted_in_a_tool_input_keeps_its_indentation() -> None:
    # An Edit's old_string: pieces after an escaped line break lost their leading spaces,
    # so a pack's excerpt of Python code was no longer the code (nor a substring of what
    # `show` prints).
    line = (
        '[assistant/tool_use Edit] {"old_string":"def f():\\n    if x:\\n'
        '        # If we get here\\n        return 1","new_string":"y"}'
    )
    pieces = segment(line)
    assert [p.text for p in pieces][1:3] == ["    if x:", "        # If we get here"]
    assert join_pieces(pieces, list(range(len(pieces)))) == line
    assert join_pieces(pieces, [1, 2]) in line
