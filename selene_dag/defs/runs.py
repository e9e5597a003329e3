"""Materialize the real definitions from the CLI and the API, with their settings.

The persistent instance lives in ``$SELENE_HOME/dagster`` (the same DAGSTER_HOME that
``selene-dag dev`` uses), so runs started from the CLI show up in the UI and staleness is
tracked across both. Runs get their resources from the caller's settings, never from
variables written into the environment.
"""

from __future__ import annotations

import gc
import json
import logging
import re
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import dagster as dg

from selene_dag.config import Settings
from selene_dag.definitions import defs
from selene_dag.defs.metadata import AS_OF_DAY, ESSENCES_LEFT, FAILED_FILES
from selene_dag.defs.notes import (
    FORGOTTEN_FOLDER,
    daily_summaries,
    folder_observation,
    recorded_folder_version,
)
from selene_dag.defs.resources import default_resources, resources_for
from selene_dag.defs.run_owner import (
    daemon_alive,
    others_run_here,
    owner_tags,
    release_dead_runs,
)
from selene_dag.defs.sessions import (
    DISTILL_SELECTION,
    PROJECTS_SELECTION,
    SESSION_PARTITIONS,
    SESSION_SPINE_SELECTION,
)
from selene_dag.errors import make_folder, step_write_failure
from selene_dag.files import write_whole
from selene_dag.notes.ingest import notes_folder_version
from selene_dag.store import StoreError, open_store

INSTANCE_HEADER = "# Written by selene-dag, which rewrites it while this line is here."

INSTANCE_YAML = """\
{header}
# Delete that line to keep your own edits.
# DuckDB allows one writer per file: every asset that writes is in the `duckdb` pool, and
# pools default to one op at a time.
concurrency:
  pools:
    default_limit: 1
telemetry:
  enabled: false
# A run that ended (interrupted in `selene-dag dev`) gives its pool slot back: kept, every
# later run waited for it.
run_monitoring:
  enabled: true
  free_slots_after_run_end_seconds: 15
# A run that automation or a sensor started and that failed (the database held by another
# process past SELENE_LOCK_WAIT, a model server down for a moment) runs once more: a sensor
# does not request it again. Runs of the CLI are not re-run: it reports their failure.
run_retries:
  enabled: true
  max_retries: 1
# The session sensor ticks every 5 s: its skipped ticks (nothing new) are kept one day.
retention:
  sensor:
    purge_after_days:
      skipped: 1
      failure: 30
      success: -1
# Steps report through the event log (context.log), not their stdout: no capture of it,
# which mirrored each run's output through a `tail` and a watcher process (two processes
# started per run; a Ctrl-C printed the watcher's traceback).
compute_logs:
  module: dagster._core.storage.noop_compute_log_manager
  class: NoOpComputeLogManager
# Dagster's SQLite event log, with one open connection per database file.
event_log_storage:
  module: selene_dag.defs.event_log
  class: ConnectedSqliteEventLogStorage
  config:
    base_dir: {event_log_dir}
"""


def instance_yaml(home: Path) -> str:
    """The dagster.yaml selene-dag writes for the Dagster home ``home`` (absolute)."""
    return INSTANCE_YAML.format(
        header=INSTANCE_HEADER, event_log_dir=json.dumps(str(home / "history" / "runs"))
    )


def prepare_dagster_home(settings: Settings) -> Path:
    """Create ``$SELENE_HOME/dagster`` with its dagster.yaml. A dagster.yaml selene-dag
    wrote (its first line is :data:`INSTANCE_HEADER`) is brought up to date, for a home
    that moved or an older release; one without that line is the user's and stays."""
    home = make_folder(settings.dagster_home.resolve(), "the Dagster instance")
    config = home / "dagster.yaml"
    wanted = instance_yaml(home)
    if config.exists():
        current = config.read_text(encoding="utf-8")
        if current == wanted or not _written_by_us(current):
            return home
    write_whole(config, wanted)  # a process starting now never reads half of it
    return home


# The code location `selene-dag dev` serves, named the same wherever it is started (the
# sensors' cursors and on/off states are kept per location name).
DEV_WORKSPACE_YAML = """\
# Written by selene-dag dev, which rewrites it while this line is here.
load_from:
  - python_module:
      module_name: selene_dag.definitions
      location_name: selene_dag
"""


