"""The full-text index over notes and session chunks (DuckDB ``fts`` extension).

The extension ships in the ``duckdb-extension-fts`` wheel (machines have no extension
download), so it is loaded from that package's folder for its porter stemmer. ``build_index``
rewrites the ``search_docs`` table from live notes and scored chunks and brings a BM25 index
over ``title`` and ``body`` up to date (:mod:`.bm25`: ``match_bm25``'s scores, kept in our
own tables so only changed documents are re-indexed); ``corpus_version`` is a cheap content
hash of everything the index is built from, stored at build time, so ``index_is_stale`` is
one query. ``search_doc_tokens`` holds each document's header and body token counts in the
default model's tokens, for ask's planning (the final pack is always counted).

Passages, ask's retrieval unit, are rewritten with them: ``search_passages`` holds every
document cut along its structure (``passages.cut_passages``) with its title, char span and
token count, under a BM25 index of its own (title + text); ``passage_embeddings`` holds one
unit vector per distinct passage content hash and is only added to (and pruned), so a
rebuild embeds only passages it has not seen.

A rebuild keeps the token counts, passages, BM25 postings and vectors of every document
whose citation, title and body are unchanged (same model, same passage cutting code): one
edited note costs the counting, cutting, indexing and embedding of that note alone.
"""

from __future__ import annotations

import hashlib
import inspect
import weakref
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from pathlib import Path

import duckdb

from selene_dag.context.tokens import count_tiled, count_tokens_batch, default_model
from selene_dag.errors import SeleneError
from selene_dag.notes.token_store import StoredCounts
from selene_dag.paths import transform_sql
from selene_dag.retrieval import bm25
from selene_dag.retrieval import passages as passages_module
from selene_dag.retrieval.embed import EMBED_MODEL, embed_texts
from selene_dag.retrieval.passages import cut_passages
from selene_dag.store import execute_script, transaction
from selene_dag.text import content_hash

# pandas is imported where frames are built: the Dagster definitions load without it.

DOCS_TABLE = "search_docs"
POSTINGS_TABLE = "search_postings"
DOC_TOKENS_TABLE = "search_doc_tokens"
PASSAGES_TABLE = "search_passages"
PASSAGE_POSTINGS_TABLE = "search_passage_postings"
EMBEDDINGS_TABLE = "passage_embeddings"
DOCS_BM25 = bm25.Unit(
    DOCS_TABLE,
    "doc_id",
    ("title", "body"),
    POSTINGS_TABLE,
    "search_doc_lengths",
    "search_doc_frequencies",
)
PASSAGES_BM25 = bm25.Unit(
    PASSAGES_TABLE,
    "passage_id",
    ("title", "text"),
    PASSAGE_POSTINGS_TABLE,
    "search_passage_lengths",
    "search_passage_frequencies",
)
# How a document's passages make up its BM25 text (``bm25.Parts`` without its keys).
_PASSAGE_PARTS = (PASSAGES_BM25, PASSAGES_TABLE, "passage_id", "doc_id", "title")
# The fts indexes of earlier layouts, dropped by the next build.
_OLD_FTS_SCHEMAS = (f"fts_main_{DOCS_TABLE}", f"fts_main_{PASSAGES_TABLE}")
# Bumped whenever the derived tables change shape or meaning.
INDEX_LAYOUT = 7  # 7: Chinese and Japanese characters are words (bm25.TOKENIZER)
# Documents per tokenizer batch when counting at build time (bounds memory).
_COUNT_BATCH = 512


class SearchIndexError(SeleneError, RuntimeError):
    """The full-text index cannot be built or used (missing extension, no index yet)."""


@cache
def fts_extension_path() -> Path:
    """Path of ``fts.duckdb_extension`` for the installed DuckDB, from the wheel.

    Raises SearchIndexError naming the package to install when it is missing.
    """
    version = f"v{duckdb.__version__}"
    try:
        import duckdb_extension_fts
    except ImportError as exc:
        raise SearchIndexError(
            "the DuckDB full-text extension is missing: install the 'duckdb-extension-fts' "
            f"package matching duckdb {duckdb.__version__}"
        ) from exc
    base = Path(duckdb_extension_fts.__file__).resolve().parent / "extensions"
    path = base / version / "fts.duckdb_extension"
    if not path.is_file():
        found = sorted(p.name for p in base.iterdir()) if base.is_dir() else []
        raise SearchIndexError(
            f"duckdb-extension-fts has no build for duckdb {duckdb.__version__} "
            f"(found: {', '.join(found) or 'none'}); install the matching version"
        )
    return path


