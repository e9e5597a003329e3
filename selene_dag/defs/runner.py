"""Run materializations of the real definitions from the CLI, against a persistent instance.

The instance lives in ``$SELENE_HOME/dagster`` (the same DAGSTER_HOME that ``selene-dag dev``
uses), so runs started from the CLI show up in the UI and staleness is tracked across both.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import dagster as dg

from selene_dag.config import Settings

INSTANCE_YAML = """\
# Written by selene-dag. DuckDB allows one writer per file: every asset that writes is in
# the `duckdb` pool, and pools default to one op at a time.
concurrency:
  pools:
    default_limit: 1
telemetry:
  enabled: false
"""


def prepare_dagster_home(settings: Settings) -> Path:
    """Create ``$SELENE_HOME/dagster`` with its dagster.yaml (kept if the user edited it)."""
    home = settings.dagster_home.resolve()
    home.mkdir(parents=True, exist_ok=True)
    config = home / "dagster.yaml"
    if not config.exists():
        config.write_text(INSTANCE_YAML, encoding="utf-8")
    return home


def instance_for(settings: Settings) -> dg.DagsterInstance:
    """Return the persistent Dagster instance under ``$SELENE_HOME/dagster``."""
    home = prepare_dagster_home(settings)
    os.environ["DAGSTER_HOME"] = str(home)
    return dg.DagsterInstance.from_config(str(home))


def all_assets_and_checks() -> list:
    """Every asset and asset check of the code location (for ``dg.materialize``)."""
    from selene_dag.definitions import defs

    items: list = list(defs.assets or [])
    items += list(defs.asset_checks or [])
    return items


def materialize(
    selection: dg.AssetSelection | Sequence[str] | None,
    instance: dg.DagsterInstance,
    *,
    partition_key: str | None = None,
    tags: dict[str, str] | None = None,
    raise_on_error: bool = True,
    log_level: str = "CRITICAL",
) -> dg.ExecuteInProcessResult:
    """Materialize ``selection`` (None: every unpartitioned asset) in-process with the real defs."""
    from selene_dag.definitions import defs

    return dg.materialize(
        all_assets_and_checks(),
        selection=selection,
        instance=instance,
        resources=dict(defs.resources or {}),
        partition_key=partition_key,
        tags=tags,
        raise_on_error=raise_on_error,
        run_config={"loggers": {"console": {"config": {"log_level": log_level}}}},
    )


def failure_message(result: dg.ExecuteInProcessResult) -> str:
    """The root cause of a failed run's first step failure, as one line."""
    for event in result.all_events:
        if not event.is_step_failure:
            continue
        error = event.event_specific_data.error
        while (
            error.cause is not None and error.cls_name and "DagsterExecutionStep" in error.cls_name
        ):
            error = error.cause
        lines = [line for line in error.message.strip().splitlines() if line.strip()]
        return f"step {event.step_key}: {lines[-1] if lines else error.cls_name}"
    return "run failed"


def unpartitioned_selection() -> dg.AssetSelection:
    """Every asset of the code location that has no partitions definition."""
    from selene_dag.definitions import defs

    keys = [
        key
        for assets_def in defs.assets or []
        if isinstance(assets_def, dg.AssetsDefinition) and assets_def.partitions_def is None
        for key in assets_def.keys
    ]
    return dg.AssetSelection.assets(*keys)


def materialize_daily_range(
    instance: dg.DagsterInstance, first: str, last: str
) -> dg.ExecuteInProcessResult:
    """Materialize every daily partition in [first, last] in one run (single-run backfill)."""
    from selene_dag.defs.assets_notes import daily_summaries

    return materialize(
        [daily_summaries.key.to_user_string()],
        instance,
        tags={
            "dagster/asset_partition_range_start": first,
            "dagster/asset_partition_range_end": last,
        },
        raise_on_error=False,
    )


def graph_fingerprint(settings: Settings) -> str:
    """Hash of what the whole graph's output depends on: every asset's code version, the
    notes' data version, the session files (path, size, mtime), engine, model and "now".

    Equal fingerprints mean a full materialization would recompute nothing that changed.
    """
    import hashlib
    import json

    from selene_dag.definitions import defs
    from selene_dag.notes.ingest import read_notes
    from selene_dag.sessions.scanner import scan_roots

    code = sorted(
        (key.to_user_string(), assets_def.code_versions_by_key.get(key) or "")
        for assets_def in defs.assets or []
        if isinstance(assets_def, dg.AssetsDefinition)
        for key in assets_def.keys
    )
    notes = read_notes(settings.notes_dir).data_version() if settings.notes_dir.exists() else ""
    sessions = sorted((f.path, f.size, f.mtime) for f in scan_roots(settings.session_roots))
    payload = {
        "code": code,
        "notes": notes,
        "sessions": sessions,
        "engine": [settings.llm, settings.model],
        "now": settings.now().isoformat(),
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()
