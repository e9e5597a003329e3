"""Keyword extraction weighs terms exactly as scikit-learn's TfidfVectorizer(sublinear_tf,
smoothed IDF, no norm) would, without building one per call."""

from __future__ import annotations

import json
import re

import pytest

from selene_dag.context.keywords import TOKEN_PATTERN, extract_keywords
from selene_dag.paths import assets_dir
from selene_dag.text import ENGLISH_STOP_WORDS, split_sentences


def _scikit_learn(text: str, k: int, corpus: list[str] | None = None) -> list[str]:
    from sklearn.feature_extraction.text import TfidfVectorizer

    if not re.search(r"[^\W\d_]", text):
        return []
    docs = [*corpus, text] if corpus else [*(split_sentences(text, boundary="any") or [text]), text]
    vectorizer = TfidfVectorizer(
        lowercase=True,
        stop_words=sorted(ENGLISH_STOP_WORDS),
        token_pattern=TOKEN_PATTERN,
        sublinear_tf=True,
        norm=None,
    )
    try:
        vectorizer.fit(docs)
    except ValueError:
        return []
    row = vectorizer.transform([text]).tocoo()
    terms = vectorizer.get_feature_names_out()
    lowered = text.lower()
    scored = sorted(
        (-float(s), lowered.find(terms[c]), str(terms[c]))
        for c, s in zip(row.col, row.data, strict=True)
        if s > 0
    )
    return [t for _, _, t in scored[:k]]


NOTES = [
    json.loads(line)
    for line in (assets_dir() / "demo" / "notes" / "til.jsonl").read_text().splitlines()[:150]
]


@pytest.mark.parametrize("k", [3, 8])
def test_keywords_equal_scikit_learn_s_tfidf_on_real_notes(k: int) -> None:
    for note in NOTES:
        assert extract_keywords(note["content"], k) == _scikit_learn(note["content"], k), note["id"]


def test_keywords_against_a_corpus_equal_scikit_learn_s() -> None:
    corpus = [n["content"] for n in NOTES[:40]]
    for note in NOTES[40:80]:
        text = f"{note['title']} {note['content'][:400]}"
        assert extract_keywords(text, 5, corpus) == _scikit_learn(text, 5, corpus), note["id"]


def test_stop_words_and_numbers_never_come_out() -> None:
    assert extract_keywords("the and of 1234 5678") == []
    assert extract_keywords("The cat and the hat; the cat sat.", 2) == ["cat", "hat"]
