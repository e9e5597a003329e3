"""Content-addressed cache of model calls, in the DuckDB table ``llm_cache`` (migration 002).

The key is sha256 over the canonical JSON of (engine, model, task, recipe, input), where the
recipe is the prompt template's ``name@version:sha`` (or an extractive algorithm version), so
changing the engine, the model, the prompt or the input misses; anything else hits and makes
no call.

Every put is written through a cursor of its own (a separate DuckDB connection to the same
database) in autocommit mode: it is committed at once, independently of any transaction the
caller holds, so a crash or a server that goes down mid-run loses nothing already computed.
A long loop of cheap calls (the extractive engine over 10,000 notes) uses ``deferred()``:
entries are written together at each ``flush()``, which the loop calls where it commits.
With ``conn=None`` the cache is a plain in-memory dict (for pure use and tests).
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import duckdb
import orjson


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and no whitespace: the same value always gives the same text.
    Raises ValueError for a text holding a lone surrogate, TypeError for a value JSON
    cannot hold."""
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS).decode()
    except TypeError as exc:
        if "not valid UTF-8" in str(exc):  # a lone surrogate: the caller's text, not a type
            raise ValueError(
                "the text holds a lone surrogate: it is not valid Unicode; replace it first "
                "(text.encode('utf-8', 'replace').decode())"
            ) from None
        if "64-bit" in str(exc):  # an integer past 64 bits (a model's answer may hold one)
            return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        raise TypeError(f"cache input must be JSON-serializable: {exc}") from None


def cache_key(engine: str, model: str, task: str, recipe: str, payload: Any) -> str:
    """The sha256 hex key of one call."""
    parts = {"engine": engine, "model": model, "task": task, "recipe": recipe, "input": payload}
    return hashlib.sha256(canonical_json(parts).encode()).hexdigest()


@dataclass(frozen=True)
class CacheEntry:
    """What the cache keeps about one call (``output`` is the decoded JSON value)."""

    key: str
    engine: str
    model: str
    task: str
    recipe: str
    output: Any
    duration_ms: float | None = None
    prompt_tokens: int | None = None
    output_tokens: int | None = None


