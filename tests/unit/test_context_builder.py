"""ContextBuilder (seed 000 Task 2, all 10 cases), pack_notes and pack_with_threads."""

from __future__ import annotations

import json
import math

import pytest

from selene_dag.context import (
    ContextBuilder,
    count_tokens,
    pack_notes,
    pack_with_threads,
    prepare_notes,
    render_thread,
    separator_tokens,
)
from selene_dag.context.builder import SEPARATOR, TIERS, render_note
from selene_dag.paths import assets_dir
from tests.support.context import note

M = "mistral:7b"


def test_empty_builder_returns_empty_string() -> None:
    assert ContextBuilder(1000, M).build() == ""


def test_full_tier_renders_title_and_content() -> None:
    b = ContextBuilder(5000, M)
    b.add_note(
        {
            "id": 1,
            "title": "Test Note",
            "content": "This is the full content of the note.",
            "essence": None,
            "primary_theme": "testing",
            "concepts": '["unit tests", "assertions"]',
            "fidelity_tier": "full",
        }
    )
    out = b.build()
    assert "Test Note" in out and "This is the full content" in out
    assert out == "--- Test Note ---\nThis is the full content of the note."


def test_high_tier_renders_title_essence_and_content() -> None:
    b = ContextBuilder(5000, M)
    b.add_note(
        {
            "id": 2,
            "title": "Another Note",
            "content": "Full text here.",
            "essence": "Distilled meaning of the note.",
            "primary_theme": "design",
            "concepts": '["architecture"]',
            "fidelity_tier": "high",
        }
    )
    out = b.build()
    assert out == "--- Another Note ---\n[Essence] Distilled meaning of the note.\nFull text here."


def test_summary_tier_renders_title_essence_theme_without_content() -> None:
    b = ContextBuilder(5000, M)
    b.add_note(
        {
            "id": 3,
            "title": "Old Note",
            "content": "This content should NOT appear in summary tier.",
            "essence": "This note explores organizational patterns.",
            "primary_theme": "productivity",
            "concepts": '["habits", "routines"]',
            "fidelity_tier": "summary",
        }
    )
    out = b.build()
    assert "Old Note" in out and "This note explores" in out and "productivity" in out
    assert "should NOT appear" not in out
    assert out == "--- Old Note [productivity] ---\nThis note explores organizational patterns."


def test_skeleton_tier_renders_title_and_theme_only() -> None:
    b = ContextBuilder(5000, M)
    b.add_note(
        {
            "id": 4,
            "title": "Ancient Note",
            "content": "This should not appear.",
            "essence": "This should also not appear.",
            "primary_theme": "archived-topic",
            "concepts": '["old stuff"]',
            "fidelity_tier": "skeleton",
        }
    )
    assert b.build() == "- Ancient Note [archived-topic]"
    b2 = ContextBuilder(5000, M)
    b2.add_note({"id": 5, "title": "Bare", "content": "x", "fidelity_tier": "skeleton"})
    assert b2.build() == "- Bare [unthemed]"


def test_budget_enforcement_stops_adding_when_full() -> None:
    # Seed: a 100-"token" budget keeps the first of two 200-char notes only. Our budget
    # is real tokens: 'A' * 200 is ~25 tokens, so use a budget that holds exactly one.
    first = {"id": 5, "title": "First", "content": "A" * 200, "fidelity_tier": "full"}
    second = {"id": 6, "title": "Second", "content": "B" * 200, "fidelity_tier": "full"}
    one = count_tokens("--- First ---\n" + "A" * 200, M)
    b = ContextBuilder(one + 5, M)
    assert b.add_note(first) is True
    assert b.add_note(second) is False
    out = b.build()
    assert "First" in out and "Second" not in out
    assert count_tokens(out, M) <= one + 5
    assert b.remaining_tokens == one + 5 - count_tokens(out, M)


def test_fallback_chain_when_essence_missing() -> None:
    b = ContextBuilder(5000, M)
    b.add_note(
        {
            "id": 7,
            "title": "No Essence",
            "content": "Some content that should be truncated as fallback.",
            "essence": None,
            "primary_theme": "fallback-test",
            "concepts": '["concept-a", "concept-b"]',
            "fidelity_tier": "summary",
        }
    )
    assert b.build() == "--- No Essence ---\nConcepts: concept-a, concept-b"


