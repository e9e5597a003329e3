"""Incremental BM25 over the search documents and their passages.

The scores are those of the DuckDB ``fts`` extension's ``match_bm25`` (porter stemmer, its
English stopword list, accents stripped, lower case, k = 1.2, b = 0.75, log base 10, every
field; to 1.5e-11, see :func:`top`), but the index lives in our own tables so that a
rebuild touches only the rows that changed: the ``fts`` extension rebuilds everything on
every ``PRAGMA create_fts_index``, which at 10,000 notes made one edited note cost two full
index builds.

Per unit (documents, passages) three tables:

* ``<unit>_postings(termid, key, kind, tf, len)``: one row per (term, row) with the term's
  count and the row's length in terms; a question reads only the postings of its terms.
* ``<unit>_lengths(key, kind, len)``: every indexed row, for the row count and the mean
  length (BM25's ``N`` and ``avgdl``), read at question time.
* ``<unit>_frequencies(termid, df)``: how many rows hold each term (its postings), kept
  up to date for the terms of the rows an update touches, so the rerank's term weights
  do not count postings.

Term ids come from ``bm25_vocab`` (shared, only added to). The tokenizer is the extension's
macro, copied, with one step added for Chinese and Japanese (each character a word; text
without them scores exactly as with the extension); ``stem`` is the extension's function,
so it must be loaded (``load_fts``).
Scores are computed at question time from those tables, so no stored score goes stale
when another row changes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import pairwise

import duckdb

from selene_dag.text import CJK_CHARACTERS, CJK_PUNCTUATION

BM25_K = 1.2
BM25_B = 0.75
VOCAB_TABLE = "bm25_vocab"
STOPWORDS_TABLE = "bm25_stopwords"
# At most this many shares of the texts are tokenized side by side (see ``_sharded``).
_MAX_SHARDS = 8

# The fts extension's tokenize macro (as ``PRAGMA create_fts_index`` defines it with
# strip_accents=1, lower=1 and the default ignore pattern), plus one step the extension
# lacks: Chinese and Japanese write no spaces, so each of their characters is a word (as
# Lucene's standard analyzer does) and their punctuation separates. Text without those
# characters is split exactly as the extension splits it.
_TOKENIZE = (
    "string_split_regex(regexp_replace(regexp_replace("
    "lower(strip_accents(CAST(s AS VARCHAR))), "
    f"'([{CJK_CHARACTERS}])|[{CJK_PUNCTUATION}]', ' \\1 ', 'g'), "
    "'[0-9!@#$%^&*()_+={}\\[\\]:;<>,.?~\\\\/\\|''''\"`-]+', ' ', 'g'), '\\s+')"
)
# Names the tokenizer above: rows a store indexed with another are indexed again (see
# ``rows_to_retokenize``).
TOKENIZER = "fts+cjk1"
TOKENIZER_TABLE = "bm25_tokenizer"


@dataclass(frozen=True)
class Unit:
    """One BM25 index: the table it indexes (``source``, key column ``key``, the text
    columns ``fields``) and the names of its postings, lengths and document frequency
    tables."""

    source: str
    key: str
    fields: tuple[str, ...]
    postings: str
    lengths: str
    frequencies: str


def prepare_query(conn: duckdb.DuckDBPyConnection) -> None:
    """Create the tokenizer macro on ``conn`` (temporary: this connection only, so a
    read-only connection can search too)."""
    # Created every time (about 1 ms): a macro created inside a transaction that rolls
    # back is gone, so remembering that a connection has it could be wrong.
    conn.execute(f"CREATE OR REPLACE TEMP MACRO selene_tokenize(s) AS {_TOKENIZE}")


def prepare(conn: duckdb.DuckDBPyConnection) -> None:
    """What a build needs: the tokenizer macro, and the vocabulary and stopword tables when
    absent. The stopwords are the extension's English list, taken from a throwaway index so
    that they are exactly the ones ``match_bm25`` uses."""
    prepare_query(conn)
    conn.execute(
        f"CREATE TABLE IF NOT EXISTS {VOCAB_TABLE} (termid INTEGER NOT NULL, term VARCHAR NOT NULL)"
    )
    if _columns(conn, STOPWORDS_TABLE):
        return
    conn.execute("CREATE OR REPLACE TABLE _bm25_probe (id VARCHAR, t VARCHAR)")
    conn.execute("INSERT INTO _bm25_probe VALUES ('a', 'a')")
    conn.execute(
        "PRAGMA create_fts_index('_bm25_probe', 'id', 't', stemmer='porter', "
        "stopwords='english', strip_accents=1, lower=1, overwrite=1)"
    )
    conn.execute(f"CREATE TABLE {STOPWORDS_TABLE} AS SELECT sw FROM fts_main__bm25_probe.stopwords")
    conn.execute("DROP SCHEMA fts_main__bm25_probe CASCADE")
    conn.execute("DROP TABLE _bm25_probe")


def _columns(conn: duckdb.DuckDBPyConnection, table: str) -> tuple[str, ...]:
    rows = conn.execute(
        "SELECT column_name FROM duckdb_columns() WHERE schema_name = 'main' "
        "AND table_name = ? ORDER BY column_index",
        [table],
    ).fetchall()
    return tuple(r[0] for r in rows)


_POSTINGS_COLUMNS = ("termid", "key", "kind", "tf", "len")
_LENGTHS_COLUMNS = ("key", "kind", "len")
_FREQUENCIES_COLUMNS = ("termid", "df")


def _create_unit_tables(conn: duckdb.DuckDBPyConnection, unit: Unit) -> bool:
    """Create the unit's tables; a postings or lengths table of another shape (an older
    index) is replaced, and then both are, so every row is indexed again. True when the
    frequencies table was created (missing, or of another shape): it is empty then, and
    every term must be counted."""
    if (
        _columns(conn, unit.postings) != _POSTINGS_COLUMNS
        or _columns(conn, unit.lengths) != _LENGTHS_COLUMNS
    ):
        conn.execute(f"DROP TABLE IF EXISTS {unit.postings}")
        conn.execute(f"DROP TABLE IF EXISTS {unit.lengths}")
        conn.execute(f"DROP TABLE IF EXISTS {unit.frequencies}")
    conn.execute(
        f"CREATE TABLE IF NOT EXISTS {unit.postings} (termid INTEGER NOT NULL, key VARCHAR "
        "NOT NULL, kind VARCHAR NOT NULL, tf INTEGER NOT NULL, len INTEGER NOT NULL)"
    )
    conn.execute(
        f"CREATE TABLE IF NOT EXISTS {unit.lengths} (key VARCHAR NOT NULL, kind VARCHAR "
        "NOT NULL, len INTEGER NOT NULL)"
    )
    if _columns(conn, unit.frequencies) == _FREQUENCIES_COLUMNS:
        return False
    conn.execute(
        f"CREATE OR REPLACE TABLE {unit.frequencies} (termid INTEGER NOT NULL, df BIGINT NOT NULL)"
    )
    return True


def update(
    conn: duckdb.DuckDBPyConnection,
    unit: Unit,
    changed: Sequence[str],
    parts: Parts | None = None,
) -> int:
    """Bring ``unit``'s index in line with its source table: drop the rows of keys that
    are ``changed`` or gone, then index the changed keys and every source row not indexed
    yet. Returns how many rows were (re)indexed. Run inside the caller's transaction.

    With ``parts``, the rows it names (``Parts.keys``) are not tokenized again: their
    postings are summed from their parts' postings (see :class:`Parts`), which must be up
    to date. The result is the same as tokenizing them."""
    new_frequencies = _create_unit_tables(conn, unit)
    # Which rows to drop and to index is decided on keys alone; then only those rows are
    # touched, so one change does not read every row's text or scan the postings for
    # keys that are gone.
    gone = conn.execute(
        f"SELECT key FROM {unit.lengths} WHERE key NOT IN (SELECT {unit.key} FROM {unit.source})"
    ).fetchall()
    drop = sorted({*changed, *(r[0] for r in gone)})
    conn.execute("CREATE OR REPLACE TEMP TABLE _bm25_touched (termid INTEGER)")
    # Frequencies follow the terms of the rows dropped (the postings' delete returns them)
    # and indexed; when many rows go or come, every term is counted again instead.
    rows = conn.execute(f"SELECT count(*) FROM {unit.lengths}").fetchone()[0]
    recount_all = new_frequencies or len(drop) * 8 > rows
    if drop:
        gone_sql = f"DELETE FROM {unit.postings} WHERE key IN (SELECT unnest(?::VARCHAR[]))"
        if recount_all:
            conn.execute(gone_sql, [drop])
        else:
            terms = {r[0] for r in conn.execute(f"{gone_sql} RETURNING termid", [drop]).fetchall()}
            conn.execute("INSERT INTO _bm25_touched SELECT unnest(?::INTEGER[])", [sorted(terms)])
        conn.execute(
            f"DELETE FROM {unit.lengths} WHERE key IN (SELECT unnest(?::VARCHAR[]))", [drop]
        )
    keys = [
        r[0]
        for r in conn.execute(
            f"SELECT {unit.key} FROM {unit.source} "
            f"WHERE {unit.key} NOT IN (SELECT key FROM {unit.lengths})"
        ).fetchall()
    ]
    indexed = _index_rows(conn, unit, keys, parts)
    _recount_frequencies(conn, unit, recount_all or len(keys) * 8 > rows)
    return indexed


def rows_to_retokenize(conn: duckdb.DuckDBPyConnection, unit: Unit) -> list[str]:
    """Keys of ``unit``'s indexed rows that this tokenizer splits differently from the one
    the store indexed them with (their text holds Chinese or Japanese characters), when
    the store names another (see :data:`TOKENIZER`); none when it names this one. Pass them
    to :func:`update` as changed, then :func:`mark_tokenizer`."""
    if not _columns(conn, unit.lengths):
        return []
    if _columns(conn, TOKENIZER_TABLE):
        stored = conn.execute(f"SELECT name FROM {TOKENIZER_TABLE}").fetchone()
        if stored is not None and stored[0] == TOKENIZER:
            return []
    text = " || ' ' || ".join(f"coalesce({f}, '')" for f in unit.fields)
    rows = conn.execute(
        f"SELECT {unit.key} FROM {unit.source} "
        f"WHERE regexp_matches({text}, '[{CJK_CHARACTERS}{CJK_PUNCTUATION}]') "
        f"AND {unit.key} IN (SELECT key FROM {unit.lengths}) ORDER BY {unit.key}"
    ).fetchall()
    return [r[0] for r in rows]


def mark_tokenizer(conn: duckdb.DuckDBPyConnection) -> None:
    """Record that the store's indexes are tokenized by :data:`TOKENIZER`."""
    conn.execute(f"CREATE TABLE IF NOT EXISTS {TOKENIZER_TABLE} (name VARCHAR NOT NULL)")
    conn.execute(f"DELETE FROM {TOKENIZER_TABLE}")
    conn.execute(f"INSERT INTO {TOKENIZER_TABLE} VALUES (?)", [TOKENIZER])


