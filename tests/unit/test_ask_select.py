"""Passage-first selection (seed 003 §5.12 with passages as the unit, issue #15): best
passages across documents within the budget, cut when too long, grouped per document under
a citation that locates them."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from selene_dag.context.tokens import count_tokens
from selene_dag.retrieval.select import (
    GAP,
    Document,
    Excerpt,
    RankedPassage,
    Selection,
    dominant_document,
    locate,
    select_passages,
    shingles,
)

MODEL = "mistral:7b"


def _count(text: str) -> int:
    return count_tokens(text, MODEL)


def _first_lines(text: str, max_tokens: int) -> str:
    """A real shortening rule for the tests: whole lines from the top while they fit."""
    out: list[str] = []
    for line in text.splitlines():
        if _count("\n".join([*out, line])) > max_tokens:
            break
        out.append(line)
    return "\n".join(out)


def _doc(doc_id: str, body: str, kind: str = "note", citation: str | None = None) -> Document:
    return Document(doc_id, kind, citation or f"note {doc_id}", f"Title {doc_id}", body)


def _passages(doc: Document, score: float, step: float = 0.01) -> list[RankedPassage]:
    """Each paragraph of ``doc`` as one passage, scores falling in reading order."""
    out = []
    pos = 0
    for k, para in enumerate(doc.body.split("\n\n")):
        start = doc.body.index(para, pos)
        pos = start + len(para)
        out.append(RankedPassage(doc.doc_id, start, pos, _count(para), score - k * step))
    return out


def _whole_documents(
    *scored: tuple[Document, float],
) -> tuple[list[RankedPassage], dict[str, Document]]:
    """Each document as one passage with its score, and the documents by id."""
    ranked = [RankedPassage(d.doc_id, 0, len(d.body), _count(d.body), s) for d, s in scored]
    return ranked, {d.doc_id: d for d, _ in scored}


BODY_A = "\n\n".join(f"Alpha paragraph {i}: " + "word " * 40 for i in range(4))
BODY_B = "\n\n".join(f"Beta paragraph {i}: " + "thing " * 40 for i in range(3))


def test_best_passages_across_documents_are_taken_in_rank_order() -> None:
    a, b = _doc("a", BODY_A), _doc("b", BODY_B)
    pa, pb = _passages(a, 1.0), _passages(b, 0.995)
    ranked = sorted([*pa, *pb], key=lambda p: -p.score)
    chosen = select_passages(ranked, {"a": a, "b": b}, 150, _count, _first_lines, 1)
    assert [s.doc.doc_id for s in chosen] == ["a", "b"]
    assert [e.start for e in chosen[0].excerpts] == [pa[0].start]
    assert [e.start for e in chosen[1].excerpts] == [pb[0].start]


def test_a_passage_too_long_for_the_room_left_gives_its_best_pieces() -> None:
    body = "\n".join(f"line {i} " + "text " * 12 for i in range(12))
    doc = _doc("long", body)
    passage = RankedPassage("long", 0, len(body), _count(body), 1.0)
    [selection] = select_passages([passage], {"long": doc}, 120, _count, _first_lines, 1)
    [excerpt] = selection.excerpts
    assert excerpt.cut and excerpt.text.startswith("line 0")
    assert _count(selection.render()) <= 120
    assert not selection.whole


def test_cap_cuts_a_long_passage_even_with_room_to_spare() -> None:
    body = "\n".join(f"line {i} " + "text " * 12 for i in range(12))
    doc = _doc("long", body)
    passage = RankedPassage("long", 0, len(body), _count(body), 1.0)
    [whole] = select_passages([passage], {"long": doc}, 2000, _count, _first_lines, 1)
    assert whole.whole and whole.content() == body.rstrip()
    [capped] = select_passages(
        [passage], {"long": doc}, 2000, _count, _first_lines, 1, max_passage=60
    )
    assert capped.excerpts[0].cut and _count(capped.excerpts[0].text) <= 60


def _last_lines(text: str, max_tokens: int) -> str:
    """Another real shortening rule: whole lines from the bottom while they fit."""
    out: list[str] = []
    for line in reversed(text.splitlines()):
        if _count("\n".join([line, *out])) > max_tokens:
            break
        out.insert(0, line)
    return "\n".join(out)


def test_a_session_passage_is_cut_by_its_own_rule() -> None:
    # A tool call and its result are one passage: it is cut as one run of events
    # (``shorten_chunk``), a note's passage by ``shorten``; both at the cap too.
    body = "\n".join(f"[tool/tool_result] line {i} " + "output " * 10 for i in range(12))
    chunk = Document("c", "chunk", "k events 1-12", "codex session", body)
    note = _doc("n", body)
    for doc_id, doc in (("c", chunk), ("n", note)):
        passage = RankedPassage(doc_id, 0, len(body), _count(body), 1.0)
        [whole] = select_passages(
            [passage], {doc_id: doc}, 2000, _count, _first_lines, 1, shorten_chunk=_last_lines
        )
        assert whole.whole and not whole.excerpts[0].cut
        for budget, cap in ((2000, 60), (120, None)):
            [cut] = select_passages(
                [passage],
                {doc_id: doc},
                budget,
                _count,
                _first_lines,
                1,
                max_passage=cap,
                shorten_chunk=_last_lines,
            )
            [excerpt] = cut.excerpts
            assert excerpt.cut and _count(cut.render()) <= budget
            first = "line 0 " in excerpt.text
            assert first == (doc_id == "n") and ("line 11 " in excerpt.text) == (doc_id == "c")


def test_a_passage_repeating_a_chosen_one_is_skipped_for_the_next() -> None:
    # An agent's message and the tool's echo of it: the same words in two documents.
    message = "Round 2: pull master, add a Comparison section, commit on your own branch. " * 3
    first = _doc("send", f"[assistant/tool_use SendMessage] {message}", "chunk", "k events 1-1")
    echo = _doc("echo", f"[tool/tool_result] sent: {message}", "chunk", "k events 2-2")
    other = _doc("other", "carol committed on carol/research-beads", "chunk", "k events 9-9")
    ranked, docs = _whole_documents((first, 1.0), (echo, 0.9), (other, 0.8))
    chosen = select_passages(ranked, docs, 2000, _count, _first_lines, 1)
    assert [s.doc.doc_id for s in chosen] == ["send", "other"]
    # Different words are never a repeat, however similar the topic.
    assert not shingles("alpha beta gamma delta epsilon zeta") & shingles(
        "alpha beta gamma delta epsilon eta"
    )
    assert shingles("") == set() and shingles("Two words") == {("two", "words")}


def test_a_passage_cut_to_what_is_already_chosen_is_skipped() -> None:
    # Two sessions quote the same instructions; the second passage also holds new lines
    # (so it is not a repeat as a whole), but its excerpt is the quoted part alone.
    quoted = "\n".join(
        f"Rule {i}: always run agents.js stop on the peer session first." for i in range(6)
    )
    first = _doc("one", quoted, "chunk", "k1 events 1-1")
    new = "\n".join(f"Unrelated line {i} about the weather report for today." for i in range(12))
    second = _doc("two", f"{quoted}\n{new}", "chunk", "k2 events 1-1")
    third = _doc("three", "Refusing to stop current session.", "chunk", "k2 events 9-9")
    ranked, docs = _whole_documents((first, 1.0), (second, 0.9), (third, 0.8))
    assert len(shingles(second.body) & shingles(first.body)) < 0.5 * len(shingles(second.body))
    # Room for the first passage and a cut of the second: its first lines, all quoted.
    budget = _count(quoted) + 110
    chosen = select_passages(ranked, docs, budget, _count, _first_lines, 1)
    assert [s.doc.doc_id for s in chosen] == ["one", "three"]


def test_too_little_room_skips_to_a_passage_that_fits() -> None:
    a = _doc("a", "x " * 300)
    b = _doc("b", "short answer here")
    ranked = [
        RankedPassage("a", 0, len(a.body), _count(a.body), 1.0),
        RankedPassage("b", 0, len(b.body), _count(b.body), 0.5),
    ]
    chosen = select_passages(ranked, {"a": a, "b": b}, 30, _count, lambda t, n: "", 1)
    assert [s.doc.doc_id for s in chosen] == ["b"]


def test_passages_of_one_document_are_grouped_in_reading_order_with_gaps_marked() -> None:
    doc = _doc("a", BODY_A)
    pa = _passages(doc, 1.0)
    chosen = select_passages([pa[3], pa[0], pa[1]], {"a": doc}, 2000, _count, _first_lines, 1)
    [selection] = chosen
    content = selection.content()
    assert (
        content.index("paragraph 0") < content.index("paragraph 1") < content.index("paragraph 3")
    )
    assert GAP not in content.split("paragraph 3")[0].split("paragraph 1")[0]
    assert GAP in content  # paragraph 2 is missing between 1 and 3


def test_note_citation_names_its_lines_and_whole_document_keeps_plain_citation() -> None:
    doc = _doc("a", "one\ntwo\nthree\nfour\nfive")
    start = doc.body.index("two")
    end = doc.body.index("three") + len("three")
    assert locate(doc, [(start, end)]) == "note a lines 2-3"
    assert locate(doc, [(0, 3), (doc.body.index("five"), len(doc.body))]) == ("note a lines 1, 5")
    whole = Selection(doc)
    select = select_passages(
        [RankedPassage("a", 0, len(doc.body), 5, 1.0)], {"a": doc}, 100, _count, _first_lines, 1
    )
    assert select[0].whole and select[0].header() == "[note a] Title a"
    assert whole.citation() == "note a"  # no excerpt: nothing to narrow


def test_chunk_citation_names_the_events_of_its_excerpt() -> None:
    body = "\n".join(
        [
            "[user/user_prompt] fix the tests",
            "[assistant/tool_use Bash] pytest -q",
            "[tool/tool_result Bash] 3 failed",
            "more output",
            "[assistant/assistant_text] Fixed.",
        ]
    )
    start = body.index("[assistant/tool_use")
    end = body.index("more output") + len("more output")
    whole = Document("chunk:x", "chunk", "/s/a.jsonl events 10-13", "t", body)
    assert locate(whole, [(start, end)]) == "/s/a.jsonl events 11-12"
    # A chunk leaves out events of low importance: its event lines are not its range's
    # seqs one by one, and the citation names the seqs the excerpt shows.
    gaps = Document("chunk:x", "chunk", "/s/a.jsonl events 10-14", "t", body, (10, 12, 13, 14))
    assert locate(gaps, [(start, end)]) == "/s/a.jsonl events 12-13"
    assert locate(gaps, [(0, 5)]) == "/s/a.jsonl events 10-10"
    # Without the seqs a range with gaps cannot be narrowed honestly: the whole citation.
    unknown = Document("chunk:x", "chunk", "/s/a.jsonl events 10-14", "t", body)
    assert locate(unknown, [(start, end)]) == "/s/a.jsonl events 10-14"
    odd = _doc("chunk:y", body, kind="chunk", citation="gemini session abc")
    assert locate(odd, [(start, end)]) == "gemini session abc"


def test_a_cut_excerpt_is_cited_by_what_it_shows() -> None:
    # A passage cut to some of its lines (or events) is cited by those, not by the whole
    # passage: the reader opens the lines or events the pack shows.
    note_body = "\n".join(f"line {i}: " + "words " * 8 for i in range(1, 31))
    events = "\n".join(f"[tool/tool_result] result {i} " + "output " * 8 for i in range(12))
    chunk = Document(
        "c", "chunk", "k events 3-30", "codex session", events, tuple(range(3, 31, 2))[:12]
    )
    for doc, cut_to, expected in (
        (_doc("n", note_body), _last_lines, "note n lines 2"),
        (chunk, _first_lines, "k events 3-"),
    ):
        passage = RankedPassage(doc.doc_id, 0, len(doc.body), _count(doc.body), 1.0)
        [selection] = select_passages(
            [passage], {doc.doc_id: doc}, 120, _count, cut_to, 1, shorten_chunk=cut_to
        )
        [excerpt] = selection.excerpts
        assert excerpt.cut
        shown = excerpt.text.splitlines()
        citation = selection.citation()
        assert citation.startswith(expected)
        if doc.kind == "note":
            first = int(shown[0].split(":")[0].split()[1])
            last = int(shown[-1].split(":")[0].split()[1])
            assert citation == f"note n lines {first}-{last}" and last == 30
        else:
            last = chunk.events[len(shown) - 1]
            assert citation == f"k events 3-{last}" and last < 25


def test_dominant_document_needs_three_of_the_best_five_or_all_its_own() -> None:
    def p(doc: str) -> RankedPassage:
        return RankedPassage(doc, 0, 1, 1, 1.0)

    assert dominant_document([p("a"), p("b"), p("a"), p("c"), p("a")]) == "a"
    assert dominant_document([p("a"), p("b"), p("a"), p("c"), p("d"), p("a")]) is None
    assert dominant_document([]) is None
    # A short document with every one of its passages among the best five dominates too.
    two = [p("a"), p("b"), p("a"), p("c"), p("d")]
    assert dominant_document(two) is None
    assert dominant_document(two, {"a": 2, "b": 5}) == "a"
    assert dominant_document(two, {"a": 4}) is None


@settings(max_examples=40, deadline=None)
@given(
    sizes=st.lists(st.integers(min_value=1, max_value=60), min_size=1, max_size=12),
    budget=st.integers(min_value=1, max_value=400),
    cap=st.one_of(st.none(), st.integers(min_value=10, max_value=200)),
)
def test_selection_estimate_never_exceeds_the_budget(sizes, budget, cap) -> None:
    docs = {}
    ranked = []
    for k, n in enumerate(sizes):
        body = "\n".join(f"row {j} of doc {k}" for j in range(n))
        doc = docs[f"d{k % 4}_{k}"] = _doc(f"d{k % 4}_{k}", body)
        ranked.append(RankedPassage(doc.doc_id, 0, len(body), _count(body), 1.0 - k / 100))
    chosen = select_passages(ranked, docs, budget, _count, _first_lines, 1, max_passage=cap)
    # The plan's own estimate: headers, excerpts and one separator each.
    estimate = sum(
        _count(s.header()) + 1 + sum(_count(e.text) + 1 for e in s.excerpts) for s in chosen
    )
    assert estimate <= budget


def test_text_a_cut_excerpt_left_out_before_the_next_one_is_marked() -> None:
    # The cut excerpt's passage runs to the next one, but it shows only its first line:
    # the line after it was left out, and the join says so.
    body = "Alpha line.\n\nBeta left out.\n\nGamma line.\n"
    doc = Document("n", "note", "note n", "N", body)
    first = Excerpt(0, body.index("Gamma"), "Alpha line.", 1.0, cut=True)
    second = Excerpt(body.index("Gamma"), len(body), "Gamma line.", 0.5)
    assert Selection(doc, [first, second]).content() == "Alpha line.\n…\nGamma line."
    # Adjacent by what they show: joined by a line break, no marker.
    whole = Excerpt(0, body.index("Beta"), "Alpha line.", 1.0)
    beta = Excerpt(body.index("Beta"), body.index("Gamma"), "Beta left out.", 0.7, cut=True)
    assert Selection(doc, [whole, beta]).content() == "Alpha line.\nBeta left out."


def test_a_citation_names_only_the_lines_shown_joined_and_in_the_singular_for_one() -> None:
    # A pack cited "lines 1-6" while line 4 was left out (shown as "…"), "lines 1-6, 7, 8"
    # for lines 1 to 8, and "lines 1" for one line.
    from selene_dag.retrieval.citations import parse_citation
    from selene_dag.retrieval.select import Excerpt, Selection, line_ranges

    body = "\n".join(f"row {i} " + "alpha " * 5 for i in range(1, 9))
    doc = _doc("g", body)
    line = body.splitlines()
    start = [body.index(x) for x in line]
    cut = Excerpt(0, len(body), "\n".join([line[0], line[1], line[2], "…", line[4]]), 1.0, True)
    assert Selection(doc, [cut]).citation() == "note g lines 1-3, 5"
    pieces = [Excerpt(start[i], start[i] + len(line[i]), line[i], 1.0) for i in (0, 1, 6, 7)]
    assert Selection(doc, pieces).citation() == "note g lines 1-2, 7-8"
    assert Selection(doc, pieces[:1]).citation() == "note g line 1"
    assert line_ranges([(1, 6), (7, 7), (8, 8), (10, 11)]) == "1-8, 10-11"
    assert parse_citation("note g line 1").ranges == ((1, 1),)


def test_a_fence_the_cut_adds_is_not_cited_as_the_bodys_far_below() -> None:
    # A cut code block is closed by a fence of the cut's own: found as the body's closing
    # fence 40 lines below, it stretched "lines 209-217" to "209-255".
    from selene_dag.retrieval.select import Excerpt, Selection

    lines = ["Run it:", "```", *[f"header{i}: value {i}" for i in range(40)], "```", "Done."]
    body = "\n".join(lines)
    doc = _doc("h", body)
    shown = "\n".join(["Run it:", "```", "header0: value 0", "header1: value 1", "```"])
    cut = Excerpt(0, len(body), shown, 1.0, True)
    assert Selection(doc, [cut]).citation() == "note h lines 1-4"
