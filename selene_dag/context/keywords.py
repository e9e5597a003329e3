"""TF-IDF keyword extraction (scikit-learn), deterministic and free of stop words."""

from __future__ import annotations

import re
from collections.abc import Sequence

from selene_dag.errors import check_budget
from selene_dag.text import ENGLISH_STOP_WORDS, split_sentences

# Words of 3+ characters starting with a letter; keeps identifiers such as ``duckdb``,
# ``gpt-4o`` or ``fidelity_tier``.
TOKEN_PATTERN = r"(?u)\b[^\W\d_][\w\-]*[\w]\b"


def extract_keywords(
    text: str,
    k: int = 8,
    corpus: Sequence[str] | None = None,
    extra_stop_words: Sequence[str] = (),
) -> list[str]:
    """The ``k`` terms of ``text`` with the highest TF-IDF weight, best first.

    Term frequency is taken in ``text``; inverse document frequency over ``corpus`` (plus
    ``text``) when given, else over the sentences of ``text`` itself. English stop words
    (scikit-learn's list, as ``selene_dag.text.ENGLISH_STOP_WORDS``, plus
    ``extra_stop_words``) and numbers never appear. Ties break by first occurrence in the
    text, so the result is deterministic. Returns ``[]`` only when the text has no content
    word. Raises TypeError / ValueError on bad input.
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    check_budget(k, "k", minimum=1)
    if corpus is not None and (
        isinstance(corpus, str) or not all(isinstance(d, str) for d in corpus)
    ):
        raise TypeError("corpus must be a sequence of str")
    if not re.search(r"[^\W\d_]", text):
        return []

    # scikit-learn loads on the first extraction, not when the context library is imported.
    from sklearn.feature_extraction.text import TfidfVectorizer

    stop = sorted(ENGLISH_STOP_WORDS | {w.lower() for w in extra_stop_words})
    if corpus:
        docs = [*list(corpus), text]
    else:
        docs = [*(split_sentences(text, boundary="any") or [text]), text]
    vectorizer = TfidfVectorizer(
        lowercase=True,
        stop_words=stop,
        token_pattern=TOKEN_PATTERN,
        sublinear_tf=True,
        norm=None,
    )
    try:
        vectorizer.fit(docs)
    except ValueError:  # empty vocabulary: nothing but stop words
        return []
    row = vectorizer.transform([text]).tocoo()
    terms = vectorizer.get_feature_names_out()
    lowered = text.lower()
    scored = [
        (-float(score), lowered.find(terms[col]), str(terms[col]))
        for col, score in zip(row.col, row.data, strict=True)
        if score > 0
    ]
    scored.sort()
    return [term for _, _, term in scored[:k]]
