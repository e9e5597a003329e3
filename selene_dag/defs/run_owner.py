"""Which process runs a run, and the runs whose process died.

A run the CLI starts executes in its own process (``dg.materialize``), holding a slot of the
``duckdb`` pool while a step writes. A process killed mid-run (``kill -9``, a closed
terminal, a crash) leaves the run marked started and its slot claimed for ever: Dagster's
daemon would notice, but the CLI runs none, and every later run waited on that slot without
end. So each run carries the host, process id and process start time of the process that
runs it (:func:`owner_tags`), and before a run starts :func:`release_dead_runs` marks failed
the runs of this host whose process is gone, and frees their slots. Runs started elsewhere
(the UI, the daemon, another machine) carry no such tags, or another host; of those, a
started run whose start event was written by a process now gone (``dagster asset
materialize`` killed mid-run) is marked failed too when the instance's run storage is a
SQLite file of this machine; the rest are left to Dagster.
"""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path

import dagster as dg

HOST_TAG = "selene/host"
PID_TAG = "selene/pid"
START_TAG = "selene/process_start"

_UNFINISHED = [
    dg.DagsterRunStatus.NOT_STARTED,
    dg.DagsterRunStatus.STARTING,
    dg.DagsterRunStatus.STARTED,
    dg.DagsterRunStatus.CANCELING,
]


def _process_start(pid: int) -> str:
    """The start time of process ``pid`` (clock ticks after boot, from ``/proc``), "" where
    the system does not tell it: with the pid it names one process, never a later one
    that reuses the number."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return ""
    # The command name (field 2) may hold spaces and parentheses: fields follow its last ')'.
    fields = stat[stat.rfind(")") + 2 :].split()
    return fields[19] if len(fields) > 19 else ""


def owner_tags() -> dict[str, str]:
    """Tags naming this process as the one that runs a run."""
    pid = os.getpid()
    return {HOST_TAG: socket.gethostname(), PID_TAG: str(pid), START_TAG: _process_start(pid)}


def _alive(pid: int, start: str) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: it exists
        pass
    return not start or _process_start(pid) in ("", start)


def release_dead_runs(instance: dg.DagsterInstance) -> list[str]:
    """Mark failed the unfinished runs this host started whose process is gone, and free
    the pool slots they hold, and those of any run that has ended; returns their run ids."""
    host = socket.gethostname()
    released = []
    records = instance.get_run_records(
        filters=dg.RunsFilter(statuses=_UNFINISHED, tags={HOST_TAG: host})
    )
    for record in records:
        run = record.dagster_run
        pid = run.tags.get(PID_TAG, "")
        if not pid.isdigit() or _alive(int(pid), run.tags.get(START_TAG, "")):
            continue
        instance.report_run_failed(
            run, f"the process that ran it ({pid} on {host}) ended before the run did"
        )
        instance.event_log_storage.free_concurrency_slots_for_run(run.run_id)
        released.append(run.run_id)
    released += _release_dead_untagged_runs(instance)
    released += _release_ended_runs_slots(instance)
    return released


def _release_dead_untagged_runs(instance: dg.DagsterInstance) -> list[str]:
    """Mark failed the started runs without owner tags (``dagster asset materialize`` run
    by hand) whose process, the one that wrote their start event, is gone: killed, such a
    run stayed started for ever, and automation waited on it (its assets "in progress").
    Only on an instance whose run storage is a SQLite file of this machine: there a pid
    names a process of this host."""
    if "Sqlite" not in type(instance.run_storage).__name__:
        return []
    records = instance.get_run_records(
        filters=dg.RunsFilter(statuses=[dg.DagsterRunStatus.STARTED])
    )
    released = []
    for record in records:
        run = record.dagster_run
        if HOST_TAG in run.tags:
            continue
        start = instance.get_records_for_run(
            run.run_id, of_type=dg.DagsterEventType.RUN_START, limit=1
        ).records
        event = start[0].event_log_entry.dagster_event if start else None
        pid = event.pid if event is not None else None
        if not pid or _alive(pid, ""):
            continue
        instance.report_run_failed(run, f"the process that ran it ({pid}) ended before the run did")
        instance.event_log_storage.free_concurrency_slots_for_run(run.run_id)
        released.append(run.run_id)
    return released


def _release_ended_runs_slots(instance: dg.DagsterInstance) -> list[str]:
    """Free the pool slots still held by runs that have ended (of any origin): a run
    interrupted in ``selene-dag dev`` (Ctrl-C during a step) was marked failed with its
    slot kept, and every later run waited for it without end."""
    storage = instance.event_log_storage
    holders = storage.get_concurrency_run_ids()
    if not holders:
        return []
    records = instance.get_run_records(filters=dg.RunsFilter(run_ids=sorted(holders)))
    ended = [r.dagster_run.run_id for r in records if r.dagster_run.is_finished]
    # A slot of a run the instance no longer knows is no one's either.
    ended += sorted(holders - {r.dagster_run.run_id for r in records})
    for run_id in ended:
        storage.free_concurrency_slots_for_run(run_id)
    return ended


# The daemon of `selene-dag dev` beats every 30 s or so; twice that and more is a daemon gone.
DAEMON_ALIVE_SECONDS = 120


def daemon_alive(instance: dg.DagsterInstance) -> bool:
    """Whether a Dagster daemon beat recently (``selene-dag dev``: its sensors and
    automation start runs at any time)."""
    now = time.time()
    return any(
        now - beat.timestamp < DAEMON_ALIVE_SECONDS
        for beat in instance.get_daemon_heartbeats().values()
    )


def others_run_here(instance: dg.DagsterInstance) -> bool:
    """Whether steps of another process may claim this instance's pool slots now: a
    Dagster daemon beat recently (:func:`daemon_alive`), or a run of another process is
    queued or unfinished."""
    if daemon_alive(instance):
        return True
    records = instance.get_run_records(
        filters=dg.RunsFilter(statuses=[*_UNFINISHED, dg.DagsterRunStatus.QUEUED])
    )
    me = owner_tags()
    return any(
        record.dagster_run.tags.get(PID_TAG) != me[PID_TAG]
        or record.dagster_run.tags.get(HOST_TAG) != me[HOST_TAG]
        for record in records
    )
