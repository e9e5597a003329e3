"""The event log of a home's Dagster instance: Dagster's SQLite storage, kept connected.

Dagster's ``SqliteEventLogStorage`` creates an engine, opens the database file, commits and
closes it for every event; closing the last connection of a WAL database checkpoints it.
A session file costs four asset events (one materialization per spine asset), so that
pattern made the event log the largest cost of a many-file ``distill run``. This storage
keeps one pooled connection per database file it recently used (the index and the
current run's shard) and writes the same rows to the same files: a home stays readable by
plain Dagster, and the UI reads it as before.

It also records a run over many partitions with one "planned" event per asset, naming the
partitions, instead of one per partition. The difference: Dagster cannot mark those
partitions failed when such a run crashes; they stay missing, which is what the CLI
re-runs anyway (per-file errors are step metadata, not run failures).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import sqlalchemy as sa
from dagster._core.storage.event_log.sqlite.sqlite_event_log import (
    SQLITE_BUSY_TIMEOUT_SECONDS,
    SqliteEventLogStorage,
)
from dagster._serdes import ConfigurableClassData
from sqlalchemy.engine import Connection
from sqlalchemy.pool import QueuePool

# Database files with an open connection: the index, the running run's shard, and the
# shards the UI read last.
OPEN_SHARDS = 4


class ConnectedSqliteEventLogStorage(SqliteEventLogStorage):
    """``SqliteEventLogStorage`` that reuses one connection per recently used shard and
    plans a multi-partition run per asset. Configured in the home's dagster.yaml as

    .. code-block:: yaml

        event_log_storage:
          module: selene_dag.defs.event_log
          class: ConnectedSqliteEventLogStorage
          config:
            base_dir: /abs/path/to/dagster/history/runs
    """

    def __init__(self, base_dir: str, inst_data: ConfigurableClassData | None = None) -> None:
        self._engines: OrderedDict[str, sa.engine.Engine] = OrderedDict()
        self._engines_lock = threading.Lock()
        super().__init__(base_dir, inst_data)

    @classmethod
    def from_config_value(
        cls, inst_data: ConfigurableClassData | None, config_value: Any
    ) -> ConnectedSqliteEventLogStorage:
        """Build from the dagster.yaml ``config`` block (``base_dir``)."""
        return cls(inst_data=inst_data, **config_value)

    @property
    def supports_partition_subset_in_asset_materialization_planned_events(self) -> bool:
        """One planned event per asset for a run over many partitions."""
        return True

    def _engine(self, shard: str) -> sa.engine.Engine:
        """The pooled engine of ``shard``, created (and its database set up) on first use;
        the least recently used beyond :data:`OPEN_SHARDS` is closed."""
        with self._engines_lock:
            engine = self._engines.get(shard)
            if engine is not None:
                self._engines.move_to_end(shard)
                return engine
            engine = sa.create_engine(
                self.conn_string_for_shard(shard),
                poolclass=QueuePool,
                pool_size=1,
                connect_args={"timeout": SQLITE_BUSY_TIMEOUT_SECONDS},
            )
            self._engines[shard] = engine
            while len(self._engines) > OPEN_SHARDS:
                _, oldest = self._engines.popitem(last=False)
                oldest.dispose()
            return engine

    @contextmanager
    def _connect(self, shard: str) -> Iterator[Connection]:
        with self._db_lock:
            engine = self._engine(shard)
            if shard not in self._initialized_dbs:
                self._initdb(engine)
                self._initialized_dbs.add(shard)
            with engine.connect() as conn, conn.begin():
                yield conn

    def _close_all(self) -> None:
        with self._engines_lock:
            for engine in self._engines.values():
                engine.dispose()
            self._engines.clear()

    def wipe(self) -> None:
        """Close every pooled connection, then delete as Dagster's storage does."""
        self._close_all()
        super().wipe()

    def dispose(self) -> None:
        """Close every pooled connection, then stop watching as Dagster's storage does."""
        self._close_all()
        super().dispose()
