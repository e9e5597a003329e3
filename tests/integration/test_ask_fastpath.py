"""The precomputed retrieval layer gives what the slow path gave: postings scores equal
``match_bm25``, stored token counts equal live counts, a model without stored counts packs
within budget too, and the server's shared connection is opened once per burst."""

from __future__ import annotations

import threading
from pathlib import Path

import duckdb
import pytest

from selene_dag.config import load_settings
from selene_dag.context.tokens import count_tokens
from selene_dag.retrieval import bm25
from selene_dag.retrieval.index import (
    DOC_TOKENS_TABLE,
    DOCS_BM25,
    DOCS_TABLE,
    PASSAGES_BM25,
    PASSAGES_TABLE,
    build_index,
    header_text,
    index_exists,
    load_fts,
)
from selene_dag.retrieval.pack import ask
from selene_dag.retrieval.search import passage_bm25, question_term_ids, search
from selene_dag.retrieval.terms import query_terms
from selene_dag.service import SharedStore
from selene_dag.store import connect
from tests.support.ask import NOW, seed_store

MODEL = "mistral:7b"
QUESTIONS = [
    "How do I open a bash shell in a running docker container?",
    "julianday unix milliseconds sqlite",
    "zsh prompt customizing",
    "copy a file efficiently",
    "tomatoes sun water",
    "LM Studio provider chatbot-ui block config types",
]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory):
    path = tmp_path_factory.mktemp("fast") / "selene.duckdb"
    seed_store(path)
    conn = connect(path)
    build_index(conn, NOW, model=MODEL)
    yield conn
    conn.close()


@pytest.fixture(scope="module")
def reference(store):
    """The DuckDB fts extension's own index over the same documents and passages, built
    here only to check our incremental index against it."""
    load_fts(store)
    for table, key, text in (
        (DOCS_TABLE, "doc_id", "body"),
        (PASSAGES_TABLE, "passage_id", "text"),
    ):
        store.execute(
            f"PRAGMA create_fts_index('{table}', '{key}', 'title', '{text}', stemmer='porter', "
            "stopwords='english', strip_accents=1, lower=1, overwrite=1)"
        )
    yield store
    for table in (DOCS_TABLE, PASSAGES_TABLE):
        store.execute(f"DROP SCHEMA fts_main_{table} CASCADE")


@pytest.fixture
def notes_index(tmp_path: Path):
    """A connection to a store of the demo notes with its index built (one per test)."""
    db = tmp_path / "selene.duckdb"
    seed_store(db, with_session=False)
    conn = connect(db)
    build_index(conn, NOW, model=MODEL)
    yield conn
    conn.close()


@pytest.mark.parametrize("question", QUESTIONS)
def test_postings_scores_equal_match_bm25(reference, question: str) -> None:
    store = reference
    expected = store.execute(
        f"SELECT doc_id, score FROM (SELECT doc_id, fts_main_{DOCS_TABLE}.match_bm25(doc_id, ?) "
        f"AS score FROM {DOCS_TABLE}) WHERE score IS NOT NULL ORDER BY score DESC, doc_id",
        [" ".join(query_terms(question))],
    ).fetchall()
    got = [(c.doc_id, c.bm25) for c in search(store, question, limit=100)]
    assert expected, "the question should match something"
    assert [d for d, _ in got] == [d for d, _ in expected]
    assert [s for _, s in got] == pytest.approx([s for _, s in expected], rel=1e-9)


@pytest.mark.parametrize("question", QUESTIONS)
def test_passage_scores_equal_match_bm25(reference, question: str) -> None:
    store = reference
    terms = query_terms(question)
    expected = store.execute(
        f"SELECT passage_id, score FROM (SELECT passage_id, fts_main_{PASSAGES_TABLE}"
        f".match_bm25(passage_id, ?) AS score FROM {PASSAGES_TABLE}) WHERE score IS NOT NULL "
        "ORDER BY score DESC, passage_id",
        [" ".join(terms)],
    ).fetchall()
    got = passage_bm25(store, terms, ["note", "chunk"], 1000)
    assert expected, "the question should match something"
    assert [p for p, _ in got] == [p for p, _ in expected]
    assert [s for _, s in got] == pytest.approx([s for _, s in expected], rel=1e-9)


@pytest.mark.parametrize("question", QUESTIONS)
def test_bm25_scores_are_exact_sums_whatever_the_order(store, question: str) -> None:
    # A parallel sum of doubles depends on the order the threads add its terms in, which
    # made near-equal scores (copies of a note) swap places from one run to the next. Each
    # term's part is a multiple of 2^-40, so every sum is exact and the order is not.
    ids = question_term_ids(store, question)
    for unit in (DOCS_BM25, PASSAGES_BM25):
        rows = bm25.top(store, unit, ids, ["note", "chunk"], 100)
        assert rows and all((score * 2**40).is_integer() for _, score in rows)
        assert bm25.top(store, unit, ids, ["note", "chunk"], 100) == rows


