"""Local HTTP API (FastAPI): ask, the tiered context of all notes, compaction, health.

The DuckDB file is opened per request and closed before the response (never held while
idle, so a Dagster run can write between requests); requests touching the store are
serialized by one lock. Bad requests get 422 with a message; a store that is locked by
another process gets 503.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from fastapi import FastAPI, HTTPException
from pydantic import BaseModel, Field

from selene_dag.settings import Settings, load_settings


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


def create_app(settings_provider: Callable[[], Settings] = load_settings) -> FastAPI:
    """The API; ``settings_provider`` is called per request (SELENE_* read at request time)."""
    from selene_dag.store import StoreError, open_store

    app = FastAPI(
        title="selene-dag",
        description="Token-budgeted context from notes and AI coding-agent sessions.",
    )
    lock = threading.Lock()

    def store_call(fn: Callable[[], Any]) -> Any:
        with lock:
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
            with open_store(settings.db_path) as conn:
                return compression_health(conn, settings.now())

        return store_call(run)

    @app.post("/ask")
    def ask_endpoint(body: AskRequest) -> dict[str, Any]:
        """The JSON document of ``selene-dag ask --format json`` (docs/ask.md)."""
        from selene_dag.retrieval.commands import ask_store
        from selene_dag.retrieval.index import SearchIndexError

        def run() -> dict[str, Any]:
            try:
                result, _ = ask_store(
                    settings_provider(),
                    body.question,
                    body.budget,
                    model=body.model,
                    sources=",".join(body.sources) if body.sources is not None else None,
                )
            except SearchIndexError as exc:
                raise HTTPException(status_code=503, detail=str(exc)) from None
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
            with open_store(settings.db_path) as conn:
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
