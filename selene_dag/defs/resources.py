"""The resource every selene-dag asset uses: settings, the DuckDB store and the engine.

Fields are typed and mirror :class:`selene_dag.config.Settings`. The CLI builds the
resource from its settings (:meth:`SeleneResource.from_settings`), so a run sees exactly
the settings of the command that started it. A field left unset falls back to the
environment at run time, which is how `dagster dev` and a bare ``SeleneResource()`` get
their settings. Connections come from ``selene_dag.store``: migrated to the latest schema,
a file held by another process waited for up to ``lock_wait`` seconds (SELENE_LOCK_WAIT).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import dagster as dg
import duckdb

from selene_dag.config import Settings, load_settings
from selene_dag.llm import get_engine
from selene_dag.llm.engine import Engine
from selene_dag.store import open_store


class SeleneResource(dg.ConfigurableResource):
    """Settings, database and model engine for assets. Each field is the setting of the
    same name; None means "from the environment when the run executes"."""

    home: str | None = None
    db_path: str | None = None
    notes_dir: str | None = None
    llm: str | None = None
    model: str | None = None
    ollama_host: str | None = None
    ollama_timeout: float | None = None
    lock_wait: float | None = None
    session_roots: str | None = None  # os.pathsep-separated, as SELENE_SESSION_ROOTS
    now: str | None = None  # ISO-8601; None: the wall clock (or SELENE_NOW)
    essence_limit: int | None = None  # 0: unlimited
    thread_active_days: int | None = None
    daily_start: str | None = None
    ask_min_recall: float | None = None
    cli_assessors: str | None = None  # comma list; "" for none
    assessor_timeout: float | None = None
    assessor_concurrency: int | None = None
    distill_token_budget: int | None = None
    distill_min_consensus: float | None = None
    distill_sort_mode: str | None = None
    distill_question_weight: float | None = None
    distill_static_weight: float | None = None
    distill_rerank: bool | None = None

    @classmethod
    def from_settings(cls, settings: Settings) -> SeleneResource:
        """A resource whose every field is taken from ``settings`` (nothing left to the
        environment)."""
        roots = os.pathsep.join(
            f"{r.platform}={r.path}" if r.platform else str(r.path) for r in settings.session_roots
        )
        return cls(
            home=str(settings.home),
            db_path=str(settings.db_path),
            notes_dir=str(settings.notes_dir),
            llm=settings.llm,
            model=settings.model,
            ollama_host=settings.ollama_host,
            ollama_timeout=settings.ollama_timeout,
            lock_wait=settings.lock_wait,
            session_roots=roots,
            now=settings.now_override.isoformat() if settings.now_override else None,
            essence_limit=settings.essence_limit or 0,
            thread_active_days=settings.thread_active_days,
            daily_start=settings.daily_start.isoformat() if settings.daily_start else None,
            ask_min_recall=settings.ask_min_recall,
            cli_assessors=",".join(settings.cli_assessors),
            assessor_timeout=settings.assessor_timeout,
            assessor_concurrency=settings.assessor_concurrency,
            distill_token_budget=settings.distill_token_budget,
            distill_min_consensus=settings.distill_min_consensus,
            distill_sort_mode=settings.distill_sort_mode,
            distill_question_weight=settings.distill_question_weight,
            distill_static_weight=settings.distill_static_weight,
            distill_rerank=settings.distill_rerank,
        )

    def settings(self) -> Settings:
        """Validated settings: the fields that are set, the environment for the others."""
        overrides: dict[str, Any] = {
            "home": self.home,
            "db_path": self.db_path,
            "notes_dir": self.notes_dir,
            "llm": self.llm,
            "model": self.model,
            "ollama_host": self.ollama_host,
            "ollama_timeout": self.ollama_timeout,
            "lock_wait": self.lock_wait,
            "session_roots": self.session_roots,
            "now_override": self.now,
            "essence_limit": self.essence_limit,
            "thread_active_days": self.thread_active_days,
            "daily_start": self.daily_start,
            "ask_min_recall": self.ask_min_recall,
            "cli_assessors": self.cli_assessors,
            "assessor_timeout": self.assessor_timeout,
            "assessor_concurrency": self.assessor_concurrency,
            "distill_token_budget": self.distill_token_budget,
            "distill_min_consensus": self.distill_min_consensus,
            "distill_sort_mode": self.distill_sort_mode,
            "distill_question_weight": self.distill_question_weight,
            "distill_static_weight": self.distill_static_weight,
            "distill_rerank": self.distill_rerank,
        }
        return load_settings(**overrides)

    @contextmanager
    def connection(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """Yield a read-write connection to the store, migrated, closed afterwards.

        A file locked by another process is waited for up to the ``lock_wait`` setting,
        then fails with :class:`StoreError` saying so (``store.connect``).
        """
        settings = self.settings()
        with open_store(settings.db_path, wait=settings.lock_wait) as conn:
            yield conn

    def engine(self, conn: duckdb.DuckDBPyConnection | None = None) -> Engine:
        """Return the configured engine (``llm``), caching its calls in ``conn``."""
        return get_engine(self.settings(), cache_conn=conn)


def default_resources() -> dict[str, object]:
    """Resources of the code location: settings from the environment at run time."""
    return {"selene": SeleneResource()}


def resources_for(settings: Settings) -> dict[str, object]:
    """Resources of a run started by the CLI or the API with ``settings``."""
    return {"selene": SeleneResource.from_settings(settings)}
