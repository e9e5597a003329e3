"""Candidates for a question: sanitized query terms, BM25 over ``search_docs``, and
passages ranked by BM25 and by embedding similarity, fused by reciprocal rank.

Scores are ``match_bm25``'s, computed from the index's postings of the question's own
stemmed terms (:mod:`.bm25`), so a question never scans every document.
"""

from __future__ import annotations

import glob
import hashlib
import os
import re
import threading
import zipfile
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb
import numpy as np

from selene_dag.errors import UsageError
from selene_dag.retrieval import bm25, resident
from selene_dag.retrieval.embed import embed_query
from selene_dag.retrieval.index import (
    DOC_TOKENS_TABLE,
    DOCS_BM25,
    DOCS_TABLE,
    EMBEDDINGS_TABLE,
    PASSAGES_BM25,
    PASSAGES_TABLE,
    SearchIndexError,
    build_key,
    index_exists,
    load_fts,
)
from selene_dag.retrieval.terms import (
    identifier_terms,
    query_terms,
    weights_by_stem,
    whole_terms,
)

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
    if not names:
        raise UsageError("no source given: expected notes, sessions or both")
    if unknown:
        raise UsageError(f"unknown source {', '.join(unknown)}: expected notes, sessions or both")
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
    # A session chunk's event seqs, in order (``select.Document.events``); empty for a note.
    events: tuple[int, ...] = ()


_COLUMNS = (
    "doc_id, kind, ref, title, body, essence, citation, fidelity_tier, updated_at, "
    "consensus, importance, dedup_key"
)

# Point lookups of those documents and their stored token counts (no join that would scan
# every body).
_ROWS_SQL = f"SELECT {_COLUMNS} FROM {DOCS_TABLE} WHERE list_contains(?, doc_id)"
_TOKENS_SQL = (
    f"SELECT doc_id, header_tokens, body_tokens FROM {DOC_TOKENS_TABLE} "
    "WHERE model = ? AND list_contains(?, doc_id)"
)

_EVENTS_SQL = "SELECT id, seqs FROM chunks WHERE list_contains(?, id)"


def _chunk_events(
    conn: duckdb.DuckDBPyConnection, rows: dict[str, tuple[Any, ...]]
) -> dict[str, tuple[int, ...]]:
    """The event seqs of the session chunks among ``rows`` (search_docs rows by doc id),
    by doc id."""
    refs = {r[2]: d for d, r in rows.items() if r[1] == "chunk"}
    if not refs:
        return {}
    found = conn.execute(_EVENTS_SQL, [list(refs)]).fetchall()
    return {refs[ref]: tuple(seqs or ()) for ref, seqs in found}


def term_ids(conn: duckdb.DuckDBPyConnection, terms: Sequence[str]) -> list[int]:
    """Index term ids of ``terms`` after the index's own tokenizer and porter stemmer
    (stopwords and words absent from the corpus have none)."""
    load_fts(conn)
    bm25.prepare_query(conn)
    return bm25.term_ids(conn, " ".join(terms))


def term_weights(conn: duckdb.DuckDBPyConnection, terms: Sequence[str]) -> dict[str, float]:
    """BM25 IDF of each question term in the index, keyed by the term's light stem
    (``terms.stem``): rare words weigh more. A term absent from the corpus counts as
    found in one document (see ``terms.weights_by_stem``). Needs a built index."""
    if not terms:
        return {}
    return weights_by_stem(*term_frequencies(conn, terms))


def term_frequencies(
    conn: duckdb.DuckDBPyConnection, terms: Sequence[str]
) -> tuple[list[tuple[str, int]], int]:
    """``(term, documents holding its stem)`` for each question term (0: no note or session
    holds it), and the number of documents. Needs a built index."""
    load_fts(conn)
    return bm25.document_frequencies(conn, DOCS_BM25, list(terms))


@contextmanager
def _needs_index(conn: duckdb.DuckDBPyConnection) -> Iterator[None]:
    # The index is not checked first (two catalog queries, a few ms of every ask): a
    # missing or outdated one makes the first query fail, and only then is it looked at.
    try:
        yield
    except (duckdb.CatalogException, duckdb.BinderException) as exc:
        if not index_exists(conn):
            raise SearchIndexError(
                "the search index was never built: materialize search_index"
            ) from exc
        raise