def _recount_frequencies(conn: duckdb.DuckDBPyConnection, unit: Unit, everything: bool) -> None:
    """Count again from the postings the document frequency of every term in
    ``_bm25_touched`` (terms of rows dropped or indexed), or of every term, and drop that
    table."""
    touched = "(SELECT DISTINCT termid FROM _bm25_touched)"
    if everything:
        conn.execute(f"DELETE FROM {unit.frequencies}")
        conn.execute(
            f"INSERT INTO {unit.frequencies} SELECT termid, count(*) FROM {unit.postings} "
            "GROUP BY termid"
        )
    elif conn.execute("SELECT count(*) FROM _bm25_touched").fetchone()[0]:
        conn.execute(f"DELETE FROM {unit.frequencies} WHERE termid IN {touched}")
        conn.execute(
            f"INSERT INTO {unit.frequencies} SELECT termid, count(*) FROM {unit.postings} "
            f"WHERE termid IN {touched} GROUP BY termid"
        )
    conn.execute("DROP TABLE _bm25_touched")


def _index_rows(
    conn: duckdb.DuckDBPyConnection, unit: Unit, keys: list[str], parts: Parts | None
) -> int:
    """Index the rows ``keys`` of ``unit``'s source (see :func:`update`) and add their
    terms to ``_bm25_touched``."""
    if not keys:
        return 0
    text = " || ' ' || ".join(f"coalesce({f}, '')" for f in unit.fields)
    conn.execute(
        f"""
        CREATE OR REPLACE TEMP TABLE _bm25_rows AS
        SELECT {unit.key} AS key, kind, {text} AS text FROM {unit.source}
        WHERE {unit.key} IN (SELECT unnest(?::VARCHAR[]))
        """,
        [keys],
    )
    todo = len(keys)
    if parts is not None and parts.keys:
        _derive(conn, unit, parts)
        if not conn.execute("SELECT count(*) FROM _bm25_rows").fetchone()[0]:
            conn.execute("DROP TABLE _bm25_rows")
            return int(todo)
    _add_terms(conn, "_bm25_terms", "SELECT key, text AS s, 1 AS weight FROM _bm25_rows")
    conn.execute(
        f"""
        INSERT INTO {unit.lengths}
        SELECT r.key, r.kind, coalesce(sum(t.tf), 0)::INTEGER
        FROM _bm25_rows r LEFT JOIN _bm25_terms t ON t.key = r.key
        GROUP BY r.key, r.kind
        """
    )
    conn.execute(
        f"""
        INSERT INTO {unit.postings}
        SELECT v.termid, t.key, l.kind, t.tf, l.len
        FROM _bm25_terms t JOIN {VOCAB_TABLE} v ON v.term = t.term
        JOIN {unit.lengths} l ON l.key = t.key
        """
    )
    conn.execute(
        f"INSERT INTO _bm25_touched SELECT DISTINCT v.termid FROM _bm25_terms t "
        f"JOIN {VOCAB_TABLE} v ON v.term = t.term"
    )
    conn.execute("DROP TABLE _bm25_terms")
    conn.execute("DROP TABLE _bm25_rows")
    return int(todo)


