"""The ``session_files`` sensor: scan the session roots (never the database), add one
dynamic partition per new file and request a spine run for each new or grown file.

Cursor: JSON ``{path: [size, mtime]}`` of the files seen at the last tick.
"""

from __future__ import annotations

import json

import dagster as dg

from selene_dag.defs.assets_sessions import SESSION_PARTITIONS, SESSION_SPINE_SELECTION
from selene_dag.sessions.scanner import ScannedFile, scan_roots
from selene_dag.config import load_settings


def changed_files(files: list[ScannedFile], cursor: dict[str, list[float]]) -> list[ScannedFile]:
    """Files that are new, or whose size or mtime differ from the cursor."""
    return [f for f in files if cursor.get(f.path) != [f.size, f.mtime]]


@dg.sensor(
    target=SESSION_SPINE_SELECTION,
    default_status=dg.DefaultSensorStatus.RUNNING,
    minimum_interval_seconds=60,
    description="Scans SELENE_SESSION_ROOTS; new or grown session files get a partition and a run.",
)
def session_files_sensor(context: dg.SensorEvaluationContext) -> dg.SensorResult:
    """One tick: scan, diff against the cursor, add partitions, request runs."""
    settings = load_settings()
    try:
        cursor = json.loads(context.cursor) if context.cursor else {}
    except json.JSONDecodeError:
        cursor = {}
    files = scan_roots(settings.session_roots)
    existing = set(context.instance.get_dynamic_partitions(SESSION_PARTITIONS.name))
    new_keys = sorted({f.session_key for f in files} - existing)
    requests = [
        dg.RunRequest(partition_key=f.session_key, run_key=f"{f.session_key}:{f.size}:{f.mtime}")
        for f in changed_files(files, cursor)
    ]
    partition_requests = [SESSION_PARTITIONS.build_add_request(new_keys)] if new_keys else []
    return dg.SensorResult(
        run_requests=requests,
        dynamic_partitions_requests=partition_requests,
        cursor=json.dumps({f.path: [f.size, f.mtime] for f in files}, sort_keys=True),
    )
