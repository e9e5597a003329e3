"""Full-text candidates for a question: sanitized query terms, BM25 over ``search_docs``."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import duckdb

from selene_dag.retrieval.index import DOCS_TABLE, FTS_SCHEMA, index_exists, load_fts

SOURCES: dict[str, str] = {"notes": "note", "sessions": "chunk"}
MAX_TERMS = 32
# A small list for term coverage; the index itself drops the fts extension's English list.
STOPWORDS = frozenset(
    [
        "a",
        "about",
        "above",
        "after",
        "again",
        "against",
        "all",
        "am",
        "an",
        "and",
        "any",
        "are",
        "as",
        "at",
        "be",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "doing",
        "down",
        "during",
        "each",
        "few",
        "for",
        "from",
        "further",
        "had",
        "has",
        "have",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "herself",
        "him",
        "himself",
        "his",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "itself",
        "just",
        "me",
        "more",
        "most",
        "my",
        "myself",
        "no",
        "nor",
        "not",
        "now",
        "of",
        "off",
        "on",
        "once",
        "only",
        "or",
        "other",
        "our",
        "ours",
        "ourselves",
        "out",
        "over",
        "own",
        "same",
        "she",
        "should",
        "so",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "theirs",
        "them",
        "themselves",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "to",
        "too",
        "under",
        "until",
        "up",
        "very",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "yours",
        "yourself",
        "yourselves",
        "use",
        "used",
        "using",
        "get",
        "make",
        "way",
        "want",
        "need",
    ]
)
_WORD = re.compile(r"[^\W_]+")


def query_terms(question: str) -> list[str]:
    """Distinct lower-case words of ``question`` minus stopwords and 1-letter words, in
    order, at most 32: the only thing that reaches the FTS engine (no quotes, operators)."""
    if not isinstance(question, str):
        raise TypeError(f"question must be a str, got {type(question).__name__}")
    seen: dict[str, None] = {}
    for word in _WORD.findall(question.lower()):
        if len(word) > 1 and word not in STOPWORDS and word not in seen:
            seen[word] = None
        if len(seen) >= MAX_TERMS:
            break
    return list(seen)


def parse_sources(sources: str | Sequence[str] | None) -> tuple[str, ...]:
    """``"notes,sessions"`` or a sequence → validated tuple; None means both."""
    if sources is None:
        return tuple(SOURCES)
    items = sources.split(",") if isinstance(sources, str) else list(sources)
    names = tuple(dict.fromkeys(s.strip().lower() for s in items if s.strip()))
    unknown = [s for s in names if s not in SOURCES]
    if unknown or not names:
        raise ValueError(
            f"unknown source {', '.join(unknown) or '(none)'}: expected notes, sessions or both"
        )
    return names


@dataclass(frozen=True)
class Candidate:
    """One document matched by BM25, with the inputs of its static score."""

    doc_id: str
    kind: str
    ref: str
    title: str
    body: str
    essence: str | None
    citation: str
    fidelity_tier: str | None
    updated_at: datetime | None
    consensus: float | None
    importance: float | None
    dedup_key: str
    bm25: float


_COLUMNS = (
    "doc_id, kind, ref, title, body, essence, citation, fidelity_tier, updated_at, "
    "consensus, importance, dedup_key"
)


def search(
    conn: duckdb.DuckDBPyConnection,
    question: str,
    sources: Sequence[str] = tuple(SOURCES),
    limit: int = 60,
) -> list[Candidate]:
    """The ``limit`` best BM25 matches for ``question`` among the given sources.

    An empty list when the question has no searchable word or nothing matches. Raises
    SearchIndexError-compatible errors when the index was never built.
    """
    from selene_dag.retrieval.index import SearchIndexError

    if limit < 1:
        raise ValueError(f"limit must be >= 1, got {limit}")
    terms = query_terms(question)
    kinds = [SOURCES[s] for s in parse_sources(sources)]
    if not terms:
        return []
    if not index_exists(conn):
        raise SearchIndexError("the search index was never built: materialize search_index")
    load_fts(conn)
    rows = conn.execute(
        f"SELECT {_COLUMNS}, score FROM ("
        f"  SELECT *, {FTS_SCHEMA}.match_bm25(doc_id, ?) AS score FROM {DOCS_TABLE}"
        f"  WHERE kind IN (SELECT unnest(?))"
        f") WHERE score IS NOT NULL ORDER BY score DESC, doc_id LIMIT ?",
        [" ".join(terms), kinds, limit],
    ).fetchall()
    return [Candidate(*row[:-1], bm25=float(row[-1])) for row in rows]


def newest_notes(conn: duckdb.DuckDBPyConnection) -> list[Candidate]:
    """Every indexed note, newest first (the newest-first truncation baseline)."""
    rows = conn.execute(
        f"SELECT {_COLUMNS} FROM {DOCS_TABLE} WHERE kind = 'note' "
        "ORDER BY updated_at DESC NULLS LAST, doc_id"
    ).fetchall()
    return [Candidate(*row, bm25=0.0) for row in rows]