def _sharded(conn: duckdb.DuckDBPyConnection, texts: str) -> str:
    """``texts`` (a query with a ``key`` column) as the UNION ALL of one share of its rows
    per DuckDB thread. DuckDB scans a table on one thread per row group (122,880 rows), so
    the tokenizer would run on one core over the few thousand long passages of a build;
    each branch of a UNION ALL is a pipeline of its own, and they run side by side."""
    threads = int(conn.execute("SELECT current_setting('threads')").fetchone()[0])
    shards = max(1, min(threads, _MAX_SHARDS))
    if shards == 1:
        return texts
    return " UNION ALL ".join(
        f"SELECT * FROM ({texts}) WHERE hash(key) % {shards} = {i}" for i in range(shards)
    )


def _add_terms(conn: duckdb.DuckDBPyConnection, table: str, texts: str) -> None:
    """Create the temporary ``table(key, term, tf)``: the stemmed terms of the texts that
    the query ``texts`` selects as ``(key, s, weight)``, each occurrence counted ``weight``
    times; and add the terms the vocabulary lacks."""
    conn.execute(
        f"""
        CREATE OR REPLACE TEMP TABLE {table} AS
        WITH words AS MATERIALIZED (
            SELECT key, weight, w, count(*) AS n FROM (
                SELECT key, weight, unnest(selene_tokenize(s)) AS w
                FROM ({_sharded(conn, texts)})
            ) WHERE w <> '' AND w NOT IN (SELECT sw FROM {STOPWORDS_TABLE})
            GROUP BY key, weight, w
        ), stems AS MATERIALIZED (
            -- each distinct word is stemmed once, not once per occurrence
            SELECT w, stem(w, 'porter') AS term FROM (SELECT DISTINCT w FROM words)
        )
        SELECT words.key, stems.term, sum(words.weight * words.n)::INTEGER AS tf
        FROM words JOIN stems USING (w)
        GROUP BY words.key, stems.term
        """
    )
    conn.execute(
        f"""
        INSERT INTO {VOCAB_TABLE}
        SELECT (SELECT coalesce(max(termid), -1) FROM {VOCAB_TABLE})
               + row_number() OVER (ORDER BY term), term
        FROM (SELECT DISTINCT term FROM {table}) t
        WHERE term NOT IN (SELECT term FROM {VOCAB_TABLE})
        """
    )


