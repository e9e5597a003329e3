"""Token counts computed once per text and model, kept in the ``token_counts`` table.

A :class:`StoredCounts` is a ``count_batch`` for the context library (``prepare_notes``):
it looks every text up by the md5 of its bytes, counts only the texts never seen with
``count_tokens_batch`` and stores them, so packing 10,000 unchanged notes again costs
lookups, not tokenization.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import duckdb
import pandas as pd

from selene_dag.context.tokens import count_tokens_batch


class StoredCounts:
    """``(texts) -> token counts`` of ``model``, read from and added to ``token_counts``
    through ``conn`` (which must be writable). ``counted`` / ``reused`` say how many texts
    were tokenized and how many came from the table."""

    def __init__(self, conn: duckdb.DuckDBPyConnection, model: str) -> None:
        self.conn = conn
        self.model = model
        self.counted = 0
        self.reused = 0

    def __call__(self, texts: Sequence[str]) -> list[int]:
        if not texts:
            return []
        keys = [hashlib.md5(t.encode("utf-8", "surrogatepass")).hexdigest() for t in texts]
        frame = pd.DataFrame({"hash": sorted(set(keys))})
        self.conn.register("_token_keys", frame)
        try:
            known = dict(
                self.conn.execute(
                    "SELECT c.hash, c.tokens FROM token_counts c JOIN _token_keys k "
                    "USING (hash) WHERE c.model = ?",
                    [self.model],
                ).fetchall()
            )
        finally:
            self.conn.unregister("_token_keys")
        missing = {k: t for k, t in zip(keys, texts, strict=True) if k not in known}
        if missing:
            order = sorted(missing)
            counts = count_tokens_batch([missing[k] for k in order], self.model)
            new = pd.DataFrame({"hash": order, "tokens": counts})
            self.conn.register("_token_new", new)
            try:
                self.conn.execute(
                    "INSERT INTO token_counts SELECT hash, ?, tokens FROM _token_new "
                    "ON CONFLICT DO NOTHING",
                    [self.model],
                )
            finally:
                self.conn.unregister("_token_new")
            known.update(zip(order, counts, strict=True))
        self.counted += len(missing)
        self.reused += len(set(keys)) - len(missing)
        return [int(known[k]) for k in keys]
