"""Pure parts of ask: query sanitizing, dedup, rerank scores, passage summaries, eval files."""

from __future__ import annotations

import hashlib
import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from selene_dag.context.tokens import count_tokens
from selene_dag.errors import UsageError, check_budget
from selene_dag.retrieval.evaluate import load_questions, recall
from selene_dag.retrieval.excerpts import passage_summarizer
from selene_dag.retrieval.pack import pack_ranked, plan_items
from selene_dag.retrieval.passages import MAX_PIECE_CHARS, join_pieces, segment, split_long
from selene_dag.retrieval.rerank import (
    Ranked,
    RerankConfig,
    dedup,
    dedup_key,
    rerank,
    static_score,
)
from selene_dag.retrieval.search import Candidate, parse_sources
from selene_dag.retrieval.terms import CoverageMatcher, query_terms, stem, term_coverage
from selene_dag.text import fold_marks, has_cjk

NOW = datetime(2026, 7, 15, tzinfo=UTC)
MODEL = "mistral:7b"


def cand(doc_id: str, body: str, bm25: float, **kw) -> Candidate:
    fields = dict(
        kind="note",
        ref=doc_id,
        title=kw.pop("title", doc_id),
        essence=None,
        citation=f"note {doc_id}",
        fidelity_tier="full",
        updated_at=NOW,
        consensus=None,
        importance=None,
        dedup_key=dedup_key(body),
    )
    fields.update(kw)
    return Candidate(doc_id=doc_id, body=body, bm25=bm25, **fields)


def test_query_terms_drop_operators_quotes_and_stopwords() -> None:
    terms = query_terms('How do I "DROP TABLE" notes; -- OR 1=1 (zsh) AND prompt* ?')
    assert terms == ["drop", "table", "notes", "zsh", "prompt"]


def test_query_terms_empty_and_long() -> None:
    assert query_terms("") == []
    assert query_terms("   ?!  ") == []
    long = " ".join(f"word{i}" for i in range(500))
    assert len(query_terms(long)) == 32


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=300))
def test_query_terms_only_words(text: str) -> None:
    # A term is a word of two characters or more, or one Chinese or Japanese character,
    # with the combining marks inside and after its letters ("00ऺ": a sign after digits).
    for term in query_terms(text):
        letters = fold_marks(term)
        assert letters.isalnum() and term == term.lower()
        assert len(letters) > 1 or has_cjk(letters)
        assert not (len(letters) > 1 and has_cjk(letters))


def test_parse_sources() -> None:
    assert parse_sources(None) == ("notes", "sessions")
    assert parse_sources("sessions") == ("sessions",)
    assert parse_sources(" notes , notes ") == ("notes",)
    with pytest.raises(UsageError, match="unknown source"):
        parse_sources("notes,web")
    with pytest.raises(ValueError):
        parse_sources("")


def test_dedup_keeps_higher_bm25_in_order() -> None:
    same = "x" * 500
    a = cand("a", same + " tail one", 1.0)
    b = cand("b", "other", 2.0)
    c = cand("c", same + " tail two", 3.0)  # same first 500 characters as a
    assert [x.doc_id for x in dedup([a, b, c])] == ["b", "c"]


def test_dedup_key_is_sha256_of_the_first_500_characters() -> None:
    # The same value the search_docs transform stores: sha256(left(body, 500)).
    body = "é" * 499 + "xyz"
    assert dedup_key(body) == hashlib.sha256(body[:500].encode("utf-8")).hexdigest()


def test_term_coverage_counts_title_hits_higher() -> None:
    terms = ["docker", "shell"]
    assert term_coverage(terms, "", "nothing here") == 0.0
    body_only = term_coverage(terms, "", "a docker shell")
    in_title = term_coverage(terms, "Docker shell", "")
    assert 0 < body_only < in_title <= 1.0
    assert term_coverage(["indexing"], "", "the index is built") > 0  # light stemming


_WORD_CHARS = st.sampled_from(list("abcdeé_1É"))
_TEXT_CHARS = st.sampled_from(list("abcdeé_1 .-\n'É"))


