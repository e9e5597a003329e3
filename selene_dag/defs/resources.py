"""The one resource every selene-dag asset uses: settings, the DuckDB store and the engine.

Settings are read from the environment when a run executes (not when definitions load), so
one set of definitions serves the CLI, `dagster dev` and tests that point SELENE_HOME at a
temporary folder. Connections come from ``dagster_duckdb.DuckDBResource`` (lock retries)
and are migrated to the latest schema before use.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import TYPE_CHECKING

import dagster as dg
import duckdb
from dagster_duckdb import DuckDBResource

from selene_dag.settings import Settings, load_settings
from selene_dag.store import StoreError, migrate

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
        """Yield a read-write connection to the store, migrated, closed afterwards."""
        settings = self.settings()
        settings.db_path.parent.mkdir(parents=True, exist_ok=True)
        resource = DuckDBResource(database=str(settings.db_path))
        with ExitStack() as stack:
            try:
                conn = stack.enter_context(resource.get_connection())
            except duckdb.IOException as exc:
                raise StoreError(
                    f"cannot open {settings.db_path}: {exc}. Another process may hold the "
                    "DuckDB write lock: wait for its run to finish or stop that process."
                ) from exc
            conn.execute("SET TimeZone = 'UTC'")
            migrate(conn)
            yield conn

    def engine(self, conn: duckdb.DuckDBPyConnection | None = None) -> Engine:
        """Return the configured engine (SELENE_LLM), caching its calls in ``conn``."""
        from selene_dag.llm import get_engine

        return get_engine(self.settings(), cache_conn=conn)


def default_resources() -> dict[str, object]:
    """Resources for the code location: settings come from the environment at run time."""
    return {"selene": SeleneResource()}
