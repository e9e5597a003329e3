"""A run whose process died (``kill -9`` mid-ingest) holds the ``duckdb`` pool's slot and
stays "started": every later run waited on that slot for ever. Before a run starts, runs of
this host whose process is gone are marked failed and their slots freed. Real instance,
real pool, real ingest."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import dagster as dg
from dagster._core.storage.dagster_run import DagsterRun
from dagster._core.utils import make_new_run_id

from selene_dag import service
from selene_dag.config import load_settings
from selene_dag.defs import runs
from selene_dag.defs.run_owner import HOST_TAG, PID_TAG, START_TAG, owner_tags


def _stale_run(instance: dg.DagsterInstance, tags: dict[str, str], claim: bool = True) -> str:
    run_id = make_new_run_id()
    instance.add_run(
        DagsterRun(
            job_name="__ASSET_JOB", run_id=run_id, status=dg.DagsterRunStatus.STARTED, tags=tags
        )
    )
    if claim:
        storage = instance.event_log_storage
        storage.initialize_concurrency_limit_to_default("duckdb")
        assert storage.claim_concurrency_slot("duckdb", run_id, "raw_notes").is_claimed
    return run_id


def _notes(tmp_path: Path) -> Path:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# Kafka\nConsumer lag grows at night.\n")
    return notes


def _ingest_in_a_child(home: Path, notes: Path) -> subprocess.CompletedProcess[str]:
    """Ingest ``notes`` into ``home`` in a child process with a deadline (the bug was a
    wait without end); it prints how many notes the folder holds."""
    code = (
        "from pathlib import Path; from selene_dag import service; "
        "from selene_dag.config import load_settings; "
        f"r = service.ingest(load_settings({{'SELENE_LOCK_WAIT': '5'}}, home=Path({str(home)!r})), "
        f"Path({str(notes)!r})); print(r.notes)"
    )
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=240, env=os.environ
    )


def test_a_run_whose_process_died_does_not_block_the_next(tmp_path: Path) -> None:
    notes = _notes(tmp_path)
    settings = load_settings({"SELENE_LOCK_WAIT": "5"}, home=tmp_path / "home")
    instance = runs.instance_for(settings)
    ended = subprocess.Popen([sys.executable, "-c", "pass"])
    ended.wait()
    dead = _stale_run(
        instance,
        {HOST_TAG: socket.gethostname(), PID_TAG: str(ended.pid), START_TAG: "1"},
    )
    # A run of a live process (this one), or of another host, is not touched.
    live = _stale_run(instance, owner_tags(), claim=False)
    elsewhere = _stale_run(instance, {HOST_TAG: "another-host", PID_TAG: str(ended.pid)}, False)
    storage = instance.event_log_storage

    done = _ingest_in_a_child(tmp_path / "home", notes)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "1"
    status = {run_id: instance.get_run_by_id(run_id).status for run_id in (dead, live, elsewhere)}
    assert status == {
        dead: dg.DagsterRunStatus.FAILURE,
        live: dg.DagsterRunStatus.STARTED,
        elsewhere: dg.DagsterRunStatus.STARTED,
    }
    assert not storage.get_concurrency_info("duckdb").claimed_slots
    assert service.ask(settings, "consumer lag", 200).items


def test_a_run_that_ended_holding_its_slot_does_not_block_the_next(tmp_path: Path) -> None:
    # Ctrl-C in `selene-dag dev` during a step: the run was marked failed, its slot kept;
    # every later run (the UI's and the CLI's) waited for it without end.
    notes = _notes(tmp_path)
    settings = load_settings({"SELENE_LOCK_WAIT": "5"}, home=tmp_path / "home")
    instance = runs.instance_for(settings)
    interrupted = _stale_run(instance, {})  # no owner tags: the UI's or the daemon's run
    instance.report_run_failed(instance.get_run_by_id(interrupted), "interrupted")
    assert instance.event_log_storage.get_concurrency_info("duckdb").claimed_slots
    done = _ingest_in_a_child(tmp_path / "home", notes)
    assert done.returncode == 0 and done.stdout.strip() == "1", done.stderr
    assert not instance.event_log_storage.get_concurrency_info("duckdb").claimed_slots


_DEV_STEP = """
import sys, time
from pathlib import Path
import dagster as dg
from dagster._core.storage.dagster_run import DagsterRun
from dagster._core.utils import make_new_run_id
from selene_dag.config import load_settings
from selene_dag.defs import runs
from selene_dag.store import open_store