def dev_workspace(dagster_home: Path) -> Path:
    """Write the workspace file `selene-dag dev` starts Dagster with into ``dagster_home``
    and return its path: selene-dag's definitions, under one location name (a
    workspace.yaml in the directory it was started from was taken instead). A file there
    that selene-dag did not write (its first line) is the user's: kept as it is."""
    path = dagster_home / "workspace.yaml"
    if path.is_file():
        current = path.read_text(encoding="utf-8")
        if current == DEV_WORKSPACE_YAML or not current.startswith("# Written by selene-dag dev"):
            return path
    write_whole(path, DEV_WORKSPACE_YAML)
    return path


def _written_by_us(text: str) -> bool:
    return text.startswith(INSTANCE_HEADER + "\n") or text == _PREVIOUS_INSTANCE_YAML


# What earlier releases wrote, before the header line.
_PREVIOUS_INSTANCE_YAML = """\
# Written by selene-dag. DuckDB allows one writer per file: every asset that writes is in
# the `duckdb` pool, and pools default to one op at a time.
concurrency:
  pools:
    default_limit: 1
telemetry:
  enabled: false
"""


def instance_for(settings: Settings) -> dg.DagsterInstance:
    """Return the persistent Dagster instance under ``$SELENE_HOME/dagster``. Processes
    opening it at once take turns: Dagster creates and stamps its SQLite storage when it
    opens an instance, and two commands started together on a new home stamped it twice,
    which broke every later run ("more than one head present")."""
    home = make_folder(settings.dagster_home.resolve(), "the Dagster instance")
    with _exclusive(home / ".opening.lock", settings.lock_wait):
        return dg.DagsterInstance.from_config(str(prepare_dagster_home(settings)))


@contextmanager
def _exclusive(path: Path, wait: float) -> Iterator[None]:
    """Hold an exclusive lock on the file ``path`` (created if needed) across processes,
    waiting up to ``wait`` seconds for it (then StoreError); the system frees it when the
    process ends. Where there is no ``fcntl``, no lock."""
    try:
        import fcntl
    except ImportError:  # Windows: nothing to wait for
        yield
        return
    with open(path, "a", encoding="utf-8") as handle:
        deadline = time.monotonic() + max(wait, 5.0)  # opening takes well under a second
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise StoreError(
                        f"another process has been opening the Dagster instance for over "
                        f"{max(wait, 5.0):g} s ({path}); stop it or run the command again"
                    ) from None
                time.sleep(0.02)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def all_assets_and_checks() -> list:
    """Every asset and asset check of the code location (for ``dg.materialize``)."""
    items: list = list(defs.assets or [])
    items += list(defs.asset_checks or [])
    return items


_FROZEN = threading.Event()


def _freeze_loaded_objects() -> None:
    """Once per process, before its first run: move every object alive now (modules, the
    definitions, the instance: hundreds of thousands) out of the garbage collector's
    reach, where they stay anyway. Otherwise each full collection that a step's
    allocations trigger walks them all again: writing or loading 10,000 notes took 1.6-1.9x
    as long inside a run. Once only, so a later run does not pin the garbage of the runs
    before it."""
    if not _FROZEN.is_set():
        _FROZEN.set()
        gc.freeze()


# The daemon's run retries are for the runs it started: a CLI run's failure is reported
# to whoever started it, who decides.
NO_RETRY = {"dagster/max_retries": "0"}


@contextmanager
def keep_store_open(settings: Settings | None, instance: dg.DagsterInstance) -> Iterator[None]:
    """Hold the store of ``settings`` open for the block, so that the steps of its runs and
    the reads around them join the database DuckDB already holds in this process, unless
    another process may run steps in ``instance`` (:func:`.run_owner.others_run_here`):
    then a step opens the file only once it holds the pool's slot. Holding the file while
    waiting for the slot, whose holder waits for the file, stalled both for
    ``SELENE_LOCK_WAIT`` and failed the other's step. Without a daemon, the file is taken
    first and other runs are looked for then, as every command does before it starts a
    run (three ingests started together looked first: one found no run and took the file,
    another found that run and started its own, whose step took the slot and waited for
    the file; two failed after a minute); a run found then (one started by hand, or left
    by a process gone) may wait for the file, which is let go. Nothing is held without
    settings."""
    if settings is None or daemon_alive(instance):
        yield
        return
    held = ExitStack()
    held.enter_context(open_store(settings.db_path, wait=settings.lock_wait))
    if others_run_here(instance):
        held.close()
    with held:
        yield


