"""A question's terms and how they are weighed and found in a text: the one home of ask's
term analysis.

Pure functions, no database: ``query_terms`` turns a question into the words that reach
the full-text engine, ``idf`` / ``weights_by_stem`` weigh them (rare words count more),
and :class:`CoverageMatcher` finds which of them a text holds. Stop words and the light
stemmer are :mod:`selene_dag.text`'s, shared with the rest of the package.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence

from selene_dag.text import (
    QUERY_STOP_WORDS,
    fold_marks,
    has_cjk,
    space_cjk,
    stem,
    words_with_marks,
)

__all__ = [
    "MAX_TERMS",
    "CoverageMatcher",
    "identifier_terms",
    "idf",
    "query_terms",
    "stem",
    "term_coverage",
    "term_stem",
    "unsearched_words",
    "version_terms",
    "weights_by_stem",
    "whole_terms",
]

MAX_TERMS = 32
# A version or a dotted number: 2.0.1, 3.12, v1.4 (the words of the question split it).
_VERSION = re.compile(r"(?<![\w.])v?\d+(?:\.\d+)+(?![\w]|\.\d)")


def version_terms(question: str) -> list[str]:
    """The versions and dotted numbers of ``question`` (``2.0.1``, ``3.12``, ``v1.4``), lower
    case, in order: :func:`query_terms` splits them into digits too short to search for."""
    if not isinstance(question, str):
        raise TypeError(f"question must be a str, got {type(question).__name__}")
    return list(dict.fromkeys(m.group(0).lower() for m in _VERSION.finditer(question)))


# An identifier of parts joined by "-" or "_", one of them a number: a host (db-17,
# kf-east-3), a region (us-east-1), a ticket (DEL-7712). Its words alone are common ("db",
# "17"): the host is looked up whole.
_IDENTIFIER = re.compile(r"(?<![\w.-])[^\W_]+(?:[-_][^\W_]+)+(?![\w-])")


# At most this many identifiers a question (a pasted log holds hundreds: each is a scan).
MAX_IDENTIFIERS = 8


def identifier_terms(question: str) -> list[str]:
    """The identifiers of ``question`` of parts joined by ``-`` or ``_`` with a digit
    (``db-17``, ``us-east-1``, ``DEL-7712``), lower case, in order, at most
    ``MAX_IDENTIFIERS``: :func:`query_terms` splits them into words that many texts hold."""
    found = (
        m.group(0).lower()
        for m in _IDENTIFIER.finditer(question)
        if any(c.isdigit() for c in m.group(0)) and len(m.group(0)) >= 4
    )
    return list(dict.fromkeys(found))[:MAX_IDENTIFIERS]


def whole_terms(question: str) -> list[str]:
    """The terms of ``question`` looked for word for word, lower case, in order: its
    versions and dotted numbers (:func:`version_terms`), then its identifiers
    (:func:`identifier_terms`)."""
    return list(dict.fromkeys([*version_terms(question), *identifier_terms(question)]))


def query_terms(question: str) -> list[str]:
    """Distinct lower-case words of ``question`` minus stop words and 1-letter words, in
    order, at most ``MAX_TERMS``: the only thing that reaches the FTS engine (no quotes,
    no operators). A Chinese or Japanese character is a word of its own, as the index
    takes it. Raises TypeError when ``question`` is not a str."""
    if not isinstance(question, str):
        raise TypeError(f"question must be a str, got {type(question).__name__}")
    return list(_searchable_words(question, MAX_TERMS))


def unsearched_words(question: str, limit: int = 200) -> list[str]:
    """The distinct searchable words of ``question`` after the ``MAX_TERMS`` that
    :func:`query_terms` keeps (at most ``limit`` of them, in order): words a search of it
    leaves out."""
    return list(_searchable_words(question, MAX_TERMS + limit))[MAX_TERMS:]


def _searchable_words(question: str, limit: int) -> dict[str, None]:
    """The first ``limit`` distinct searchable words of ``question``, in order."""
    seen: dict[str, None] = {}
    for match in words_with_marks(space_cjk(question.lower())):
        word = match.group(0)
        # Its length without marks: a Hindi postposition (को, है) is one letter and a sign,
        # and as a one-letter stem it matched every word starting with that letter.
        long_enough = len(word) > 1 and (word.isascii() or len(fold_marks(word)) > 1)
        if (long_enough or has_cjk(word)) and word not in QUERY_STOP_WORDS and word not in seen:
            seen[word] = None
            if len(seen) >= limit:
                break
    return seen


def idf(df: int, n_docs: int) -> float:
    """BM25's inverse document frequency, > 0 for every df in [0, n_docs]."""
    return math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))