settings = load_settings({"SELENE_LOCK_WAIT": "6"}, home=Path(sys.argv[1]))
instance = runs.instance_for(settings)
run_id = make_new_run_id()
instance.add_run(
    DagsterRun(job_name="__ASSET_JOB", run_id=run_id, status=dg.DagsterRunStatus.STARTED)
)
storage = instance.event_log_storage
storage.initialize_concurrency_limit_to_default("duckdb")
assert storage.claim_concurrency_slot("duckdb", run_id, "threads").is_claimed
print("claimed", flush=True)
time.sleep(2)
try:
    with open_store(settings.db_path, wait=settings.lock_wait) as conn:
        conn.execute("SELECT count(*) FROM notes").fetchone()
    print("opened", flush=True)
except Exception as error:
    print("failed", error, flush=True)
finally:
    storage.free_concurrency_slots_for_run(run_id)
    instance.report_run_canceled(instance.get_run_by_id(run_id))
"""


def test_an_ingest_beside_a_running_dev_step_waits_for_the_slot_not_the_file(
    tmp_path: Path,
) -> None:
    # A step of `selene-dag dev` holds the duckdb pool's slot and opens the store a moment
    # later; the CLI's ingest held the file from its start and waited for the slot, so the
    # dev step failed after SELENE_LOCK_WAIT. Now the CLI's step waits for the slot and
    # opens the file once it holds it.
    notes = _notes(tmp_path)
    home = tmp_path / "home"
    settings = load_settings({"SELENE_LOCK_WAIT": "20"}, home=home)
    service.ingest(settings, notes)
    dev_step = subprocess.Popen(
        [sys.executable, "-c", _DEV_STEP, str(home)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert dev_step.stdout.readline().strip() == "claimed"
        (notes / "b.md").write_text("# Redis\nEviction starts at maxmemory.\n")
        report = service.ingest(settings, notes)
        assert dev_step.wait(timeout=60) == 0
        assert dev_step.stdout.read().strip() == "opened"
    finally:
        dev_step.kill()
    assert report.notes == 2


def test_a_live_dagster_daemon_counts_as_another_process_running_steps(tmp_path: Path) -> None:
    import time

    from dagster._daemon.types import DaemonHeartbeat

    from selene_dag.defs.run_owner import DAEMON_ALIVE_SECONDS, others_run_here

    settings = load_settings({}, home=tmp_path / "home")
    instance = runs.instance_for(settings)
    assert not others_run_here(instance)
    _stale_run(instance, owner_tags(), claim=False)  # this process's own run
    assert not others_run_here(instance)

    def beat(at: float) -> None:
        instance.add_daemon_heartbeat(
            DaemonHeartbeat(timestamp=at, daemon_type="SENSOR", daemon_id="dev", errors=[])
        )

    beat(time.time() - DAEMON_ALIVE_SECONDS - 60)  # a daemon stopped long ago
    assert not others_run_here(instance)
    beat(time.time())
    assert others_run_here(instance)


def test_the_daemon_retries_a_failed_automation_run_once_and_never_a_cli_run(
    tmp_path: Path,
) -> None:
    # A run automation or a sensor started that failed (the store held past
    # SELENE_LOCK_WAIT) was never requested again: the sensor's cursor had moved on.
    from dagster._core.events import RunFailureReason
    from dagster._core.execution.retries import auto_reexecution_should_retry_run

    settings = load_settings({}, home=tmp_path / "home")
    instance = runs.instance_for(settings)
    assert (instance.run_retries_enabled, instance.run_retries_max_retries) == (True, 1)
    automation = instance.get_run_by_id(_stale_run(instance, {}, claim=False))
    cli = instance.get_run_by_id(_stale_run(instance, {**owner_tags(), **runs.NO_RETRY}, False))
    for run in (automation, cli):
        instance.report_run_failed(run, "the store stayed locked")
    failed = RunFailureReason.STEP_FAILURE
    assert auto_reexecution_should_retry_run(
        instance, instance.get_run_by_id(automation.run_id), failed
    )
    assert not auto_reexecution_should_retry_run(
        instance, instance.get_run_by_id(cli.run_id), failed
    )
    # Every run the CLI starts carries the tag.
    notes = _notes(tmp_path)
    service.ingest(settings, notes)
    tags = [
        r.dagster_run.tags for r in instance.get_run_records() if HOST_TAG in r.dagster_run.tags
    ]
    assert tags and all(t.get("dagster/max_retries") == "0" for t in tags)


_MATERIALIZE_BY_HAND = """
import os
import sys
from pathlib import Path
import dagster as dg
from dagster._core.events import DagsterEvent
from dagster._core.storage.dagster_run import DagsterRun
from dagster._core.utils import make_new_run_id
from selene_dag.config import load_settings
from selene_dag.defs import runs