# In-process runs of one process go one at a time: Dagster's in-process execution swaps
# the process's logging configuration and output streams while it runs, and two threads
# running at once (a library caller's, or `serve`'s requests) hung on its logging lock or
# left the process's stdout redirected into a run's log file.
_ONE_RUN_AT_A_TIME = threading.RLock()


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
    ``settings`` (None: the environment at run time, as in `dagster dev`).

    With ``settings`` the store stays open for the whole run (:func:`keep_store_open`):
    each step's connection then joins the database DuckDB already holds in this process
    instead of opening the file and checkpointing it again on close (about 40 ms a step on
    a 10,000-note store), unless another process (``selene-dag dev``) may run steps.

    The run is tagged with this process (:mod:`.run_owner`), and runs left unfinished by a
    process that died first are marked failed and their pool slots freed. Runs of one
    process go one at a time; an interrupted run raises KeyboardInterrupt."""
    _freeze_loaded_objects()
    with _ONE_RUN_AT_A_TIME:
        release_dead_runs(instance)
        with keep_store_open(settings, instance), _interrupts_as_keyboard():
            result = dg.materialize(
                all_assets_and_checks(),
                selection=selection,
                instance=instance,
                resources=resources_for(settings) if settings is not None else default_resources(),
                partition_key=partition_key,
                tags={**(tags or {}), **owner_tags(), **NO_RETRY},
                raise_on_error=raise_on_error,
                run_config={
                    **(run_config or {}),
                    "loggers": {"console": {"config": {"log_level": log_level}}},
                },
            )
        if not result.success and interrupted(result):
            # Ctrl-C (or SIGTERM) reached a step: the run is over, and so is the command.
            raise KeyboardInterrupt
        return result


@contextmanager
def _interrupts_as_keyboard() -> Iterator[None]:
    """Dagster's interrupt error (raised through a run with ``raise_on_error``) as the
    KeyboardInterrupt it stands for: Ctrl-C, not a failure to report."""
    from dagster._core.errors import DagsterExecutionInterruptedError

    try:
        yield
    except DagsterExecutionInterruptedError:
        raise KeyboardInterrupt from None


def interrupted(result: dg.ExecuteInProcessResult) -> bool:
    """True when ``result`` failed because the process was interrupted (Ctrl-C, SIGTERM):
    Dagster's interrupt error in a step, or a DuckDB query the signal stopped."""
    for event in result.all_events:
        if not event.is_failure:
            continue
        data = event.event_specific_data
        error = getattr(data, "error", None)
        while error is not None:
            if error.cls_name in ("DagsterExecutionInterruptedError", "KeyboardInterrupt"):
                return True
            if "Query interrupted" in (error.message or ""):
                return True
            error = error.cause or error.context
    return False


FAILURE_CHARS = 300


_DOTTED_CLASS = re.compile(r"^(?:dagster|selene_dag)(?:\.\w+)+: ")


def failure_message(result: dg.ExecuteInProcessResult) -> str:
    """The root cause of a failed run's first step failure, as one line: the first line of
    its message that says something (the line after it when it only introduces the next
    with a colon), cut at ``FAILURE_CHARS``. A database error's message goes on with a
    dump of the rows it held, ending in a lone quote: the first line names the error."""
    for event in result.all_events:
        if not event.is_step_failure:
            continue
        error = event.event_specific_data.error
        while (
            error.cause is not None and error.cls_name and "DagsterExecutionStep" in error.cls_name
        ):
            error = error.cause
        lines = [
            line.strip()
            for line in error.message.strip().splitlines()
            if any(ch.isalnum() for ch in line)
        ]
        if not lines:
            return f"step {event.step_key}: {error.cls_name}"
        full_disk = step_write_failure(error.message)
        if full_disk:  # what to do, not the database's error class
            return f"step {event.step_key}: {full_disk}"
        text = lines[1] if lines[0].endswith(":") and len(lines) > 1 else lines[0]
        # A step's own dg.Failure or one of our errors says what happened: a class's dotted
        # name ("selene_dag.llm.engine.EngineUnavailable: ") says nothing to a user.
        text = _DOTTED_CLASS.sub("", text, count=1)
        if len(text) > FAILURE_CHARS:
            text = text[: FAILURE_CHARS - 1] + "…"
        return f"step {event.step_key}: {text}"
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


