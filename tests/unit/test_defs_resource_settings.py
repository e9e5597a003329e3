"""The resource that hands settings to a run carries every setting: a run started by a
command sees exactly that command's settings, none left to a default."""

from __future__ import annotations

import os
from pathlib import Path

from selene_dag.config import Settings, load_settings
from selene_dag.defs.resources import SeleneResource


def test_every_setting_has_a_resource_field() -> None:
    renamed = {"now_override": "now"}
    fields = {renamed.get(name, name) for name in Settings.model_fields}
    assert fields == set(SeleneResource.model_fields)


def test_settings_survive_the_resource_unchanged(tmp_path: Path) -> None:
    # A value other than the default for each setting.
    settings = load_settings(
        {
            "SELENE_HOME": str(tmp_path / "home"),
            "SELENE_DB": str(tmp_path / "elsewhere.duckdb"),
            "SELENE_NOTES_DIR": str(tmp_path / "notes"),
            "SELENE_LLM": "ollama",
            "SELENE_MODEL": "gpt-4",
            "SELENE_OLLAMA_HOST": "http://127.0.0.1:9",
            "SELENE_OLLAMA_TIMEOUT": "7",
            "SELENE_LOCK_WAIT": "2.5",
            "SELENE_SESSION_ROOTS": os.pathsep.join([f"codex={tmp_path}", str(tmp_path / "x")]),
            "SELENE_NOW": "2026-07-02",
            "SELENE_ESSENCE_LIMIT": "3",
            "SELENE_THREAD_ACTIVE_DAYS": "30",
            "SELENE_DAILY_START": "2024-01-01",
            "SELENE_ASK_MIN_RECALL": "0.4",
            "SELENE_CLI_ASSESSORS": "codex",
            "SELENE_ASSESSOR_TIMEOUT": "12.5",
            "SELENE_DISTILL_TOKEN_BUDGET": "4000",
            "SELENE_DISTILL_MIN_CONSENSUS": "3.5",
            "SELENE_DISTILL_SORT_MODE": "consensus",
            "SELENE_ASSESSOR_CONCURRENCY": "1",
            "SELENE_DISTILL_QUESTION_WEIGHT": "1.0",
            "SELENE_DISTILL_STATIC_WEIGHT": "0",
            "SELENE_DISTILL_RERANK": "0",
        }
    )
    defaults = load_settings({})
    for name in Settings.model_fields:
        assert getattr(settings, name) != getattr(defaults, name), name
    assert SeleneResource.from_settings(settings).settings() == settings