def test_fallback_to_truncated_content_without_concepts() -> None:
    long = "word " * 60
    b = ContextBuilder(5000, M)
    b.add_note(
        {"id": 1, "title": "T", "content": long, "concepts": "not json", "tier": 0}, "summary"
    )
    assert b.build() == f"--- T ---\n{long[:150]}..."
    b = ContextBuilder(5000, M)
    b.add_note({"id": 1, "title": "T", "content": "short", "concepts": []}, "summary")
    assert b.build() == "--- T ---\nshort"


def test_concepts_list_top_five() -> None:
    b = ContextBuilder(5000, M)
    b.add_note({"id": 1, "title": "T", "content": "c", "concepts": list("abcdefg")}, "summary")
    assert b.build() == "--- T ---\nConcepts: a, b, c, d, e"


def test_thread_digest_rendering() -> None:
    b = ContextBuilder(5000, M)
    b.add_thread(
        {
            "id": 1,
            "name": "ADHD Management",
            "thread_digest": "This thread tracks strategies for managing ADHD symptoms.",
            "summary": "Various ADHD coping strategies.",
            "why": "Need better daily structure.",
            "note_count": 25,
        }
    )
    assert b.build() == (
        "=== Thread: ADHD Management (25 notes) ===\n"
        "This thread tracks strategies for managing ADHD symptoms."
    )


def test_thread_without_digest_falls_back_to_summary() -> None:
    b = ContextBuilder(5000, M)
    b.add_thread(
        {
            "id": 2,
            "name": "Cooking Ideas",
            "thread_digest": None,
            "summary": "Recipes and meal planning thoughts.",
            "why": "Want to cook more at home.",
            "note_count": 8,
        }
    )
    assert b.build() == (
        "=== Thread: Cooking Ideas (8 notes) ===\n"
        "Recipes and meal planning thoughts.\nMotivation: Want to cook more at home."
    )


def test_add_full_text_overrides_tier() -> None:
    b = ContextBuilder(5000, M)
    b.add_full_text(
        {
            "id": 8,
            "title": "Force Full",
            "content": "Must appear even though tier is skeleton.",
            "essence": "Short version.",
            "primary_theme": "test",
            "concepts": "[]",
            "fidelity_tier": "skeleton",
        }
    )
    assert "Must appear even though" in b.build()


def test_blocks_joined_by_blank_line_and_separator_counted() -> None:
    b = ContextBuilder(10_000, M)
    assert b.add_note(note(1)) and b.add_note(note(2), "skeleton")
    out = b.build()
    assert out.count("\n\n") >= 1
    assert b.used_tokens == count_tokens(out, M)


def test_explicit_tier_argument_and_bad_input() -> None:
    b = ContextBuilder(5000, M)
    b.add_note(note(3, "full"), tier="skeleton")
    assert b.build().startswith("- Note 3")
    with pytest.raises(ValueError):
        b.add_note(note(1), tier="medium")
    with pytest.raises(TypeError):
        b.add_note(None)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        b.add_note({"id": 1, "title": None, "content": "x"})
    with pytest.raises(ValueError):
        ContextBuilder(-1, M)
    with pytest.raises(TypeError):
        ContextBuilder("100", M)  # type: ignore[arg-type]


# ------------------------------------------------------------------------- pack_notes


def test_a_budget_the_joined_skeletons_fit_keeps_every_note() -> None:
    # Each block was budgeted with the separator counted alone (3 mistral tokens: the
    # word-start piece of a text's opening), though a join adds 2: 500 skeleton lines that
    # fit joined lost notes to the estimate.
    notes = [note(i, "skeleton") for i in range(500)]
    joined = SEPARATOR.join(render_note(n, "skeleton") for n in reversed(notes))
    budget = count_tokens(joined, M)
    pack = pack_notes(notes, budget, M)
    assert pack.counts["excluded"] == 0 and pack.text == joined
    assert pack.total_tokens == budget


@pytest.mark.parametrize("model", [M, "gpt-4", "gpt-4o", "llama3"])
@pytest.mark.parametrize("separator", ["\n\n", "\n", "\n\n---\n\n", " … "])
def test_separator_tokens_is_what_a_join_adds(model: str, separator: str) -> None:
    texts = [render_note(note(i), "skeleton") for i in range(40)]
    joined = count_tokens(separator.join(texts), model)
    parts = sum(count_tokens(t, model) for t in texts)
    assert joined - parts <= separator_tokens(separator, model) * (len(texts) - 1)
    assert separator_tokens("", model) == 0