# Session files per run: run overhead (about 1 s: run creation, step setup) is paid once
# per batch; a batch's step metadata and logs stay readable in the UI, and the progress
# bar moves at least once per batch.
SESSION_BATCH = 250


def session_batches(ordered: Sequence[str], chosen: Sequence[str], size: int) -> list[list[str]]:
    """``chosen`` keys cut into runs: contiguous stretches of the partition order
    ``ordered`` (a run covers a range of partitions), each at most ``size`` keys."""
    wanted = set(chosen)
    batches: list[list[str]] = []
    current: list[str] = []
    for key in ordered:
        if key in wanted and len(current) < size:
            current.append(key)
            continue
        if current:
            batches.append(current)
        current = [key] if key in wanted else []
    if current:
        batches.append(current)
    return batches


def _partition_errors(result: dg.ExecuteInProcessResult) -> dict[str, str]:
    """Per-partition ``error`` metadata the steps of a batch run recorded, first one wins;
    for a step that failed for every file of its run, each file's reason its failure
    carries (``FAILED_FILES``)."""
    errors: dict[str, str] = {}
    for event in result.all_events:
        if event.is_step_failure:
            failure = getattr(event.event_specific_data, "user_failure_data", None)
            value = failure.metadata.get(FAILED_FILES) if failure is not None else None
            for key, message in (getattr(value, "value", None) or {}).items():
                errors.setdefault(key, f"{event.step_key}: {message}")
            continue
        if not event.is_step_materialization:
            continue
        materialization = event.event_specific_data.materialization
        error = materialization.metadata.get("error")
        if error is not None and materialization.partition:
            errors.setdefault(
                materialization.partition,
                f"{materialization.asset_key.to_user_string()}: {getattr(error, 'value', error)}",
            )
    return errors


def materialize_sessions(
    settings: Settings,
    session_keys: Sequence[str],
    instance: dg.DagsterInstance,
    run_config: dict | None = None,
    on_batch: Callable[[int, int], None] | None = None,
    selection: dg.AssetSelection = SESSION_SPINE_SELECTION,
) -> dict[str, str | None]:
    """Materialize the sessions spine (or ``selection`` of it) for ``session_keys``, adding
    missing dynamic partitions first. Keys go in batches (:func:`session_batches`, one run
    each); a file that fails costs only itself. ``on_batch(done, total)`` is called after
    each run. Returns ``{session_key: None or failure line}``."""
    existing = instance.get_dynamic_partitions(SESSION_PARTITIONS.name)
    known = set(existing)
    missing = [key for key in dict.fromkeys(session_keys) if key not in known]
    if missing:
        instance.add_dynamic_partitions(SESSION_PARTITIONS.name, missing)
    ordered = [*existing, *missing]
    outcome: dict[str, str | None] = {}
    total = len(set(session_keys))
    for batch in session_batches(ordered, session_keys, SESSION_BATCH):
        single = len(batch) == 1
        result = materialize(
            selection,
            instance,
            partition_key=batch[0] if single else None,
            tags=None
            if single
            else {
                "dagster/asset_partition_range_start": batch[0],
                "dagster/asset_partition_range_end": batch[-1],
            },
            raise_on_error=False,
            settings=settings,
            run_config=run_config,
        )
        errors = _partition_errors(result)
        failure = None if result.success else failure_message(result)
        for key in batch:
            outcome[key] = errors.get(key, failure)
        if on_batch is not None:
            on_batch(len(outcome), total)
    return outcome


def materialize_distillations(
    settings: Settings,
    session_keys: Sequence[str],
    instance: dg.DagsterInstance,
    on_batch: Callable[[int, int], None] | None = None,
) -> dict[str, str | None]:
    """Distill ``session_keys`` again (the spine's last step only, their chunks and scores
    as stored), as :func:`materialize_sessions` runs the spine: after a distillation
    setting changed."""
    return materialize_sessions(
        settings, session_keys, instance, on_batch=on_batch, selection=DISTILL_SELECTION
    )


