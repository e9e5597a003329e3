"""ask over a real DuckDB store with the fts extension: ranking, citations, budgets, edge
cases, staleness, evaluation against the baselines."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from selene_dag.context.tokens import count_tokens
from selene_dag.errors import SeleneError
from selene_dag.notes.context_notes import mark_accessed
from selene_dag.retrieval.evaluate import Question, applicable, evaluate
from selene_dag.retrieval.index import (
    SearchIndexError,
    build_index,
    index_exists,
    index_is_stale,
)
from selene_dag.retrieval.pack import ask
from selene_dag.retrieval.search import search, term_weights
from selene_dag.store import connect
from tests.support.ask import NOW, SESSION_PATH, add_session, seed_store

MODEL = "mistral:7b"


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory):
    path = tmp_path_factory.mktemp("ask") / "selene.duckdb"
    seed_store(path)
    conn = connect(path)
    build_index(conn, NOW)
    yield conn
    conn.close()


def test_best_note_first_in_full_with_citation(store) -> None:
    result = ask(
        store,
        "How do I open a bash shell in a running docker container?",
        400,
        model=MODEL,
        now=NOW,
    )
    first = result.items[0]
    assert first.id == "note:docker/exec.md" and first.level == "full"
    assert first.citation == "note docker/exec.md"
    assert result.text.startswith("[note docker/exec.md] Attaching a bash shell")
    assert "docker exec -it" in result.text
    assert result.total_tokens == count_tokens(result.text, MODEL) <= 400
    assert result.note_ids[0] == "docker/exec.md"


def test_sessions_cite_file_and_event_range(store) -> None:
    result = ask(store, "LM Studio provider", 300, model=MODEL, now=NOW, sources="sessions")
    assert result.items and all(i.kind == "chunk" for i in result.items)
    # The citation names the session key (what `distill report` takes), the item its file.
    assert result.items[0].citation == "codex-demo events 0-12"
    assert result.items[0].path == SESSION_PATH
    assert result.text.startswith("[codex-demo events 0-12] codex session chatbot-ui")
    assert result.to_json()["items"][0]["path"] == SESSION_PATH
    assert "LM Studio" in result.text


def test_notes_only_source_excludes_chunks(store) -> None:
    result = ask(store, "LM Studio chatbot config zsh", 500, model=MODEL, now=NOW, sources="notes")
    assert all(i.kind == "note" for i in result.items)


def test_duplicates_collapse(store) -> None:
    result = ask(store, "customizing zsh prompt", 1000, model=MODEL, now=NOW)
    found = result.stats["fts_matches"] + result.stats["passage_docs"]
    assert found == result.stats["after_dedup"] + 1
    ids = [i.id for i in result.items]
    assert ids.count("note:zsh/prompt.md") + ids.count("note:misc/duplicate.md") == 1


def test_long_note_enters_as_excerpt_within_budget(store) -> None:
    result = ask(store, "tomatoes sun water gardening", 300, model=MODEL, now=NOW)
    assert result.items[0].id == "note:misc/long.md" and result.items[0].excerpt
    assert count_tokens(result.text, MODEL) <= 300


@pytest.mark.parametrize(
    "question",
    [
        '"unbalanced quote',
        "AND OR NOT *",
        "'; DROP TABLE notes; --",
        "zsh)(prompt",
        "ü ñ 漢字 prompt",
    ],
)
def test_hostile_queries_do_not_fail(store, question: str) -> None:
    result = ask(store, question, 200, model=MODEL, now=NOW)
    assert count_tokens(result.text, MODEL) <= 200


def test_empty_and_unmatched_questions_give_empty_pack_with_note(store) -> None:
    empty = ask(store, "   ", 200, model=MODEL, now=NOW)
    assert empty.text == "" and empty.items == [] and "no searchable" in empty.stats["note"]
    none = ask(store, "xylophone quasar", 200, model=MODEL, now=NOW)
    assert none.text == "" and "nothing matched" in none.stats["note"]


def test_words_no_note_holds_are_named_beside_a_pack_of_the_other_words(store) -> None:
    # A question about something the home never mentions packed notes matching its one
    # common word, with nothing telling the reader that the pack does not answer it.
    result = ask(store, "boiling point of mercury in kelvin docker", 500, model=MODEL, now=NOW)
    assert result.items
    assert result.stats["note"] == (
        "no note or session holds 'boiling', 'point', 'mercury', 'kelvin': the pack holds the best "
        "matches of the question's other words"
    )
    found = ask(store, "docker container", 500, model=MODEL, now=NOW)
    assert found.items and found.stats["note"] == ""
    # Words with a digit are looked up word for word: named when no passage holds them (the
    # index, which drops digits, cannot tell: "ERR7" is its "err"); words the index leaves
    # out as too common ("across", "best") are in notes, and not named.
    assert ask(store, "docker 4471", 500, model=MODEL, now=NOW).stats["note"] == (
        "no note or session holds '4471': the pack holds the best matches of the question's "
        "other words"
    )
    assert ask(store, "best docker across", 500, model=MODEL, now=NOW).stats["note"] == ""
    many = " ".join(f"zq{c}word" for c in "abcdefghij")
    note = ask(store, f"docker {many}", 500, model=MODEL, now=NOW).stats["note"]
    assert "'zqgword', 'zqhword' and 2 other words:" in note


def test_budget_below_one_reference_line(store) -> None:
    result = ask(store, "docker container", 2, model=MODEL, now=NOW)
    assert count_tokens(result.text, MODEL) <= 2
    if not result.items:
        assert "cannot hold" in result.stats["note"]
    with pytest.raises(ValueError):
        ask(store, "docker", 0, model=MODEL, now=NOW)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    budget=st.integers(1, 1500),
    question=st.sampled_from(
        [
            "docker shell",
            "zsh prompt ~/.zshrc",
            "sqlite unix milliseconds",
            "tomatoes",
            "copy file chatbot LM",
        ]
    ),
)
def test_budget_is_a_hard_promise(store, budget: int, question: str) -> None:
    for model in (MODEL, "gpt-4o"):
        result = ask(store, question, budget, model=model, now=NOW)
        assert count_tokens(result.text, model) <= budget
        assert result.total_tokens <= budget


def test_search_needs_an_index(tmp_path: Path) -> None:
    seed_store(tmp_path / "s.duckdb", with_session=False)
    conn = connect(tmp_path / "s.duckdb")
    try:
        assert not index_exists(conn) and index_is_stale(conn)
        with pytest.raises(SearchIndexError, match="never built") as raised:
            search(conn, "docker", ("notes",))
        assert isinstance(raised.value, SeleneError)
        # ask looks the question's terms up once, before either ranking: same error.
        with pytest.raises(SearchIndexError, match="never built"):
            ask(conn, "docker", 500, now=NOW)
    finally:
        conn.close()


def test_staleness_follows_content_not_access(tmp_path: Path) -> None:
    seed_store(tmp_path / "s.duckdb", with_session=False)
    conn = connect(tmp_path / "s.duckdb")
    try:
        build_index(conn, NOW)
        assert not index_is_stale(conn)
        mark_accessed(conn, ["docker/exec.md"], NOW)
        assert not index_is_stale(conn)  # access stamps do not invalidate the index
        add_session(conn)
        assert index_is_stale(conn)
        build_index(conn, NOW)
        assert not index_is_stale(conn)
        conn.execute(
            "UPDATE processed_notes SET fidelity_tier = 'skeleton' WHERE note_id = 'zsh/prompt.md'"
        )
        assert index_is_stale(conn)
        build_index(conn, NOW)
        conn.execute("UPDATE notes SET content_hash = 'changed' WHERE id = 'zsh/prompt.md'")
        assert index_is_stale(conn)
    finally:
        conn.close()


def test_evaluate_beats_newest_first(store) -> None:
    questions = [
        Question(
            "How do I get unix milliseconds in SQLite?",
            ("2440587.5", "unixepoch('subsec')"),
            "note:sqlite/julianday.md",
        ),
        Question(
            "How do I open a shell in a running docker container?",
            ("docker exec -it",),
            "note:docker/exec.md",
        ),
        Question(
            "Which provider was configured in the chatbot-ui session?",
            ("LM Studio",),
            "session:chatbot-ui",
        ),
        Question(
            # A session named by its transcript's file name (the citation names its key).
            "Which provider was configured for local models?",
            ("LM Studio",),
            "session:rollout-demo",
        ),
        Question("not in corpus", ("x",), "note:absent.md"),
    ]
    usable = applicable(store, questions)
    assert len(usable) == 4
    report = evaluate(store, usable, 120, model=MODEL, now=NOW)
    overall = report.overall
    assert overall["ask"] == 1.0
    assert overall["ask"] > overall["newest_first"]
    doc = report.to_json()
    assert set(doc) == {"budget", "model", "overall", "questions", "ask_vs_bm25_passages"}
    versus = doc["ask_vs_bm25_passages"]
    assert versus["questions"] == 4
    assert versus["difference"] == pytest.approx(
        overall["ask"] - overall["bm25_passages"], abs=1e-3
    )
    assert versus["low"] <= versus["difference"] <= versus["high"]


def test_term_weights_are_idf_by_light_stem(store) -> None:
    weights = term_weights(store, ["prompt", "julianday", "nowhereword", "shells"])
    assert set(weights) == {"prompt", "julianday", "nowhereword", "shell"}
    sql = (
        "SELECT w, count(*) FROM (SELECT unnest(['prompt', 'julianday']) AS w) "
        "JOIN bm25_vocab v ON v.term = stem(w, 'porter') "
        "JOIN search_postings p ON p.termid = v.termid GROUP BY w"
    )
    df = dict(store.execute(sql).fetchall())
    assert df["prompt"] > df["julianday"] >= 1  # else nothing to compare
    assert weights["julianday"] > weights["prompt"] > 0
    # A word in no document counts as found in one: as rare as rare gets.
    assert weights["nowhereword"] >= weights["julianday"]
    assert term_weights(store, []) == {}


def test_ask_works_on_a_connection_whose_first_search_setup_was_rolled_back(
    tmp_path: Path,
) -> None:
    # The query macro is created inside a transaction that rolls back (an index rebuild
    # that fails): the next ask on that connection must still find it.
    from selene_dag.retrieval import bm25

    seed_store(tmp_path / "s.duckdb", with_session=False)
    conn = connect(tmp_path / "s.duckdb")
    try:
        build_index(conn, NOW)
    finally:
        conn.close()
    conn = connect(tmp_path / "s.duckdb")
    try:
        conn.execute("BEGIN")
        bm25.prepare_query(conn)
        conn.execute("ROLLBACK")
        assert ask(conn, "docker", 500, now=NOW).items
    finally:
        conn.close()
