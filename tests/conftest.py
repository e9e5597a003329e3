"""Shared fixtures: an isolated SELENE_HOME per test, and paths to the shared data."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
DEMO_NOTES = REPO / "assets" / "demo" / "notes" / "til.jsonl"
SHARED = REPO.parent / "shared"


@pytest.fixture(autouse=True)
def _isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test gets its own SELENE_HOME; no SELENE_* variable leaks in from the machine."""
    import os

    for name in list(os.environ):
        if name.startswith("SELENE_") or name == "DAGSTER_HOME":
            monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SELENE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SELENE_SESSION_ROOTS", str(tmp_path / "no-sessions"))
    monkeypatch.setenv("SELENE_CLI_ASSESSORS", "")


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """The test's SELENE_HOME."""
    return tmp_path / "home"


@pytest.fixture
def demo_notes() -> Path:
    """The bundled 577-note corpus."""
    return DEMO_NOTES
