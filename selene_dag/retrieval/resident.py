"""BM25 postings held in memory by a process that asks many questions.

A question's BM25 rankings (documents and passages) each scan the postings of its terms in
DuckDB: 15-20 ms per ranking over 780k postings. A process that asks again (``serve``,
``eval``, a notebook calling ``ask``) reads a unit's postings once into arrays sorted by
term, and then scores a question with a few array operations. ``top`` decides: the first
question against a build of the index is answered by the query (a single ``selene-dag
ask`` would spend more loading the arrays than it saves: 0.2 s for the 577 demo notes and
10,000 chunks, 0.6 s at 10,000 notes), the next one loads them.

Both ways give the same rows with the same scores, to the last bit: the arrays score with
the query's double operations in its order (``bm25.TERM_PARAMETERS``), each term's part
rounded to a multiple of 2^-40 as the query rounds it, and sums of those are exact in any
order. A test holds them equal.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass

import duckdb
import numpy as np

from selene_dag.retrieval import bm25
from selene_dag.retrieval.index import build_key

# The question against one build of the index from which its postings are kept in memory.
LOAD_AT = 2
# Units kept at once (two per build: documents and passages), oldest dropped first.
_SLOTS = 8


@dataclass(frozen=True)
class Postings:
    """One unit's index in arrays. Rows (documents or passages) are numbered in their
    keys' order, so ties broken by row number are broken by key as the query does."""

    build: tuple[str, str]  # the index's build_key
    keys: np.ndarray  # row number -> key (object)
    kinds: np.ndarray  # row number -> index into kind_names
    kind_names: tuple[str, ...]
    lengths: np.ndarray  # row number -> length in terms (float64)
    avgdl: float
    termids: np.ndarray  # postings (int32) sorted by term id, then row number
    rows: np.ndarray
    tf: np.ndarray


def load(conn: duckdb.DuckDBPyConnection, unit: bm25.Unit) -> Postings:
    """Read ``unit``'s postings and row lengths from the index in ``conn``, in one
    transaction of a cursor of its own (a rebuild committing meanwhile cannot mix two
    builds), with the ``build_key`` they belong to."""
    cursor = conn.cursor()
    try:
        cursor.execute("BEGIN TRANSACTION")
        build = build_key(cursor)
        table = cursor.execute(
            f"SELECT key, kind, len FROM {unit.lengths} ORDER BY key"
        ).fetchnumpy()
        avgdl = cursor.execute(f"SELECT avg(len) FROM {unit.lengths}").fetchone()[0]
        postings = cursor.execute(
            f"""
            SELECT p.termid, r.row, p.tf FROM {unit.postings} p
            JOIN (SELECT key, (row_number() OVER (ORDER BY key) - 1)::INTEGER AS row
                  FROM {unit.lengths}) r USING (key)
            ORDER BY p.termid, r.row
            """
        ).fetchnumpy()
        cursor.execute("COMMIT")
    finally:
        cursor.close()
    names, kinds = np.unique(np.asarray(table["kind"], dtype=object), return_inverse=True)
    return Postings(
        build=build,
        keys=np.asarray(table["key"], dtype=object),
        kinds=kinds.astype(np.int8),
        kind_names=tuple(str(n) for n in names),
        lengths=np.asarray(table["len"], dtype=np.float64),
        avgdl=float(avgdl) if avgdl is not None else 0.0,
        termids=np.asarray(postings["termid"], dtype=np.int32),
        rows=np.asarray(postings["row"], dtype=np.int32),
        tf=np.asarray(postings["tf"], dtype=np.int32),
    )


def top_in(
    postings: Postings, ids: Sequence[int], kinds: Sequence[str], limit: int
) -> list[tuple[str, float]]:
    """``bm25.top`` computed from ``postings``: the ``limit`` best rows of the given
    ``kinds`` for the term ids ``ids`` as ``(key, score)``, best first, ties by key."""
    terms = np.unique(np.asarray(list(ids), dtype=np.int64))
    if not len(terms) or not len(postings.keys):
        return []
    starts = np.searchsorted(postings.termids, terms, "left")
    ends = np.searchsorted(postings.termids, terms, "right")
    found = ends > starts
    if not found.any():
        return []
    starts, ends = starts[found], ends[found]
    df = ends - starts
    n = len(postings.keys)
    spans = list(zip(starts.tolist(), ends.tolist(), strict=True))
    rows = np.concatenate([postings.rows[a:b] for a, b in spans])
    tf = np.concatenate([postings.tf[a:b] for a, b in spans]).astype(np.float64)
    weights = np.repeat([bm25.idf(n, int(d)) for d in df.tolist()], df)
    k1, k, one_minus_b, b, scale = bm25.TERM_PARAMETERS
    part = (
        weights
        * ((tf * k1) / (tf + k * (one_minus_b + b * (postings.lengths[rows] / postings.avgdl))))
        * scale
    )
    whole = np.trunc(part)
    part = whole + (part - whole >= 0.5)  # the query's round(): half away from zero
    sums = np.bincount(rows, weights=part, minlength=n)
    hit = np.flatnonzero(np.bincount(rows, minlength=n))
    allowed = np.isin(np.arange(len(postings.kind_names)), _wanted(postings, kinds))
    hit = hit[allowed[postings.kinds[hit]]]
    scores = sums[hit] / scale
    if len(hit) > limit > 0:
        # Only rows scoring at least the limit-th best can be in the answer (ties kept).
        keep = scores >= np.partition(scores, len(scores) - limit)[len(scores) - limit]
        hit, scores = hit[keep], scores[keep]
    order = np.lexsort((hit, -scores))[:limit]
    return [(str(postings.keys[hit[i]]), float(scores[i])) for i in order]


def _wanted(postings: Postings, kinds: Sequence[str]) -> list[int]:
    return [i for i, name in enumerate(postings.kind_names) if name in kinds]


_LOADED: dict[tuple[str, ...], Postings] = {}
_ASKED: dict[tuple[str, ...], int] = {}
_LOCK = threading.Lock()


def loaded(conn: duckdb.DuckDBPyConnection, unit: bm25.Unit) -> Postings | None:
    """``unit``'s postings of the index in ``conn`` when this process holds them."""
    return _LOADED.get((*build_key(conn), unit.postings))


def top(
    conn: duckdb.DuckDBPyConnection,
    unit: bm25.Unit,
    ids: Sequence[int],
    kinds: Sequence[str],
    limit: int,
    build: tuple[str, str] | None = None,
) -> list[tuple[str, float]]:
    """``bm25.top``, from memory from the LOAD_AT-th question against this build of the
    index on (see the module's docstring); the same rows and scores either way.
    ``build``: the index's ``build_key`` when the caller has it already."""
    if not ids:
        return []
    key = (*(build or build_key(conn)), unit.postings)
    found = _LOADED.get(key)
    if found is None:
        with _LOCK:
            found = _LOADED.get(key)
            if found is None:
                asked = _ASKED[key] = _ASKED.get(key, 0) + 1
                if asked >= LOAD_AT:
                    found = load(conn, unit)
                    del _ASKED[key]
                    if found.build != key[:2]:  # rebuilt meanwhile: ask the query
                        return bm25.top(conn, unit, ids, kinds, limit)
                    while len(_LOADED) >= _SLOTS:
                        _LOADED.pop(next(iter(_LOADED)))
                    _LOADED[key] = found
                elif len(_ASKED) > 4 * _SLOTS:
                    _ASKED.clear()
    if found is None:
        return bm25.top(conn, unit, ids, kinds, limit)
    return top_in(found, ids, kinds, limit)