def test_one_changed_document_is_reindexed_alone(notes_index) -> None:
    conn = notes_index
    before = dict(conn.execute("SELECT key, len FROM search_doc_lengths").fetchall())
    note = conn.execute("SELECT id FROM notes ORDER BY id LIMIT 1").fetchone()[0]
    conn.execute(
        "UPDATE notes SET content = content || ' zebrafish aquarium', "
        "content_hash = md5(content || ' zebrafish aquarium') WHERE id = ?",
        [note],
    )
    result = build_index(conn, NOW, model=MODEL)
    assert result.counted == 1
    after = dict(conn.execute("SELECT key, len FROM search_doc_lengths").fetchall())
    assert after[f"note:{note}"] == before[f"note:{note}"] + 2
    assert {k: v for k, v in after.items() if k != f"note:{note}"} == {
        k: v for k, v in before.items() if k != f"note:{note}"
    }
    assert [c.doc_id for c in search(conn, "zebrafish aquarium")] == [f"note:{note}"]
    _assert_frequencies_counted(conn)
    # A note gone takes its terms' frequencies down with it.
    conn.execute("UPDATE notes SET deleted_at = ? WHERE id = ?", [NOW, note])
    build_index(conn, NOW, model=MODEL)
    assert search(conn, "zebrafish aquarium") == []
    _assert_frequencies_counted(conn)
    # Half the notes gone at once: every term's frequency is counted again.
    conn.execute("UPDATE notes SET deleted_at = ? WHERE hash(id) % 2 = 0", [NOW])
    build_index(conn, NOW, model=MODEL)
    _assert_frequencies_counted(conn)


def _assert_frequencies_counted(conn: duckdb.DuckDBPyConnection) -> None:
    """The stored document frequencies of both BM25 units equal a count of their postings."""
    for unit in (DOCS_BM25, PASSAGES_BM25):
        counted = f"SELECT termid, count(*) FROM {unit.postings} GROUP BY termid"
        stored = f"SELECT termid, df FROM {unit.frequencies}"
        for a, b in ((counted, stored), (stored, counted)):
            assert conn.execute(f"{a} EXCEPT ALL {b}").fetchall() == [], unit.frequencies


def test_document_keys_are_written_with_each_row(store) -> None:
    """search_docs.content_key is the md5 of citation, title and body for notes and chunks
    alike, and source_hash is the note's content hash."""
    kinds = dict(
        store.execute(
            f"SELECT kind, count(*) FROM {DOCS_TABLE} WHERE content_key = "
            "md5(citation || chr(31) || title || chr(31) || body) GROUP BY kind"
        ).fetchall()
    )
    total = dict(store.execute(f"SELECT kind, count(*) FROM {DOCS_TABLE} GROUP BY kind").fetchall())
    assert kinds == total and total.get("chunk", 0) > 0
    wrong = store.execute(
        f"SELECT count(*) FROM {DOCS_TABLE} d LEFT JOIN notes n ON d.ref = n.id "
        "WHERE (d.kind = 'note' AND d.source_hash IS DISTINCT FROM n.content_hash) "
        "OR (d.kind = 'chunk' AND d.source_hash IS NOT NULL)"
    ).fetchone()[0]
    assert wrong == 0


def test_rows_written_without_keys_are_not_counted_again(tmp_path: Path) -> None:
    """Rows from before the keys existed (NULL) rewrite their notes once, every key is
    filled, and nothing is counted or cut again: their text did not change."""
    db = tmp_path / "selene.duckdb"
    seed_store(db)
    conn = connect(db)
    try:
        build_index(conn, NOW, model=MODEL)
        passages = conn.execute(f"SELECT passage_id FROM {PASSAGES_TABLE} ORDER BY 1").fetchall()
        conn.execute(f"UPDATE {DOCS_TABLE} SET content_key = NULL, source_hash = NULL")
        assert build_index(conn, NOW, model=MODEL).counted == 0
        assert conn.execute(f"SELECT passage_id FROM {PASSAGES_TABLE} ORDER BY 1").fetchall() == (
            passages
        )
        keys = dict(
            conn.execute(
                f"SELECT kind, count(*) FILTER (content_key IS NULL) FROM {DOCS_TABLE} "
                "GROUP BY kind"
            ).fetchall()
        )
        assert keys == {"note": 0, "chunk": 0}
    finally:
        conn.close()