# Connections that loaded the extension already (a LOAD again costs about 1 ms, three
# times in every ask).
_FTS_LOADED: weakref.WeakSet[duckdb.DuckDBPyConnection] = weakref.WeakSet()


def load_fts(conn: duckdb.DuckDBPyConnection) -> None:
    """Load the ``fts`` extension into ``conn`` from the wheel (no network); once per
    connection."""
    if conn in _FTS_LOADED:
        return
    path = fts_extension_path()
    try:
        conn.execute(f"LOAD '{path.as_posix()}'")
    except duckdb.Error as exc:
        raise SearchIndexError(f"cannot load the DuckDB fts extension from {path}: {exc}") from exc
    _FTS_LOADED.add(conn)


# Everything a document's text or static score comes from; last_accessed_at is left out on
# purpose: ask stamps it, and that must not make the index stale.
_VERSION_SQL = """
SELECT
  (SELECT count(*) || ':' || coalesce(md5(string_agg(
       n.id || '|' || n.content_hash || '|' || n.updated_at || '|' ||
       coalesce(p.essence, '') || '|' || coalesce(p.fidelity_tier, ''), ',' ORDER BY n.id)), '')
     FROM notes n LEFT JOIN processed_notes p ON p.note_id = n.id
     WHERE n.deleted_at IS NULL AND NOT n.test_run)
  || '/' ||
  (SELECT count(*) || ':' || coalesce(md5(string_agg(
       c.id || '|' || c.token_count || '|' || coalesce(c.text_hash, md5(c.text)) || '|' ||
       c.importance_avg || '|' ||
       coalesce(s.consensus, -1) || '|' || f.path, ',' ORDER BY c.id)), '')
     FROM chunks c JOIN session_files f ON f.session_key = c.session_key
     LEFT JOIN chunk_scores s ON s.chunk_id = c.id AND s.session_key = c.session_key)
"""
_VERSION_SQL_UNMIGRATED = _VERSION_SQL.replace("coalesce(c.text_hash, md5(c.text))", "md5(c.text)")


def corpus_version(conn: duckdb.DuckDBPyConnection) -> str:
    """Content hash of the live notes (text, essence, tier) and chunks (text, scores),
    prefixed by the index layout version (a new layout makes every stored index stale)."""
    try:
        version = conn.execute(_VERSION_SQL).fetchone()[0]
    except duckdb.BinderException:
        # A store not migrated yet (read through a read-only connection) has no stored
        # hashes: the texts are hashed here, giving the same version.
        version = conn.execute(_VERSION_SQL_UNMIGRATED).fetchone()[0]
    return f"i{INDEX_LAYOUT}:" + str(version)


@dataclass(frozen=True)
class IndexState:
    """What the stored index was built from, next to the corpus now."""

    built_version: str | None
    current_version: str
    documents: int
    built_at: datetime | None

    @property
    def stale(self) -> bool:
        """True when the index was never built or its corpus changed since."""
        return self.built_version != self.current_version


def index_state(conn: duckdb.DuckDBPyConnection) -> IndexState:
    """Compare the version stored at build time with the corpus now (one cheap query)."""
    row = conn.execute(
        "SELECT corpus_version, documents, built_at FROM search_index_meta WHERE id = 1"
    ).fetchone()
    current = corpus_version(conn)
    if row is None:
        return IndexState(None, current, 0, None)
    return IndexState(row[0], current, int(row[1]), row[2])


def index_is_stale(conn: duckdb.DuckDBPyConnection) -> bool:
    """True when ``search_index`` must be rebuilt before searching."""
    return index_state(conn).stale


_BUILD_KEY_SQL = (
    "SELECT (SELECT coalesce(path, database_name) FROM duckdb_databases() "
    "WHERE database_name = current_database()), "
    "(SELECT corpus_version || '@' || built_at FROM search_index_meta WHERE id = 1)"
)


def build_key(conn: duckdb.DuckDBPyConnection) -> tuple[str, str]:
    """Which build of which index ``conn`` reads: its database's path and the stored
    corpus version and build time. What a process keeps of an index (the passage matrix,
    postings in memory) is kept under this key, so a rebuild is never served stale."""
    path, build = conn.execute(_BUILD_KEY_SQL).fetchone()
    return str(path), str(build)