instance = runs.instance_for(load_settings(home=Path(sys.argv[1])))
run_id = make_new_run_id()
instance.add_run(
    DagsterRun(job_name="__ASSET_JOB", run_id=run_id, status=dg.DagsterRunStatus.STARTED)
)
# As Dagster writes it: by the process that runs the run, its pid in the event.
start = DagsterEvent(
    event_type_value=dg.DagsterEventType.RUN_START.value,
    job_name="__ASSET_JOB",
    message="start",
    pid=os.getpid(),
)
instance.report_dagster_event(start, run_id=run_id)
storage = instance.event_log_storage
storage.initialize_concurrency_limit_to_default("duckdb")
assert storage.claim_concurrency_slot("duckdb", run_id, "raw_notes").is_claimed
print(run_id)
"""


def test_a_run_materialized_by_hand_whose_process_died_is_failed_too(tmp_path: Path) -> None:
    # `dagster asset materialize` killed mid-run (no owner tags: Dagster's own command)
    # stayed "started" for ever, and automation in `selene-dag dev` waited on its assets.
    from dagster._core.events import DagsterEvent

    notes = _notes(tmp_path)
    home = tmp_path / "home"
    settings = load_settings({"SELENE_LOCK_WAIT": "5"}, home=home)
    instance = runs.instance_for(settings)
    child = subprocess.run(
        [sys.executable, "-c", _MATERIALIZE_BY_HAND, str(home)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert child.returncode == 0, child.stderr
    dead = child.stdout.strip()
    # One whose process lives (this one) is left as it is.
    live = _stale_run(instance, {}, claim=False)
    start = DagsterEvent(
        event_type_value=dg.DagsterEventType.RUN_START.value,
        job_name="__ASSET_JOB",
        message="s",
        pid=os.getpid(),
    )
    instance.report_dagster_event(start, run_id=live)
    done = _ingest_in_a_child(home, notes)
    assert done.returncode == 0 and done.stdout.strip() == "1", done.stderr
    assert instance.get_run_by_id(dead).status == dg.DagsterRunStatus.FAILURE
    assert instance.get_run_by_id(live).status == dg.DagsterRunStatus.STARTED
    assert not instance.event_log_storage.get_concurrency_info("duckdb").claimed_slots


def test_the_notes_sensor_frees_the_slot_of_a_run_whose_process_died(
    tmp_path: Path, monkeypatch
) -> None:
    # A CLI ingest killed with -9 while `selene-dag dev` ran: the daemon's queued runs
    # waited on its slot until another CLI command freed it. The notes sensor's tick
    # (every 30 s in dev) does it now.
    from selene_dag.defs.notes import notes_folder_sensor
    from selene_dag.defs.resources import SeleneResource

    monkeypatch.setenv("SELENE_HOME", str(tmp_path / "home"))
    settings = load_settings()
    instance = runs.instance_for(settings)
    ended = subprocess.Popen([sys.executable, "-c", "pass"])
    ended.wait()
    dead = _stale_run(
        instance, {HOST_TAG: socket.gethostname(), PID_TAG: str(ended.pid), START_TAG: "1"}
    )
    live = _stale_run(instance, owner_tags(), claim=False)
    notes_folder_sensor(
        dg.build_sensor_context(instance=instance, resources={"selene": SeleneResource()})
    )
    assert instance.get_run_by_id(dead).status == dg.DagsterRunStatus.FAILURE
    assert instance.get_run_by_id(live).status == dg.DagsterRunStatus.STARTED
    assert not instance.event_log_storage.get_concurrency_info("duckdb").claimed_slots
