"""The health step prepares only the notes a pack can reach: packs, tier counts and the
all-notes-at-full figure equal those made from every note."""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime, timedelta

import pytest

from selene_dag.context.builder import pack_notes
from selene_dag.notes.context_notes import (
    full_tokens,
    load_context_notes,
    prepare_leading,
    prepare_stored,
)
from selene_dag.store import connect
from tests.conftest import DEMO_NOTES

MODEL = "mistral:7b"
NOW = datetime(2026, 7, 15, tzinfo=UTC)
TIERS = ("full", "high", "summary", "skeleton")


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory):
    """The 577 demo notes with tiers, essences, themes and access stamps; a third of them
    share one update time, so priorities tie."""
    rng = random.Random(7)
    notes = [json.loads(line) for line in DEMO_NOTES.read_text().splitlines() if line]
    conn = connect(tmp_path_factory.mktemp("health") / "selene.duckdb")
    for i, note in enumerate(notes):
        stamp = NOW - timedelta(days=0 if i % 3 == 0 else rng.randint(1, 2000))
        conn.execute(
            "INSERT INTO notes (id, title, content, content_hash, created_at, updated_at, "
            "source, deleted_at) VALUES (?, ?, ?, md5(?), ?, ?, 'test', ?)",
            [
                note["id"],
                note["title"],
                note["content"],
                note["content"],
                stamp,
                stamp,
                NOW if i % 50 == 49 else None,  # a few deleted notes stay out
            ],
        )
        accessed = NOW - timedelta(hours=rng.randint(1, 500)) if i % 7 == 0 else None
        conn.execute(
            "INSERT INTO processed_notes (note_id, essence, primary_theme, fidelity_tier, "
            "last_accessed_at) VALUES (?, ?, ?, ?, ?)",
            [
                note["id"],
                note["content"][:120] if i % 4 else None,
                note.get("topic"),
                TIERS[rng.randrange(4)],
                accessed,
            ],
        )
    yield conn
    conn.close()


def _every_note(conn):
    notes = load_context_notes(conn)
    prepared, counter = prepare_stored(conn, notes, MODEL)
    full = sum(counter([f"--- {n['title']} ---\n" for n in notes])) + sum(
        counter([n["content"] for n in notes])
    )
    return prepared, full


@pytest.mark.parametrize("budget", [300, 2_000, 6_000])
def test_leading_notes_pack_as_every_note_does(store, budget: int) -> None:
    every, _ = _every_note(store)
    leading, _, live = prepare_leading(store, MODEL, budget, leading=8)
    assert live == len(every.notes)
    assert len(leading.notes) < live  # only the leading notes were prepared
    for b in sorted({120, budget // 3, budget}):
        want, got = pack_notes(every, b), pack_notes(leading, b)
        assert (got.text, got.total_tokens, got.order) == (want.text, want.total_tokens, want.order)
        tiers = {k: v for k, v in want.counts.items() if k != "excluded"}
        assert {k: v for k, v in got.counts.items() if k != "excluded"} == tiers
        assert got.counts["excluded"] + live - len(leading.notes) == want.counts["excluded"]


def test_all_skeletons_fitting_prepares_every_note(store) -> None:
    every, _ = _every_note(store)
    leading, _, live = prepare_leading(store, MODEL, 10**7, leading=8)
    assert len(leading.notes) == live == len(every.notes)
    assert pack_notes(leading, 10**7).text == pack_notes(every, 10**7).text


def test_full_tokens_equal_counting_every_note_and_count_what_is_missing(store) -> None:
    _, expected = _every_note(store)
    _, counter, _ = prepare_leading(store, MODEL, 500, leading=8)
    assert full_tokens(store, counter) == expected
    store.execute("DELETE FROM token_counts WHERE model = ?", [MODEL])
    _, counter, _ = prepare_leading(store, MODEL, 500, leading=8)
    assert full_tokens(store, counter) == expected
    # The contents no longer stored were counted again, and stored.
    unstored = store.execute(
        "SELECT count(*) FROM notes n WHERE n.deleted_at IS NULL AND NOT EXISTS (SELECT 1 FROM "
        "token_counts c WHERE c.hash = md5(n.content) AND c.model = ?)",
        [MODEL],
    ).fetchone()[0]
    assert unstored == 0


def test_entries_named_by_place_pack_in_number_order(tmp_path) -> None:
    """A JSON list's entries without ids (``list.json:1`` … ``:12``) share one stamp, so
    their order is the ids': ``:2`` comes before ``:10``, as in the file."""
    conn = connect(tmp_path / "selene.duckdb")
    for i in (10, 2, 1, 12, 3, 11):
        conn.execute(
            "INSERT INTO notes (id, title, content, content_hash, created_at, updated_at, "
            "source) VALUES (?, ?, ?, md5(?), ?, ?, 'test')",
            [f"n/list.json:{i}", f"Item {i}", f"entry {i}", f"entry {i}", NOW, NOW],
        )
    expected = [f"n/list.json:{i}" for i in (1, 2, 3, 10, 11, 12)]
    assert [n["id"] for n in load_context_notes(conn)] == expected
    leading, _, _ = prepare_leading(conn, MODEL, 40, leading=2)
    assert [n["id"] for n in leading.notes][:2] == expected[:2]
    conn.close()