def index_exists(conn: duckdb.DuckDBPyConnection) -> bool:
    """True when both BM25 indexes (documents, passages) and the token counts exist in this
    database in the current shape (an index built by an older version counts as missing)."""
    tables = (
        POSTINGS_TABLE,
        DOCS_BM25.lengths,
        PASSAGE_POSTINGS_TABLE,
        PASSAGES_BM25.lengths,
        DOCS_BM25.frequencies,
        PASSAGES_BM25.frequencies,
        DOC_TOKENS_TABLE,
        bm25.VOCAB_TABLE,
    )
    row = conn.execute(
        "SELECT count(*) FROM duckdb_columns() WHERE schema_name = 'main' "
        "AND list_contains(?, table_name) AND column_name = 'len'",
        [list(tables)],
    ).fetchone()
    found = conn.execute(
        "SELECT count(*) FROM duckdb_tables() WHERE schema_name = 'main' "
        "AND list_contains(?, table_name)",
        [list(tables)],
    ).fetchone()
    return row[0] == 4 and found[0] == len(tables)


@dataclass(frozen=True)
class BuildResult:
    """Counts of an index build and the corpus version it was built from."""

    notes: int
    chunks: int
    corpus_version: str
    passages: int = 0
    embedded: int = 0  # passages whose vector was computed by this build (new content)
    counted: int = 0  # documents counted and cut by this build (new or changed)
    derived: int = 0  # of those, documents whose count came from their passages' counts

    @property
    def documents(self) -> int:
        """Notes plus chunks indexed."""
        return self.notes + self.chunks


def header_text(citation: str, title: str) -> str:
    """The ``[citation] title`` header every pack item starts with (as ``LevelItem.header``)."""
    return f"[{citation}] {title}" if title else f"[{citation}]"


# Each row's content_key (md5 of citation, title and body) is written by the search_docs
# transform, so no unchanged document's text is read or hashed here.
_DOC_KEY_SQL = f"SELECT doc_id, content_key FROM {DOCS_TABLE}"
_DOC_TOKENS_COLUMNS = ("doc_id", "model", "header_tokens", "body_tokens", "content_key", "recipe")


@cache
def cut_recipe() -> str:
    """A hash of the passage-cutting code: stored counts and passages are reused only by a
    build with the same model and the same cutting code."""
    return hashlib.sha256(inspect.getsource(passages_module).encode()).hexdigest()[:12]


def _fresh_documents(conn: duckdb.DuckDBPyConnection, model: str) -> list[str]:
    """Keep ``search_doc_tokens`` rows of documents whose citation, title and body are
    unchanged (same model and cutting code), drop the rest; return the ids of the documents
    left to count and cut, sorted."""
    recipe = f"{model}|{cut_recipe()}"
    columns = tuple(
        r[0]
        for r in conn.execute(
            "SELECT column_name FROM duckdb_columns() WHERE schema_name = 'main' "
            "AND table_name = ? ORDER BY column_index",
            [DOC_TOKENS_TABLE],
        ).fetchall()
    )
    if columns != _DOC_TOKENS_COLUMNS:
        conn.execute(f"DROP TABLE IF EXISTS {DOC_TOKENS_TABLE}")
        conn.execute(
            f"CREATE TABLE {DOC_TOKENS_TABLE} (doc_id VARCHAR PRIMARY KEY, model VARCHAR NOT "
            "NULL, header_tokens INTEGER NOT NULL, body_tokens INTEGER NOT NULL, "
            "content_key VARCHAR NOT NULL, recipe VARCHAR NOT NULL)"
        )
    conn.execute(f"CREATE OR REPLACE TEMP TABLE _doc_keys AS {_DOC_KEY_SQL}")
    conn.execute(
        f"DELETE FROM {DOC_TOKENS_TABLE} t WHERE t.recipe <> ? OR NOT EXISTS (SELECT 1 FROM "
        "_doc_keys k WHERE k.doc_id = t.doc_id AND k.content_key = t.content_key)",
        [recipe],
    )
    rows = conn.execute(
        f"SELECT doc_id FROM _doc_keys WHERE doc_id NOT IN (SELECT doc_id FROM "
        f"{DOC_TOKENS_TABLE}) ORDER BY doc_id"
    ).fetchall()
    return [r[0] for r in rows]