def question_term_ids(conn: duckdb.DuckDBPyConnection, question: str) -> list[int]:
    """``term_ids`` of ``question``'s searchable words (empty when it has none), to hand
    to :func:`search` and :func:`hybrid_passages` so that one ask looks them up once.
    Raises SearchIndexError when the index was never built."""
    terms = query_terms(question)
    if not terms:
        return []
    with _needs_index(conn):
        return term_ids(conn, terms)


def index_build(conn: duckdb.DuckDBPyConnection) -> tuple[str, str]:
    """The index's ``build_key``, for one ask to look it up once. Raises SearchIndexError
    when the index was never built."""
    with _needs_index(conn):
        return build_key(conn)


def search(
    conn: duckdb.DuckDBPyConnection,
    question: str,
    sources: Sequence[str] = tuple(SOURCES),
    limit: int = 60,
    model: str | None = None,
    ids: Sequence[int] | None = None,
    build: tuple[str, str] | None = None,
) -> list[Candidate]:
    """The ``limit`` best BM25 matches for ``question`` among the given sources, with the
    stored token counts of ``model`` when the index was built for it. ``ids`` and
    ``build``: the question's ``term_ids`` and the index's ``index_build`` when the caller
    has them already.

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
    with _needs_index(conn):
        ids = term_ids(conn, terms) if ids is None else list(ids)
        top = resident.top(conn, DOCS_BM25, ids, kinds, limit, build)
    if not top:
        return []
    names = [name for name, _ in top]
    rows = {r[0]: r for r in conn.execute(_ROWS_SQL, [names]).fetchall()}
    tokens = {r[0]: r[1:] for r in conn.execute(_TOKENS_SQL, [model or "", names]).fetchall()}
    events = _chunk_events(conn, rows)
    return [
        Candidate(
            *rows[d], bm25=float(score), header_tokens=h, body_tokens=b, events=events.get(d, ())
        )
        for d, score in top
        if d in rows
        for h, b in [tokens.get(d, (None, None))]
    ]


def chunk_paths(conn: duckdb.DuckDBPyConnection, doc_ids: Sequence[str]) -> dict[str, str]:
    """The transcript file of each session chunk of ``doc_ids`` (``chunk:<id>``), by doc id;
    notes and unknown ids are left out."""
    if not doc_ids:
        return {}
    rows = conn.execute(
        f"SELECT d.doc_id, f.path FROM {DOCS_TABLE} d JOIN session_files f USING (session_key) "
        "WHERE list_contains(?, d.doc_id)",
        [list(doc_ids)],
    ).fetchall()
    return {r[0]: r[1] for r in rows}


def events_holding(conn: duckdb.DuckDBPyConnection, words: Sequence[str]) -> dict[str, str]:
    """For each of ``words`` a stored session event holds as a word (any case), the
    citation of the first such event (``<session key> events n-n``, which ``show``
    prints): the words a pack's note says are in no searched text may be in a part of a
    session the index leaves out (the middle of an event longer than a chunk, an event
    below the chunks' importance). One scan of the events' text serves every word."""
    unique = list(dict.fromkeys(w.lower() for w in words if w.strip()))
    if not unique:
        return {}
    # One aggregate per word over a single pass: the text is lowered once per event, and
    # the first holder of each word is the smallest (session_key, seq).
    first = ", ".join(
        "min(CASE WHEN contains(lowered, ?) AND regexp_matches(text, ?) "
        "THEN struct_pack(key := session_key, seq := seq) END)"
        for _ in unique
    )
    params: list[str] = []
    for word in unique:
        params += [word, rf"(?i)(^|\W){re.escape(word)}($|\W)"]
    row = conn.execute(
        f"SELECT {first} FROM (SELECT session_key, seq, text, lower(text) AS lowered "
        "FROM session_events)",
        params,
    ).fetchone()
    found: dict[str, str] = {}
    for word, holder in zip(unique, row or (), strict=False):
        if holder is not None:
            found[word] = f"{holder['key']} events {holder['seq']}-{holder['seq']}"
    return found


def newest_notes(conn: duckdb.DuckDBPyConnection) -> list[Candidate]:
    """Every indexed note, newest first (the newest-first truncation baseline)."""
    rows = conn.execute(
        f"SELECT {_COLUMNS} FROM {DOCS_TABLE} WHERE kind = 'note' "
        "ORDER BY updated_at DESC NULLS LAST, doc_id"
    ).fetchall()
    return [Candidate(*row, bm25=0.0) for row in rows]


# --- Passages: BM25 and dense candidates, fused ----------------------------------------

# Reciprocal rank fusion's constant (Cormack et al.'s default; chosen on the dev sets).
RRF_K = 60
# The dense ranking's weight in the passages' fusion (BM25's is 1): static word vectors
# confuse code, paths and identifiers more often than BM25 does (0.5 chosen on the dev
# sets against 1.0 and 0.25).
DENSE_WEIGHT = 0.5
# When a store holds no more passages than the dense list is long, that list is the
# whole store rather than a ranking of neighbours, and a passage below this cosine shares
# no meaning with the question (with these static vectors an unrelated note scores about
# 0.0-0.1, a paraphrase 0.3 and more): it is left out, so that in a small store an
# unrelated note does not fill the room left in a pack. In a larger store the list keeps
# its far end: dialogue turns score low against questions (a median best match of 0.35 on
# the conversations set) and the far end still helps there.
DENSE_FLOOR = 0.15


@dataclass(frozen=True)
class PassageHit:
    """One passage ranked for a question: ``fused`` is its reciprocal-rank-fusion score,
    ``bm25_rank`` / ``dense_rank`` its 1-based rank in each list (None when absent)."""

    passage_id: str
    doc_id: str
    char_start: int
    char_end: int
    tokens: int
    fused: float
    bm25_rank: int | None
    dense_rank: int | None


# The passages in id order and the vectors by content hash, read apart and joined in Python:
# joining and sorting the 256-float arrays in DuckDB took 0.67 s of each process's first ask
# at 55k passages, this 0.31 s.
_PASSAGE_ROWS_SQL = (
    f"SELECT passage_id, kind, hash, doc_id, char_start, char_end, tokens FROM {PASSAGES_TABLE} "
    "ORDER BY passage_id"
)
_VECTORS_SQL = f"SELECT hash, vec FROM {EMBEDDINGS_TABLE}"


@dataclass(frozen=True)
class _Matrix:
    build: tuple[str, str]  # the index's build_key
    ids: np.ndarray  # passage ids (object)
    kinds: np.ndarray  # note | chunk (object)
    vectors: np.ndarray  # (n, 256) float32, unit rows
    spans: dict[str, tuple[str, int, int, int]]  # every passage: doc id, start, end, tokens
    counts: dict[str, int]  # passages per document


_MATRICES: dict[tuple[str, str], _Matrix] = {}
_MATRIX_LOCK = threading.Lock()
# Indexes whose matrix is kept in memory at once (databases, or builds of one database).
_MATRIX_SLOTS = 4


_Columns = dict[str, list[Any]]


def _read_columns(conn: duckdb.DuckDBPyConnection) -> tuple[_Columns, np.ndarray, np.ndarray]:
    """Every passage's columns (in passage id order), which have a vector, and those
    vectors in that order, as the index in ``conn`` holds them now."""
    rows = conn.execute(_PASSAGE_ROWS_SQL).fetchnumpy()
    stored = conn.execute(_VECTORS_SQL).fetchnumpy()
    at = {h: i for i, h in enumerate(stored["hash"].tolist())}
    where = np.fromiter((at.get(h, -1) for h in rows["hash"].tolist()), np.int64, len(rows["hash"]))
    embedded = where >= 0
    vectors = (
        np.concatenate(stored["vec"])
        .reshape(-1, 256)
        .astype(np.float32, copy=False)[where[embedded]]
        if len(stored["vec"])
        else np.zeros((0, 256), dtype=np.float32)
    )
    columns = {c: rows[c].tolist() for c in (*_TEXT_COLUMNS, *_NUMBER_COLUMNS)}
    return columns, embedded, vectors


def _assembled(
    build: tuple[str, str], columns: _Columns, embedded: np.ndarray, vectors: np.ndarray
) -> _Matrix:
    """The matrix of :func:`_read_columns`' three parts."""
    ids, doc_ids = columns["passage_id"], columns["doc_id"]
    spans = dict(
        zip(
            ids,
            zip(
                doc_ids, columns["char_start"], columns["char_end"], columns["tokens"], strict=True
            ),
            strict=True,
        )
    )
    counts: dict[str, int] = {}
    for doc_id in doc_ids:
        counts[doc_id] = counts.get(doc_id, 0) + 1
    return _Matrix(
        build,
        np.asarray(ids, dtype=object)[embedded],
        np.asarray(columns["kind"], dtype=object)[embedded],
        vectors,
        spans,
        counts,
    )


# A process that asks once (`selene-dag ask`) read every passage's vector from DuckDB:
# 0.4 s of each ask at 10,000 notes (59k passages). The first such process after a build
# keeps them in the home's cache folder, and the next ones read that file.
_TEXT_COLUMNS = ("passage_id", "kind", "doc_id")
_NUMBER_COLUMNS = ("char_start", "char_end", "tokens")
_MATRIX_FILE_PREFIX = "passage_matrix-"


def _matrix_file(build: tuple[str, str]) -> Path | None:
    """Where the matrix of ``build`` is kept: the cache folder beside its database file
    (None for a database in memory)."""
    database = Path(build[0])
    if not database.is_absolute() or not database.is_file():
        return None
    digest = hashlib.sha256(build[1].encode("utf-8", "surrogatepass")).hexdigest()[:20]
    # Named by its database too: two databases in one folder kept removing each other's.
    return database.parent / "cache" / f"{_MATRIX_FILE_PREFIX}{database.stem}-{digest}.npz"


def _joined(values: list[Any]) -> np.ndarray:
    """Texts as one array of UTF-8 bytes, parted by NUL (which no id holds)."""
    return np.frombuffer("\0".join(map(str, values)).encode("utf-8", "surrogatepass"), np.uint8)


def _parted(blob: np.ndarray, n: int) -> list[str]:
    parts = blob.tobytes().decode("utf-8", "surrogatepass").split("\0") if n else []
    if len(parts) != n:
        raise ValueError("the matrix file does not hold one value per passage")
    return parts


def _save_columns(file: Path, columns: _Columns, embedded: np.ndarray, vectors: np.ndarray) -> None:
    """Keep :func:`_read_columns`' parts in ``file`` (written whole, then moved into
    place), the files of other builds removed. Nothing when the folder takes no writes."""
    arrays = {
        "n": np.asarray([len(columns["passage_id"])]),
        "embedded": embedded,
        "vectors": vectors,
        **{c: _joined(columns[c]) for c in _TEXT_COLUMNS},
        **{c: np.asarray(columns[c], dtype=np.int64) for c in _NUMBER_COLUMNS},
    }
    try:
        file.parent.mkdir(exist_ok=True)
        mine = file.name.rsplit("-", 1)[0]  # this database's files, of other builds
        for old in file.parent.glob(f"{glob.escape(mine)}-*.npz"):
            if old != file:
                old.unlink(missing_ok=True)
        partial = file.with_name(f".{file.name}.{os.getpid()}.part")
        with partial.open("wb") as handle:
            np.savez(handle, **arrays)
        os.replace(partial, file)
    except OSError:
        return


def _load_columns(file: Path) -> tuple[_Columns, np.ndarray, np.ndarray] | None:
    """The parts kept in ``file``, or None when it cannot be read whole."""
    try:
        with np.load(file, allow_pickle=False) as data:
            n = int(data["n"][0])
            columns: _Columns = {c: _parted(data[c], n) for c in _TEXT_COLUMNS}
            numbers = [data[c] for c in _NUMBER_COLUMNS]
            embedded, vectors = data["embedded"], data["vectors"]
    except (OSError, ValueError, KeyError, EOFError, TypeError, AttributeError, zipfile.BadZipFile):
        return None  # not such a file (torn, another format): read from the database
    if any(a.dtype.kind not in "iu" or a.shape != (n,) for a in numbers):
        return None
    columns.update({c: a.tolist() for c, a in zip(_NUMBER_COLUMNS, numbers, strict=True)})
    if embedded.dtype != np.bool_ or embedded.shape != (n,):
        return None
    if vectors.dtype != np.float32 or vectors.shape != (int(embedded.sum()), 256):
        return None
    return columns, embedded, vectors


def _read_matrix(conn: duckdb.DuckDBPyConnection, build: tuple[str, str]) -> _Matrix:
    """The matrix of the index in ``conn`` as it is now (see :func:`passage_matrix`): from
    the home's cache folder when a process kept it there for this build, else from the
    database (and then kept there)."""
    file = _matrix_file(build)
    parts = _load_columns(file) if file is not None and file.is_file() else None
    if parts is None:
        parts = _read_columns(conn)
        if file is not None:
            _save_columns(file, *parts)
    return _assembled(build, *parts)


def passage_matrix(
    conn: duckdb.DuckDBPyConnection, build: tuple[str, str] | None = None
) -> _Matrix:
    """Every embedded passage's vector (and every passage's document and span), read from
    DuckDB once per index build and kept
    (keyed by database path + stored corpus version and build time), so a question costs
    one matrix-vector product instead of a table scan. ``build``: the index's
    ``index_build`` when the caller has it already."""
    key = build or build_key(conn)
    found = _MATRICES.get(key)
    if found is not None:
        return found
    with _MATRIX_LOCK:
        found = _MATRICES.get(key)
        if found is None:
            found = _read_matrix(conn, key)
            while len(_MATRICES) >= _MATRIX_SLOTS:
                _MATRICES.pop(next(iter(_MATRICES)))
            _MATRICES[key] = found
    return found


def passage_bm25(
    conn: duckdb.DuckDBPyConnection,
    terms: Sequence[str],
    kinds: Sequence[str],
    limit: int,
    ids: Sequence[int] | None = None,
    build: tuple[str, str] | None = None,
) -> list[tuple[str, float]]:
    """The ``limit`` best passages by BM25 (title + text) as ``(passage_id, score)``,
    best first; empty when no term is in the index. ``ids`` and ``build``: the terms'
    ``term_ids`` and the index's ``index_build`` when the caller has them already."""
    ids = term_ids(conn, terms) if ids is None else list(ids)
    return resident.top(conn, PASSAGES_BM25, ids, kinds, limit, build)


# The literal list's weight in the passages' fusion: a question's ticket number, error code
# or identifier (a word with a digit, which the full-text index does not hold: its
# tokenizer drops digits, as the fts extension's does) is found word for word.
LITERAL_WEIGHT = 1.0
# ... and this much when a word of it is held by no more than ``RARE_LITERAL`` passages: a
# ticket number found in one note of 3,000 outweighs the question's other words, which
# many notes hold ("ticket").
RARE_LITERAL_WEIGHT = 3.0
RARE_LITERAL = 3


def literal_terms(terms: Sequence[str], every: bool = False) -> list[str]:
    """The question terms the full-text index cannot find: of 3 characters or more, with a
    digit (``4471``, ``e403``, ``err7``: the index holds ``err``, which ``err1`` to
    ``err10`` share; ``v2`` or ``10`` tell too little beside other words). ``every``: each
    term with a digit (for a question none of whose words the index holds: "v2")."""
    if every:
        return [t for t in terms if any(c.isdigit() for c in t)]
    return [t for t in terms if len(t) >= 3 and any(c.isdigit() for c in t)]


def passage_literal(
    conn: duckdb.DuckDBPyConnection,
    terms: Sequence[str],
    kinds: Sequence[str],
    limit: int,
    held: set[str] | None = None,
    alone: bool = False,
) -> tuple[list[tuple[str, int]], int]:
    """The ``limit`` passages holding most of ``terms`` word for word (case-insensitive,
    between non-alphanumeric characters, in title or text), as ``(passage_id, terms held)``,
    most first (ties: those whose title holds more of them first, the document named
    after a ticket or a host before one that mentions it; then by passage id), and how
    many passages hold the rarest term that
    counts (0 when none does). Only a term held by at most ``limit`` passages counts: a
    ticket number or an error code picks its passages out, while "10" or "v2" is in too
    many to tell anything. Empty without terms. A scan of the passages' text, asked only
    for questions with such terms. ``held``, when given, gets the terms (lowered) some
    passage holds. ``alone``: the terms are all the question has (no word of it in the
    index): each counts however many passages hold it (a lone "v2" found nothing)."""
    if not terms:
        return [], 0
    lowered = [t.lower() for t in terms]
    rows = conn.execute(
        f"""
WITH p AS (SELECT passage_id, lower(title) AS title, lower(title || chr(10) || text) AS body
           FROM {PASSAGES_TABLE} WHERE list_contains($kinds, kind)),
near AS (SELECT * FROM p WHERE len(list_filter($terms, t -> contains(body, t))) > 0),
held AS (SELECT passage_id, title, list_filter($terms, t -> regexp_matches(
    body, '(^|[^[:alnum:]])' || replace(t, '.', '\\.') || '($|[^[:alnum:]])')) AS held
    FROM near)
SELECT passage_id, held, list_filter(held, t -> regexp_matches(
    title, '(^|[^[:alnum:]])' || replace(t, '.', '\\.') || '($|[^[:alnum:]])')) AS titled
FROM held
""",
        {"kinds": list(kinds), "terms": lowered},
    ).fetchall()
    df = Counter(t for _, found, _ in rows for t in found)
    if held is not None:
        held.update(df)
    telling = set(df) if alone else {t for t, n in df.items() if n <= limit}
    scored = [
        (str(p), sum(t in telling for t in found), sum(t in telling for t in titled))
        for p, found, titled in rows
    ]
    scored = [s for s in scored if s[1]]
    scored.sort(key=lambda x: (-x[1], -x[2], x[0]))
    return [(p, n) for p, n, _ in scored[:limit]], min((df[t] for t in telling), default=0)


def passage_dense(
    conn: duckdb.DuckDBPyConnection,
    question: str,
    kinds: Sequence[str],
    limit: int,
    matrix: _Matrix | None = None,
) -> list[tuple[str, float]]:
    """The ``limit`` passages whose embedding is closest (cosine) to the question's, as
    ``(passage_id, similarity)``, best first; when the store has no more than ``limit``
    passages, none below ``DENSE_FLOOR``. Empty when the question embeds to zero.
    ``matrix``: the index's ``passage_matrix`` when the caller already has it."""
    vector = embed_query(question)
    if not vector.any():
        return []
    matrix = matrix if matrix is not None else passage_matrix(conn)
    if not len(matrix.ids):
        return []
    sims = matrix.vectors @ vector
    if set(kinds) != {"note", "chunk"}:
        sims = np.where(np.isin(matrix.kinds, list(kinds)), sims, -np.inf)
    n = min(limit, len(sims))
    top = np.argpartition(-sims, n - 1)[:n]
    order = sorted(top.tolist(), key=lambda i: (-sims[i], matrix.ids[i]))
    eligible = int(np.isfinite(sims).sum())
    floor = DENSE_FLOOR if eligible <= limit else -np.inf
    return [
        (str(matrix.ids[i]), float(sims[i]))
        for i in order
        if np.isfinite(sims[i]) and sims[i] >= floor
    ]


def passage_texts(conn: duckdb.DuckDBPyConnection, passage_ids: Sequence[str]) -> list[str]:
    """The title, a line break and the text of each of ``passage_ids``, in that order
    ("" for an unknown id)."""
    if not passage_ids:
        return []
    rows = dict(
        conn.execute(
            f"SELECT passage_id, title || chr(10) || text FROM {PASSAGES_TABLE} "
            "WHERE list_contains(?, passage_id)",
            [list(passage_ids)],
        ).fetchall()
    )
    return [rows.get(p, "") for p in passage_ids]


def fuse(
    rankings: Sequence[Sequence[str]], k: float = RRF_K, weights: Sequence[float] | None = None
) -> dict[str, float]:
    """Reciprocal rank fusion: ``sum over rankings of weight / (k + rank)`` (rank from 1;
    every weight 1.0 unless ``weights`` gives one per ranking)."""
    out: dict[str, float] = {}
    for n, ranking in enumerate(rankings):
        w = weights[n] if weights is not None else 1.0
        for rank, key in enumerate(ranking, 1):
            out[key] = out.get(key, 0.0) + w / (k + rank)
    return out


def hybrid_passages(
    conn: duckdb.DuckDBPyConnection,
    question: str,
    sources: Sequence[str] = tuple(SOURCES),
    limit: int = 50,
    k: float = RRF_K,
    dense: bool = True,
    dense_weight: float = DENSE_WEIGHT,
    ids: Sequence[int] | None = None,
    matrix: _Matrix | None = None,
    held_nowhere: set[str] | None = None,
) -> list[PassageHit]:
    """Passages for ``question``: the ``limit`` best by BM25, the ``limit`` nearest by
    embedding and, when the question has words with a digit, the ``limit`` holding most of
    them word for word (:func:`passage_literal`), fused by reciprocal rank (``k``; the dense
    list weighs ``dense_weight``, the literal one ``LITERAL_WEIGHT``), best first (ties by
    passage id). Empty when the question has no searchable word or no word of it is in any
    passage (a question nothing matches gets no pack from nearest neighbours alone). Needs a built
    index. ``ids`` (the question's ``term_ids``) and ``matrix`` (the index's
    ``passage_matrix``): when the caller has them already."""
    terms = query_terms(question)
    versions = whole_terms(question)
    if not terms and not versions:
        return []
    kinds = [SOURCES[s] for s in parse_sources(sources)]
    build = matrix.build if matrix is not None else None
    lexical = [p for p, _ in passage_bm25(conn, terms, kinds, limit, ids, build)] if terms else []
    wanted = [*literal_terms(terms, every=not lexical), *versions]
    held: set[str] = set()
    found, rarest = passage_literal(conn, wanted, kinds, limit, held, alone=not lexical)
    if held_nowhere is not None:
        # An identifier is looked up whole besides its words, which the index holds: one
        # spelled otherwise in the text (x86_64 for x86-64) is no word the text lacks.
        spelled = set(identifier_terms(question))
        held_nowhere.update(t.lower() for t in wanted if t.lower() not in held | spelled)
    literal = [p for p, _ in found]
    literal_weight = RARE_LITERAL_WEIGHT if 0 < rarest <= RARE_LITERAL else LITERAL_WEIGHT
    if not lexical and not literal:
        return []
    matrix = matrix if matrix is not None else passage_matrix(conn)
    nearest = [p for p, _ in passage_dense(conn, question, kinds, limit, matrix)] if dense else []
    scores = fuse([lexical, nearest, literal], k, (1.0, dense_weight, literal_weight))
    if not scores:
        return []
    rows = matrix.spans
    lex_rank = {p: i for i, p in enumerate(lexical, 1)}
    dense_rank = {p: i for i, p in enumerate(nearest, 1)}
    hits = [
        PassageHit(p, r[0], r[1], r[2], r[3], s, lex_rank.get(p), dense_rank.get(p))
        for p, s in scores.items()
        if (r := rows.get(p)) is not None
    ]
    hits.sort(key=lambda h: (-h.fused, h.passage_id))
    return hits


def documents(
    conn: duckdb.DuckDBPyConnection, doc_ids: Sequence[str], model: str | None = None
) -> list[Candidate]:
    """The indexed documents ``doc_ids`` (in that order, unknown ids skipped) as candidates
    with a BM25 score of 0 and their stored token counts in ``model``."""
    if not doc_ids:
        return []
    ids = list(doc_ids)
    rows = {r[0]: r for r in conn.execute(_ROWS_SQL, [ids]).fetchall()}
    tokens = {r[0]: r[1:] for r in conn.execute(_TOKENS_SQL, [model or "", ids]).fetchall()}
    events = _chunk_events(conn, rows)
    return [
        Candidate(*rows[d], bm25=0.0, header_tokens=h, body_tokens=b, events=events.get(d, ()))
        for d in ids
        if d in rows
        for h, b in [tokens.get(d, (None, None))]
    ]
