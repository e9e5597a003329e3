"""Automation conditions, each defined once and used by the assets of every domain.

One mechanism per cadence: assets follow their inputs with :data:`FOLLOW_UPSTREAM`, and
the cadences the specification gives (digests hourly, tiers daily at 03:00, each day's
summary after midnight) are cron conditions on the assets themselves. The
automation-condition sensor in ``definitions.py`` evaluates them all. Essences every 5
minutes are a sensor's (``notes.essences_sensor``): only while a run left notes to analyse.
"""

from __future__ import annotations

import functools
import operator

import dagster as dg

# Follow an input only when its content changed (its data version), not whenever it was
# merely re-materialized: a cosmetic re-run that produces the same hash triggers nothing.
_INPUT_CHANGED = (
    dg.AutomationCondition.data_version_changed()
    & ~dg.AutomationCondition.executed_with_root_target()
).with_label("input changed")

# Essences every 5 minutes (seed 000) while a run left notes to analyse: a sensor's
# interval (``notes.essences_sensor``), not a clock, which ran them with nothing to do.
ESSENCES_INTERVAL = 5 * 60
DIGESTS_CRON = "0 * * * *"
TIERS_CRON = "0 3 * * *"
DAILY_SUMMARY_CRON = "30 0 * * *"

CRONS = (DIGESTS_CRON, TIERS_CRON, DAILY_SUMMARY_CRON)

# Whether a clock of the assets ticked since the last evaluation: then an asset may be
# requested by its clock alone.
_A_CLOCK_TICKED = functools.reduce(
    operator.or_, (dg.AutomationCondition.cron_tick_passed(cron) for cron in CRONS)
)

# eager() also follows an input that merely *will be requested* this tick. An input that
# runs on its own clock (thread_digests every hour) would then drag everything below
# it along on every tick, changed or not; so follow a requested input only when it is
# requested because its own inputs changed or run now; and on an evaluation after a clock
# ticked, only for an input of its own that changed, not one that is requested (at an hour,
# the digests' clock and the essences' ran compression_health with them). An input that
# ran by its clock and changed is still followed, one evaluation later, through its data
# version.
_INPUT_FOLLOWS_A_CHANGE = (
    dg.AutomationCondition.will_be_requested()
    & dg.AutomationCondition.any_deps_match(
        dg.AutomationCondition.data_version_changed()
        | (dg.AutomationCondition.will_be_requested() & ~_A_CLOCK_TICKED)
    )
).with_label("input will run for a changed input")

_FOLLOW = dg.AutomationCondition.newly_missing() | dg.AutomationCondition.any_deps_match(
    _INPUT_CHANGED | _INPUT_FOLLOWS_A_CHANGE
)

# since_last_handled() also resets when the asset is updated: an input that changed while
# the asset's own run was in progress was forgotten when that run ended, though the run
# had read the input before the change. Such a change is kept until the asset is next
# requested; a change seen on the tick right after a request (the run it started may have
# read the input before the change) does not count as handled by that request.
_CHANGED_DURING_OWN_RUN = (
    (_FOLLOW & dg.AutomationCondition.in_progress())
    .since(dg.AutomationCondition.newly_requested() & ~_FOLLOW)
    .with_label("input changed during its own run")
)

FOLLOW_UPSTREAM = (
    dg.AutomationCondition.in_latest_time_window()
    & (_FOLLOW.since_last_handled() | _CHANGED_DURING_OWN_RUN)
    & ~dg.AutomationCondition.any_deps_missing()
    & ~dg.AutomationCondition.any_deps_in_progress()
    & ~dg.AutomationCondition.in_progress()
).with_label("follow changed inputs")

# A check runs with its asset: in the run that materializes it (eager() follows an asset
# that will be requested this tick), or after it was materialized elsewhere. A check with
# no condition was never requested by automation: the blocking ones did not guard the
# runs the daemon started.
WITH_ITS_ASSET = dg.AutomationCondition.eager().with_label("with its asset")


def every(cron: str) -> dg.AutomationCondition:
    """Run once per tick of ``cron`` whatever the inputs did, once every input exists, and
    never twice at once."""
    return (
        dg.AutomationCondition.cron_tick_passed(cron)
        & ~dg.AutomationCondition.any_deps_missing()
        & ~dg.AutomationCondition.in_progress()
    ).with_label(f"every {cron}")


def follow_or_every(cron: str) -> dg.AutomationCondition:
    """Follow changed inputs, and also run once per tick of ``cron``: for work that ages
    with the clock (tiers, threads) or is redone on a clock (digests)."""
    return (FOLLOW_UPSTREAM | every(cron)).with_label(f"follow inputs, and every {cron}")
