"""`selene-dag dev` starts Dagster without its beta and supersession notices: every
process of `dagster dev` inherits the warning filters of its environment."""

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


def test_the_dev_environment_hides_dagsters_notices_and_keeps_the_users_filters(
    tmp_path: Path,
) -> None:
    base = {k: v for k, v in os.environ.items() if k != "PYTHONWARNINGS"}
    # Without the filters, loading the definitions prints Dagster's beta notices.
    assert "currently in beta" in _load_stderr(base)
    env = dev_environment(
        {**base, "PYTHONWARNINGS": "ignore::ImportWarning"}, tmp_path / "dg", tmp_path
    )
    assert env["DAGSTER_HOME"] == str(tmp_path / "dg") and env["SELENE_HOME"] == str(tmp_path)
    filters = env["PYTHONWARNINGS"].split(",")
    assert filters[0] == "ignore::ImportWarning"  # the user's own filter is kept
    assert len(filters) == 1 + len(QUIET_DAGSTER_WARNINGS)
    assert "Warning" not in _load_stderr(env)
