"""The code location: one ``dg.Definitions`` holding every asset, check, schedule and sensor."""

from __future__ import annotations

import dagster as dg

from selene_dag.defs.assets_context import CONTEXT_ASSETS, CONTEXT_CHECKS
from selene_dag.defs.assets_notes import NOTES_ASSETS
from selene_dag.defs.assets_sessions import SESSION_ROLLUPS, SESSION_SPINE
from selene_dag.defs.automation_notes import NOTES_AUTOMATION
from selene_dag.defs.automation_sessions import session_files_sensor
from selene_dag.defs.checks_notes import NOTES_CHECKS
from selene_dag.defs.checks_sessions import SESSION_CHECKS
from selene_dag.defs.resources import default_resources

defs = dg.Definitions(
    assets=[*NOTES_ASSETS, *SESSION_SPINE, *SESSION_ROLLUPS, *CONTEXT_ASSETS],
    asset_checks=[*NOTES_CHECKS, *SESSION_CHECKS, *CONTEXT_CHECKS],
    jobs=[*NOTES_AUTOMATION["jobs"]],
    schedules=[*NOTES_AUTOMATION["schedules"]],
    sensors=[*NOTES_AUTOMATION["sensors"], session_files_sensor],
    resources=default_resources(),
)