@settings(max_examples=300, deadline=None)
@given(
    words=st.lists(st.text(_WORD_CHARS, min_size=1, max_size=6), min_size=1, max_size=4),
    text=st.text(_TEXT_CHARS, max_size=80),
)
def test_coverage_matcher_finds_what_the_word_start_regex_finds(
    words: list[str], text: str
) -> None:
    # The matcher looks for stems of word characters with str.find; it must find exactly
    # the stems that a regex of the stems at a word boundary finds (a stem also counts as
    # found where a longer stem starting with it matches).
    matcher = CoverageMatcher(words)
    stems = sorted(set(matcher.stems), key=lambda s: (-len(s), s))
    pattern = re.compile(r"\b(" + "|".join(re.escape(s) for s in stems) + ")")
    # Both compared without combining marks, as the index compares them (É holds e).
    folded = fold_marks(text.lower())
    expected = {s for m in pattern.findall(folded) for s in stems if m.startswith(s)}
    assert matcher.found(text) == expected


def test_static_score_prefers_recent_full_notes_and_consensus() -> None:
    cfg = RerankConfig()
    fresh = cand("a", "x", 1.0, fidelity_tier="full", updated_at=NOW)
    old = cand("b", "x", 1.0, fidelity_tier="skeleton", updated_at=NOW - timedelta(days=2000))
    assert static_score(fresh, NOW, cfg) > static_score(old, NOW, cfg)
    good = cand("c", "x", 1.0, kind="chunk", consensus=9.0, importance=80.0)
    poor = cand("d", "x", 1.0, kind="chunk", consensus=2.0, importance=30.0)
    assert 0 <= static_score(poor, NOW, cfg) < static_score(good, NOW, cfg) <= 1


def test_rerank_weights() -> None:
    strong = cand(
        "strong", "zsh prompt", 9.0, fidelity_tier="skeleton", updated_at=NOW - timedelta(days=3000)
    )
    weak = cand("weak", "unrelated", 1.0)
    question_only = RerankConfig(question_weight=1.0, static_weight=0.0)
    static_only = RerankConfig(question_weight=0.0, static_weight=1.0)
    assert (
        rerank([weak, strong], ["zsh", "prompt"], NOW, question_only)[0].candidate.doc_id
        == "strong"
    )
    assert rerank([weak, strong], ["zsh", "prompt"], NOW, static_only)[0].candidate.doc_id == "weak"
    ranked = rerank([weak, strong], ["zsh", "prompt"], NOW)
    assert all(0 <= r.final <= 1 for r in ranked)
    top = ranked[0]
    assert top.final == pytest.approx(0.6 * top.question_score + 0.4 * top.static_score)
    with pytest.raises(ValueError):
        RerankConfig(question_weight=1.5)


def test_passage_summarizer_keeps_question_sentences_within_budget() -> None:
    text = (
        "Intro sentence about nothing. " * 30
        + "The answer is unixepoch('subsec') here. "
        + "Filler text. " * 30
    )
    summary = passage_summarizer(["unixepoch", "subsec"], {}, {}, "mistral:7b")(text, 40)
    assert "unixepoch('subsec')" in summary
    assert count_tokens(summary, "mistral:7b") <= 40
    fallback = passage_summarizer(["absent"], {}, {text: "The essence."}, "mistral:7b")(text, 40)
    assert fallback == "The essence."


@pytest.mark.parametrize("budget", [40, 96, 200])
def test_a_paragraph_with_no_sentence_end_shows_the_words_around_the_question(
    budget: int,
) -> None:
    # A pasted log or minified JSON is one piece longer than the room: the pack showed
    # nothing of the note but its title. Now the words around the question's first word.
    words = " ".join(f"w{i} filler" for i in range(300))
    text = words + " the spellfix option is --levenshtein " + words
    summarize = passage_summarizer(["spellfix", "option"], {}, {}, MODEL)
    out = summarize(text, budget)
    assert "spellfix" in out and out.startswith("… ")
    assert count_tokens(out, MODEL) <= budget
    assert text.find(out.removeprefix("… ").split(" ")[0]) >= 0  # starts at a word


