"""How the extractive algorithms score sentences: TF-IDF centrality and a length fit.

Each text is a TF-IDF vector (scikit-learn, fitted on the texts compared), so "central"
means sharing the rare words of the others.
"""

from __future__ import annotations

import re

import numpy as np
from sklearn.feature_extraction.text import TfidfVectorizer

from selene_dag.text import STOP_WORDS

# Words of 2+ characters opening with a letter: the vocabulary of every TF-IDF here.
VECTOR_TOKEN_PATTERN = r"(?u)\b[a-zA-Z][a-zA-Z0-9_]+\b"
# The stop words as that pattern sees them (apostrophes split "don't" into "don").
VECTOR_STOP_WORDS = sorted(
    {w for w in STOP_WORDS if re.fullmatch(r"[a-z][a-z0-9_]+", w)}
    | {"didn", "doesn", "don", "isn", "ve", "ll", "re", "til"}
)
_VECTOR_TOKEN = re.compile(VECTOR_TOKEN_PATTERN)
_VECTOR_STOP_SET = frozenset(VECTOR_STOP_WORDS)


def vector_tokens(text: str) -> list[str]:
    """Lower-case word tokens of ``text`` without stop words (a fast TfidfVectorizer analyzer)."""
    return [t for t in _VECTOR_TOKEN.findall(text.lower()) if t not in _VECTOR_STOP_SET]


def tfidf_similarity(texts: list[str]) -> np.ndarray | None:
    """Cosine similarity matrix of the texts' TF-IDF vectors (None when no text has a usable word)."""
    vectorizer = TfidfVectorizer(analyzer=vector_tokens, sublinear_tf=True)
    try:
        matrix = vectorizer.fit_transform(texts)
    except ValueError:  # empty vocabulary
        return None
    return (matrix @ matrix.T).toarray()


def centrality(sentences: list[str], extra: str | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(mean similarity of each sentence to the others, similarity to ``extra`` or zeros)."""
    n = len(sentences)
    texts = sentences + ([extra] if extra else [])
    sim = tfidf_similarity(texts)
    if sim is None:
        return np.zeros(n), np.zeros(n)
    core = sim[:n, :n].copy()
    np.fill_diagonal(core, 0.0)
    central = core.sum(axis=1) / max(n - 1, 1)
    to_extra = sim[:n, n] if extra else np.zeros(n)
    return central, to_extra


def length_fit(sentence: str) -> float:
    """Score bonus of a sentence's length: 40–260 characters fit best, very short or long lose."""
    size = len(sentence)
    if size < 25:
        return -0.6
    if size < 40:
        return -0.2
    if size <= 260:
        return 0.15
    if size <= 400:
        return -0.1
    return -0.5