def _write_doc_tokens(
    conn: duckdb.DuckDBPyConnection, model: str, fresh: list[str], derived: dict[str, int]
) -> None:
    """Store the header and body counts of the ``fresh`` documents; ``derived``: bodies
    counted from their passages' counts (``count_tiled``), not tokenized again."""
    recipe = f"{model}|{cut_recipe()}"
    # Bodies go through token_counts: a note's content is also counted by the health
    # figures, and whichever step comes first counts it for both.
    stored = StoredCounts(conn, model)
    for at in range(0, len(fresh), _COUNT_BATCH):
        rows = conn.execute(
            f"SELECT d.doc_id, d.citation, d.title, d.body, k.content_key FROM {DOCS_TABLE} d "
            "JOIN _doc_keys k USING (doc_id) WHERE list_contains(?, d.doc_id) ORDER BY d.doc_id",
            [fresh[at : at + _COUNT_BATCH]],
        ).fetchall()
        headers = count_tokens_batch([header_text(r[1], r[2]) for r in rows], model)
        bodies = stored([r[3] for r in rows], [derived.get(r[0]) for r in rows])
        conn.execute(
            f"INSERT INTO {DOC_TOKENS_TABLE} SELECT unnest(?), ?, unnest(?), unnest(?), "
            "unnest(?), ?",
            [[r[0] for r in rows], model, headers, bodies, [r[4] for r in rows], recipe],
        )


def passage_text(title: str, text: str) -> str:
    """What a passage is embedded as: its document's title, a newline, its text."""
    return f"{title}\n{text}" if title else text


def _write_passages(
    conn: duckdb.DuckDBPyConnection, model: str, fresh: list[str]
) -> tuple[int, dict[str, list[tuple[str, ...]]], dict[str, int]]:
    """Cut and count the passages of the ``fresh`` documents (and of any document that has
    none stored); drop the passages of documents changed or gone. Returns how many passages
    the index holds; the documents cut here whose passages hold all their text, with the
    words their cuts split (``bm25.split_words``): their BM25 postings can be summed from
    their passages'; and the body counts derived from the passages' (``count_tiled``)."""
    import pandas as pd

    conn.execute(
        f"DELETE FROM {PASSAGES_TABLE} WHERE list_contains(?, doc_id) OR doc_id NOT IN "
        f"(SELECT doc_id FROM {DOCS_TABLE})",
        [fresh],
    )
    todo = sorted(
        set(fresh)
        | {
            r[0]
            for r in conn.execute(
                f"SELECT doc_id FROM {DOCS_TABLE} WHERE doc_id NOT IN "
                f"(SELECT DISTINCT doc_id FROM {PASSAGES_TABLE})"
            ).fetchall()
        }
    )
    covered: dict[str, list[tuple[str, ...]]] = {}
    derived: dict[str, int] = {}
    for at in range(0, len(todo), _COUNT_BATCH):
        rows = conn.execute(
            f"SELECT doc_id, kind, title, body FROM {DOCS_TABLE} WHERE list_contains(?, doc_id) "
            "ORDER BY doc_id",
            [todo[at : at + _COUNT_BATCH]],
        ).fetchall()
        out: list[tuple[str, str, str, int, str, str, int, int, str]] = []
        cuts: list[tuple[str, str, list[tuple[int, int]], int]] = []
        for doc_id, kind, title, body in rows:
            spans = cut_passages(body)
            cuts.append((doc_id, body, spans, len(out)))
            split = bm25.split_words(body, spans)
            if split is not None:
                covered[doc_id] = split
            for k, (a, b) in enumerate(spans):
                text = body[a:b]
                out.append(
                    (f"{doc_id}#{k}", doc_id, kind, k, title, text, a, b, content_hash(title, text))
                )
        if not out:
            continue
        tokens = count_tokens_batch([r[5] for r in out], model)
        for doc_id, body, spans, first in cuts:
            if spans:
                whole = count_tiled(body, spans, tokens[first : first + len(spans)], model)
                if whole is not None:
                    derived[doc_id] = whole
        frame = pd.DataFrame(
            out,
            columns=["passage_id", "doc_id", "kind", "ordinal", "title", "text", "a", "b", "h"],
        )
        frame["tokens"] = tokens
        conn.register("_passages_frame", frame)
        try:
            conn.execute(
                f"INSERT INTO {PASSAGES_TABLE} SELECT passage_id, doc_id, kind, ordinal, title, "
                "text, a, b, tokens, h FROM _passages_frame"
            )
        finally:
            conn.unregister("_passages_frame")
    count = int(conn.execute(f"SELECT count(*) FROM {PASSAGES_TABLE}").fetchone()[0])
    return count, covered, derived


