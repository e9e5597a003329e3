"""Materialize the real definitions from the CLI and the API, with their settings.

The persistent instance lives in ``$SELENE_HOME/dagster`` (the same DAGSTER_HOME that
``selene-dag dev`` uses), so runs started from the CLI show up in the UI and staleness is
tracked across both. Runs get their resources from the caller's settings, never from
variables written into the environment.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import dagster as dg

from selene_dag.config import Settings
from selene_dag.definitions import defs
from selene_dag.defs.notes import daily_summaries
from selene_dag.defs.resources import default_resources, resources_for
from selene_dag.defs.sessions import SESSION_PARTITIONS, SESSION_SPINE_SELECTION
from selene_dag.notes.ingest import read_notes
from selene_dag.sessions.scanner import scan_roots

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
    return dg.DagsterInstance.from_config(str(prepare_dagster_home(settings)))


def all_assets_and_checks() -> list:
    """Every asset and asset check of the code location (for ``dg.materialize``)."""
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
    settings: Settings | None = None,
    run_config: dict | None = None,
) -> dg.ExecuteInProcessResult:
    """Materialize ``selection`` in-process with the real definitions. Resources come from
    ``settings`` (None: the environment at run time, as in `dagster dev`)."""
    return dg.materialize(
        all_assets_and_checks(),
        selection=selection,
        instance=instance,
        resources=resources_for(settings) if settings is not None else default_resources(),
        partition_key=partition_key,
        tags=tags,
        raise_on_error=raise_on_error,
        run_config={
            **(run_config or {}),
            "loggers": {"console": {"config": {"log_level": log_level}}},
        },
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
    keys = [
        key
        for assets_def in defs.assets or []
        if isinstance(assets_def, dg.AssetsDefinition) and assets_def.partitions_def is None
        for key in assets_def.keys
    ]
    return dg.AssetSelection.assets(*keys)


def materialize_daily_range(
    instance: dg.DagsterInstance, first: str, last: str, settings: Settings | None = None
) -> dg.ExecuteInProcessResult:
    """Materialize every daily partition in [first, last] in one run (single-run backfill)."""
    return materialize(
        [daily_summaries.key.to_user_string()],
        instance,
        tags={
            "dagster/asset_partition_range_start": first,
            "dagster/asset_partition_range_end": last,
        },
        raise_on_error=False,
        settings=settings,
    )


def graph_fingerprint(settings: Settings) -> str:
    """Hash of what the whole graph's output depends on: every asset's code version, the
    notes' data version, the session files (path, size, mtime), engine, model and "now".

    Equal fingerprints mean a full materialization would recompute nothing that changed.
    """
    import hashlib
    import json

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


def materialize_sessions(
    settings: Settings,
    session_keys: Sequence[str],
    instance: dg.DagsterInstance,
    run_config: dict | None = None,
) -> dict[str, str | None]:
    """Materialize the sessions spine for each session key (one run per partition), adding
    missing dynamic partitions first. Returns ``{session_key: None or failure line}``."""
    existing = set(instance.get_dynamic_partitions(SESSION_PARTITIONS.name))
    missing = [key for key in session_keys if key not in existing]
    if missing:
        instance.add_dynamic_partitions(SESSION_PARTITIONS.name, missing)
    outcome: dict[str, str | None] = {}
    for key in session_keys:
        result = materialize(
            SESSION_SPINE_SELECTION,
            instance,
            partition_key=key,
            raise_on_error=False,
            settings=settings,
            run_config=run_config,
        )
        outcome[key] = None if result.success else failure_message(result)
    return outcome