def test_focused_excerpt_fills_room_with_the_lines_after_a_match() -> None:
    lines = [f"Unrelated remark number {i} about gardening." for i in range(40)]
    lines[20] = "Next I built the spellfix module like this:"
    lines[21] = "gcc -I. -g -fPIC -shared spellfix.c -o spellfix.so"
    lines[22] = "It then loaded fine."
    text = "\n".join(lines)
    summarize = passage_summarizer(["spellfix", "build"], {}, {}, "mistral:7b")
    roomy = summarize(text, 80)
    # The command holds "spellfix" too; the line after it has no question word.
    assert "gcc -I. -g -fPIC" in roomy and "It then loaded fine." in roomy
    assert "number 35 " not in roomy  # far from every match: the last thing to go in
    tight = summarize(text, 24)
    assert count_tokens(tight, "mistral:7b") <= 24 and "It then loaded fine." not in tight


@settings(max_examples=40, deadline=None)
@given(
    pieces=st.lists(
        st.sampled_from(["alpha beta.", "gamma delta!", "zeta\n", "beta gamma?", "x"]),
        min_size=1,
        max_size=60,
    ),
    limit=st.integers(min_value=1, max_value=120),
)
def test_focused_excerpt_never_exceeds_its_limit(pieces: list[str], limit: int) -> None:
    text = " ".join(pieces)
    out = passage_summarizer(["beta", "zeta"], {}, {}, "mistral:7b")(text, limit)
    assert count_tokens(out, "mistral:7b") <= limit


def _session_passage() -> str:
    lines = [f"[assistant/other] Restarted the applet, pass {i}." for i in range(12)]
    lines[6] = (
        '[assistant/tool_use run_shell_command] {"command": "grep DISPLAY /proc/5524/environ"}'
        " # the cosmic panel process"
    )
    lines[7] = "[tool/tool_result] wayland-1"
    lines[9] = "[assistant/other] The panel process value gets checked once more later on."
    return "\n".join(lines)


def test_a_run_of_pieces_keeps_the_result_after_the_call() -> None:
    # The tool call holds the question's words, the result after it none: chosen by
    # relevance, another line with question words takes the room; a run keeps the result.
    text = _session_passage()
    summarize = passage_summarizer(
        query_terms("Which display value did the cosmic panel process have?"), {}, {}, MODEL
    )
    call = text.splitlines()[6]
    for room in (60, 70):
        run = summarize.run(text, room)
        assert run.startswith(f"{call}\n[tool/tool_result] wayland-1")
        assert "…" not in run and count_tokens(run, MODEL) <= room
        assert "wayland-1" not in summarize(text, room)
    assert summarize.run(text, 2000) == text
    # A best piece longer than the room: its most relevant pieces wherever they are.
    assert summarize.run(text, 30) == summarize(text, 30)


@settings(max_examples=40, deadline=None)
@given(limit=st.integers(min_value=1, max_value=120), start=st.integers(0, 11))
def test_a_run_of_pieces_never_exceeds_its_limit(limit: int, start: int) -> None:
    text = "\n".join(_session_passage().splitlines()[start:])
    summarize = passage_summarizer(["display", "panel", "process"], {}, {}, MODEL)
    assert count_tokens(summarize.run(text, limit), MODEL) <= limit


def test_check_budget() -> None:
    assert check_budget(5) == 5
    with pytest.raises(UsageError, match="budget must be >= 1, got 0"):
        check_budget(0)
    with pytest.raises(TypeError):
        check_budget(True)
    # Past any model's window: a typo, and past 2^63 DuckDB failed with a traceback.
    assert check_budget(100_000_000) == 100_000_000
    with pytest.raises(UsageError, match="budget must be <= 100,000,000 tokens"):
        check_budget(10**30)


