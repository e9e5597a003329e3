"""The Dagster layer: assets, checks, sensors and resources by domain.

Two Dagster APIs the definitions use are marked beta in the pinned minor version:
``backfill_policy`` on the session assets and ``observable_source_asset`` for the notes
folder, both used on purpose. Dagster warns about them each time they are defined; the
domain modules are loaded here with that warning off, so no process that loads the
definitions (a code server of ``dagster dev``, the CLI, a test, a script) prints it.
"""

import warnings

import dagster as dg

with warnings.catch_warnings():
    warnings.filterwarnings("ignore", category=dg.BetaWarning)
    from selene_dag.defs import notes, retrieval, sessions  # noqa: F401
