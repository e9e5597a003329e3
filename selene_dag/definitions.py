"""The code location: one ``dg.Definitions`` holding every asset, check, schedule and sensor."""

from __future__ import annotations

import dagster as dg

from selene_dag.defs import assets_notes
from selene_dag.defs.resources import default_resources

defs = dg.Definitions(
    assets=[assets_notes.notes_source, assets_notes.raw_notes],
    resources=default_resources(),
)
