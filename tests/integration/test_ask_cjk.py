"""Ask over Chinese and Japanese notes: those scripts write no spaces, so the index takes
each of their characters as a word (as Lucene's standard analyzer does), on both sides of
the search. Real files, a real ingest through Dagster, the real index."""

from __future__ import annotations

import pytest

from selene_dag import service
from selene_dag.retrieval import bm25
from selene_dag.retrieval.index import DOCS_BM25, PASSAGES_BM25
from selene_dag.retrieval.terms import CoverageMatcher, query_terms
from selene_dag.store import open_store
from tests.support.ask import ingested_folder

NOTES = {
    "ramen.md": "# ラーメンの作り方\n\n豚骨スープを十二時間煮込みます。麺は細麺が合います。\n",
    "weather.md": "# 東京の天気\n\n今日は東京で雨が降りました。傘を持っていくべきです。\n",
    "migration.md": "# 数据库迁移\n\n下周的会议讨论把数据库从 MySQL 迁移到 PostgreSQL。\n",
    "tea.md": "# 绿茶\n\n绿茶用八十度的水泡两分钟，不要用开水。\n",
    "docker.md": "# Attaching a shell\n\nRun docker exec -it ID bash to open a shell.\n",
}


@pytest.fixture(scope="module")
def settings(tmp_path_factory: pytest.TempPathFactory):
    return ingested_folder(tmp_path_factory.mktemp("cjk"), NOTES)


@pytest.mark.parametrize(
    ("question", "note"),
    [
        ("ラーメンのスープは何時間煮込む？", "ramen.md"),
        ("東京の雨", "weather.md"),
        ("数据库要迁移到哪里？", "migration.md"),
        ("绿茶的水温", "tea.md"),
        ("how do I open a shell in a docker container", "docker.md"),
    ],
)
def test_the_note_that_answers_comes_first(settings, question: str, note: str) -> None:
    result = service.ask(settings, question, 120)
    assert result.items, result.stats
    assert result.items[0].id == f"note:notes/{note}"
    assert NOTES[note].splitlines()[0].lstrip("# ") in result.text


def test_question_terms_and_coverage_take_each_character() -> None:
    assert query_terms("数据库 migration、東京") == ["数", "据", "库", "migration", "東", "京"]
    found = CoverageMatcher(query_terms("东京的雨")).found("今天东京下雨了。")
    assert found == {"东", "京", "雨"}
    assert CoverageMatcher(["shell"]).found("open a shell") == {"shell"}


def test_a_store_indexed_by_the_former_tokenizer_reindexes_its_cjk_rows_only(settings) -> None:
    with open_store(settings.db_path) as conn:
        bm25.prepare(conn)
        assert bm25.rows_to_retokenize(conn, DOCS_BM25) == []
        conn.execute(f"UPDATE {bm25.TOKENIZER_TABLE} SET name = 'fts'")
        again = bm25.rows_to_retokenize(conn, DOCS_BM25)
        passages = bm25.rows_to_retokenize(conn, PASSAGES_BM25)
        bm25.mark_tokenizer(conn)
    assert sorted(k.split("/")[-1] for k in again) == sorted(n for n in NOTES if n != "docker.md")
    assert passages and not any("docker" in k for k in passages)


def test_accented_words_are_not_said_to_be_in_no_note(tmp_path) -> None:
    # The index strips accents; the words a note was looked up by did not: "café" was in
    # no note, said the pack that held "The Stag and Doe Café".
    settings = ingested_folder(
        tmp_path,
        {
            "cafe.md": "# The Stag and Doe Café\n\nOpen from eight; the résumé workshop is on "
            "Tuesdays.\n",
            "docker.md": "# Attaching a shell\n\nRun docker exec -it ID bash.\n",
        },
    )
    for question in ("café", "Résumé workshop", "cafe"):
        result = service.ask(settings, question, 200)
        assert result.items[0].id == "note:notes/cafe.md"
        assert result.stats["note"] == "", question
