"""Token counts stored once per text and model (token_counts): the same counts as the
tokenizer, each text counted once, another model counted apart."""

from __future__ import annotations

import hashlib
from pathlib import Path

from selene_dag.context.builder import pack_notes, prepare_notes
from selene_dag.context.tokens import count_tokens_batch
from selene_dag.notes.context_notes import activity_priority
from selene_dag.notes.token_store import StoredCounts
from selene_dag.store import open_store

TEXTS = ["one small note", "another note, a bit longer than the first one", "", "one small note"]


def test_counts_are_the_tokenizers_and_each_text_is_counted_once(tmp_path: Path) -> None:
    with open_store(tmp_path / "selene.duckdb") as conn:
        first = StoredCounts(conn, "mistral:7b")
        assert first(TEXTS) == count_tokens_batch(TEXTS, "mistral:7b")
        assert (first.counted, first.reused) == (3, 0)
        again = StoredCounts(conn, "mistral:7b")
        assert again(TEXTS) == count_tokens_batch(TEXTS, "mistral:7b")
        assert (again.counted, again.reused) == (0, 3)
        other = StoredCounts(conn, "gpt-4")
        assert other(TEXTS) == count_tokens_batch(TEXTS, "gpt-4")
        assert other.counted == 3
        rows = conn.execute("SELECT model, count(*) FROM token_counts GROUP BY 1").fetchall()
        assert sorted(rows) == [("gpt-4", 3), ("mistral:7b", 3)]


def test_a_pack_from_stored_counts_is_the_pack_from_the_tokenizer(tmp_path: Path) -> None:
    notes = [
        {"id": f"n{i}", "title": f"Note {i}", "content": "Some text. " * (i + 3)} for i in range(30)
    ]
    with open_store(tmp_path / "selene.duckdb") as conn:
        counter = StoredCounts(conn, "mistral:7b")
        stored = prepare_notes(notes, "mistral:7b", activity_priority, count_batch=counter)
        plain = prepare_notes(notes, "mistral:7b", activity_priority)
        assert stored.chains == plain.chains
        assert pack_notes(stored, 300).text == pack_notes(plain, 300).text


def test_prune_keeps_what_was_asked_and_what_the_query_names(tmp_path: Path) -> None:
    with open_store(tmp_path / "selene.duckdb") as conn:
        StoredCounts(conn, "mistral:7b")(["old render", "a bödy ✓", "still used"])
        StoredCounts(conn, "gpt-4")(["old render"])
        conn.execute("CREATE TABLE bodies AS SELECT 'a bödy ✓' AS body")
        now = StoredCounts(conn, "mistral:7b")
        assert now(["still used", "new render"]) == count_tokens_batch(
            ["still used", "new render"], "mistral:7b"
        )
        # DuckDB's md5 of a string is Python's md5 of its UTF-8 bytes: the keys agree.
        assert now.prune(keep_sql="SELECT md5(body) FROM bodies") == 0  # 4 rows ≤ 2 × 3 kept
        assert now.prune(keep_sql="SELECT md5(body) FROM bodies", slack=1.0) == 1  # "old render"
        again = StoredCounts(conn, "mistral:7b")
        again(["still used", "new render", "a bödy ✓"])
        assert (again.counted, again.reused) == (0, 3)
        other = StoredCounts(conn, "gpt-4")  # another model's counts are left alone
        other(["old render"])
        assert other.reused == 1


def test_prune_keeps_what_any_of_several_queries_names(tmp_path: Path) -> None:
    with open_store(tmp_path / "selene.duckdb") as conn:
        StoredCounts(conn, "mistral:7b")(["old render", "a title", "a body"])
        conn.execute("CREATE TABLE titles AS SELECT 'a title' AS t")
        conn.execute("CREATE TABLE bodies AS SELECT 'a body' AS b")
        now = StoredCounts(conn, "mistral:7b")
        queries = ("SELECT md5(t) FROM titles", "SELECT md5(b) FROM bodies")
        assert now.prune(keep_sql=queries, slack=1.0) == 1  # 3 rows > 2 kept: "old render"
        again = StoredCounts(conn, "mistral:7b")
        again(["a title", "a body"])
        assert (again.counted, again.reused) == (0, 2)


def test_renders_of_a_long_note_are_counted_from_its_contents_count(tmp_path: Path) -> None:
    # A note past 32,768 characters: its full and high renders ("--- title ---\n" and
    # the content) are derived from the content's stored count, which the search index
    # shares; the counts equal the tokenizer's, whatever the content starts with.
    paragraph = "A line about https://example.com/a%27%25 and `code --flag`.\n\n"
    contents = [
        paragraph * 700,
        "\n  indented first line\n" + paragraph * 700,
        "Short note.",
    ]
    notes = [
        {
            "id": f"n{i}",
            "title": f"Note {i}",
            "content": c,
            "essence": "Its gist.",
            "fidelity_tier": tier,
        }
        for i, (c, tier) in enumerate(zip(contents, ("full", "high", "full"), strict=True))
    ]
    from selene_dag.notes.context_notes import prepare_stored

    for model in ("mistral:7b", "gpt-4"):
        with open_store(tmp_path / f"{model.replace(':', '_')}.duckdb") as conn:
            stored, _ = prepare_stored(conn, notes, model)
            plain = prepare_notes(notes, model, activity_priority)
            assert stored.chains == plain.chains
            long_stored = conn.execute(
                "SELECT count(*) FROM token_counts WHERE hash IN (SELECT unnest(?))",
                [[hashlib.md5(c.encode()).hexdigest() for c in contents[:2]]],
            ).fetchone()[0]
            # SentencePiece joins counts exactly; tiktoken's renders are counted whole.
            assert long_stored == (2 if model == "mistral:7b" else 0)
