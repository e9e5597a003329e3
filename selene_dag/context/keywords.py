"""TF-IDF keyword extraction, deterministic and free of stop words.

The weights are scikit-learn's ``TfidfVectorizer(sublinear_tf=True, norm=None)`` (smoothed
IDF), computed here in plain Python: building a vectorizer costs milliseconds per call,
more than ask spends on a whole KEYWORDS item otherwise (a test holds the two equal).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

from selene_dag.errors import check_budget
from selene_dag.text import ENGLISH_STOP_WORDS, split_sentences

# Words of 3+ characters starting with a letter; keeps identifiers such as ``duckdb``,
# ``gpt-4o`` or ``fidelity_tier``.
TOKEN_PATTERN = r"(?u)\b[^\W\d_][\w\-]*[\w]\b"
_TOKEN = re.compile(TOKEN_PATTERN)


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

    stop = ENGLISH_STOP_WORDS | {w.lower() for w in extra_stop_words}
    if corpus:
        docs = [*list(corpus), text]
    else:
        docs = [*(split_sentences(text, boundary="any") or [text]), text]
    df: Counter[str] = Counter()
    for doc in docs:
        df.update({w for w in _TOKEN.findall(doc.lower()) if w not in stop})
    lowered = text.lower()
    tf = Counter(w for w in _TOKEN.findall(lowered) if w not in stop)
    n = len(docs)
    scored = sorted(
        (
            -((1.0 + math.log(count)) * (math.log((1 + n) / (1 + df[term])) + 1.0)),
            lowered.find(term),
            term,
        )
        for term, count in tf.items()
    )
    return [term for _, _, term in scored[:k]]