def materialize_projects(
    settings: Settings, projects: Sequence[str], instance: dg.DagsterInstance
) -> str | None:
    """Distill ``projects`` again (``project_distillations`` for those projects only): after
    their sessions ran. None, or the failure line."""
    result = materialize(
        PROJECTS_SELECTION,
        instance,
        raise_on_error=False,
        settings=settings,
        run_config={"ops": {"project_distillations": {"config": {"projects": sorted(projects)}}}},
    )
    return None if result.success else failure_message(result)


@dataclass
class StaleRun:
    """What a stale-only materialization decided and did."""

    selected: list[str] = field(default_factory=list)
    results: list[dg.ExecuteInProcessResult] = field(default_factory=list)
    reasons: dict[str, str] = field(default_factory=dict)

    @property
    def result(self) -> dg.ExecuteInProcessResult | None:
        """The run that failed, else the last run; None when nothing had to run."""
        failed = [r for r in self.results if not r.success]
        return failed[0] if failed else self.results[-1] if self.results else None

    @property
    def success(self) -> bool:
        """True when nothing had to run or every run succeeded."""
        return all(r.success for r in self.results)

    def metadata(self, node: str) -> dict[str, Any]:
        """The metadata of ``node``'s materialization in these runs ({} when it did not run)."""
        for result in self.results:
            for mat in result.asset_materializations_for_node(node):
                return {k: getattr(v, "value", v) for k, v in mat.metadata.items()}
        return {}


def observe_notes_folder(
    instance: dg.DagsterInstance, settings: Settings, version: str | None = None
) -> None:
    """Record the notes folder's current data version (the observable source
    ``notes_source``), so that staleness of ``raw_notes`` reflects the files now. When the
    latest recorded observation already holds that version, nothing is recorded.
    ``version``: the folder's version when the caller computed it a moment before
    (``notes_folder_version``; reading a large folder's file stamps again costs time). It
    is never newer than what ``raw_notes`` reads after it, so an edit made meanwhile is
    seen again by the next observation, never lost.

    The observation is reported as a runless event (as an external system reports one):
    the same event an observation run logs, without the run around it, which cost each
    changed ingest about 0.5 s."""
    if version is None:
        version = notes_folder_version(settings.notes_dir, settings.home)
    if recorded_folder_version(instance)[0] != version:
        instance.report_runless_asset_event(folder_observation(version))


def _stale_resolver(instance: dg.DagsterInstance) -> Any:
    # Internal Dagster API (pinned to the 1.13 minor range in pyproject).
    from dagster._core.asset_graph_view.asset_graph_view import AssetGraphView, TemporalContext
    from dagster._core.definitions.data_version import CachingStaleStatusResolver
    from dagster._time import get_current_datetime

    graph = defs.resolve_asset_graph()
    view = AssetGraphView(
        temporal_context=TemporalContext(effective_dt=get_current_datetime(), last_event_id=None),
        instance=instance,
        asset_graph=graph,
    )
    return CachingStaleStatusResolver(instance=instance, asset_graph=graph, loading_context=view)


def _latest_metadata(instance: dg.DagsterInstance, key: dg.AssetKey) -> dict[str, Any] | None:
    event = instance.get_latest_materialization_event(key)
    if event is None or event.asset_materialization is None:
        return None
    return {k: getattr(v, "value", v) for k, v in event.asset_materialization.metadata.items()}


