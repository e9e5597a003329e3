"""How the extractive algorithms score sentences: TF-IDF centrality and a length fit.

Each text is a TF-IDF vector fitted on the texts compared (scikit-learn's TfidfVectorizer
with sublinear tf, smooth idf and L2 rows, computed directly on CSR arrays: the
vectorizer's, and then scipy's, fixed overhead was most of an essence's time), so "central"
means sharing the rare words of the others.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import TYPE_CHECKING

import numpy as np

from selene_dag.text import STOP_WORDS

if TYPE_CHECKING:
    from scipy.sparse import csr_matrix

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
    from scipy.sparse import csr_matrix

    rows = _tfidf_rows(texts)
    if rows is None:
        return None
    data, index, bounds, width = rows
    return csr_matrix((data, index, bounds), shape=(len(texts), width))


def tfidf_similarity(texts: list[str]) -> np.ndarray | None:
    """Cosine similarity matrix of the texts' TF-IDF vectors (see :func:`tfidf_matrix`;
    None when no text has a usable word). Dense: for a few texts only."""
    matrix = tfidf_matrix(texts)
    return None if matrix is None else (matrix @ matrix.T).toarray()


def _tfidf_rows(texts: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray, int] | None:
    """The rows of :func:`tfidf_matrix` as plain CSR arrays ``(data, indices, indptr,
    columns)`` (None when no text has a usable word): the same values, without building
    scipy matrices, whose fixed cost was most of a short note's essence."""
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
    index = np.asarray(indices, dtype=np.int64)
    df = np.bincount(index, minlength=len(vocabulary))
    idf = np.log((1 + len(texts)) / (1 + df)) + 1.0
    data = (1.0 + np.log(np.asarray(values, dtype=np.float64))) * idf[index]
    bounds = np.asarray(indptr, dtype=np.int64)
    norms = np.sqrt(_row_sums(data * data, bounds))
    norms[norms == 0] = 1.0
    data = data / np.repeat(norms, np.diff(bounds))
    return data, index, bounds, len(vocabulary)


def _row_sums(values: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """Sum of ``values[bounds[i]:bounds[i + 1]]`` for each row ``i`` (0 for an empty row)."""
    sums = np.zeros(len(bounds) - 1)
    filled = np.flatnonzero(bounds[1:] > bounds[:-1])
    if len(filled):
        # reduceat sums each segment on its own; an empty row would wrongly get a value.
        sums[filled] = np.add.reduceat(values, bounds[filled])[: len(filled)]
    return sums


def centrality(sentences: list[str], extra: str | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(mean similarity of each sentence to the others, similarity to ``extra`` or zeros).

    Computed from sums (each row against the sum of all rows, minus itself), so a note of
    tens of thousands of sentences never builds their n × n similarity matrix. Values are
    rounded to 12 decimals: rounding noise (a sentence sharing no word scoring 1e-17, not
    0) must neither break ties nor become the best score a note is normalized by."""
    n = len(sentences)
    texts = sentences + ([extra] if extra else [])
    rows = _tfidf_rows(texts)
    if rows is None:
        return np.zeros(n), np.zeros(n)
    data, index, bounds, width = rows
    end = int(bounds[n])
    data_n, index_n, bounds_n = data[:end], index[:end], bounds[: n + 1]
    self_sim = _row_sums(data_n * data_n, bounds_n)
    total = np.bincount(index_n, weights=data_n, minlength=width)
    central = (_row_sums(data_n * total[index_n], bounds_n) - self_sim) / max(n - 1, 1)
    if not extra:
        return np.round(central, 12), np.zeros(n)
    extra_row = np.zeros(width)
    extra_row[index[end:]] = data[end:]
    return np.round(central, 12), np.round(_row_sums(data_n * extra_row[index_n], bounds_n), 12)


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
