"""`dagster dev` loads the code location: every asset, check, schedule and sensor, no errors."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.support.fake_ollama import free_port
from tests.support.ops import child_env, start_dagster_dev, stop_group, wait_until

QUERY = """
{
  workspaceOrError {
    __typename
    ... on Workspace {
      locationEntries {
        name
        loadStatus
        locationOrLoadError {
          __typename
          ... on PythonError { message }
          ... on RepositoryLocation {
            repositories {
              name
              assetNodes {
                assetKey { path }
                assetChecksOrError { ... on AssetChecks { checks { name } } }
              }
              schedules { name }
              sensors { name }
            }
          }
        }
      }
    }
  }
}
"""


def _up(url: str) -> bool:
    try:
        return httpx.get(f"{url}/server_info", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def _loaded(url: str) -> dict | None:
    try:
        data = httpx.post(f"{url}/graphql", json={"query": QUERY}, timeout=10).json()
    except (httpx.HTTPError, ValueError):
        return None
    entries = data["data"]["workspaceOrError"]["locationEntries"]
    return data if entries and all(e["loadStatus"] == "LOADED" for e in entries) else None


@pytest.mark.slow
def test_dagster_dev_serves_every_definition_without_load_errors(tmp_path: Path) -> None:
    from selene_dag.definitions import defs

    graph = defs.resolve_asset_graph()
    expected_assets = {key.to_user_string() for key in graph.get_all_asset_keys()}
    expected_checks = {key.name for key in graph.asset_check_keys}
    expected_schedules = {s.name for s in defs.schedules or []}
    expected_sensors = {s.name for s in defs.sensors or []}

    port = free_port()
    url = f"http://127.0.0.1:{port}"
    notes = tmp_path / "notes"
    notes.mkdir()
    env = child_env(tmp_path / "home", notes)
    proc = start_dagster_dev(tmp_path / "dagster_home", port, env)
    try:
        assert wait_until(lambda: _up(url), timeout=120, step=1), "dagster dev did not start"
        result: dict = {}
        assert wait_until(lambda: bool(result.update(_loaded(url) or {}) or result), 60, 1)
    finally:
        stop_group(proc)

    entries = result["data"]["workspaceOrError"]["locationEntries"]
    assert len(entries) == 1
    location = entries[0]["locationOrLoadError"]
    assert location["__typename"] == "RepositoryLocation", location
    repos = location["repositories"]
    nodes = [node for repo in repos for node in repo["assetNodes"]]
    assets = {"/".join(node["assetKey"]["path"]) for node in nodes}
    checks = {
        check["name"]
        for node in nodes
        for check in (node.get("assetChecksOrError") or {}).get("checks", [])
    }
    assert assets == expected_assets
    assert checks == expected_checks
    assert {s["name"] for repo in repos for s in repo["schedules"]} == expected_schedules
    # Dagster adds its own sensor that evaluates the assets' automation conditions.
    sensors = {s["name"] for repo in repos for s in repo["sensors"]}
    assert sensors - {"default_automation_condition_sensor"} == expected_sensors
