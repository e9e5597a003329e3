"""How the extractive algorithms score sentences: TF-IDF centrality and a length fit.

Each text is a TF-IDF vector fitted on the texts compared (scikit-learn's TfidfVectorizer
with sublinear tf, smooth idf and L2 rows, computed directly on a sparse matrix: the
vectorizer's own overhead was most of an essence's time), so "central" means sharing the
rare words of the others.
"""

from __future__ import annotations

import re
from collections import Counter

import numpy as np
from scipy.sparse import csr_matrix

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


def tfidf_matrix(texts: list[str]) -> csr_matrix | None:
    """The texts' TF-IDF vectors as the rows of a sparse matrix (None when no text has a
    usable word): tf = 1 + ln(count), idf = ln((1 + n) / (1 + df)) + 1, rows L2-normalized,
    the vocabulary in sorted order, as scikit-learn's ``TfidfVectorizer(sublinear_tf=True)``."""
    counts = [Counter(vector_tokens(text)) for text in texts]
    vocabulary = sorted(set().union(*counts))
    if not vocabulary:
        return None
    column = {word: j for j, word in enumerate(vocabulary)}
    indptr = [0]
    indices: list[int] = []
    values: list[int] = []
    for row in counts:
        for word in sorted(row, key=column.__getitem__):
            indices.append(column[word])
            values.append(row[word])
        indptr.append(len(indices))
    n = len(texts)
    matrix = csr_matrix(
        (np.asarray(values, dtype=np.float64), np.asarray(indices), np.asarray(indptr)),
        shape=(n, len(vocabulary)),
    )
    df = np.bincount(matrix.indices, minlength=len(vocabulary))
    idf = np.log((1 + n) / (1 + df)) + 1.0
    matrix.data = (1.0 + np.log(matrix.data)) * idf[matrix.indices]
    norms = np.sqrt(np.asarray(matrix.multiply(matrix).sum(axis=1)).ravel())
    norms[norms == 0] = 1.0
    return csr_matrix(matrix.multiply(1.0 / norms[:, None]))


def tfidf_similarity(texts: list[str]) -> np.ndarray | None:
    """Cosine similarity matrix of the texts' TF-IDF vectors (see :func:`tfidf_matrix`;
    None when no text has a usable word). Dense: for a few texts only."""
    matrix = tfidf_matrix(texts)
    return None if matrix is None else (matrix @ matrix.T).toarray()


def centrality(sentences: list[str], extra: str | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(mean similarity of each sentence to the others, similarity to ``extra`` or zeros).

    Computed from sums (each row against the sum of all rows, minus itself), so a note of
    tens of thousands of sentences never builds their n × n similarity matrix."""
    n = len(sentences)
    texts = sentences + ([extra] if extra else [])
    matrix = tfidf_matrix(texts)
    if matrix is None:
        return np.zeros(n), np.zeros(n)
    rows = matrix[:n]
    self_sim = np.asarray(rows.multiply(rows).sum(axis=1)).ravel()
    total = np.asarray(rows.sum(axis=0)).ravel()
    central = (rows @ total - self_sim) / max(n - 1, 1)
    to_extra = rows @ matrix[n].toarray().ravel() if extra else np.zeros(n)
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