def _passage_ids(conn: duckdb.DuckDBPyConnection, docs: list[str]) -> list[str]:
    """Ids of the passages of ``docs`` (their passages were cut again by this build)."""
    rows = conn.execute(
        f"SELECT passage_id FROM {PASSAGES_TABLE} WHERE list_contains(?, doc_id)", [docs]
    ).fetchall()
    return [r[0] for r in rows]


def _write_embeddings(conn: duckdb.DuckDBPyConnection) -> int:
    """Embed the passages whose content hash has no vector yet; drop vectors no passage
    uses any more. Returns how many were embedded."""
    import pandas as pd

    conn.execute(
        f"DELETE FROM {EMBEDDINGS_TABLE} WHERE model <> ? OR hash NOT IN "
        f"(SELECT hash FROM {PASSAGES_TABLE})",
        [EMBED_MODEL],
    )
    # The hashes to embed are found first, then only their passages' texts are read.
    hashes = conn.execute(
        f"SELECT DISTINCT hash FROM {PASSAGES_TABLE} "
        f"WHERE hash NOT IN (SELECT hash FROM {EMBEDDINGS_TABLE})"
    ).fetchall()
    if not hashes:
        return 0
    todo = conn.execute(
        f"SELECT hash, any_value(title), any_value(text) FROM {PASSAGES_TABLE} "
        "WHERE hash IN (SELECT unnest(?::VARCHAR[])) GROUP BY hash ORDER BY hash",
        [[r[0] for r in hashes]],
    ).fetchall()
    vectors = embed_texts([passage_text(title, text) for _, title, text in todo])
    frame = pd.DataFrame({"hash": [r[0] for r in todo], "vec": list(vectors)})
    conn.register("_embeddings_frame", frame)
    try:
        conn.execute(
            f"INSERT INTO {EMBEDDINGS_TABLE} SELECT hash, ?, vec::FLOAT[256] "
            "FROM _embeddings_frame",
            [EMBED_MODEL],
        )
    finally:
        conn.unregister("_embeddings_frame")
    return len(todo)


def build_index(
    conn: duckdb.DuckDBPyConnection, now: datetime, model: str | None = None
) -> BuildResult:
    """Rewrite ``search_docs``, bring its BM25 index (porter stemmer, English stopwords) and
    each document's token counts in ``model`` (default SELENE_MODEL) up to date; then the
    passages, their BM25 index and the embeddings of passages not embedded before. Only
    documents new or changed since the last build are counted, cut and indexed.

    The documents, derived tables and the stored version change in one transaction.
    """
    model = model or default_model()
    load_fts(conn)
    bm25.prepare(conn)
    version = corpus_version(conn)
    with transaction(conn):
        for schema in _OLD_FTS_SCHEMAS:
            conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
        execute_script(conn, transform_sql("search_docs"))
        fresh = _fresh_documents(conn, model)
        passages, covered, derived = _write_passages(conn, model, fresh)
        _write_doc_tokens(conn, model, fresh, derived)
        # Rows an older tokenizer split differently are indexed again (none once marked).
        again = bm25.rows_to_retokenize(conn, PASSAGES_BM25)
        bm25.update(conn, PASSAGES_BM25, _passage_ids(conn, fresh) + again)
        # A document whose passages hold all its text is indexed from their postings, so
        # its text is tokenized once, not twice.
        again = bm25.rows_to_retokenize(conn, DOCS_BM25)
        parts = bm25.Parts(*_PASSAGE_PARTS, tuple(covered), covered)
        bm25.update(conn, DOCS_BM25, sorted({*fresh, *again}), parts)
        bm25.mark_tokenizer(conn)
        embedded = _write_embeddings(conn)
        notes, chunks = conn.execute(
            f"SELECT count(*) FILTER (kind = 'note'), count(*) FILTER (kind = 'chunk') "
            f"FROM {DOCS_TABLE}"
        ).fetchone()
        # Stamped by the real clock, not ``now`` (SELENE_NOW may pin it): what processes
        # keep of an index (the passage matrix, in memory and in the cache folder) is keyed
        # by it, and two builds of one corpus for two models were one key on a pinned day.
        conn.execute(
            "INSERT OR REPLACE INTO search_index_meta VALUES (1, ?, ?, ?)",
            [version, notes + chunks, datetime.now(UTC)],
        )
    return BuildResult(
        int(notes),
        int(chunks),
        version,
        passages,
        embedded,
        len(fresh),
        sum(d in derived for d in fresh),
    )