def stale_reasons(
    instance: dg.DagsterInstance, settings: Settings, keys: Sequence[dg.AssetKey]
) -> dict[str, str]:
    """Why each of ``keys`` (unpartitioned assets) must run now, for those that must:
    never materialized, stale in Dagster's lineage (an input's data version or its code
    version changed), computed with another engine or model, counted in another model's
    tokens (assets whose metadata names the ``model``), computed for another day
    (assets tagged ``selene/clock``), left notes without an essence at its limit
    (``processed_notes`` with a model server), or, for ``raw_notes``, last run to forget a
    folder.
    Keys absent from the result are fresh."""
    from dagster._core.definitions.data_version import StaleStatus

    from selene_dag.llm.factory import engine_label

    resolver = _stale_resolver(instance)
    graph = defs.resolve_asset_graph()
    expected_engine = engine_label(settings)
    today = settings.now().date().isoformat()
    reasons: dict[str, str] = {}
    for key in keys:
        name = key.to_user_string()
        status = resolver.get_status(key)
        if status == StaleStatus.MISSING:
            reasons[name] = "never materialized"
            continue
        if status == StaleStatus.STALE:
            causes = resolver.get_stale_root_causes(key)
            reasons[name] = "; ".join(c.reason for c in causes) or "stale"
            continue
        metadata = _latest_metadata(instance, key) or {}
        if FORGOTTEN_FOLDER in metadata:
            reasons[name] = "its last run forgot a folder"
        elif "engine" in metadata and metadata["engine"] != expected_engine:
            reasons[name] = f"computed with {metadata['engine']}, now {expected_engine}"
        elif "model" in metadata and metadata["model"] != settings.model:
            reasons[name] = f"counted in {metadata['model']}'s tokens, now {settings.model}'s"
        elif graph.get(key).tags.get("selene/clock") and metadata.get(AS_OF_DAY) != today:
            reasons[name] = f"computed for {metadata.get(AS_OF_DAY)}, now {today}"
        elif metadata.get(ESSENCES_LEFT):
            reasons[name] = f"{metadata[ESSENCES_LEFT]} notes left to analyse"
    return reasons


def _unpartitioned(selection: dg.AssetSelection) -> list[dg.AssetKey]:
    graph = defs.resolve_asset_graph()
    return sorted(
        k
        for k in selection.resolve(graph)
        if graph.get(k).is_materializable and graph.get(k).partitions_def is None
    )


def stale_plan(
    instance: dg.DagsterInstance,
    settings: Settings,
    selection: dg.AssetSelection,
    notes_version: str | None = None,
) -> dict[str, str]:
    """The unpartitioned assets of ``selection`` that must run now, with why
    (:func:`stale_reasons`), after recording the notes folder as it is now (or as
    ``notes_version`` says it was a moment ago, see :func:`observe_notes_folder`)."""
    observe_notes_folder(instance, settings, notes_version)
    return stale_reasons(instance, settings, _unpartitioned(selection))


RAW_NOTES = "raw_notes"


def materialize_stale(
    instance: dg.DagsterInstance,
    settings: Settings,
    selection: dg.AssetSelection,
    *,
    force: bool = False,
    notes_version: str | None = None,
) -> StaleRun:
    """Materialize, in one run, the unpartitioned assets of ``selection`` that must run
    (see :func:`stale_reasons`) and everything downstream of them inside ``selection``;
    with nothing stale no run starts. ``force`` runs the whole selection;
    ``notes_version``: see :func:`stale_plan`.

    When the notes folder is what changed (``raw_notes`` must read it), ``raw_notes`` runs
    first on its own, and what follows it runs only if its data version moved: ingesting
    two unchanged folders in turn changes the observed folder each time, which made every
    downstream asset stale and run, though no note changed."""
    graph = defs.resolve_asset_graph()
    keys = _unpartitioned(selection)
    if force:
        reasons = {k.to_user_string(): "forced" for k in keys}
    else:
        reasons = stale_plan(instance, settings, selection, notes_version)
    if not reasons:
        return StaleRun()
    outcome = StaleRun(reasons=reasons)
    if not force and RAW_NOTES in reasons:
        outcome.selected.append(RAW_NOTES)
        outcome.results.append(
            materialize([RAW_NOTES], instance, raise_on_error=False, settings=settings)
        )
        if not outcome.success:
            return outcome
        keys = [k for k in keys if k.to_user_string() != RAW_NOTES]
        reasons = stale_reasons(instance, settings, keys)
        if not reasons:
            return outcome
    roots = {dg.AssetKey.from_user_string(name) for name in reasons}
    chosen = (dg.AssetSelection.assets(*roots).downstream()).resolve(graph) & set(keys)
    names = sorted(k.to_user_string() for k in chosen)
    outcome.selected.extend(names)
    outcome.results.append(materialize(names, instance, raise_on_error=False, settings=settings))
    return outcome