def test_recall_is_case_insensitive_share() -> None:
    assert recall("Use Docker EXEC -it", ["docker exec", "attach"]) == 0.5
    assert recall("", []) == 1.0
    # A fact typed composed is found in a note saved decomposed (macOS), and back.
    assert recall("Schlu\u0308ssel KO\u0308-5512", ["KÖ-5512", "schlüssel"]) == 1.0
    assert recall("KÖ-5512", ["KO\u0308-5512"]) == 1.0


def test_load_questions(tmp_path: Path) -> None:
    good = tmp_path / "q.jsonl"
    good.write_text(
        json.dumps({"question": "q?", "must_contain": ["a"], "source": "note:x"}) + "\n\n"
    )
    assert load_questions(good)[0].source == "note:x"
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"question": "q?", "must_contain": []}\n')
    with pytest.raises(UsageError, match=r"bad\.jsonl: no questions \(line 1: 'must_contain'"):
        load_questions(bad)
    bad.write_text('{"question": "q?", "must_contain": "a"}\n{"question": ""}\n')
    with pytest.raises(UsageError, match=r"bad\.jsonl, line 2: 'question' must be"):
        load_questions(bad)  # every entry a question, or an error
    bad.write_text('{"question": "q?", "must_contain": ["subselect", ""]}\n')
    with pytest.raises(UsageError, match="'must_contain' holds an empty string"):
        load_questions(bad)  # it said "a non-empty list", which the list is
    bad.write_text("not json\n")
    with pytest.raises(ValueError, match="not JSON"):
        load_questions(bad)
    with pytest.raises(FileNotFoundError):
        load_questions(tmp_path / "missing.jsonl")


def test_shipped_questions_parse() -> None:
    from selene_dag.paths import assets_dir

    questions = load_questions(assets_dir() / "eval" / "questions.jsonl")
    assert 15 <= len(questions) <= 25
    assert all(q.source for q in questions)


def _coverage_reference(terms: list[str], title: str, body: str, bonus: float) -> float:
    # The per-term regex definition the one-pass matcher must agree with.
    if not terms:
        return 0.0
    total = 0.0
    for term in terms:
        pattern = re.compile(rf"\b{re.escape(stem(term))}")
        in_title = pattern.search(title.lower()) is not None
        found = in_title or pattern.search(body.lower()) is not None
        total += (float(found) + bonus * float(in_title)) / (1.0 + bonus)
    return total / len(terms)


_WORDS = st.sampled_from(
    [
        "dock",
        "docker",
        "dockers",
        "index",
        "indexing",
        "indexes",
        "in",
        "cache",
        "caching",
        "shell",
        "shells",
        "db",
        "sqlite",
        "sql",
        "a",
        "x_dock",
        "Docker",
        "INDEX",
    ]
)


@settings(max_examples=200, deadline=None)
@given(
    terms=st.lists(_WORDS, max_size=6),
    title=st.lists(_WORDS, max_size=6).map(" ".join),
    body=st.lists(_WORDS | st.sampled_from([",", ".", "-", "_", "\n"]), max_size=30).map(" ".join),
    bonus=st.sampled_from([0.0, 1.0, 2.5]),
)
def test_one_pass_coverage_equals_per_term_regexes(
    terms: list[str], title: str, body: str, bonus: float
) -> None:
    terms = [t.lower() for t in terms]
    assert term_coverage(terms, title, body, bonus) == pytest.approx(
        _coverage_reference(terms, title, body, bonus)
    )


def _ranked(pairs: list[tuple[Candidate, float]]) -> list[Ranked]:
    return [Ranked(c, final, final, final) for c, final in pairs]


def _long_note(doc_id: str, fact: str) -> Candidate:
    # The fact sits on a line with no question word, far from the one line that has them.
    lines = ["The spellfix build went like this."]
    lines += [f"Unrelated remark number {i} about gardening." for i in range(30)]
    lines[12] = fact
    return cand(doc_id, "\n".join(lines), 5.0)


