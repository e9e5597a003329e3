"""Model calls made with the store let go.

A model takes seconds to minutes to answer, and while a process holds the DuckDB file no
other process can write to it: an ingest beside a server whose request waited on a model
failed after ``SELENE_LOCK_WAIT``. :func:`with_model_calls_outside` runs a piece of work
on a store it opens; each model call the work needs and the cache does not hold stops the
work (the engine raises :class:`~selene_dag.llm.engine.DeferredCall`), the store is let
go, the call is made, and the work runs again on the store opened anew, its answer (or
its error) then at hand. The answers are written to ``llm_cache`` at the next opening.
The work must therefore be repeatable up to its first call: read, decide, and write only
once every call it needs is answered.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any, TypeVar

import duckdb

from selene_dag.llm.cache import LLMCache
from selene_dag.llm.engine import DeferredCall, ModelCalls

T = TypeVar("T")
C = TypeVar("C", bound=duckdb.DuckDBPyConnection | None)

# Calls made with the store let go per piece of work; past them (a work whose input kept
# changing between openings) the last run makes its calls with the store held.
MAX_CALLS_OUTSIDE = 4


def with_model_calls_outside(
    open_store: Callable[[], AbstractContextManager[C]],
    work: Callable[[C, ModelCalls | None], T],
    write_lock: AbstractContextManager[Any] | None = None,
    calls: ModelCalls | None = None,
) -> tuple[T, ModelCalls]:
    """``work(conn, calls)`` on a store from ``open_store()``, with every model call it
    needs made while no store is held (see the module's docstring). ``work`` hands
    ``calls`` to the engines it builds (``get_engine(..., deferred=calls)``); ``None`` on
    its last allowed run, when calls are made in place. Answers are written to the
    store's ``llm_cache`` under ``write_lock`` (a server's lock on its shared writes); a
    store that opens as None (work that needs none) keeps them in ``calls`` only. ``calls``:
    the answers of calls made before (another try of the same work). Returns what ``work``
    returned and the calls made (``calls.ms``: their time)."""
    calls = calls if calls is not None else ModelCalls()
    for attempt in range(MAX_CALLS_OUTSIDE + 1):
        with open_store() as conn:
            _write(conn, calls, write_lock)
            try:
                return work(conn, calls if attempt < MAX_CALLS_OUTSIDE else None), calls
            except DeferredCall as call:
                deferred = call
        deferred.run()
    raise AssertionError("unreachable: the last run makes its calls in place")


def _write(
    conn: duckdb.DuckDBPyConnection | None,
    calls: ModelCalls,
    write_lock: AbstractContextManager[Any] | None,
) -> None:
    if not calls.fresh or conn is None:
        return
    with write_lock or contextlib.nullcontext():
        cache = LLMCache(conn)
        for entry in calls.fresh:
            cache.put(entry)
    calls.fresh.clear()
