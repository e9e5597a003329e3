"""Small helpers that turn rows into metadata a person reads in the Dagster UI."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import dagster as dg

# Shown as the owner of every asset in the Dagster UI.
OWNERS = ["team:selene-dag"]


def _cell(value: Any, width: int) -> str:
    text = "" if value is None else str(value)
    text = " ".join(text.split()).replace("|", "\\|")
    return text if len(text) <= width else text[: width - 1] + "…"


def markdown_table(
    headers: Sequence[str], rows: Iterable[Sequence[Any]], width: int = 80
) -> dg.MetadataValue:
    """Return a markdown table (cells flattened to one line, cut at ``width`` characters)."""
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(_cell(v, width) for v in row) + " |" for row in rows]
    return dg.MetadataValue.md("\n".join(lines))
