"""Passages as ask's retrieval unit: cutting along structure, span boosts, rank fusion."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from selene_dag.retrieval.passages import (
    PASSAGE_MAX_CHARS,
    boost_spans,
    cut_passages,
    piece_offsets,
    segment,
)
from selene_dag.retrieval.search import fuse


def _covers_every_visible_char(text: str, spans: list[tuple[int, int]]) -> bool:
    covered = set()
    for a, b in spans:
        covered.update(range(a, b))
    return all(i in covered for i, c in enumerate(text) if not c.isspace())


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from("ab :#-`\n.[]/1"), max_size=4000))
def test_spans_are_ordered_disjoint_and_cover_the_text(text: str) -> None:
    spans = cut_passages(text)
    assert all(0 <= a < b <= len(text) for a, b in spans)
    assert all(b1 <= a2 for (_, b1), (a2, _) in itertools.pairwise(spans))
    assert _covers_every_visible_char(text, spans)


def test_code_block_stays_with_the_line_introducing_it() -> None:
    intro = "Compile it like this:"
    text = ("Some prose. " * 60) + "\n\n" + intro + "\n```\ncc -O2 main.c\n```\n\nMore text."
    spans = cut_passages(text)
    holding = [text[a:b] for a, b in spans if "cc -O2" in text[a:b]]
    assert holding and intro in holding[0]


def test_dialogue_turns_group_into_bounded_passages() -> None:
    turns = "\n".join(f"{'Alice' if i % 2 else 'Bob'}: message number {i} " * 3 for i in range(80))
    spans = cut_passages(turns)
    assert len(spans) > 3
    for a, b in spans:
        assert b - a <= PASSAGE_MAX_CHARS
        assert turns[a:b].startswith(("Alice:", "Bob:"))  # cut between turns


def test_heading_starts_a_new_passage() -> None:
    text = ("intro words " * 50) + "\n\n## Install\n\n" + ("Run pip install thing. " * 20)
    spans = cut_passages(text)
    assert any(text[a:b].startswith("## Install") for a, b in spans)


def test_boost_spans_puts_retrieved_pieces_first() -> None:
    text = "Alpha line.\nBeta line.\nGamma line."
    pieces = segment(text)
    offsets = piece_offsets(text, pieces)
    assert offsets == [0, 12, 23]
    start = text.index("Beta")
    out = boost_spans(offsets, [0.6, 0.1, 0.6], [(start, start + 10, 1.0)], 1.0, outside=0.5)
    assert out[1] == 1.0 and out[0] == out[2] == 0.3


def test_reciprocal_rank_fusion() -> None:
    scores = fuse([["a", "b"], ["b", "c"]], k=1)
    assert scores["b"] == 1 / 3 + 1 / 2
    assert max(scores, key=scores.__getitem__) == "b"
