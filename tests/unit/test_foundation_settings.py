from datetime import UTC, datetime
from pathlib import Path

import pytest

from selene_dag.config import SettingsError, load_settings, settings_table_markdown


def test_defaults():
    s = load_settings({})
    # Absolute: a distilled file's stored path is the same whichever way the home is named.
    assert s.home == Path(".selene").absolute()
    assert s.db_path == Path(".selene/selene.duckdb").absolute()
    assert load_settings({"SELENE_HOME": "a/../b"}).home == Path.cwd() / "a/../b"
    assert s.llm == "extractive"
    assert s.model == "mistral:7b"
    assert s.essence_limit is None
    assert [r.platform for r in s.session_roots] == ["claude", "codex", "gemini"]
    assert s.lock_wait == 60.0
    # Seed 003's distiller defaults.
    assert (s.distill_token_budget, s.distill_min_consensus, s.distill_sort_mode) == (
        80_000,
        5.0,
        "hybrid",
    )
    assert load_settings({"SELENE_LOCK_WAIT": "0"}).lock_wait == 0.0


def test_ollama_defaults_to_seed_limit_of_ten():
    assert load_settings({"SELENE_LLM": "ollama"}).essence_limit == 10
    assert (
        load_settings({"SELENE_LLM": "ollama", "SELENE_ESSENCE_LIMIT": "0"}).essence_limit is None
    )


@pytest.mark.parametrize(
    ("env", "name", "allowed"),
    [
        ({"SELENE_LLM": "gpt"}, "SELENE_LLM", "extractive, ollama"),
        ({"SELENE_NOW": "yesterday"}, "SELENE_NOW", "ISO-8601"),
        ({"SELENE_OLLAMA_HOST": "localhost:11434"}, "SELENE_OLLAMA_HOST", "http://"),
        # A port past 65535 was the client's traceback at the first model call.
        ({"SELENE_OLLAMA_HOST": "http://127.0.0.1:99999"}, "SELENE_OLLAMA_HOST", "0 to 65535"),
        ({"SELENE_OLLAMA_HOST": "http://"}, "SELENE_OLLAMA_HOST", "naming a host"),
        ({"SELENE_SESSION_ROOTS": "cursor=/x"}, "SELENE_SESSION_ROOTS", "claude, codex, gemini"),
        ({"SELENE_ESSENCE_LIMIT": "-1"}, "SELENE_ESSENCE_LIMIT", "whole number"),
        ({"SELENE_ASK_MIN_RECALL": "2"}, "SELENE_ASK_MIN_RECALL", "0.0 to 1.0"),
        ({"SELENE_LOCK_WAIT": "-5"}, "SELENE_LOCK_WAIT", "0.0 to 86400.0"),
        ({"SELENE_ASSESSOR_TIMEOUT": "0"}, "SELENE_ASSESSOR_TIMEOUT", "0.1 to 3600.0"),
        ({"SELENE_DISTILL_TOKEN_BUDGET": "0"}, "SELENE_DISTILL_TOKEN_BUDGET", "whole number"),
        ({"SELENE_DISTILL_MIN_CONSENSUS": "11"}, "SELENE_DISTILL_MIN_CONSENSUS", "0.0 to 10.0"),
        ({"SELENE_DISTILL_SORT_MODE": "newest"}, "SELENE_DISTILL_SORT_MODE", "hybrid, consensus"),
        ({"SELENE_ASSESSOR_CONCURRENCY": "0"}, "SELENE_ASSESSOR_CONCURRENCY", "whole number"),
        ({"SELENE_ASSESSOR_CONCURRENCY": "99"}, "SELENE_ASSESSOR_CONCURRENCY", "1 to 16"),
        ({"SELENE_DISTILL_QUESTION_WEIGHT": "-1"}, "SELENE_DISTILL_QUESTION_WEIGHT", "0.0 to 10"),
        ({"SELENE_DISTILL_STATIC_WEIGHT": "x"}, "SELENE_DISTILL_STATIC_WEIGHT", "0.0 to 10"),
        ({"SELENE_DISTILL_RERANK": "maybe"}, "SELENE_DISTILL_RERANK", "1 or 0"),
    ],
)
def test_invalid_values_give_one_line_naming_variable(env, name, allowed):
    with pytest.raises(SettingsError) as info:
        load_settings(env)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(name)
    assert allowed in message