def test_separator_tokens_rejects_a_non_string() -> None:
    with pytest.raises(TypeError):
        separator_tokens(None, M)  # type: ignore[arg-type]


def test_pack_notes_everything_fits_at_stored_tiers() -> None:
    notes = [note(i, "summary" if i % 2 else "full") for i in range(6)]
    # Newest first, each at its stored tier: a budget of exactly that holds them so.
    blocks = [render_note(n, n["fidelity_tier"]) for n in reversed(notes)]
    # A budget of the blocks as the packer counts them (each with a separator) holds them
    # at their stored tiers, with no room to raise any.
    budget = sum(count_tokens(b, M) + separator_tokens(SEPARATOR, M) for b in blocks)
    pack = pack_notes(notes, budget, M)
    assert all(pack.tiers[n["id"]] == n["fidelity_tier"] for n in notes)
    assert pack.counts["excluded"] == 0 and pack.text == SEPARATOR.join(blocks)


def test_room_left_raises_notes_above_their_tier_newest_first() -> None:
    # An archived note stayed a title line with most of the budget unused.
    notes = [note(i, "skeleton" if i % 2 else "summary") for i in range(6)]
    roomy = pack_notes(notes, 10_000, M)
    # Raised to the note itself, its content whole (not above: high adds the essence).
    assert all(roomy.tiers[n["id"]] == "full" for n in notes)
    assert roomy.text == SEPARATOR.join(render_note(n, "full") for n in reversed(notes))
    assert roomy.total_tokens == count_tokens(roomy.text, M) <= 10_000
    blocks = [render_note(n, n["fidelity_tier"]) for n in reversed(notes)]
    stored = sum(count_tokens(b, M) + separator_tokens(SEPARATOR, M) for b in blocks)
    # A little room: the newest note first, the oldest stay as they are.
    for extra in (10, 25, 60):
        little = pack_notes(notes, stored + extra, M)
        assert count_tokens(little.text, M) == little.total_tokens <= stored + extra
        raised = [n["id"] for n in notes if little.tiers[n["id"]] != n["fidelity_tier"]]
        assert raised
        assert all(
            TIERS.index(little.tiers[i]) < TIERS.index(notes[i]["fidelity_tier"]) for i in raised
        )


def test_a_raise_goes_to_the_newest_note_before_older_ones() -> None:
    # One tier at a time, round after round, an old note's cheap raises took the room the
    # newest needed: 43 of 300 tokens used, the newest note a summary.
    new = {
        "id": "new",
        "title": "New",
        "content": "Deploy notes. " * 40,
        "essence": "Deploy.",
        "fidelity_tier": "skeleton",
        "created_at": "2024-07-01",
    }
    old = {
        "id": "old",
        "title": "Old",
        "content": "Short one.",
        "essence": "Short.",
        "fidelity_tier": "skeleton",
        "created_at": "2024-01-01",
    }
    full_new = count_tokens(render_note(new, "full"), M) + separator_tokens(SEPARATOR, M)
    skeleton_old = count_tokens(render_note(old, "skeleton"), M) + separator_tokens(SEPARATOR, M)
    pack = pack_notes([new, old], full_new + skeleton_old + 2, M)
    assert pack.tiers["new"] == "full"
    # A note whose essence is no longer than its title line is raised to its content.
    lunch = {
        "id": "l",
        "title": "Lunch",
        "content": "Pizza on friday.",
        "essence": "Pizza.",
        "fidelity_tier": "skeleton",
    }
    assert pack_notes([lunch], 10_000, "gpt-4").tiers == {"l": "full"}
    # A note at high shows its content already (with its essence): it is not "raised"
    # to full, which would only take its essence away.
    warm = {**lunch, "id": "w", "fidelity_tier": "high"}
    assert pack_notes([warm], 10_000, M).tiers == {"w": "high"}


def test_pack_notes_demotes_oldest_first_and_keeps_every_skeleton() -> None:
    notes = [note(i) for i in range(1, 29)]  # created_at day = i: newest is 28
    sep = separator_tokens(SEPARATOR, M)
    skeletons = sum(count_tokens(f"- {n['title']} [x]", M) + sep for n in notes)
    pack = pack_notes(notes, skeletons + 200, M)
    assert pack.counts["excluded"] == 0
    assert pack.total_tokens <= skeletons + 200
    assert pack.order[0] == 28  # newest first
    ranks = {"full": 0, "high": 1, "summary": 2, "skeleton": 3}
    levels = [ranks[pack.tiers[i]] for i in pack.order]
    assert levels[0] <= levels[-1]
    assert pack.tiers[28] != "skeleton" and pack.tiers[1] == "skeleton"