# What the tokenizer splits words on: RE2's \s, and the characters the macro turns into
# spaces. A cut between two parts is harmless to words when one side of it is one of these.
_SEPARATORS = frozenset(" \t\n\r\f0123456789!@#$%^&*()_+={}[]:;<>,.?~\\/|'\"`-")


def split_words(text: str, spans: Sequence[tuple[int, int]]) -> list[tuple[str, ...]] | None:
    """How the ``[start, end)`` spans of ``text`` (in order) split its words: None when they
    overlap or leave out anything but blanks (in the tokenizer's sense), else each word that
    a cut falls inside, as its pieces in span order. With none, the words of ``text`` are
    exactly those of its spans, one after the other."""
    blank = " \t\n\r\f"
    previous = 0
    cuts: list[int] = []
    for start, end in spans:
        if start < previous or end < start:
            return None
        if any(c not in blank for c in text[previous:start]):
            return None
        joined = start == previous and 0 < start < len(text)
        if joined and text[start - 1] not in _SEPARATORS and text[start] not in _SEPARATORS:
            cuts.append(start)
        previous = end
    if any(c not in blank for c in text[previous:]):
        return None
    words: list[tuple[str, ...]] = []
    done = 0  # a word crossing several cuts is taken once
    for cut in cuts:
        if cut < done:
            continue
        first = cut
        while first > 0 and text[first - 1] not in _SEPARATORS:
            first -= 1
        last = cut
        while last < len(text) and text[last] not in _SEPARATORS:
            last += 1
        inside = [c for c in cuts if first < c < last]
        bounds = [first, *inside, last]
        words.append(tuple(text[x:y] for x, y in pairwise(bounds)))
        done = last
    return words