def test_a_clearly_leading_note_takes_the_room_a_close_one_shares_it() -> None:
    model = "mistral:7b"
    best = _long_note("best", "Then: make install PREFIX=/opt/local")
    other = cand("other", "The spellfix extension build. " + "Unrelated filler line. " * 60, 1.0)
    budget = 300
    assert count_tokens(best.body, model) > budget // 2  # else nothing to test

    def plan(runner_up: float) -> list:
        summarize = passage_summarizer(["spellfix", "build"], {}, {}, model)
        return plan_items(_ranked([(best, 1.0), (other, runner_up)]), budget, model, summarize)

    lead, close = plan(0.5), plan(0.95)
    # Leading clearly, the note gets its filler lines before the other note's filler.
    assert "PREFIX=/opt/local" in lead[0].content
    assert count_tokens(lead[0].content, model) > count_tokens(close[0].content, model)
    # A close runner-up gets its matching line early, whatever the leader's length.
    assert [i.id for i in close] == ["best", "other"]
    assert "spellfix extension build" in close[1].content


def test_pack_with_a_leading_note_keeps_the_budget_promise() -> None:
    model = "mistral:7b"
    best = _long_note("best", "Then: make install PREFIX=/opt/local")
    others = [cand(f"o{i}", f"Spellfix remark {i}. " * 40, 1.0) for i in range(5)]
    ranked = _ranked([(best, 1.0)] + [(o, 0.7 - 0.01 * i) for i, o in enumerate(others)])
    for budget in (40, 120, 300, 500, 1000):
        text, items, _ = pack_ranked("how to build spellfix", ranked, budget, model, ["spellfix"])
        assert count_tokens(text, model) <= budget
        assert items and items[0].id == "best"
        # The plan fits the packer's own estimate: the leader is never demoted.
        assert items[0].level == "full" or budget < 60
        for item in items[1:]:  # runner-ups at 0.7 earn SUMMARY: at most 150 body tokens
            assert item.level in ("summary", "keywords", "reference")
            assert item.tokens <= count_tokens(item.text.split("\n", 1)[0], model) + 1 + 150


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab ,;{}x\U0001f600")), max_size=3000))
def test_a_long_line_is_cut_into_pieces_that_rebuild_it(line: str) -> None:
    line = line.strip()  # as segment gives it
    parts = split_long(line, 40)
    assert all(0 < len(part) <= 40 and part.strip() for part, _ in parts)
    assert parts == [] or parts[-1][1] == ""
    # The parts with their joints are the line, a run of spaces at a cut kept as one.
    rebuilt = "".join(part + joint for part, joint in parts)
    assert re.sub(" +", " ", rebuilt) == re.sub(" +", " ", line)


def test_minified_json_is_cut_into_pieces_a_pack_can_hold() -> None:
    line = json.dumps({f"k{i}": {"v": [1, 2, 3]} for i in range(2000)}, separators=(",", ":"))
    pieces = segment("# Dump\n\n" + line + "\n")
    assert len(pieces) > 10 and all(len(p.text) <= MAX_PIECE_CHARS for p in pieces)
    assert "".join(p.text + p.joint for p in pieces[1:]).rstrip("\n") == line
    assert [p.cut for p in pieces[1:3]] == [True, True] and not pieces[0].cut
    # An excerpt from inside the line says so; its first piece does not.
    assert join_pieces(pieces, [5]).startswith("… ")
    assert not join_pieces(pieces, [1]).startswith("…")


def test_a_fence_chosen_without_a_line_of_its_block_is_left_out() -> None:
    # An excerpt kept "```yaml / … / ```" of a block none of whose lines it showed.
    pieces = segment("Intro about deploy.\n\n```yaml\nkey: value\nother: 1\n```\n\nAfter text.")
    assert join_pieces(pieces, [0, 1]) == "Intro about deploy."
    assert join_pieces(pieces, [0, 4, 5]) == "Intro about deploy.\n…\nAfter text."
    # A line of the block brings both fences.
    assert join_pieces(pieces, [0, 2]) == "Intro about deploy.\n```yaml\nkey: value\n…\n```"