class LLMCache:
    """Get/put of call results; DuckDB-backed when given a connection, else in memory."""

    def __init__(self, conn: duckdb.DuckDBPyConnection | None = None) -> None:
        """Use ``conn``'s database (its ``llm_cache`` table must exist), or memory when None.

        Raises ValueError when the table is missing (open the file with
        ``selene_dag.store.connect``, which applies the migrations).
        """
        self._lock = threading.Lock()
        self._memory: dict[str, CacheEntry] = {}
        self._pending: dict[str, CacheEntry] = {}
        self._deferred = 0
        self._cursor: duckdb.DuckDBPyConnection | None = None
        if conn is not None:
            if not isinstance(conn, duckdb.DuckDBPyConnection):
                raise TypeError(f"cache connection must be a DuckDB connection, got {type(conn)}")
            _require_table(conn)
            self._cursor = conn.cursor()

    @property
    def persistent(self) -> bool:
        """True when entries go to DuckDB."""
        return self._cursor is not None

    def get(self, key: str) -> CacheEntry | None:
        """The entry stored under ``key``, or None."""
        with self._lock:
            if self._cursor is None:
                return self._memory.get(key)
            if key in self._pending:
                return self._pending[key]
            row = self._cursor.execute(
                "SELECT key, engine, model, task, recipe, output, duration_ms, prompt_tokens,"
                " output_tokens FROM llm_cache WHERE key = ?",
                [key],
            ).fetchone()
        if row is None:
            return None
        return CacheEntry(
            key=row[0],
            engine=row[1],
            model=row[2],
            task=row[3],
            recipe=row[4],
            output=orjson.loads(row[5]),
            duration_ms=row[6],
            prompt_tokens=row[7],
            output_tokens=row[8],
        )

    def put(self, entry: CacheEntry) -> None:
        """Store ``entry`` (replacing an equal key): committed at once, or at the next
        :meth:`flush` inside :meth:`deferred`."""
        with self._lock:
            if self._cursor is None:
                self._memory[entry.key] = entry
                return
            self._pending[entry.key] = entry
            if self._deferred:
                return
        self.flush()

    @contextmanager
    def deferred(self) -> Iterator[LLMCache]:
        """Within the block, entries are kept in memory (``get`` sees them) and written in
        one transaction by :meth:`flush` or at the end of the block: a commit per call
        costs more than a cheap computation it caches. A crash loses only entries not yet
        flushed (they are recomputed)."""
        with self._lock:
            self._deferred += 1
        try:
            yield self
        finally:
            with self._lock:
                self._deferred -= 1
            self.flush()

    def flush(self) -> int:
        """Write the entries kept by :meth:`deferred` in one transaction; returns how many."""
        with self._lock:
            if self._cursor is None or not self._pending:
                return 0
            rows = [
                (
                    e.key,
                    e.engine,
                    e.model,
                    e.task,
                    e.recipe,
                    canonical_json(e.output),
                    e.duration_ms,
                    e.prompt_tokens,
                    e.output_tokens,
                )
                for e in self._pending.values()
            ]
            self._cursor.execute("BEGIN TRANSACTION")
            try:
                self._cursor.executemany(
                    "INSERT OR REPLACE INTO llm_cache (key, engine, model, task, recipe, "
                    "output, duration_ms, prompt_tokens, output_tokens) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    rows,
                )
                self._cursor.execute("COMMIT")
            except BaseException:
                self._cursor.execute("ROLLBACK")
                raise
            self._pending.clear()
            return len(rows)

    def __len__(self) -> int:
        with self._lock:
            if self._cursor is None:
                return len(self._memory)
            return int(self._cursor.execute("SELECT count(*) FROM llm_cache").fetchone()[0])


def _require_table(conn: duckdb.DuckDBPyConnection) -> None:
    found = conn.execute(
        "SELECT count(*) FROM information_schema.tables WHERE table_name = 'llm_cache'"
    ).fetchone()[0]
    if not found:
        raise ValueError(
            "the database has no llm_cache table: open it with selene_dag.store.connect(), "
            "which applies migration 002_llm_cache"
        )


@dataclass(frozen=True)
class CacheStatsRow:
    """Counts of cached calls for one (engine, model, task)."""

    engine: str
    model: str
    task: str
    entries: int
    total_duration_ms: float
    prompt_tokens: int
    output_tokens: int
    newest: Any


def cache_stats(conn: duckdb.DuckDBPyConnection) -> list[CacheStatsRow]:
    """Rows of ``llm_cache`` grouped by engine, model and task, sorted by those three."""
    _require_table(conn)
    rows = conn.execute(
        "SELECT engine, model, task, count(*), coalesce(sum(duration_ms), 0),"
        " coalesce(sum(prompt_tokens), 0), coalesce(sum(output_tokens), 0), max(created_at)"
        " FROM llm_cache GROUP BY engine, model, task ORDER BY engine, model, task"
    ).fetchall()
    return [
        CacheStatsRow(r[0], r[1], r[2], int(r[3]), float(r[4]), int(r[5]), int(r[6]), r[7])
        for r in rows
    ]


def cache_clear(
    conn: duckdb.DuckDBPyConnection, engine: str | None = None, model: str | None = None
) -> int:
    """Delete cached calls (all, or only those of ``engine`` and/or ``model``); return how many."""
    _require_table(conn)
    where, params = [], []
    if engine is not None:
        where.append("engine = ?")
        params.append(engine)
    if model is not None:
        where.append("model = ?")
        params.append(model)
    clause = f" WHERE {' AND '.join(where)}" if where else ""
    count = conn.execute(f"SELECT count(*) FROM llm_cache{clause}", params).fetchone()[0]
    conn.execute(f"DELETE FROM llm_cache{clause}", params)
    return int(count)
