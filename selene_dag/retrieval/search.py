"""Full-text candidates for a question: sanitized query terms, BM25 over ``search_docs``.

Scores are ``match_bm25``'s, read from the precomputed ``search_postings`` (only the
postings of the question's own stemmed terms), so a question never scans every document.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import duckdb

from selene_dag.errors import UsageError
from selene_dag.retrieval.index import (
    DOC_TOKENS_TABLE,
    DOCS_TABLE,
    FTS_SCHEMA,
    POSTINGS_TABLE,
    SearchIndexError,
    index_exists,
    load_fts,
)
from selene_dag.retrieval.terms import query_terms, weights_by_stem

SOURCES: dict[str, str] = {"notes": "note", "sessions": "chunk"}


def parse_sources(sources: str | Sequence[str] | None) -> tuple[str, ...]:
    """``"notes,sessions"`` or a sequence → validated tuple; None means both.

    Raises UsageError (a ValueError) naming any unknown source, or when none is given.
    """
    if sources is None:
        return tuple(SOURCES)
    items = sources.split(",") if isinstance(sources, str) else list(sources)
    names = tuple(dict.fromkeys(s.strip().lower() for s in items if s.strip()))
    unknown = [s for s in names if s not in SOURCES]
    if unknown or not names:
        raise UsageError(
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
    # Token counts stored at index time, when they are in the model asked for (else None).
    header_tokens: int | None = None
    body_tokens: int | None = None


_COLUMNS = (
    "doc_id, kind, ref, title, body, essence, citation, fidelity_tier, updated_at, "
    "consensus, importance, dedup_key"
)

# The ``limit`` best documents by summed postings (ties by index order), reading only the
# postings of the question's terms (the table is sorted by term id).
_TOP_SQL = f"""
SELECT d.name, s.score FROM (
    SELECT docid, sum(score) AS score FROM {POSTINGS_TABLE}
    WHERE list_contains(?, termid) AND list_contains(?, kind)
    GROUP BY docid ORDER BY score DESC, docid LIMIT ?
) s JOIN {FTS_SCHEMA}.docs d ON d.docid = s.docid
"""
# Point lookups of those documents and their stored token counts (no join that would scan
# every body).
_ROWS_SQL = f"SELECT {_COLUMNS} FROM {DOCS_TABLE} WHERE list_contains(?, doc_id)"
_TOKENS_SQL = (
    f"SELECT doc_id, header_tokens, body_tokens FROM {DOC_TOKENS_TABLE} "
    "WHERE model = ? AND list_contains(?, doc_id)"
)
_TERM_IDS_SQL = f"""
SELECT DISTINCT termid FROM {FTS_SCHEMA}.dict
WHERE term IN (SELECT stem(unnest({FTS_SCHEMA}.tokenize(?)), 'porter'))
"""


def term_ids(conn: duckdb.DuckDBPyConnection, terms: Sequence[str]) -> list[int]:
    """Index term ids of ``terms`` after the index's own tokenizer and porter stemmer
    (stopwords and words absent from the corpus have none)."""
    load_fts(conn)
    rows = conn.execute(_TERM_IDS_SQL, [" ".join(terms)]).fetchall()
    return sorted(int(r[0]) for r in rows)


_TERM_DF_SQL = f"""
SELECT w.word, coalesce(max(d.df), 0) FROM (SELECT unnest(?) AS word) w
LEFT JOIN {FTS_SCHEMA}.dict d ON d.term = stem(w.word, 'porter')
GROUP BY w.word
"""
_DOC_COUNT_SQL = f"SELECT num_docs FROM {FTS_SCHEMA}.stats"


def term_weights(conn: duckdb.DuckDBPyConnection, terms: Sequence[str]) -> dict[str, float]:
    """BM25 IDF of each question term in the index, keyed by the term's light stem
    (``terms.stem``): rare words weigh more. A term absent from the corpus counts as
    found in one document (see ``terms.weights_by_stem``). Needs a built index."""
    if not terms:
        return {}
    load_fts(conn)
    n_docs = int(conn.execute(_DOC_COUNT_SQL).fetchone()[0])
    return weights_by_stem(conn.execute(_TERM_DF_SQL, [list(terms)]).fetchall(), n_docs)


def search(
    conn: duckdb.DuckDBPyConnection,
    question: str,
    sources: Sequence[str] = tuple(SOURCES),
    limit: int = 60,
    model: str | None = None,
) -> list[Candidate]:
    """The ``limit`` best BM25 matches for ``question`` among the given sources, with the
    stored token counts of ``model`` when the index was built for it.

    An empty list when the question has no searchable word or nothing matches. Raises
    SearchIndexError when the index was never built (or lacks its postings), ValueError
    when ``limit`` < 1, UsageError for an unknown source.
    """
    if limit < 1:
        raise ValueError(f"limit must be >= 1, got {limit}")
    terms = query_terms(question)
    kinds = [SOURCES[s] for s in parse_sources(sources)]
    if not terms:
        return []
    if not index_exists(conn):
        raise SearchIndexError("the search index was never built: materialize search_index")
    ids = term_ids(conn, terms)
    if not ids:
        return []
    top = conn.execute(_TOP_SQL, [ids, kinds, limit]).fetchall()
    if not top:
        return []
    top.sort(key=lambda r: (-r[1], r[0]))
    names = [name for name, _ in top]
    rows = {r[0]: r for r in conn.execute(_ROWS_SQL, [names]).fetchall()}
    tokens = {r[0]: r[1:] for r in conn.execute(_TOKENS_SQL, [model or "", names]).fetchall()}
    return [
        Candidate(*rows[d], bm25=float(score), header_tokens=h, body_tokens=b)
        for d, score in top
        if d in rows
        for h, b in [tokens.get(d, (None, None))]
    ]


def newest_notes(conn: duckdb.DuckDBPyConnection) -> list[Candidate]:
    """Every indexed note, newest first (the newest-first truncation baseline)."""
    rows = conn.execute(
        f"SELECT {_COLUMNS} FROM {DOCS_TABLE} WHERE kind = 'note' "
        "ORDER BY updated_at DESC NULLS LAST, doc_id"
    ).fetchall()
    return [Candidate(*row, bm25=0.0) for row in rows]