def test_repeated_pieces_are_found_at_their_own_places() -> None:
    # Each repeated piece took the offset of its first copy: a closing brace's lines, and
    # the cuts of a long run of one text, all pointed at the first.
    from selene_dag.retrieval.passages import piece_offsets

    text = "fn a() {\n}\nfn b() {\n}\n" + "abcdefghij" * 200
    pieces = segment(text)
    offsets = piece_offsets(text, pieces)
    assert offsets == sorted(offsets) and len(set(offsets)) == len(offsets)
    assert all(text.startswith(p.text, at) for p, at in zip(pieces, offsets, strict=True))


def test_a_gap_before_code_or_a_heading_is_a_line_of_its_own() -> None:
    # " … " put the opening fence after a sentence, where it is no fence: the closing one
    # then opened a block that ran to the end of the pack.
    pieces = segment("Install the tool. Then build it:\n```bash\nmake all\n```\nDone.")
    assert join_pieces(pieces, [0, 3]) == "Install the tool.\n…\n```bash\nmake all\n```"
    pieces = segment("Intro here. More words.\n## Setup\nRun it. Then check. Last one.")
    assert join_pieces(pieces, [0, 2]) == "Intro here.\n…\n## Setup"
    assert join_pieces(pieces, [3, 5]) == "Run it. … Last one."  # inside a paragraph


def test_a_window_opens_at_the_rarest_question_word() -> None:
    from selene_dag.retrieval.excerpts import PassageSummarizer

    # "port" opens each row, the name asked about closes it: a window from the first
    # question word showed the row's port fields and stopped before the name.
    rows = [
        {"port": 8000 + i, "region": "eu-west-1", "zone": "b", "tier": "gold", "name": f"svc{i}"}
        for i in range(60)
    ]
    rows[41]["name"] = "harbourmaster"
    text = "# Registry\n\n" + json.dumps(rows)
    weights = {"harbourmaster": 0.69, "port": 0.18}
    summarize = PassageSummarizer(["port", "harbourmaster"], weights, {}, "mistral:7b")
    out = summarize(text, 25)
    assert "harbourmaster" in out and out.startswith("… ")


def test_a_window_shown_for_a_cut_is_marked_once() -> None:
    from selene_dag.context.levels import Level
    from selene_dag.retrieval.allocate import DocPlan
    from selene_dag.retrieval.excerpts import excerpt_text

    text = "# Registry\n\n" + " ".join(f"row{i} port {8000 + i}" for i in range(400))
    pieces = segment(text)
    cut = next(i for i, p in enumerate(pieces) if p.cut and i > 3)
    plan = DocPlan(Level.FULL, 1.0, pieces, [1.0] * len(pieces), 0, 0, chosen=[cut])
    plan.window = (cut, "… port 8123 row124")
    out = excerpt_text(plan, text)
    assert out == "… port 8123 row124"
    plan.chosen = [0, cut]
    assert excerpt_text(plan, text) == "# Registry\n…\nport 8123 row124"
    # After the cut before it, which leaves no gap for join_pieces to mark, the window's
    # own mark says rows were left out between them.
    plan.chosen = [cut - 1, cut]
    out = excerpt_text(plan, text)
    assert out.endswith("… port 8123 row124") and out.count("…") == 2


def test_a_note_shown_as_a_summary_is_counted_and_flagged_so() -> None:
    # Its keywords line (long words) was no shorter than its summary, so the packer showed
    # the summary: the item was counted as KEYWORDS and marked `excerpt: false`.
    model = "mistral:7b"
    best = _long_note("best", "Then: make install PREFIX=/opt/local")
    words = " ".join(f"verylongword{i}" for i in range(6000))
    long_line = cand("long", f"# Long line note\n\n{words} spellfix\n", 1.0)
    ranked = _ranked([(best, 1.0), (long_line, 0.5)])
    _, items, counts = pack_ranked("how to build spellfix", ranked, 500, model, ["spellfix"])
    shown = items[1]
    assert shown.id == "long" and not shown.text.splitlines()[1].startswith("Keywords:")
    assert (shown.level, shown.excerpt) == ("summary", True)
    assert counts["summary"] == 1 and counts["keywords"] == 0