def test_stored_token_counts_are_the_model_counts(store) -> None:
    rows = store.execute(
        f"SELECT d.citation, d.title, d.body, t.header_tokens, t.body_tokens, t.model "
        f"FROM {DOCS_TABLE} d JOIN {DOC_TOKENS_TABLE} t USING (doc_id)"
    ).fetchall()
    assert len(rows) == store.execute(f"SELECT count(*) FROM {DOCS_TABLE}").fetchone()[0]
    for citation, title, body, head, body_n, model in rows:
        assert model == MODEL
        assert head == count_tokens(header_text(citation, title), MODEL)
        assert body_n == count_tokens(body, MODEL)
    cand = search(store, QUESTIONS[0], model=MODEL)[0]
    assert cand.body_tokens == count_tokens(cand.body, MODEL)
    assert search(store, QUESTIONS[0], model="gpt-4o")[0].body_tokens is None


@pytest.mark.filterwarnings("ignore:unknown model")
@pytest.mark.parametrize("model", [MODEL, "gpt-4o", "llama3:8b", "gemma2:9b"])
@pytest.mark.parametrize("budget", [40, 150, 600])
def test_pack_within_budget_with_or_without_stored_counts(store, model: str, budget: int) -> None:
    for question in QUESTIONS:
        result = ask(store, question, budget, model=model, now=NOW)
        assert result.total_tokens == count_tokens(result.text, model) <= budget
    # The long note enters as an excerpt, whichever way its size was known.
    result = ask(store, "tomatoes sun water every day", 300, model=model, now=NOW)
    long_items = [i for i in result.items if i.id == "note:misc/long.md"]
    assert long_items and long_items[0].excerpt


def test_index_without_postings_counts_as_missing(notes_index) -> None:
    assert index_exists(notes_index)
    notes_index.execute(f"DROP TABLE {DOC_TOKENS_TABLE}")  # as an index built before postings
    assert not index_exists(notes_index)


def test_index_without_frequencies_gets_them_at_the_next_build(notes_index) -> None:
    # An index built before the stored document frequencies: missing until the next build,
    # which counts them from the postings without indexing any document again.
    conn = notes_index
    for unit in (DOCS_BM25, PASSAGES_BM25):
        conn.execute(f"DROP TABLE {unit.frequencies}")
    assert not index_exists(conn)
    assert build_index(conn, NOW, model=MODEL).counted == 0
    assert index_exists(conn)
    _assert_frequencies_counted(conn)


def test_shared_store_one_connection_per_burst_then_released(home: Path) -> None:
    db = home / "selene.duckdb"
    seed_store(db)
    conn = connect(db)
    build_index(conn, NOW, model=MODEL)
    conn.close()
    settings = load_settings()
    assert Path(settings.db_path).resolve() == db.resolve()
    shared = SharedStore(refresh_index=False, linger=0)
    inside = threading.Barrier(8)
    errors: list[BaseException] = []

    def request() -> None:
        try:
            with shared.cursor(settings) as cur:
                inside.wait(timeout=30)  # all eight hold a cursor at the same time
                result = ask(cur, QUESTIONS[0], 200, model=MODEL, now=NOW)
                assert result.items and result.total_tokens <= 200
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=request) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors, errors
    assert shared.opened == 1
    assert not shared.is_open(db)
    # Released: another configuration (read-only) may open the file in this process.
    duckdb.connect(str(db), read_only=True).close()
    with shared.cursor(settings):
        assert shared.is_open(db)
    assert shared.opened == 2


def test_search_works_on_a_read_only_connection(store, tmp_path: Path) -> None:
    db = tmp_path / "copy.duckdb"
    store.execute("CHECKPOINT")
    path = store.execute(
        "SELECT path FROM duckdb_databases() WHERE database_name = current_database()"
    ).fetchone()[0]
    db.write_bytes(Path(path).read_bytes())
    expected = [c.doc_id for c in search(store, QUESTIONS[0], limit=10)]
    with duckdb.connect(str(db), read_only=True) as conn:
        assert [c.doc_id for c in search(conn, QUESTIONS[0], limit=10)] == expected
        assert passage_bm25(conn, query_terms(QUESTIONS[0]), ["note", "chunk"], 5)


