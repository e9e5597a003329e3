"""Code versions include the SQL transforms an asset runs: editing one marks
exactly the assets that use it stale (its code version changes, no other asset's does)."""

from __future__ import annotations

import functools
import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

# Child: load the definitions with one transform edited, print every asset's
# code version. The edit is a trailing comment: same behaviour, different text.
CHILD = """
import json, sys, warnings
warnings.filterwarnings("ignore")
kind, name = sys.argv[1], sys.argv[2]
import selene_dag.paths as paths
if kind == "sql" and name:
    original = paths.transform_sql
    paths.transform_sql = lambda n: original(n) + ("\\n-- edited\\n" if n == name else "")
import dagster as dg
from selene_dag.definitions import defs
print(json.dumps({
    key.to_user_string(): assets_def.code_versions_by_key.get(key)
    for assets_def in defs.assets if isinstance(assets_def, dg.AssetsDefinition)
    for key in assets_def.keys
}))
"""


@functools.cache
def _code_versions(kind: str, name: str) -> dict[str, str]:
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, kind, name],
        capture_output=True,
        text=True,
        cwd=str(REPO),
        timeout=120,
        check=True,
    )
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize(
    ("transform", "asset"),
    [
        ("fidelity_tiers", "fidelity_tiers"),
        ("essence_upsert", "processed_notes"),
        ("notes_upsert", "raw_notes"),
        ("threads_by_topic", "threads"),
        ("search_docs", "search_index"),
    ],
)
def test_editing_a_transform_changes_exactly_its_assets_code_version(
    transform: str, asset: str
) -> None:
    before = _code_versions("sql", "")
    after = _code_versions("sql", transform)
    changed = {key for key in before if before[key] != after[key]}
    assert changed == {asset}
