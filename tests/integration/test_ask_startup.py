"""`selene-dag ask` against an up-to-date index starts light: the Dagster layer (about a
second of imports) loads only when the index must be rebuilt."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from selene_dag.retrieval.index import build_index
from selene_dag.store import connect
from tests.support.ask import NOW, seed_store

PROBE = """
import sys
from selene_dag.cli import main
sys.argv = ["selene-dag", "ask", "bash shell in a running docker container", "--budget", "300"]
try:
    main()
except SystemExit as exc:
    code = exc.code or 0
else:
    code = 0
heavy = sorted(m for m in ("dagster",) if m in sys.modules)
print("EXIT", code, "HEAVY", ",".join(heavy) or "-", file=sys.stderr)
"""


def _ask(home: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SELENE_", "DAGSTER_"))}
    env.update(SELENE_HOME=str(home), SELENE_MODEL="mistral:7b", SELENE_LLM="extractive")
    return subprocess.run(
        [sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=120
    )


def test_ask_on_fresh_index_does_not_import_dagster(tmp_path: Path) -> None:
    seed_store(tmp_path / "selene.duckdb")
    conn = connect(tmp_path / "selene.duckdb")
    build_index(conn, NOW, model="mistral:7b")
    conn.close()
    done = _ask(tmp_path)
    assert "docker exec -it ID bash" in done.stdout, done.stderr
    assert "EXIT 0 HEAVY -" in done.stderr, done.stderr


def test_ask_on_stale_index_rebuilds_it_through_dagster(tmp_path: Path) -> None:
    seed_store(tmp_path / "selene.duckdb")
    done = _ask(tmp_path)
    assert "docker exec -it ID bash" in done.stdout, done.stderr
    assert "HEAVY dagster" in done.stderr, done.stderr