def test_document_postings_summed_from_passages_equal_tokenized_ones(tmp_path: Path) -> None:
    # A document whose passages hold all its text is indexed from their postings (words
    # a cut splits counted whole); over the demo notes, a 300 KB note and a session, the
    # result must equal tokenizing every document, row for row.
    import json
    from datetime import timedelta

    from selene_dag.paths import assets_dir
    from selene_dag.retrieval.passages import cut_passages

    path = tmp_path / "selene.duckdb"
    seed_store(path)
    conn = connect(path)
    source = assets_dir() / "demo" / "notes" / "til.jsonl"
    notes = [json.loads(line) for line in source.read_text(encoding="utf-8").splitlines()]
    # Long URL-encoded lines get cut inside a word: those words are counted whole.
    split = [n for n in notes if bm25.split_words(n["content"], cut_passages(n["content"]))]
    assert split, "the corpus should hold notes cut inside a word"
    parts = notes[:160]
    assert any(n in split for n in parts)
    big = "\n\n".join(f"## {n['title']}\n\n{n['content']}" for n in parts)
    rows = [(n["id"], n["title"], n["content"]) for n in notes] + [("big", "Big", big)]
    for note_id, title, content in rows:
        conn.execute(
            "INSERT INTO notes (id, title, content, content_hash, created_at, updated_at, "
            "source) VALUES (?, ?, ?, md5(?), ?, ?, 'test')",
            [note_id, title, content, content, NOW - timedelta(days=3), NOW],
        )
    build_index(conn, NOW, model=MODEL)

    spans: dict[str, list[tuple[int, int]]] = {}
    for doc_id, start, end in conn.execute(
        f"SELECT doc_id, char_start, char_end FROM {PASSAGES_TABLE} ORDER BY doc_id, ordinal"
    ).fetchall():
        spans.setdefault(doc_id, []).append((start, end))
    bodies = dict(conn.execute(f"SELECT doc_id, body FROM {DOCS_TABLE}").fetchall())
    covered = [
        d for d, body in bodies.items() if bm25.split_words(body, spans.get(d, [])) is not None
    ]
    assert len(covered) == len(bodies) and "note:big" in covered

    direct = bm25.Unit(
        DOCS_TABLE, "doc_id", ("title", "body"), "t_postings", "t_lengths", "t_frequencies"
    )
    bm25.update(conn, direct, [])
    for ours, theirs in (
        ("search_postings", "t_postings"),
        ("search_doc_lengths", "t_lengths"),
        ("search_doc_frequencies", "t_frequencies"),
    ):
        for a, b in ((ours, theirs), (theirs, ours)):
            extra = conn.execute(f"SELECT * FROM {a} EXCEPT ALL SELECT * FROM {b}").fetchall()
            assert extra == [], (a, extra[:5])
    conn.close()


def test_texts_tokenized_in_shares_give_the_same_postings(notes_index) -> None:
    # With several DuckDB threads the texts are tokenized in one share per thread
    # (``bm25._sharded``); with one thread in a single pass. Both must give the same rows.
    indexes = []
    for threads in (1, 3):
        notes_index.execute(f"SET threads = {threads}")
        assert (bm25._sharded(notes_index, "SELECT 1 AS key").count("UNION ALL")) == threads - 1
        unit = bm25.Unit(
            PASSAGES_TABLE,
            "passage_id",
            ("title", "text"),
            f"p{threads}_postings",
            f"p{threads}_lengths",
            f"p{threads}_frequencies",
        )
        assert bm25.update(notes_index, unit, []) > 10
        indexes.append(unit)
    one, many = indexes
    for a, b in ((one.postings, many.postings), (one.lengths, many.lengths)):
        for x, y in ((a, b), (b, a)):
            extra = notes_index.execute(f"SELECT * FROM {x} EXCEPT ALL SELECT * FROM {y}")
            assert extra.fetchall() == []
    ours = notes_index.execute(f"SELECT count(*) FROM {PASSAGES_BM25.postings}").fetchone()[0]
    assert notes_index.execute(f"SELECT count(*) FROM {many.postings}").fetchone()[0] == ours


def test_split_words() -> None:
    from selene_dag.retrieval.bm25 import split_words

    text = "alpha beta.gamma\n\ndelta"
    assert split_words(text, [(0, 10), (10, 16), (18, 23)]) == []  # after the dot; blank gap
    assert split_words(text, [(0, 8), (8, 23)]) == [("be", "ta")]
    assert split_words(text, [(0, 7), (7, 9), (9, 23)]) == [("b", "et", "a")]
    assert split_words(text, [(0, 10), (12, 23)]) is None  # "ga" left out
    assert split_words(text, [(0, 10)]) is None  # the rest left out
    assert split_words(text, [(0, 12), (10, 23)]) is None  # overlap
    assert split_words("", []) == [] and split_words("  \n", []) == []
    assert split_words("a\xa0b c", [(0, 1), (2, 5)]) is None  # a no-break space is a letter
    assert split_words("a\xa0b c", [(0, 2), (2, 5)]) == [("a\xa0", "b")]