@dataclass(frozen=True)
class Parts:
    """Rows of a unit whose text is ``head`` + a space + a body that its parts cover
    (:func:`split_words` is not None); each part is indexed in ``unit`` with the text
    ``head`` + a space + the part. A row's term counts are then the sum of its parts'
    counts, less the head's counts once per part beyond the first (a row with no part:
    the head's counts), less the pieces of the words a cut splits, plus those words whole;
    its length likewise. ``table`` maps a part (``part_key``) to its row (``row_key``).
    ``keys`` are the rows to derive, ``split`` the words split in each (by key)."""

    unit: Unit
    table: str
    part_key: str
    row_key: str
    head: str
    keys: tuple[str, ...]
    split: dict[str, list[tuple[str, ...]]] = field(default_factory=dict)


def _derive(conn: duckdb.DuckDBPyConnection, unit: Unit, parts: Parts) -> None:
    """Index the rows of ``_bm25_rows`` that ``parts`` names from their parts' postings,
    and leave the others in ``_bm25_rows``."""
    keys = list(parts.keys)
    pieces = [" ".join(p for word in parts.split.get(k, []) for p in word) for k in keys]
    wholes = [" ".join("".join(word) for word in parts.split.get(k, [])) for k in keys]
    conn.execute(
        f"""
        CREATE OR REPLACE TEMP TABLE _bm25_derive AS
        WITH split AS (
            SELECT unnest(?) AS key, unnest(?) AS pieces, unnest(?) AS wholes
        )
        SELECT r.key, r.kind, coalesce(s.{parts.head}, '') AS head,
               (SELECT count(*) FROM {parts.table} p WHERE p.{parts.row_key} = r.key) AS n,
               split.pieces, split.wholes
        FROM _bm25_rows r JOIN {unit.source} s ON s.{unit.key} = r.key
        JOIN split ON split.key = r.key
        """,
        [keys, pieces, wholes],
    )
    conn.execute("DELETE FROM _bm25_rows WHERE key IN (SELECT key FROM _bm25_derive)")
    _add_terms(
        conn,
        "_bm25_head_terms",
        """
        SELECT key, head AS s, 1 - n AS weight FROM _bm25_derive
        UNION ALL SELECT key, pieces, -1 FROM _bm25_derive WHERE pieces <> ''
        UNION ALL SELECT key, wholes, 1 FROM _bm25_derive WHERE wholes <> ''
        """,
    )
    conn.execute(
        f"""
        CREATE OR REPLACE TEMP TABLE _bm25_derived AS
        WITH part_terms AS (
            SELECT p.{parts.row_key} AS key, pp.termid, sum(pp.tf) AS tf
            FROM {parts.unit.postings} pp JOIN {parts.table} p ON p.{parts.part_key} = pp.key
            WHERE p.{parts.row_key} IN (SELECT key FROM _bm25_derive)
            GROUP BY p.{parts.row_key}, pp.termid
        ), head_terms AS (
            SELECT h.key, v.termid, h.tf FROM _bm25_head_terms h
            JOIN {VOCAB_TABLE} v ON v.term = h.term
        )
        SELECT d.key, d.kind, t.termid,
               (coalesce(t.part_tf, 0) + coalesce(t.head_tf, 0))::INTEGER AS tf
        FROM (
            SELECT coalesce(pt.key, ht.key) AS key, coalesce(pt.termid, ht.termid) AS termid,
                   pt.tf AS part_tf, ht.tf AS head_tf
            FROM part_terms pt FULL OUTER JOIN head_terms ht
              ON pt.key = ht.key AND pt.termid = ht.termid
        ) t JOIN _bm25_derive d ON d.key = t.key
        """
    )
    conn.execute("DELETE FROM _bm25_derived WHERE tf <= 0")
    conn.execute(
        f"""
        INSERT INTO {unit.lengths}
        SELECT d.key, d.kind, coalesce(sum(t.tf), 0)::INTEGER
        FROM _bm25_derive d LEFT JOIN _bm25_derived t ON t.key = d.key
        GROUP BY d.key, d.kind
        """
    )
    conn.execute(
        f"""
        INSERT INTO {unit.postings}
        SELECT t.termid, t.key, t.kind, t.tf, l.len
        FROM _bm25_derived t JOIN {unit.lengths} l ON l.key = t.key
        """
    )
    conn.execute("INSERT INTO _bm25_touched SELECT DISTINCT termid FROM _bm25_derived")
    for table in ("_bm25_derived", "_bm25_head_terms", "_bm25_derive"):
        conn.execute(f"DROP TABLE {table}")