def test_pack_notes_keeps_highest_priority_skeletons_when_not_all_fit() -> None:
    notes = [note(i) for i in range(1, 29)]
    pack = pack_notes(notes, 40, M)
    kept = [i for i in pack.order]
    assert 0 < len(kept) < 28
    assert kept == sorted(kept, reverse=True)[: len(kept)]
    assert max(kept) == 28
    assert all(pack.tiers[i] == "skeleton" for i in kept)
    assert pack.counts["excluded"] == 28 - len(kept)
    assert count_tokens(pack.text, M) <= 40


def test_a_long_title_does_not_take_the_room_of_every_skeleton_line() -> None:
    # The newest note's 720-character title (a clipped page's) did not fit a 150-token
    # pack as a skeleton line, and the pack kept nothing after it: 0 tokens, 21 excluded.
    notes = [note(i) for i in range(1, 21)]
    notes.append({**note(99), "title": "A very long title " * 40})
    pack = pack_notes(notes, 150, M)
    assert pack.order[0] == 99 and len(pack.order) > 5
    line = pack.text.splitlines()[0]
    assert line.startswith("- A very long title") and "…" in line and len(line) < 160
    assert count_tokens(pack.text, M) <= 150


def test_notes_sharing_an_id_or_with_an_unhashable_one_are_refused() -> None:
    # The pack's tiers are by id: of two notes "x", one's tier was lost without a word.
    with pytest.raises(ValueError, match="two notes have the id 'x'"):
        pack_notes([{**note(1), "id": "x"}, {**note(2), "id": "x"}], 1000, M)
    with pytest.raises(TypeError, match="a note's id must be hashable, got list"):
        pack_notes([{**note(1), "id": ["x"]}], 1000, M)
    # A note without an id is keyed by its position: 0 here, another note's id.
    untitled = {"title": "first", "content": "x " * 50}
    with pytest.raises(ValueError, match="two notes have the id 0"):
        pack_notes([untitled, {**note(2), "id": 0}], 1000, M)


def test_pack_notes_custom_priority_and_zero_budget() -> None:
    notes = [note(i) for i in range(5)]
    pack = pack_notes(notes, 10_000, M, priority=lambda n: -n["id"])
    assert pack.order == [0, 1, 2, 3, 4]
    empty = pack_notes(notes, 0, M)
    assert empty.text == "" and empty.counts["excluded"] == 5
    with pytest.raises(ValueError):
        pack_notes(notes, -5, M)
    with pytest.raises(TypeError):
        pack_notes(None, 10, M)  # type: ignore[arg-type]


def test_pack_notes_demo_corpus_fits_16000_mistral_tokens() -> None:
    lines = (assets_dir() / "demo" / "notes" / "til.jsonl").read_text().splitlines()
    notes = [json.loads(x) for x in lines]
    for n in notes:
        n["primary_theme"] = n.get("topic")
        n["essence"] = n["content"].split("\n\n")[1][:240] if "\n\n" in n["content"] else None
    pack = pack_notes(notes, 16_000, M)
    assert count_tokens(pack.text, M) == pack.total_tokens <= 16_000
    assert pack.counts["excluded"] == 0 and len(pack.order) == 577
    newest, oldest = pack.order[0], pack.order[-1]
    assert pack.tiers[newest] in ("full", "high", "summary")
    assert pack.tiers[oldest] == "skeleton"


def _thread(i: int, words: int = 40) -> dict:
    return {
        "id": f"t{i}",
        "name": f"thread {i}",
        "thread_digest": " ".join(f"digest{i} word{j}." for j in range(words)),
        "note_count": 10 + i,
    }


