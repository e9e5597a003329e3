"""Commands started together on a new home: each opens the persistent Dagster instance,
which creates and stamps its SQLite storage. Two stamps broke the home for good ("Version
table 'alembic_version' has more than one head present" on every later run)."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import time
from pathlib import Path

OPEN_WHEN_TOLD = """
import sys, time
from pathlib import Path
from selene_dag.config import load_settings
from selene_dag.defs.runs import instance_for
go = Path(sys.argv[2])
Path(sys.argv[3]).touch()
while not go.exists():
    time.sleep(0.005)
instance = instance_for(load_settings(home=sys.argv[1]))
instance.get_runs(limit=1)
instance.all_instigator_state()
"""


def _stamps(dagster_home: Path) -> list[str]:
    with sqlite3.connect(dagster_home / "schedules" / "schedules.db") as conn:
        return [row[0] for row in conn.execute("SELECT version_num FROM alembic_version")]


def test_processes_opening_a_new_home_at_once_leave_it_whole(tmp_path: Path) -> None:
    for round_ in range(2):
        home, go = tmp_path / f"home{round_}", tmp_path / f"go{round_}"
        ready = [tmp_path / f"ready{round_}.{n}" for n in range(3)]
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", OPEN_WHEN_TOLD, str(home), str(go), str(flag)],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for flag in ready
        ]
        deadline = time.monotonic() + 120
        while not all(flag.exists() for flag in ready) and time.monotonic() < deadline:
            time.sleep(0.01)  # every process has imported Dagster and waits
        go.touch()
        for proc in procs:
            _, stderr = proc.communicate(timeout=120)
            assert proc.returncode == 0, stderr[-2000:]
        assert len(_stamps(home / "dagster")) == 1


def test_a_process_stuck_opening_the_instance_is_waited_for_a_while_only(tmp_path: Path) -> None:
    import fcntl

    import pytest

    from selene_dag.config import load_settings
    from selene_dag.defs.runs import instance_for
    from selene_dag.store import StoreError

    settings = load_settings({"SELENE_LOCK_WAIT": "0"}, home=tmp_path / "home")
    lock = settings.dagster_home / ".opening.lock"
    lock.parent.mkdir(parents=True)
    with open(lock, "a", encoding="utf-8") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # as a process hung while opening it would
        started = time.monotonic()
        with pytest.raises(StoreError, match="opening the Dagster instance"):
            instance_for(settings)
        assert time.monotonic() - started < 30
    instance_for(settings).dispose()  # free again: opens
