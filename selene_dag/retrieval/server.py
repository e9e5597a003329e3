"""Local HTTP API (FastAPI): ask, the tiered context of all notes, compaction, health.

Requests share one DuckDB connection per database file and each runs on its own cursor,
so they read concurrently. The connection is opened by the first request in flight and
closed by the last one (never held while idle, so a Dagster run in another process can
write between bursts); while it is open no other process can write, so the index is
checked for staleness (and refreshed) only when it is opened. Access stamps, the only
writes, are serialized by a lock so concurrent requests never conflict. Bad requests get
422 with a message; a store that is locked by another process gets 503.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
from fastapi import FastAPI, HTTPException
from pydantic import BaseModel, Field

from selene_dag.config import Settings, load_settings


class AskRequest(BaseModel):
    """Body of ``POST /ask``."""

    question: str = Field(description="The question to build context for.")
    budget: int = Field(gt=0, description="Token budget of the pack (target model).")
    sources: list[str] | None = Field(
        default=None, description="Subset of ['notes', 'sessions'] (default both)."
    )
    model: str | None = Field(default=None, description="Target model; default SELENE_MODEL.")


class ContextRequest(BaseModel):
    """Body of ``POST /context``."""

    budget: int = Field(gt=0, description="Token budget of the pack.")
    model: str | None = Field(default=None, description="Target model; default SELENE_MODEL.")


class CompactRequest(BaseModel):
    """Body of ``POST /compact``."""

    messages: list[dict[str, Any]] = Field(description="Chat messages {role, content, ...}.")
    window: int = Field(gt=0, description="Context window in tokens.")
    model: str | None = Field(default=None, description="Target model; default SELENE_MODEL.")


def _unprocessable(exc: Exception) -> HTTPException:
    return HTTPException(status_code=422, detail=str(exc))


@dataclass
class _Open:
    conn: duckdb.DuckDBPyConnection
    users: int = 0
    closer: threading.Timer | None = None


class SharedStore:
    """One connection per database file while requests are in flight; a cursor each.

    ``cursor(settings)`` opens the file on the first concurrent use (after refreshing a
    stale ``search_index`` when ``refresh_index`` is set), hands out a cursor, and closes
    the connection ``linger`` seconds after the last user is done (0: at once), so a
    client asking in sequence does not pay for opening each time, yet an idle server
    leaves the file to other processes. ``write_lock`` serializes writes.
    """

    def __init__(self, refresh_index: bool = True, linger: float = 1.0) -> None:
        if linger < 0:
            raise ValueError(f"linger must be >= 0 seconds, got {linger}")
        self.refresh_index = refresh_index
        self.linger = linger
        self.write_lock = threading.Lock()
        self._lock = threading.Lock()
        self._open: dict[Path, _Open] = {}
        self.opened = 0  # how many times a connection was opened (for tests and stats)

    def is_open(self, db_path: Path | str) -> bool:
        """True while a connection to ``db_path`` is held."""
        with self._lock:
            return Path(db_path).resolve() in self._open

    def _acquire(self, settings: Settings) -> tuple[Path, duckdb.DuckDBPyConnection]:
        from selene_dag.store import connect

        path = Path(settings.db_path).resolve()
        with self._lock:
            entry = self._open.get(path)
            if entry is None:
                if self.refresh_index:
                    from selene_dag.retrieval.commands import refresh_index_if_stale

                    refresh_index_if_stale(settings)
                entry = self._open[path] = _Open(connect(path))
                self.opened += 1
            if entry.closer is not None:
                entry.closer.cancel()
                entry.closer = None
            entry.users += 1
            return path, entry.conn

    def _release(self, path: Path) -> None:
        with self._lock:
            entry = self._open[path]
            entry.users -= 1
            if entry.users > 0:
                return
            if self.linger == 0:
                self._close(path, entry)
                return
            timer = threading.Timer(self.linger, self._close_if_idle, args=(path, entry))
            timer.daemon = True
            entry.closer = timer
            timer.start()

    def _close_if_idle(self, path: Path, entry: _Open) -> None:
        with self._lock:
            if self._open.get(path) is entry and entry.users == 0:
                self._close(path, entry)

    def _close(self, path: Path, entry: _Open) -> None:
        del self._open[path]
        entry.conn.close()

    def close(self) -> None:
        """Close every connection now (server shutdown)."""
        with self._lock:
            for path, entry in list(self._open.items()):
                if entry.closer is not None:
                    entry.closer.cancel()
                self._close(path, entry)

    @contextmanager
    def cursor(self, settings: Settings) -> Iterator[duckdb.DuckDBPyConnection]:
        """A cursor of the shared connection to ``settings.db_path`` for one request."""
        path, conn = self._acquire(settings)
        try:
            cur = conn.cursor()
            try:
                cur.execute("SET TimeZone = 'UTC'")
                yield cur
            finally:
                cur.close()
        finally:
            self._release(path)


def create_app(settings_provider: Callable[[], Settings] = load_settings) -> FastAPI:
    """The API; ``settings_provider`` is called per request (SELENE_* read at request time)."""
    from selene_dag.store import StoreError

    shared = SharedStore()

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        yield
        shared.close()  # release the file at shutdown, lingering or not

    app = FastAPI(
        title="selene-dag",
        description="Token-budgeted context from notes and AI coding-agent sessions.",
        lifespan=lifespan,
    )
    app.state.store = shared

    def store_call(fn: Callable[[], Any]) -> Any:
        try:
            return fn()
        except StoreError as exc:
            raise HTTPException(status_code=503, detail=str(exc)) from None
        except (ValueError, TypeError) as exc:
            raise _unprocessable(exc) from None

    @app.get("/health/compression")
    def health_compression() -> dict[str, Any]:
        """Seed 000's compression health: tiers, essence progress, thread digests."""
        from selene_dag.notes.health import compression_health

        def run() -> dict[str, Any]:
            settings = settings_provider()
            with shared.cursor(settings) as conn:
                return compression_health(conn, settings.now())

        return store_call(run)

    @app.post("/ask")
    def ask_endpoint(body: AskRequest) -> dict[str, Any]:
        """The JSON document of ``selene-dag ask --format json`` (docs/ask.md)."""
        from selene_dag.notes.context_notes import mark_accessed
        from selene_dag.retrieval.ask import ask
        from selene_dag.retrieval.commands import AskError
        from selene_dag.retrieval.index import SearchIndexError

        def run() -> dict[str, Any]:
            settings = settings_provider()
            sources = ",".join(body.sources) if body.sources is not None else None
            try:
                with shared.cursor(settings) as cur:
                    now = settings.now()
                    result = ask(
                        cur,
                        body.question,
                        body.budget,
                        model=body.model or settings.model,
                        sources=sources,
                        now=now,
                    )
                    with shared.write_lock:
                        marked = mark_accessed(cur, result.note_ids, now)
            except (SearchIndexError, AskError) as exc:
                raise HTTPException(status_code=503, detail=str(exc)) from None
            result.stats["notes_marked"] = marked
            result.stats["index_refreshed"] = False
            return result.to_json()

        return store_call(run)

    @app.post("/context")
    def context_endpoint(body: ContextRequest) -> dict[str, Any]:
        """The tiered pack of all notes (as ``selene-dag context``)."""
        from selene_dag.context.tokens import count_tokens
        from selene_dag.notes.context_notes import load_context_notes, pack_all_notes

        def run() -> dict[str, Any]:
            settings = settings_provider()
            model = body.model or settings.model
            with shared.cursor(settings) as conn:
                notes = load_context_notes(conn)
            pack = pack_all_notes(notes, body.budget, model)
            return {
                "budget": body.budget,
                "model": model,
                "total_tokens": count_tokens(pack.text, model) if pack.text else 0,
                "counts": pack.counts,
                "text": pack.text,
            }

        return store_call(run)

    @app.post("/compact")
    def compact_endpoint(body: CompactRequest) -> dict[str, Any]:
        """Run seed 004's compaction chain on ``messages`` for a ``window``-token context."""
        from selene_dag.context.compaction import compact_messages

        settings = settings_provider()
        model = body.model or settings.model
        try:
            report = compact_messages(body.messages, body.window, model=model)
        except (ValueError, TypeError) as exc:
            raise _unprocessable(exc) from None
        return {
            "window": report.window,
            "model": model,
            "tokens_before": report.tokens_before,
            "tokens_after": report.tokens_after,
            "compaction_threshold": report.compaction_threshold,
            "resolved_at": report.resolved_at,
            "removed": report.removed,
            "shrink_stage_detail": report.shrink_stage_detail,
            "compacted_stages": list(report.compacted_stages),
            "steps": [
                {
                    "name": s.name,
                    "removed": s.removed,
                    "tokens_before": s.tokens_before,
                    "tokens_after": s.tokens_after,
                    "detail": s.detail,
                }
                for s in report.steps
            ],
            "messages": report.messages,
        }

    return app