def test_pack_with_threads_puts_digests_first_within_their_share() -> None:
    notes = [note(i) for i in range(30)]
    prepared = prepare_notes(notes, M)
    threads = [_thread(i) for i in range(4)]
    pack = pack_with_threads(prepared, threads, 2_000)
    assert pack.text.startswith("=== Thread: thread 0 (10 notes) ===\ndigest0 word0.")
    assert count_tokens(pack.text, M) == pack.total_tokens <= 2_000
    # Threads in the order given, while their blocks fit a quarter of the budget.
    head = SEPARATOR.join(render_thread(t) for t in threads[: len(pack.threads)])
    assert pack.threads == [t["id"] for t in threads[: len(pack.threads)]]
    assert 1 <= len(pack.threads) < 4 and count_tokens(head, M) <= 500
    assert count_tokens(head + SEPARATOR + render_thread(threads[len(pack.threads)]), M) > 500
    # The notes take the rest, packed as pack_notes packs them into the room left.
    assert pack.text == head + SEPARATOR + pack.notes.text
    assert pack.notes.counts["excluded"] < 30


def test_pack_with_threads_leaves_out_a_thread_larger_than_its_share() -> None:
    prepared = prepare_notes([note(i) for i in range(3)], M)
    pack = pack_with_threads(prepared, [_thread(0, words=400), _thread(1, words=2)], 1_000)
    # The first thread does not fit, and the order is a priority: the second waits too.
    assert pack.threads == [] and pack.text == pack_notes(prepared, 1_000).text
    assert pack_with_threads(prepared, [], 1_000).text == pack.text
    everything = pack_with_threads(prepared, [_thread(1, words=2)], 1_000, thread_share=1.0)
    assert everything.threads == ["t1"] and everything.notes.counts["excluded"] == 0
    zero = pack_with_threads(prepared, [_thread(1, words=2)], 0)
    assert zero.text == "" and zero.total_tokens == 0 and zero.threads == []
    with pytest.raises(ValueError):
        pack_with_threads(prepared, [], -1)


def test_epoch_seconds_date_a_note_as_iso_strings_do() -> None:
    # A number of seconds (a Unix tool's, a JSON export's) was taken for no date at all.
    from selene_dag.context import default_priority

    iso = {"title": "a", "content": "x", "updated_at": "2023-11-14T22:13:20Z"}
    epoch = {"title": "a", "content": "x", "updated_at": 1_700_000_000}
    assert default_priority(iso) == default_priority(epoch)
    older = {"title": "b", "content": "y", "updated_at": 1_600_000_000.5}
    pack = pack_notes([{**older, "id": 1}, {**epoch, "id": 2}], 1000, M)
    assert pack.order == [2, 1]
    assert default_priority({"title": "c", "content": "", "updated_at": True})[0] == -math.inf
    # Milliseconds, as JavaScript stamps them, are not the year 55,000.
    millis = {"title": "d", "content": "z", "updated_at": 1_700_000_000_000}
    assert default_priority(millis) == default_priority(epoch)
    for huge in (10**400, float("inf"), float("nan")):
        assert default_priority({"title": "e", "content": "", "updated_at": huge})[0] == -math.inf


def test_pack_with_threads_given_plain_notes_says_what_it_takes() -> None:
    # A list of notes failed with "'list' object has no attribute 'model'".
    notes = [{"id": "a", "title": "A", "content": "text"}]
    with pytest.raises(TypeError, match=r"prepare_notes\(notes, model\), got list"):
        pack_with_threads(notes, [], 100)  # type: ignore[arg-type]


def test_a_fresh_short_note_is_not_a_title_line_while_older_notes_keep_summaries() -> None:
    # A short note's high and summary save nothing, so its one step down is to its
    # skeleton: taken in the first round, it left the newest notes as title lines while
    # a hundred older ones kept their summaries.
    older = [
        note(i, content="Long explanation of an old idea. " * 60, essence=f"Old idea {i}.")
        for i in range(60)
    ]
    fresh = [
        note(100 + i, content=f"Retry {i} after a short pause.", essence=None) for i in range(3)
    ]
    notes = older + fresh

    def cost(n: dict, tier: str) -> int:
        return count_tokens(render_note(n, tier), M) + separator_tokens(SEPARATOR, M)

    # Room for every note's title line and half the older notes' summaries.
    budget = sum(cost(n, "skeleton") for n in notes) + sum(
        cost(n, "summary") - cost(n, "skeleton") for n in older[30:]
    )
    pack = pack_notes(notes, budget, M)
    assert pack.total_tokens <= budget
    assert "summary" in {pack.tiers[n["id"]] for n in older}
    assert [pack.tiers[n["id"]] for n in fresh] == ["full"] * 3
