"""Token counts computed once per text and model, kept in the ``token_counts`` table.

A :class:`StoredCounts` is a ``count_batch`` for the context library (``prepare_notes``):
it looks every text up by the md5 of its bytes, counts only the texts never seen with
``count_tokens_batch`` and stores them, so packing 10,000 unchanged notes again costs
lookups, not tokenization. ``prune`` drops the counts of texts no longer asked for (the
renders of a note before its edit), so the table stays near the size of what is live.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence

import duckdb

from selene_dag.context.tokens import count_tokens_batch

# pandas is imported where frames are built: the Dagster definitions load without it.


class StoredCounts:
    """``(texts) -> token counts`` of ``model``, read from and added to ``token_counts``
    through ``conn`` (which must be writable). ``counted`` / ``reused`` say how many texts
    were tokenized and how many came from the table."""

    def __init__(self, conn: duckdb.DuckDBPyConnection, model: str) -> None:
        self.conn = conn
        self.model = model
        self.counted = 0
        self.reused = 0
        self.seen: set[str] = set()  # hashes of every text this counter was asked for

    def __call__(
        self,
        texts: Sequence[str],
        derived: Sequence[int | None] | None = None,
        derive: Callable[[list[str]], list[int | None]] | None = None,
    ) -> list[int]:
        """The counts of ``texts``. ``derived``: exact counts already known for some of them
        (None where not; e.g. a document's count from its passages'): stored like counted
        ones, without tokenizing. ``derive``: called with the texts not stored (in the
        order of their md5), it returns exact counts for some of them in the same way;
        only what it leaves None is tokenized."""
        import pandas as pd

        if not texts:
            return []
        keys = [hashlib.md5(t.encode("utf-8", "surrogatepass")).hexdigest() for t in texts]
        self.seen.update(keys)
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
        given = dict(zip(keys, derived, strict=True)) if derived is not None else {}
        if missing:
            order = sorted(missing)
            if derive is not None:
                given = {
                    **given,
                    **dict(zip(order, derive([missing[k] for k in order]), strict=True)),
                }
            unknown = [k for k in order if given.get(k) is None]
            counted = dict(
                zip(
                    unknown,
                    count_tokens_batch([missing[k] for k in unknown], self.model),
                    strict=True,
                )
            )
            counts = [counted[k] if k in counted else int(given[k]) for k in order]
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
        self.counted += len(missing)  # tokenized here or derived by the caller
        self.reused += len(set(keys)) - len(missing)
        return [int(known[k]) for k in keys]

    def prune(self, keep_sql: str | Sequence[str] | None = None, slack: float = 2.0) -> int:
        """Delete this model's stored counts of texts this counter was never asked for,
        except the hashes the query (or queries) ``keep_sql`` selects (texts other steps
        count, e.g. the search documents' bodies): without it the table would keep the
        counts of every render a note ever had. Nothing is done while the model's rows are
        at most ``slack`` × the texts kept (hashing every kept text is not free; each query
        is counted on its own, which DuckDB does without computing the hashes). Returns how
        many rows were deleted."""
        import pandas as pd

        queries = [keep_sql] if isinstance(keep_sql, str) else list(keep_sql or [])
        stored = self.conn.execute(
            "SELECT count(*) FROM token_counts WHERE model = ?", [self.model]
        ).fetchone()[0]
        kept = len(self.seen)
        for query in queries:
            kept += self.conn.execute(f"SELECT count(*) FROM ({query})").fetchone()[0]
        if stored <= slack * kept:
            return 0
        frame = pd.DataFrame({"hash": sorted(self.seen)})
        keep = f"AND t.hash NOT IN ({' UNION ALL '.join(queries)})" if queries else ""
        self.conn.register("_token_seen", frame)
        try:
            row = self.conn.execute(
                f"DELETE FROM token_counts t WHERE t.model = ? AND NOT EXISTS (SELECT 1 FROM "
                f"_token_seen s WHERE s.hash = t.hash) {keep}",
                [self.model],
            ).fetchone()
        finally:
            self.conn.unregister("_token_seen")
        return int(row[0]) if row else 0
