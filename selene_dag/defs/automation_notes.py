"""Schedules and the notes-folder sensor (seed 000's launchd times, as Dagster automation).

Seed 000: essences every 5 minutes, fidelity daily at 03:00, digests hourly. Downstream
assets also follow their inputs through eager automation conditions. The sensor watches
SELENE_NOTES_DIR by file names, sizes and mtimes only: it never opens the database.
"""

import hashlib
import json

import dagster as dg

from selene_dag.defs.assets_notes import (
    daily_summaries,
    fidelity_tiers,
    processed_notes,
    raw_notes,
    thread_digests,
)
from selene_dag.notes.ingest import note_files
from selene_dag.config import load_settings

essences_job = dg.define_asset_job(
    "essences_job", selection=dg.AssetSelection.assets(raw_notes, processed_notes)
)
fidelity_job = dg.define_asset_job(
    "fidelity_job", selection=dg.AssetSelection.assets(fidelity_tiers)
)
digests_job = dg.define_asset_job("digests_job", selection=dg.AssetSelection.assets(thread_digests))
daily_summaries_job = dg.define_asset_job(
    "daily_summaries_job", selection=dg.AssetSelection.assets(daily_summaries)
)

essences_schedule = dg.ScheduleDefinition(
    name="essences_every_5_minutes",
    job=essences_job,
    cron_schedule="*/5 * * * *",
    default_status=dg.DefaultScheduleStatus.RUNNING,
    description="Seed 000's distill-essences cadence: new and changed notes every 5 minutes.",
)
fidelity_schedule = dg.ScheduleDefinition(
    name="fidelity_daily_0300",
    job=fidelity_job,
    cron_schedule="0 3 * * *",
    default_status=dg.DefaultScheduleStatus.RUNNING,
    description="Seed 000's evaluate-fidelity cadence: tiers age daily at 03:00.",
)
digests_schedule = dg.ScheduleDefinition(
    name="digests_hourly",
    job=digests_job,
    cron_schedule="0 * * * *",
    default_status=dg.DefaultScheduleStatus.RUNNING,
    description="Seed 000's compile-thread-digests cadence: stale digests hourly.",
)

daily_summaries_schedule = dg.build_schedule_from_partitioned_job(
    daily_summaries_job,
    hour_of_day=0,
    minute_of_hour=30,
    default_status=dg.DefaultScheduleStatus.RUNNING,
    description="Summarizes each finished day shortly after midnight.",
)


def folder_fingerprint() -> str:
    """Hash of the notes folder's file names, sizes and mtimes (no file is parsed)."""
    notes_dir = load_settings().notes_dir
    digest = hashlib.sha256()
    for path in note_files(notes_dir):
        try:
            stat = path.stat()
        except OSError:
            continue
        digest.update(f"{path}\x00{stat.st_size}\x00{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:32]


@dg.sensor(
    name="notes_folder_sensor",
    target=dg.AssetSelection.assets(raw_notes),
    minimum_interval_seconds=30,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Ingests SELENE_NOTES_DIR when a file is added, changed or removed.",
)
def notes_folder_sensor(context: dg.SensorEvaluationContext) -> dg.SensorResult:
    """Request a raw_notes run when the folder fingerprint changes (cursor = fingerprint)."""
    fingerprint = folder_fingerprint()
    previous = json.loads(context.cursor)["fingerprint"] if context.cursor else None
    cursor = json.dumps({"fingerprint": fingerprint})
    if fingerprint == previous:
        return dg.SensorResult(skip_reason="notes folder unchanged", cursor=cursor)
    return dg.SensorResult(run_requests=[dg.RunRequest(run_key=fingerprint)], cursor=cursor)


NOTES_AUTOMATION = {
    "jobs": [essences_job, fidelity_job, digests_job, daily_summaries_job],
    "schedules": [essences_schedule, fidelity_schedule, digests_schedule, daily_summaries_schedule],
    "sensors": [notes_folder_sensor],
}
