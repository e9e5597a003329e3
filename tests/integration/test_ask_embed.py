"""Offline embeddings: wordllama loads from its wheel with sockets blocked, passages are
embedded once per content, and one edited note re-embeds only its own passages."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from selene_dag.context.tokens import count_tokens, count_tokens_batch
from selene_dag.notes.token_store import StoredCounts
from selene_dag.paths import assets_dir
from selene_dag.retrieval import embed
from selene_dag.retrieval.index import build_index
from selene_dag.retrieval.pack import ask
from selene_dag.retrieval.search import (
    DENSE_FLOOR,
    hybrid_passages,
    passage_dense,
    passage_matrix,
)
from selene_dag.store import connect
from tests.support.ask import NOW, seed_store

MODEL = "mistral:7b"
DEMO = assets_dir() / "demo" / "notes" / "til.jsonl"


@pytest.fixture
def built(tmp_path: Path):
    """A connection to a seeded store (notes and a session) with its index built."""
    db = tmp_path / "selene.duckdb"
    seed_store(db)
    conn = connect(db)
    build_index(conn, NOW, model=MODEL)
    yield conn
    conn.close()


def test_loads_and_embeds_with_the_network_blocked(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    def refuse(*_args: object, **_kwargs: object) -> None:
        raise OSError("network blocked by the test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    embed.load_model.cache_clear()
    try:
        vectors = embed.embed_texts(["docker exec a shell", "run a shell in a container", ""])
    finally:
        embed.load_model.cache_clear()
    assert vectors.shape == (3, embed.DIM) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors[:2], axis=1), 1.0, atol=1e-5)
    assert not vectors[2].any()
    assert float(vectors[0] @ vectors[1]) > 0.3
    # The model is read from the installed package: nothing is written to the cache.
    assert not any(tmp_path.iterdir())


def test_a_question_alone_embeds_as_it_does_in_a_batch() -> None:
    texts = ["how do I open a shell in a docker container", "ranking passages with bm25"]
    batch = embed.embed_texts(texts)
    for i, text in enumerate(texts):
        assert np.allclose(embed.embed_query(text), batch[i], atol=1e-6)
    assert not embed.embed_query("").any()


def test_few_texts_embed_as_among_many_without_scipy_or_the_float32_table() -> None:
    # An edited note's few passages are summed in numpy; a fresh corpus's many through
    # scipy's sparse product: the same vectors, texts without tokens left at zero.
    notes = [json.loads(line) for line in DEMO.read_text(encoding="utf-8").splitlines() if line]
    texts = [note["content"][:900] for note in notes[:120]]
    texts[3:3] = ["", "   "]
    texts.insert(40, "")
    many = embed.embed_texts(texts)
    for at in range(0, len(texts), 30):
        few = embed.embed_texts(texts[at : at + 30])
        assert np.allclose(few, many[at : at + 30], atol=1e-6)
    assert not many[3].any() and not many[40].any() and many[4].any()
    # Nor is the whole table converted to float32 for a few texts (0.1 s of each process).
    code = (
        "import sys\nfrom selene_dag.retrieval.embed import embed_texts, float32_table\n"
        "assert embed_texts(['one passage', '', 'another']).shape == (3, 256)\n"
        "assert 'scipy' not in sys.modules\n"
        "assert float32_table.cache_info().currsize == 0"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_texts_normalized_before_the_tokenizer_give_its_own_ids() -> None:
    # The tokenizer's normalizer (a "▁" in front, spaces made "▁") is done before it is
    # called: the ids must be those the tokenizer gives with its own normalizer, on real
    # notes and on blank, space-only, "▁"-holding and non-ASCII texts.
    from tokenizers import Tokenizer

    model = embed.load_model()
    assert model.prenormalized and model.tokenizer.normalizer is None
    own = Tokenizer.from_file(str(embed.package_dir() / embed._TOKENIZER))
    own.no_padding()
    own.enable_truncation(embed.MAX_TOKENS)
    notes = [json.loads(line) for line in DEMO.read_text(encoding="utf-8").splitlines() if line]
    texts = [f"{n['title']}\n{n['content'][:2500]}" for n in notes]
    texts += ["", " ", "   two  spaces", "trailing ", "x\u2581 y", "\u2581lead", "tab\there"]
    texts += ["caf\u00e9 \U0001f600 \u00a0nbsp", "a\nb  c\n\n  d"]
    theirs = [e.ids for e in own.encode_batch(texts, add_special_tokens=False)]
    ours = [
        e.ids
        for e in model.tokenizer.encode_batch(model.normalize(texts), add_special_tokens=False)
    ]
    assert ours == theirs
    assert any(len(ids) == embed.MAX_TOKENS for ids in ours)  # truncation is the same too


def test_only_new_passage_contents_are_embedded(tmp_path: Path) -> None:
    db = tmp_path / "selene.duckdb"
    seed_store(db)
    conn = connect(db)
    try:
        first = build_index(conn, NOW, model=MODEL)
        assert first.passages > 0 and first.embedded > 0
        assert build_index(conn, NOW, model=MODEL).embedded == 0
        conn.execute(
            "UPDATE notes SET content = content || '\n\nAlso: docker exec -u root ID sh.', "
            "content_hash = 'edited' WHERE id = 'docker/exec.md'"
        )
        again = build_index(conn, NOW, model=MODEL)
        own = conn.execute(
            "SELECT count(*) FROM search_passages WHERE doc_id = 'note:docker/exec.md'"
        ).fetchone()[0]
        assert 1 <= again.embedded <= own
        unused = conn.execute(
            "SELECT count(*) FROM passage_embeddings WHERE hash NOT IN "
            "(SELECT hash FROM search_passages)"
        ).fetchone()[0]
        assert unused == 0
        # The dense side sees the rebuilt index (its in-memory matrix follows the build).
        near = passage_dense(conn, "docker exec as root user", ["note", "chunk"], 3)
        assert near and near[0][0].startswith("note:docker/exec.md#")
    finally:
        conn.close()


def test_hybrid_passages_and_ask_cite_the_right_note(built) -> None:
    hits = hybrid_passages(built, "open a bash shell in a running docker container")
    assert hits and hits[0].doc_id == "note:docker/exec.md"
    assert hits[0].bm25_rank is not None and hits[0].char_end > hits[0].char_start
    assert hybrid_passages(built, "xylophone quasar") == []
    result = ask(built, "open a bash shell in a running docker container", 200, model=MODEL)
    assert result.items[0].citation == "note docker/exec.md"
    assert result.total_tokens <= 200


def test_passage_matrix_holds_each_embedded_passage_with_its_own_vector(built) -> None:
    # The matrix joins passages to vectors by content hash in Python: every passage with a
    # vector appears once, in id order, with that vector; one without stays out of the
    # matrix but keeps its span.
    conn = built
    gone = conn.execute(
        "SELECT hash FROM search_passages ORDER BY passage_id LIMIT 1 OFFSET 3"
    ).fetchone()[0]
    conn.execute("DELETE FROM passage_embeddings WHERE hash = ?", [gone])
    expected = conn.execute(
        "SELECT p.passage_id, p.kind, e.vec FROM search_passages p "
        "JOIN passage_embeddings e ON e.hash = p.hash ORDER BY p.passage_id"
    ).fetchall()
    matrix = passage_matrix(conn)
    assert matrix.ids.tolist() == [r[0] for r in expected]
    assert matrix.kinds.tolist() == [r[1] for r in expected]
    assert np.array_equal(matrix.vectors, np.array([r[2] for r in expected], np.float32))
    spans = conn.execute(
        "SELECT passage_id, doc_id, char_start, char_end, tokens FROM search_passages"
    ).fetchall()
    assert matrix.spans == {r[0]: r[1:] for r in spans}
    assert sum(matrix.counts.values()) == len(spans) == len(expected) + 1


def test_the_passage_matrix_is_kept_beside_the_database_for_the_next_process(built) -> None:
    # A one-question process (`selene-dag ask`) read every vector from DuckDB: 0.4 s at
    # 10,000 notes. The first keeps them in the cache folder; the next reads that file.
    from selene_dag.retrieval import search

    first = passage_matrix(built)
    [kept] = (Path(first.build[0]).parent / "cache").glob("passage_matrix-*.npz")
    search._MATRICES.clear()  # as a new process starts
    again = passage_matrix(built)
    assert again is not first and again.build == first.build
    assert again.ids.tolist() == first.ids.tolist()
    assert again.kinds.tolist() == first.kinds.tolist()
    assert np.array_equal(again.vectors, first.vectors)
    assert again.spans == first.spans and again.counts == first.counts
    kept.write_bytes(kept.read_bytes()[:1000])  # a torn file is read from the database
    search._MATRICES.clear()
    assert passage_matrix(built).spans == first.spans
    assert kept.stat().st_size > 1000  # and kept again
    with kept.open("wb") as handle:  # another format at its name (an ask crashed on it)
        np.save(handle, np.arange(5))
    search._MATRICES.clear()
    assert passage_matrix(built).spans == first.spans
    # Named by its database: another database's file in the folder stays.
    other = kept.with_name("passage_matrix-other-0123.npz")
    other.write_bytes(b"x")
    kept.unlink()
    search._MATRICES.clear()
    passage_matrix(built)
    assert other.exists() and kept.exists()


def test_a_rebuild_counts_and_cuts_only_changed_documents(tmp_path: Path) -> None:
    db = tmp_path / "selene.duckdb"
    seed_store(db)
    conn = connect(db)
    try:
        first = build_index(conn, NOW, model=MODEL)
        docs = first.documents
        assert first.counted == docs
        before = conn.execute(
            "SELECT passage_id, tokens, hash FROM search_passages ORDER BY passage_id"
        ).fetchall()
        assert build_index(conn, NOW, model=MODEL).counted == 0
        conn.execute(
            "UPDATE notes SET content = content || '\n\nAlso: docker exec -u root ID sh.', "
            "content_hash = 'edited' WHERE id = 'docker/exec.md'"
        )
        conn.execute("UPDATE notes SET deleted_at = ? WHERE id = 'zsh/prompt.md'", [NOW])
        edited = build_index(conn, NOW, model=MODEL)
        assert edited.counted == 1 and edited.documents == docs - 1
        after = conn.execute(
            "SELECT passage_id, tokens, hash FROM search_passages ORDER BY passage_id"
        ).fetchall()
        changed = {"note:docker/exec.md", "note:zsh/prompt.md"}
        keep = [r for r in before if r[0].split("#")[0] not in changed]
        assert [r for r in after if r[0].split("#")[0] not in changed] == keep
        assert not [r for r in after if r[0].startswith("note:zsh/prompt.md#")]
        body, tokens = conn.execute(
            "SELECT d.body, t.body_tokens FROM search_docs d JOIN search_doc_tokens t "
            "USING (doc_id) WHERE doc_id = 'note:docker/exec.md'"
        ).fetchone()
        assert "-u root" in body and tokens == count_tokens(body, MODEL)
        # Another model: every count is taken again in that model's tokens.
        assert build_index(conn, NOW, model="gpt-4").counted == docs - 1
    finally:
        conn.close()


def test_an_unrelated_note_does_not_fill_a_small_store_s_pack(tmp_path: Path) -> None:
    conn = connect(tmp_path / "selene.duckdb")
    notes = [
        (
            "pg.md",
            "Postgres vacuum",
            "Run VACUUM (VERBOSE, ANALYZE) after bulk deletes; "
            "autovacuum_vacuum_scale_factor=0.05 helps on big tables.",
        ),
        (
            "rust.md",
            "Rust lifetimes",
            "Use 'static only for data that lives for the whole program.",
        ),
        ("bread.md", "Sourdough starter", "Feed the starter flour and water every morning."),
    ]
    try:
        for note_id, title, content in notes:
            conn.execute(
                "INSERT INTO notes (id, title, content, content_hash, created_at, updated_at, "
                "source) VALUES (?, ?, ?, md5(?), ?, ?, 'test')",
                [note_id, title, content, content, NOW, NOW],
            )
            conn.execute(
                "INSERT INTO processed_notes (note_id, essence, fidelity_tier) "
                "VALUES (?, ?, 'full')",
                [note_id, content],
            )
        build_index(conn, NOW, model=MODEL)
        whole_store = passage_dense(conn, "autovacuum scale factor", ["note", "chunk"], 50)
        neighbours = passage_dense(conn, "autovacuum scale factor", ["note", "chunk"], 2)
        result = ask(conn, "autovacuum scale factor", 500, model=MODEL, now=NOW)
    finally:
        conn.close()
    # A list as long as the store holds only passages that mean something like the
    # question; a shorter list (a real ranking of neighbours) keeps its far end.
    assert [p for p, _ in whole_store] == ["note:pg.md#0"]
    assert whole_store[0][1] >= DENSE_FLOOR
    assert len(neighbours) == 2 and neighbours[1][1] < DENSE_FLOOR
    # The other notes share no word and no meaning with the question: the room left in
    # the budget stays empty rather than holding them.
    assert [item.id for item in result.items] == ["note:pg.md"]


@pytest.mark.parametrize("budget", [60, 120, 400])
def test_items_are_separated_by_one_blank_line_whatever_their_text_ends_with(
    tmp_path: Path, budget: int
) -> None:
    conn = connect(tmp_path / "selene.duckdb")
    try:
        for note_id, content in (
            ("vacuum.md", "Run VACUUM after bulk deletes on big tables.\n\n\n"),
            ("autovacuum.md", "Set autovacuum_vacuum_scale_factor=0.05 for big tables.\n\n"),
        ):
            conn.execute(
                "INSERT INTO notes (id, title, content, content_hash, created_at, updated_at, "
                "source) VALUES (?, ?, ?, md5(?), ?, ?, 'test')",
                [note_id, "Postgres " + note_id, content, content, NOW, NOW],
            )
            conn.execute(
                "INSERT INTO processed_notes (note_id, fidelity_tier) VALUES (?, 'full')",
                [note_id],
            )
        build_index(conn, NOW, model=MODEL)
        result = ask(conn, "vacuum big tables", budget, model=MODEL, now=NOW)
    finally:
        conn.close()
    # Both notes are named, the second at least by its citation line when its text no
    # longer fits.
    assert len(result.items) == 2
    assert "\n\n\n" not in result.text and not result.text.endswith("\n")


def test_note_counts_derived_from_passages_are_the_model_counts(tmp_path: Path) -> None:
    # Most demo notes' counts come from their passages' counts (count_tiled); every count
    # must still be the tokenizer's own, and health's shared count table gets them too.
    notes = [json.loads(line) for line in DEMO.read_text(encoding="utf-8").splitlines() if line]
    conn = connect(tmp_path / "selene.duckdb")
    try:
        for note in notes:
            conn.execute(
                "INSERT INTO notes (id, title, content, content_hash, created_at, updated_at, "
                "source) VALUES (?, ?, ?, md5(?), ?, ?, 'test')",
                [note["id"], note["title"], note["content"], note["content"], NOW, NOW],
            )
        built = build_index(conn, NOW, model=MODEL)
        assert built.derived >= 0.95 * built.notes
        rows = conn.execute(
            "SELECT d.body, t.body_tokens FROM search_docs d JOIN search_doc_tokens t "
            "USING (doc_id)"
        ).fetchall()
        assert [n for _, n in rows] == count_tokens_batch([b for b, _ in rows], MODEL)
        counter = StoredCounts(conn, MODEL)
        assert counter([b for b, _ in rows]) == [n for _, n in rows]
        assert counter.counted == 0  # all found in token_counts
    finally:
        conn.close()


def test_two_builds_on_a_pinned_day_are_two_builds(tmp_path: Path) -> None:
    # With SELENE_NOW pinned, a rebuild of one corpus for another model kept the build key,
    # and a process served the passages' token counts of the first model's build.
    from selene_dag.retrieval.index import build_key

    db = tmp_path / "selene.duckdb"
    seed_store(db)
    conn = connect(db)
    try:
        build_index(conn, NOW, model=MODEL)
        first = build_key(conn)
        build_index(conn, NOW, model="llama3.1:8b")
        assert build_key(conn) != first
    finally:
        conn.close()
