"""Loading the definitions prints no warning (the beta notices of the Dagster APIs they
use on purpose are silenced where they are defined), and `selene-dag dev` starts Dagster
without its supersession notice: every process of `dagster dev` inherits the warning
filters of its environment."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

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