def term_ids(conn: duckdb.DuckDBPyConnection, text: str) -> list[int]:
    """Vocabulary ids of the stemmed words of ``text`` (stopwords and words never indexed
    have none), sorted. Needs :func:`prepare_query` and the ``fts`` extension on ``conn``."""
    rows = conn.execute(
        f"SELECT DISTINCT termid FROM {VOCAB_TABLE} WHERE term IN "
        "(SELECT stem(unnest(selene_tokenize(?)), 'porter'))",
        [text],
    ).fetchall()
    return sorted(int(r[0]) for r in rows)


# 2^40: a term's part of a score (under 25 even for a billion rows) times this stays below
# 2^48, so the 32 terms of a question add up exactly in a double; the rounding moves a
# score by at most 32 × 2^-41 (1.5e-11).
_SCALE = float(2**40)
# The constants of a term's part of a score, as doubles: the query and the in-memory
# scoring (``resident``) compute the same double operations in the same order, so both
# give the same scores to the last bit.
TERM_PARAMETERS = (BM25_K + 1, BM25_K, 1 - BM25_B, BM25_B, _SCALE)


def idf(rows: int, df: int) -> float:
    """A term's weight in a score: ``log10((N - df + 0.5) / (df + 0.5) + 1)``, the double
    the top query computes for it."""
    return math.log10((float(rows - df) + 0.5) / (df + 0.5) + 1.0)