def forget_notes_folder(
    instance: dg.DagsterInstance, settings: Settings, key: str, selection: dg.AssetSelection
) -> StaleRun:
    """Forget the ingested folder ``key`` in one run: ``raw_notes`` configured to forget it,
    and what depends on it inside ``selection`` (threads, tiers, the search index…)."""
    graph = defs.resolve_asset_graph()
    root = dg.AssetKey("raw_notes")
    chosen = dg.AssetSelection.assets(root).downstream().resolve(graph) & (
        selection.resolve(graph) | {root}
    )
    names = sorted(k.to_user_string() for k in chosen if graph.get(k).partitions_def is None)
    run_config = {"ops": {"raw_notes": {"config": {"forget": key}}}}
    result = materialize(
        names, instance, raise_on_error=False, settings=settings, run_config=run_config
    )
    return StaleRun(selected=names, results=[result], reasons={"raw_notes": f"forget {key}"})


def sessions_to_run(
    instance: dg.DagsterInstance, session_keys: Sequence[str], changed: set[str]
) -> list[str]:
    """The session partitions to (re)materialize: files new or grown since their ingest
    (``changed``), partitions never materialized through the whole spine, and every
    partition when a spine asset's code version differs from the one its latest
    materialization recorded. A handful of queries, whatever the number of files."""
    graph = defs.resolve_asset_graph()
    spine = sorted(SESSION_SPINE_SELECTION.resolve(graph))
    for asset in spine:
        latest = instance.get_latest_materialization_event(asset)
        if latest is None or latest.asset_materialization is None:
            return list(session_keys)
        recorded = (latest.asset_materialization.tags or {}).get("dagster/code_version")
        if recorded != graph.get(asset).code_version:
            return list(session_keys)
    complete = set.intersection(*(set(instance.get_materialized_partitions(a)) for a in spine))
    return [key for key in session_keys if key in changed or key not in complete]


def daily_range_to_run(
    instance: dg.DagsterInstance, first: str, last: str, *, force: bool = False
) -> bool:
    """True when the daily summaries of [first, last] must run (then the whole range runs
    as one single-run backfill): a partition is missing, the code version changed, or
    their input ``processed_notes`` was materialized after them. Three queries, whatever
    the number of days (asking Dagster's stale status per partition costs seconds for
    thousands of days)."""
    if force:
        return True
    keys = daily_summaries.partitions_def.get_partition_keys_in_range(
        dg.PartitionKeyRange(first, last)
    )
    if set(keys) - set(instance.get_materialized_partitions(daily_summaries.key)):
        return True
    latest = instance.get_latest_materialization_event(daily_summaries.key)
    upstream = instance.get_latest_materialization_event(dg.AssetKey("processed_notes"))
    if latest is None or upstream is None:
        return True
    code = daily_summaries.code_versions_by_key.get(daily_summaries.key)
    recorded = (latest.asset_materialization.tags or {}).get("dagster/code_version")
    return recorded != code or upstream.timestamp > latest.timestamp


def run_progress(instance: dg.DagsterInstance, since: float) -> str | None:
    """What the newest run started after ``since`` (a POSIX time) is doing, as one line:
    ``"<done> steps done, running <step>"``; None when no such run exists yet."""
    records = instance.get_run_records(limit=1)
    if not records or records[0].create_timestamp.timestamp() < since:
        return None
    stats = instance.get_run_step_stats(records[0].dagster_run.run_id)
    done = sum(1 for s in stats if s.end_time is not None)
    running = [s.step_key for s in stats if s.end_time is None and s.start_time is not None]
    return f"{done} steps done" + (f", running {running[0]}" if running else "")


@contextmanager
def watching(
    instance: dg.DagsterInstance, report: Callable[[str], None], interval: float = 0.5
) -> Iterator[None]:
    """While the body runs (runs executing in this process), call ``report`` with
    :func:`run_progress` from a background thread. Reading the instance never fails the
    body: a poll that errors is skipped."""
    since = time.time()
    stop = threading.Event()

    def poll() -> None:
        while not stop.wait(interval):
            try:
                line = run_progress(instance, since)
            except Exception:  # a busy event store: try again next tick
                continue
            if line:
                report(line)

    # With a second thread reading the instance, garbage collection can finalize an event
    # store connection in another thread than its own; SQLAlchemy then logs a harmless
    # "SQLite objects created in a thread" error, which must not reach the user's terminal.
    pool_log = logging.getLogger("sqlalchemy.pool")
    level = pool_log.level
    pool_log.setLevel(logging.CRITICAL)
    thread = threading.Thread(target=poll, name="selene-run-progress", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=10)
        pool_log.setLevel(level)
