"""The full-text index over notes and session chunks (DuckDB ``fts`` extension).

The extension ships in the ``duckdb-extension-fts`` wheel (machines have no extension
download), so it is loaded from that package's folder. ``build_index`` rewrites the
``search_docs`` table from live notes and scored chunks and creates a BM25 index over
``title`` and ``body``; ``corpus_version`` is a cheap content hash of everything the index
is built from, stored at build time, so ``index_is_stale`` is one query.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from functools import cache
from pathlib import Path

import duckdb

from selene_dag.paths import transform_sql
from selene_dag.store import execute_script

DOCS_TABLE = "search_docs"
FTS_SCHEMA = f"fts_main_{DOCS_TABLE}"


class SearchIndexError(RuntimeError):
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


def load_fts(conn: duckdb.DuckDBPyConnection) -> None:
    """Load the ``fts`` extension into ``conn`` from the wheel (no network)."""
    path = fts_extension_path()
    try:
        conn.execute(f"LOAD '{path.as_posix()}'")
    except duckdb.Error as exc:
        raise SearchIndexError(f"cannot load the DuckDB fts extension from {path}: {exc}") from exc


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
       c.id || '|' || c.token_count || '|' || md5(c.text) || '|' || c.importance_avg || '|' ||
       coalesce(s.consensus, -1) || '|' || f.path, ',' ORDER BY c.id)), '')
     FROM chunks c JOIN session_files f ON f.session_key = c.session_key
     LEFT JOIN chunk_scores s ON s.chunk_id = c.id AND s.session_key = c.session_key)
"""


def corpus_version(conn: duckdb.DuckDBPyConnection) -> str:
    """Content hash of the live notes (text, essence, tier) and chunks (text, scores)."""
    return str(conn.execute(_VERSION_SQL).fetchone()[0])


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


def index_exists(conn: duckdb.DuckDBPyConnection) -> bool:
    """True when the BM25 index schema exists in this database."""
    row = conn.execute(
        "SELECT count(*) FROM duckdb_schemas() WHERE schema_name = ?", [FTS_SCHEMA]
    ).fetchone()
    return bool(row[0])


@dataclass(frozen=True)
class BuildResult:
    """Counts of an index build and the corpus version it was built from."""

    notes: int
    chunks: int
    corpus_version: str

    @property
    def documents(self) -> int:
        """Notes plus chunks indexed."""
        return self.notes + self.chunks


def build_index(conn: duckdb.DuckDBPyConnection, now: datetime) -> BuildResult:
    """Rewrite ``search_docs`` and its BM25 index (porter stemmer, English stopwords).

    The documents and the stored version change in one transaction; the FTS index is
    rebuilt right after (``overwrite=1``).
    """
    load_fts(conn)
    version = corpus_version(conn)
    conn.execute("BEGIN TRANSACTION")
    try:
        execute_script(conn, transform_sql("search_docs"))
        conn.execute(
            f"PRAGMA create_fts_index('{DOCS_TABLE}', 'doc_id', 'title', 'body', "
            "stemmer='porter', stopwords='english', strip_accents=1, lower=1, overwrite=1)"
        )
        notes, chunks = conn.execute(
            f"SELECT count(*) FILTER (kind = 'note'), count(*) FILTER (kind = 'chunk') "
            f"FROM {DOCS_TABLE}"
        ).fetchone()
        conn.execute(
            "INSERT OR REPLACE INTO search_index_meta VALUES (1, ?, ?, ?)",
            [version, notes + chunks, now],
        )
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return BuildResult(int(notes), int(chunks), version)