def top(
    conn: duckdb.DuckDBPyConnection,
    unit: Unit,
    ids: Sequence[int],
    kinds: Sequence[str],
    limit: int,
) -> list[tuple[str, float]]:
    """The ``limit`` best rows of ``unit`` of the given ``kinds`` for the term ids ``ids``
    as ``(key, score)``, best first (ties by key); the score is ``match_bm25``'s to
    1.5e-11. Empty when ``ids`` is."""
    # Document frequencies are counted from the matching postings, not read from the
    # frequencies table: the scan that finds them is needed anyway, and joining the table
    # measured slower. Each term's part of a score is rounded to a multiple of 1/_SCALE
    # before the sum: a parallel sum of doubles depends on the order the threads add them
    # in, and near-equal scores (copies of one note) then swapped places from one run to
    # the next; sums of such multiples are exact, whatever the order.
    if not ids:
        return []
    rows = conn.execute(
        f"""
WITH st AS (SELECT count(*) AS n, avg(len) AS avgdl FROM {unit.lengths}),
p AS MATERIALIZED (SELECT termid, key, kind, tf, len FROM {unit.postings}
                   WHERE list_contains($1, termid)),
df AS (SELECT termid, count(*) AS df FROM p GROUP BY termid)
SELECT p.key, sum(round(
    log10((st.n - df.df + 0.5::DOUBLE) / (df.df + 0.5::DOUBLE) + 1.0::DOUBLE)
    * ((p.tf * $4) / (p.tf + $5 * ($6 + $7 * (p.len / st.avgdl))))
    * $8
)) / $8 AS score
FROM p JOIN df USING (termid) CROSS JOIN st
WHERE list_contains($2, p.kind)
GROUP BY p.key ORDER BY score DESC, p.key LIMIT $3
""",
        [list(ids), list(kinds), limit, *TERM_PARAMETERS],
    ).fetchall()
    return [(str(key), float(score)) for key, score in rows]


def stopwords_among(conn: duckdb.DuckDBPyConnection, words: Sequence[str]) -> set[str]:
    """The ``words`` the index leaves out as too common (its English stopwords: "across",
    "best", which a question may hold and no document is searched for)."""
    if not words or not _columns(conn, STOPWORDS_TABLE):
        return set()
    rows = conn.execute(
        f"SELECT w FROM (SELECT unnest(?) AS w) WHERE lower(w) IN (SELECT sw FROM {STOPWORDS_TABLE})",
        [list(words)],
    ).fetchall()
    return {str(r[0]) for r in rows}


def document_frequencies(
    conn: duckdb.DuckDBPyConnection, unit: Unit, words: Sequence[str]
) -> tuple[list[tuple[str, int]], int]:
    """``(word, rows containing its stem)`` for each of ``words``, and the number of rows
    of ``unit`` (BM25's N). A word is looked up as the index holds it: accents stripped
    ('café' was in no document though notes hold "Café")."""
    rows = conn.execute(
        f"""
        SELECT w.word, coalesce(sum(f.df), 0) FROM (SELECT unnest(?) AS word) w
        LEFT JOIN {VOCAB_TABLE} v ON v.term = stem(lower(strip_accents(w.word)), 'porter')
        LEFT JOIN {unit.frequencies} f ON f.termid = v.termid
        GROUP BY w.word
        """,
        [list(words)],
    ).fetchall()
    n = conn.execute(f"SELECT count(*) FROM {unit.lengths}").fetchone()[0]
    return [(str(w), int(df)) for w, df in rows], int(n)
