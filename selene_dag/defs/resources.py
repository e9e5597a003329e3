"""The one resource every selene-dag asset uses: settings, the DuckDB store and the engine.

Settings are read from the environment when a run executes (not when definitions load), so
one set of definitions serves the CLI, `dagster dev` and tests that point SELENE_HOME at a
temporary folder. Connections come from ``selene_dag.store`` (migrated to the latest
schema, lock conflicts retried with capped backoff, ~10 s). ``dagster_duckdb.DuckDBResource``
also retries, but for ~100 s with doubling delays before it gives up; a person waiting on
the CLI should hear about a held lock sooner.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import dagster as dg
import duckdb

from selene_dag.config import Settings, load_settings
from selene_dag.store import open_store

if TYPE_CHECKING:
    from selene_dag.llm.engine import Engine


class SeleneResource(dg.ConfigurableResource):
    """Settings, database and model engine for assets; ``home`` overrides SELENE_HOME."""

    home: str | None = None

    def settings(self) -> Settings:
        """Return validated settings (SELENE_* environment, ``home`` override applied)."""
        return load_settings(home=self.home) if self.home else load_settings()

    @contextmanager
    def connection(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """Yield a read-write connection to the store, migrated, closed afterwards.

        A file locked by another process is retried with capped backoff for about 10 s,
        then fails with :class:`StoreError` saying so (``store.connect``).
        """
        with open_store(self.settings().db_path) as conn:
            yield conn

    def engine(self, conn: duckdb.DuckDBPyConnection | None = None) -> Engine:
        """Return the configured engine (SELENE_LLM), caching its calls in ``conn``."""
        from selene_dag.llm import get_engine

        return get_engine(self.settings(), cache_conn=conn)


def default_resources() -> dict[str, object]:
    """Resources for the code location: settings come from the environment at run time."""
    return {"selene": SeleneResource()}