def term_stem(word: str) -> str:
    """The stem a question's word is matched by in a text: its light stem without its
    combining marks (see :func:`selene_dag.text.fold_marks`), as the index folds them."""
    return stem(fold_marks(word))


def weights_by_stem(frequencies: Iterable[tuple[str, int]], n_docs: int) -> dict[str, float]:
    """The IDF of each ``(word, document frequency)`` keyed by the word's light stem (the
    highest when several words share a stem). A frequency below 1 counts as 1: a word
    absent from the corpus weighs as if found in one document."""
    out: dict[str, float] = {}
    for word, df in frequencies:
        key = term_stem(word)
        out[key] = max(out.get(key, 0.0), idf(max(1, int(df)), n_docs))
    return out


def _is_word(char: str) -> bool:
    """Whether ``char`` is a regex word character (``\\w`` for str patterns)."""
    return char.isalnum() or char == "_"


class CoverageMatcher:
    """Finds which question terms (stemmed, matched at a word start) occur in a text: a
    stem is found where it starts at a word boundary, and then so is every stem that it
    starts with (both match at that position)."""

    def __init__(self, terms: Sequence[str]) -> None:
        self.terms = list(terms)
        self.stems = [term_stem(t) for t in self.terms]
        alternatives = sorted(set(self.stems), key=lambda s: (-len(s), s))
        self._pattern = (
            re.compile(r"\b(" + "|".join(re.escape(a) for a in alternatives) + ")")
            if alternatives
            else None
        )
        self._implied: dict[str, frozenset[str]] = {
            a: frozenset(s for s in alternatives if a.startswith(s)) for a in alternatives
        }
        # Stems of word characters only (every stem of a question's words) are looked for
        # with str.find, a C scan per stem: several times faster than the regex, which
        # remains for any other stem.
        self._plain = bool(alternatives) and all(
            a and all(_is_word(c) for c in a) for a in alternatives
        )
        self._alternatives = alternatives
        # Chinese and Japanese characters are words of their own: the text is spaced so.
        self._cjk = any(has_cjk(a) for a in alternatives)

    def found(self, text: str) -> set[str]:
        """The stems found in ``text`` (compared lower-case, without combining marks)."""
        if self._pattern is None or not text:
            return set()
        low = fold_marks(text.lower())
        low = space_cjk(low) if self._cjk else low
        out: set[str] = set()
        if self._plain:
            for a in self._alternatives:  # longest first: a prefix found with it is skipped
                if a in out:
                    continue
                at = low.find(a)
                while at > 0 and _is_word(low[at - 1]):
                    at = low.find(a, at + 1)
                if at >= 0:
                    out |= self._implied[a]
            return out
        for match in set(self._pattern.findall(low)):
            out |= self._implied[match]
        return out

    def coverage(
        self,
        title: str,
        body: str,
        title_bonus: float = 1.0,
        weights: Mapping[str, float] | None = None,
    ) -> float:
        """See :func:`term_coverage`."""
        if not self.terms:
            return 0.0
        in_title = self.found(title)
        in_body = self.found(body)
        total = 0.0
        norm = 0.0
        for s in self.stems:
            w = weights.get(s, 1.0) if weights else 1.0
            t = s in in_title
            total += w * (float(t or s in in_body) + title_bonus * float(t)) / (1.0 + title_bonus)
            norm += w
        return total / norm if norm else 0.0


def term_coverage(
    terms: Sequence[str],
    title: str,
    body: str,
    title_bonus: float = 1.0,
    weights: Mapping[str, float] | None = None,
) -> float:
    """Mean over ``terms`` (stemmed, matched at a word start) of
    ``(found anywhere + title_bonus * found in title) / (1 + title_bonus)``, weighted by
    ``weights[stem]`` when given (IDF: a rare word counts more; missing stems weigh 1):
    in [0, 1], 0.0 for no terms."""
    return CoverageMatcher(terms).coverage(title, body, title_bonus, weights)
