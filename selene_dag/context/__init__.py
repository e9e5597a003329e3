"""Pure context library: token counting and budgeted packing (no Dagster, no database)."""

from selene_dag.context.tokens import count_tokens, count_tokens_batch, truncate_to_tokens

__all__ = ["count_tokens", "count_tokens_batch", "truncate_to_tokens"]
