"""What every asset shows in the Dagster UI: owners, code versions, markdown tables and
the model engine's call counts."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from typing import Any

import dagster as dg

from selene_dag.llm.prompts import prompt_hash
from selene_dag.llm.versions import ALGORITHM_VERSIONS
from selene_dag.paths import transforms_hash

# Shown as the owner of every asset in the Dagster UI.
OWNERS = ["team:selene-dag"]
# Assets whose result depends on the day as well as on their inputs (tiers age): they
# record the day they were computed for, and a CLI run recomputes them on a new day.
CLOCK_TAG = {"selene/clock": "day"}
AS_OF_DAY = "as_of_day"
# processed_notes: notes a run left without an essence because it reached its limit.
ESSENCES_LEFT = "essences_left"
# A sessions step that failed for every file of its run: each file's own reason, by key.
FAILED_FILES = "failed_files"


def code_version(
    base: str,
    *,
    prompts: tuple[str, ...] = (),
    algorithms: tuple[str, ...] = (),
    sql: tuple[str, ...] = (),
) -> str:
    """An asset's code version: ``base`` (bumped with its Python logic) joined with the
    hashes of the prompt templates, extractive algorithm versions and SQL transforms it
    uses, so editing any of them marks exactly the assets that use it stale."""
    parts = [base]
    if prompts:
        parts.append(prompt_hash(*prompts))
    if algorithms:
        joined = ",".join(ALGORITHM_VERSIONS[a] for a in algorithms)
        parts.append(hashlib.sha256(joined.encode()).hexdigest()[:8])
    if sql:
        parts.append(transforms_hash(*sql))
    return "-".join(parts)


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


def engine_metadata(engine: Any) -> dict[str, dg.MetadataValue]:
    """Engine name, model and the calls it made vs served from the cache."""
    return {
        "engine": dg.MetadataValue.text(f"{engine.name}:{engine.model}"),
        "llm_calls_made": dg.MetadataValue.int(engine.calls_made),
        "llm_calls_cached": dg.MetadataValue.int(engine.calls_cached),
    }


def duckdb_asset(group: str, *, model: bool = False, **kwargs: Any) -> Any:
    """``dg.asset`` with what every selene-dag asset shares: its group, the owners, the
    kinds shown in the UI (``duckdb``, plus ``ollama`` when it may call a model) and the
    ``duckdb`` pool (DuckDB has one writer per file, the pool runs one step at a time)."""
    kinds = {"duckdb", "ollama"} if model else {"duckdb"}
    return dg.asset(group_name=group, owners=OWNERS, kinds=kinds, pool="duckdb", **kwargs)