def test_now_and_roots_parse(tmp_path):
    import os

    env = {
        "SELENE_NOW": "2026-07-02",
        "SELENE_SESSION_ROOTS": os.pathsep.join([f"codex={tmp_path}", str(tmp_path / "x")]),
        "SELENE_HOME": str(tmp_path),
    }
    s = load_settings(env)
    assert s.now() == datetime(2026, 7, 2, tzinfo=UTC)
    assert [(r.platform, r.path) for r in s.session_roots] == [
        ("codex", tmp_path),
        (None, tmp_path / "x"),
    ]
    assert s.db_path == tmp_path / "selene.duckdb"


def test_a_homes_now_file_pins_its_now_unless_selene_now_is_set(tmp_path):
    # The demo's home keeps its day: later commands on it age nothing.
    assert load_settings({"SELENE_HOME": str(tmp_path)}).now_override is None
    (tmp_path / "now").write_text("2026-07-15T00:00:00+00:00\n")
    pinned = load_settings({"SELENE_HOME": str(tmp_path)})
    assert pinned.now() == datetime(2026, 7, 15, tzinfo=UTC)
    assert load_settings(home=tmp_path).now() == datetime(2026, 7, 15, tzinfo=UTC)
    given = load_settings({"SELENE_HOME": str(tmp_path), "SELENE_NOW": "2027-01-02"})
    assert given.now() == datetime(2027, 1, 2, tzinfo=UTC)
    (tmp_path / "now").write_text("soon")
    with pytest.raises(SettingsError, match="not an ISO-8601 date: fix it, or delete it"):
        load_settings({"SELENE_HOME": str(tmp_path)})


def test_a_blank_home_is_the_default_home():
    # SELENE_HOME set but empty (`SELENE_HOME= selene-dag …`) said "SELENE_HOME=None is
    # invalid"; it is the default, as when unset.
    for blank in ("", "  "):
        s = load_settings({"SELENE_HOME": blank})
        assert s.home == Path(".selene").absolute()
        assert s.db_path == Path(".selene/selene.duckdb").absolute()


def test_readme_settings_table_is_generated_from_the_settings():
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    assert settings_table_markdown() in readme, "regenerate the README table from settings"


def test_process_environment_is_read_by_pydantic_settings(monkeypatch):
    from selene_dag.config import Settings

    monkeypatch.setenv("SELENE_HOME", "/tmp/selene-x")
    monkeypatch.setenv("SELENE_DB", "/tmp/other.duckdb")
    monkeypatch.setenv("SELENE_ESSENCE_LIMIT", "3")
    settings = Settings()
    assert settings.home == Path("/tmp/selene-x")
    assert settings.db_path == Path("/tmp/other.duckdb")
    assert settings.notes_dir == Path("/tmp/selene-x/notes")
    assert settings.essence_limit == 3
    assert load_settings() == settings


def test_replace_follows_a_new_home():
    settings = load_settings({}).replace(home="/tmp/h2", llm="ollama")
    assert settings.db_path == Path("/tmp/h2/selene.duckdb") and settings.llm == "ollama"
    with pytest.raises(SettingsError):
        settings.replace(llm="gpt")


def test_a_homes_pinned_day_holds_for_settings_built_directly(tmp_path) -> None:
    # Only load_settings read the home's `now` file: a library caller's Settings(home=…)
    # moved with the calendar, and every ask refreshed the tiers through a Dagster run.
    from datetime import UTC, datetime

    from selene_dag.config import PINNED_NOW_FILE, Settings, load_settings

    home = tmp_path / "home"
    home.mkdir()
    (home / PINNED_NOW_FILE).write_text("2026-07-15T00:00:00+00:00\n", encoding="utf-8")
    pinned = datetime(2026, 7, 15, tzinfo=UTC)
    assert Settings(home=home).now() == pinned == load_settings(home=home).now()
    assert Settings(home=home, now_override="2027-01-01").now().year == 2027


def test_a_misspelt_setting_is_named_not_ignored(tmp_path) -> None:
    # load_settings(homee=...) used the default home in the current directory.
    with pytest.raises(TypeError, match=r"no setting named 'homee'.*home"):
        load_settings(homee=str(tmp_path))
    with pytest.raises(TypeError, match="no setting named 'foo'"):
        load_settings(home=tmp_path).replace(foo=1)
