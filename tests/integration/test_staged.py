"""``store.staged``: Python columns read by SQL as a typed view, whatever their values hold
(None first or only, nothing at all, lists, vectors, times), and gone after the block, also
when the block fails inside a transaction."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import duckdb
import numpy as np
import pytest

from selene_dag.store import column_types, staged, transaction

TYPES = {
    "id": "VARCHAR",
    "n": "INTEGER",
    "flag": "BOOLEAN",
    "tags": "VARCHAR[]",
    "seen_at": "TIMESTAMP WITH TIME ZONE",
    "vec": "FLOAT[2]",
}


def _views(conn: duckdb.DuckDBPyConnection) -> int:
    return conn.execute("SELECT count(*) FROM duckdb_views() WHERE NOT internal").fetchone()[0]


def test_values_of_every_kind_keep_their_type() -> None:
    conn = duckdb.connect()
    conn.execute("SET TimeZone = 'UTC'")
    rows = 3000  # more than DuckDB samples to read an object column's type
    columns = {
        "id": [f"n{i}" for i in range(rows)],
        "n": [None] * (rows - 1) + [7],  # None up to the last row
        "flag": [None] * rows,  # None only
        "tags": [[] if i % 2 else ["a", "b"] for i in range(rows)],
        "seen_at": [datetime(2024, 1, 2, 3, tzinfo=timezone(timedelta(hours=2)))] * rows,
        "vec": [np.array([i, 1], dtype=np.float32) for i in range(rows)],
    }
    with staged(conn, "rows", columns, TYPES):
        assert [r[:2] for r in conn.execute("DESCRIBE rows").fetchall()] == list(TYPES.items())
        n, flags, tags, at, vec = conn.execute(
            "SELECT sum(n), count(flag), sum(len(tags)), min(seen_at), max(vec[1]) FROM rows"
        ).fetchone()
    assert (n, flags, tags, vec) == (7, 0, rows, rows - 1)
    assert at == datetime(2024, 1, 2, 1, tzinfo=UTC)
    assert _views(conn) == 0


def test_no_rows_give_an_empty_view_of_the_types() -> None:
    conn = duckdb.connect()
    conn.execute("CREATE TABLE t (id VARCHAR, n INTEGER)")
    with staged(conn, "none", {"id": [], "n": []}, {"id": "VARCHAR", "n": "INTEGER"}):
        conn.execute("INSERT INTO t SELECT * FROM none")
        assert conn.execute("SELECT count(*) FROM t JOIN none USING (id)").fetchone() == (0,)
    assert column_types(conn, "t") == {"id": "VARCHAR", "n": "INTEGER"}


def test_a_failed_block_in_a_transaction_keeps_its_error_and_leaves_nothing() -> None:
    conn = duckdb.connect()
    conn.execute("CREATE TABLE t (id VARCHAR PRIMARY KEY)")
    conn.execute("INSERT INTO t VALUES ('a')")
    with (
        pytest.raises(duckdb.ConstraintException),
        transaction(conn),
        staged(conn, "dup", {"id": ["b", "a"]}, {"id": "VARCHAR"}),
    ):
        conn.execute("INSERT INTO t SELECT id FROM dup")
    assert conn.execute("SELECT id FROM t").fetchall() == [("a",)]
    assert _views(conn) == 0
    # The connection is usable, with DuckDB's sample size as it was.
    with staged(conn, "more", {"id": [None] * 2000 + ["c"]}, {"id": "VARCHAR"}):
        conn.execute("INSERT INTO t SELECT id FROM more WHERE id IS NOT NULL")
    assert conn.execute("SELECT count(*) FROM t").fetchone() == (2,)
    assert conn.execute("SELECT current_setting('pandas_analyze_sample')").fetchone() == (1000,)
