"""Loading the definitions prints no warning (the beta notices of the Dagster APIs they
use on purpose are silenced where they are defined), and `selene-dag dev` starts Dagster
without its supersession notice: every process of `dagster dev` inherits the warning
filters of its environment."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from selene_dag.cli import QUIET_DAGSTER_WARNINGS, dev_environment

LOAD = "import selene_dag.definitions"


def _load_stderr(env: dict[str, str]) -> str:
    proc = subprocess.run(
        [sys.executable, "-c", LOAD], env=env, capture_output=True, text=True, timeout=180
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stderr


def test_definitions_load_silently_and_dev_keeps_the_users_filters(
    tmp_path: Path,
) -> None:
    # Every warning shown once per place: any the definitions raised would be printed.
    base = {k: v for k, v in os.environ.items() if k != "PYTHONWARNINGS"}
    assert "Warning" not in _load_stderr({**base, "PYTHONWARNINGS": "default"})
    env = dev_environment(
        {**base, "PYTHONWARNINGS": "ignore::ImportWarning"}, tmp_path / "dg", tmp_path
    )
    assert env["DAGSTER_HOME"] == str(tmp_path / "dg") and env["SELENE_HOME"] == str(tmp_path)
    filters = env["PYTHONWARNINGS"].split(",")
    assert filters[0] == "ignore::ImportWarning"  # the user's own filter is kept
    assert len(filters) == 1 + len(QUIET_DAGSTER_WARNINGS)
    assert "Warning" not in _load_stderr(env)


# A child that stops the way `dagster dev` does: SIGTERM mapped to its SIGINT handler.
_DAGSTER_LIKE = """
import os, sys, time
from dagster._utils.interrupts import setup_interrupt_handlers
setup_interrupt_handlers()
try:  # the signal may come as soon as the line is out
    print(os.getcwd(), flush=True)
    time.sleep(120)
except KeyboardInterrupt:
    print("stopped", flush=True)
"""

_WRAPPER = """
import signal, sys
from pathlib import Path
from selene_dag.cli import run_until_stopped
signal.signal(signal.SIGINT, signal.SIG_IGN)  # a job started in the background
code = run_until_stopped([sys.executable, "-c", sys.argv[1]], {}, Path(sys.argv[2]))
sys.exit(code)
"""


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["term", "int"])
def test_dev_passes_a_signal_on_to_dagster_and_starts_it_in_its_home(
    tmp_path: Path, signum: int
) -> None:
    # SIGTERM to `selene-dag dev` killed the wrapper alone: `dagster dev`, its webserver,
    # daemon and code servers kept running. `kill -INT` on it (a supervisor, `timeout -s
    # INT`, Docker's STOPSIGNAL) was swallowed: the UI and daemon ran on. A terminal's
    # Ctrl-C reaches the wrapper alone (Dagster has a process group of its own), which
    # passes it on once.
    home = tmp_path / "dagster"
    home.mkdir()
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    wrapper = subprocess.Popen(
        [sys.executable, "-c", _WRAPPER, _DAGSTER_LIKE, str(home)],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert wrapper.stdout.readline().strip() == str(home)
        wrapper.send_signal(signum)
        # Stopped as a server is by the signal (143, 130), once Dagster's processes stopped.
        assert wrapper.wait(timeout=60) == 128 + signum
        assert wrapper.stdout.read().strip() == "stopped"
    finally:
        wrapper.kill()


def test_dev_gives_dagster_the_folders_of_the_settings_as_absolute_paths(
    tmp_path: Path, monkeypatch
) -> None:
    from selene_dag.config import load_settings

    monkeypatch.chdir(tmp_path)
    environ = {"SELENE_NOTES_DIR": "notes", "SELENE_SESSION_ROOTS": "claude=logs"}
    settings = load_settings(environ, home=tmp_path / "home")
    env = dev_environment(environ, tmp_path / "dg", settings.home, settings)
    assert env["SELENE_NOTES_DIR"] == str(tmp_path / "notes")
    assert env["SELENE_SESSION_ROOTS"] == f"claude={tmp_path / 'logs'}"
    assert "SELENE_DB" not in env  # not set by the user: it follows SELENE_HOME


def test_dev_serves_its_own_definitions_wherever_it_is_started(tmp_path: Path) -> None:
    # `selene-dag dev` took a workspace.yaml of the directory it was started from: in a
    # project of the user's own, the UI served their code location (failing to import),
    # and the location's name changed with the directory (and with it the sensors' state).
    from selene_dag.defs.runs import dev_workspace

    foreign = tmp_path / "project"
    foreign.mkdir()
    (foreign / "workspace.yaml").write_text(
        "load_from:\n  - python_module:\n      module_name: my_company_pipelines\n"
    )
    dagster_home = tmp_path / "dagster"
    dagster_home.mkdir()
    workspace = dev_workspace(dagster_home)
    assert workspace.parent == dagster_home and dev_workspace(dagster_home) == workspace
    exe = Path(sys.executable).parent / "dagster"
    proc = subprocess.run(
        [str(exe), "definitions", "validate", "-w", str(workspace)],
        cwd=foreign,
        env={**os.environ, "DAGSTER_HOME": str(dagster_home), "SELENE_HOME": str(tmp_path / "h")},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = proc.stdout + proc.stderr
    assert "selene_dag" in out and "my_company_pipelines" not in out
    # One the user wrote there is theirs: kept.
    workspace.write_text("load_from:\n  - python_module: my_own\n")
    assert dev_workspace(dagster_home).read_text() == "load_from:\n  - python_module: my_own\n"
