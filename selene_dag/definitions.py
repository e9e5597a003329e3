"""The code location: the definitions of every domain merged into one ``dg.Definitions``.

Each domain module of ``selene_dag.defs`` holds its assets, checks and automation; the
automation-condition sensor below evaluates every asset's condition and is running by
default, so `dagster dev` follows changes and cadences without a click.
"""

from __future__ import annotations

import dagster as dg

from selene_dag.defs.notes import (
    NOTES_ASSETS,
    NOTES_CHECKS,
    essences_sensor,
    notes_folder_sensor,
)
from selene_dag.defs.resources import default_resources
from selene_dag.defs.retrieval import RETRIEVAL_ASSETS, RETRIEVAL_CHECKS
from selene_dag.defs.sessions import (
    SESSION_CHECKS,
    SESSION_ROLLUPS,
    SESSION_SPINE,
    session_files_sensor,
)

automation_sensor = dg.AutomationConditionSensorDefinition(
    "selene_automation",
    target=dg.AssetSelection.all(),
    default_status=dg.DefaultSensorStatus.RUNNING,
    minimum_interval_seconds=30,
    description="Runs what follows changed inputs, and each cadence (digests, tiers, daily summaries).",
)

defs = dg.Definitions(
    assets=[*NOTES_ASSETS, *SESSION_SPINE, *SESSION_ROLLUPS, *RETRIEVAL_ASSETS],
    asset_checks=[*NOTES_CHECKS, *SESSION_CHECKS, *RETRIEVAL_CHECKS],
    sensors=[notes_folder_sensor, essences_sensor, session_files_sensor, automation_sensor],
    resources=default_resources(),
)
