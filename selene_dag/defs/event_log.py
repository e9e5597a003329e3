"""The event log of a home's Dagster instance: Dagster's SQLite storage, kept connected.

Dagster's ``SqliteEventLogStorage`` creates an engine, opens the database file, commits and
closes it for every event; closing the last connection of a WAL database checkpoints it.
A session file costs four asset events (one materialization per spine asset), so that
pattern made the event log the largest cost of a many-file ``distill run``. This storage
keeps one pooled connection per database file it recently used (the index and the
current run's shard) and writes the same rows to the same files: a home stays readable by
plain Dagster, and the UI reads it as before.

A run's shard is closed when the run ends: closing the last connection of a WAL database
checkpoints it and removes its log, which otherwise stayed beside it (1.8 MB per run, with
a run's history of 100–300 KB: a home grew by 2.6 MB per ingest).

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
from functools import cache
from typing import Any

import sqlalchemy as sa
from alembic.script import ScriptDirectory
from dagster._core.events import DagsterEventType
from dagster._core.events.log import EventLogEntry
from dagster._core.storage.event_log.schema import SqlEventLogStorageMetadata
from dagster._core.storage.event_log.sqlite import sqlite_event_log
from dagster._core.storage.event_log.sqlite.sqlite_event_log import (
    SQLITE_BUSY_TIMEOUT_SECONDS,
    SqliteEventLogStorage,
)
from dagster._core.storage.sql import get_alembic_config
from dagster._serdes import ConfigurableClassData
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.pool import QueuePool


@cache
def alembic_head() -> str:
    """The schema revision Dagster stamps a new event log database with, read from its
    migration scripts once per process (reading them took 0.08 s, and Dagster read them
    again for every database file a run touched: the index, the run's shard)."""
    config = get_alembic_config(sqlite_event_log.__file__)
    return str(ScriptDirectory.from_config(config).as_revision_number("head"))


# Alembic's version table, as its stamp creates it (the same DDL text, so the file is the
# one Dagster's own set-up makes).
_VERSION_TABLE = (
    "CREATE TABLE alembic_version (\n"
    "\tversion_num VARCHAR(32) NOT NULL, \n"
    "\tCONSTRAINT alembic_version_pkc PRIMARY KEY (version_num)\n"
    ")"
)


# Database files with an open connection: the index, the running run's shard, and the
# shards the UI read last.
OPEN_SHARDS = 4
# The events after which a run writes no more to its shard.
_RUN_ENDS = frozenset(
    {DagsterEventType.RUN_SUCCESS, DagsterEventType.RUN_FAILURE, DagsterEventType.RUN_CANCELED}
)


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

    def _initdb(self, engine: Engine, for_index_shard: bool = False) -> None:
        """Dagster's set-up of a database file, without reading the migration scripts
        again when the file is at the head revision, or new: a new file gets the tables,
        WAL journaling and the head stamp, as Dagster's own set-up gives it. Anything else
        (an older file, a file half set up, a concurrent set-up) goes to Dagster's."""
        head = alembic_head()
        try:
            with engine.connect() as conn:
                tables = set(sa.inspect(conn).get_table_names())
                if "alembic_version" in tables:
                    stamped = conn.execute(sa.text("SELECT version_num FROM alembic_version"))
                    if [row[0] for row in stamped] == [head]:
                        return
                elif not tables:
                    SqlEventLogStorageMetadata.create_all(conn)
                    conn.execute(sa.text("PRAGMA journal_mode=WAL;"))
                    conn.execute(sa.text(_VERSION_TABLE))
                    conn.execute(
                        sa.text("INSERT INTO alembic_version VALUES (:head)"), {"head": head}
                    )
                    conn.commit()
                    return
        except sa.exc.DBAPIError:
            pass
        super()._initdb(engine, for_index_shard=for_index_shard)

    @contextmanager
    def _connect(self, shard: str) -> Iterator[Connection]:
        with self._db_lock:
            engine = self._engine(shard)
            if shard not in self._initialized_dbs:
                self._initdb(engine)
                self._initialized_dbs.add(shard)
            with engine.connect() as conn, conn.begin():
                yield conn

    def store_event(self, event: EventLogEntry) -> None:
        """Store ``event`` as Dagster's storage does; after a run's last event, close its
        shard (see the module's docstring)."""
        super().store_event(event)
        if event.dagster_event is not None and event.dagster_event.event_type in _RUN_ENDS:
            with self._db_lock, self._engines_lock:
                engine = self._engines.pop(event.run_id, None)
            if engine is not None:
                engine.dispose()

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
