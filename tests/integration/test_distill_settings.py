"""Distillation settings (seed 003 §10: token budget, minimum consensus, sort mode) reach
every distilled session, and changing one distills the sessions again on the next
``distill run --all``: that step only, from the chunks and scores already stored."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import dagster as dg
import duckdb

from selene_dag import service
from selene_dag.config import Settings, load_settings
from tests.support.sessions import FIXTURES

# Two real transcripts: a Codex session whose chunks the offline assessors all score
# under the default minimum consensus (5.0), and a Claude one.
FILES = (
    FIXTURES / "codex" / "agent-sessions_small.jsonl",
    FIXTURES / "claude" / "agent-sessions_small.jsonl",
)


def _settings(tmp_path: Path, **distill: str) -> Settings:
    return load_settings(
        {
            "SELENE_SESSION_ROOTS": str(tmp_path / "sessions"),
            "SELENE_LLM": "extractive",
            "SELENE_CLI_ASSESSORS": "",
            "SELENE_NOW": "2026-05-01T00:00:00Z",
            **{f"SELENE_DISTILL_{k.upper()}": v for k, v in distill.items()},
        },
        home=tmp_path / "home",
    )


def _copy_sessions(tmp_path: Path) -> None:
    for source in FILES:
        target = tmp_path / "sessions" / source.parent.name / source.name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(source, target)


def _distilled(settings: Settings) -> dict[str, tuple]:
    """Per session: chunks kept, tokens, budget, minimum consensus, sort mode, and the
    chunks scored at or above that minimum."""
    with duckdb.connect(str(settings.db_path), read_only=True) as conn:
        rows = conn.execute(
            "SELECT d.session_key, d.chunk_count, d.tokens, d.budget, d.min_consensus, "
            "d.sort_mode, (SELECT count(*) FROM chunk_scores s WHERE s.session_key = "
            "d.session_key AND s.consensus >= d.min_consensus) "
            "FROM distilled_sessions d WHERE NOT starts_with(d.session_key, 'project:') ORDER BY 1"
        ).fetchall()
    return {r[0]: r[1:] for r in rows}


ASSETS = (
    "session_events",
    "session_chunks",
    "chunk_scores",
    "distilled_sessions",
    "project_distillations",
)


def _latest_runs(instance: dg.DagsterInstance) -> dict[str, str | None]:
    """The run of each sessions asset's latest materialization."""
    return {
        name: event.run_id if event is not None else None
        for name in ASSETS
        for event in [instance.get_latest_materialization_event(dg.AssetKey(name))]
    }


def test_a_changed_setting_distills_again_with_it(tmp_path: Path) -> None:
    _copy_sessions(tmp_path)
    instance = dg.DagsterInstance.ephemeral()
    defaults = _settings(tmp_path)
    first = service.distill_run(defaults, all_files=True, instance=instance)
    assert len(first) == 2 and all(r["ok"] for r in first)
    before = _distilled(defaults)
    assert {row[2:5] for row in before.values()} == {(80_000, 5.0, "hybrid")}
    # Only chunks at or above the minimum are kept; one session keeps none of its chunks.
    assert all(kept == eligible for kept, *_, eligible in before.values())
    assert min(kept for kept, *_ in before.values()) == 0
    runs_before = _latest_runs(instance)

    lowered = _settings(tmp_path, min_consensus="0")
    again = service.distill_run(lowered, all_files=True, instance=instance)
    assert sorted(r["session_key"] for r in again) == sorted(before)
    assert all(r["ok"] for r in again)
    # Distilled again, from what was stored: the distillation step and nothing upstream
    # (then the projects of those sessions).
    runs_after = _latest_runs(instance)
    moved = {name for name in ASSETS if runs_after[name] != runs_before[name]}
    assert moved == {"distilled_sessions", "project_distillations"}
    after = _distilled(lowered)
    for key, (kept, _tokens, budget, minimum, mode, eligible) in after.items():
        assert (budget, minimum, mode) == (80_000, 0.0, "hybrid")
        assert kept == eligible > before[key][0] or kept == before[key][0] == eligible
    assert min(kept for kept, *_ in after.values()) > 0  # every session keeps chunks now

    # The same settings again: nothing to do.
    assert service.distill_run(lowered, all_files=True, instance=instance) == []

    small = _settings(tmp_path, min_consensus="0", token_budget="600", sort_mode="chronological")
    assert len(service.distill_run(small, all_files=True, instance=instance)) == 2
    for kept, tokens, budget, _minimum, mode, _eligible in _distilled(small).values():
        assert (budget, mode) == (600, "chronological") and tokens <= 600
        assert kept >= 1


def test_a_run_config_wins_over_the_settings(tmp_path: Path) -> None:
    _copy_sessions(tmp_path)
    settings = _settings(tmp_path, min_consensus="0")
    run_config = {"ops": {"distilled_sessions": {"config": {"max_tokens": 700}}}}
    rows = service.distill_run(
        settings, all_files=True, run_config=run_config, instance=dg.DagsterInstance.ephemeral()
    )
    assert len(rows) == 2
    for _kept, tokens, budget, minimum, _mode, _eligible in _distilled(settings).values():
        assert (budget, minimum) == (700, 0.0) and tokens <= 700


SLOW_CLI = """
import sys, time
sys.stdin.read()
time.sleep(30)
"""


def _distilled_chunk(tmp_path: Path) -> tuple[Settings, str]:
    """A home whose sessions are distilled, and the id of one of its chunks."""
    _copy_sessions(tmp_path)
    settings = _settings(tmp_path)
    service.distill_run(settings, all_files=True, instance=dg.DagsterInstance.ephemeral())
    with duckdb.connect(str(settings.db_path), read_only=True) as conn:
        chunk_id = conn.execute("SELECT id FROM chunks ORDER BY id LIMIT 1").fetchone()[0]
    return settings, chunk_id


def _fake_clis(tmp_path: Path, monkeypatch, script: str, names: tuple[str, ...]) -> None:
    """``names`` as CLIs running the Python ``script``, alone on PATH."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in names:
        fake = bin_dir / name
        fake.write_text(f"#!{sys.executable}\n{script}", encoding="utf-8")
        fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))


def test_assess_says_which_cli_failed_and_why(tmp_path: Path, monkeypatch) -> None:
    settings, chunk_id = _distilled_chunk(tmp_path)
    # A codex that never answers, alone on PATH; the timeout is the setting's.
    _fake_clis(tmp_path, monkeypatch, SLOW_CLI, ("codex",))
    slow = load_settings(
        {"SELENE_CLI_ASSESSORS": "codex", "SELENE_ASSESSOR_TIMEOUT": "0.5"},
        home=settings.home,
    )

    result = service.distill_assess(slow, f"chunk:{chunk_id}")

    assert result["failed"] == ["codex: timed out after 0.5 s"]
    assert {a["assessor"] for a in result["assessments"]} == {"extractive", "importance"}


LOGGING_CLI = """
import os, sys, time
sys.stdin.read()
with open(os.environ["CLI_LOG"], "a") as log:
    log.write(f"{time.monotonic()} start\\n")
time.sleep(0.4)
with open(os.environ["CLI_LOG"], "a") as log:
    log.write(f"{time.monotonic()} end\\n")
"""


def test_assessor_concurrency_limits_the_clis_running_at_once(tmp_path: Path, monkeypatch) -> None:
    # Seed 003 §10: at most SELENE_ASSESSOR_CONCURRENCY assessments in flight.
    settings, chunk_id = _distilled_chunk(tmp_path)
    _fake_clis(tmp_path, monkeypatch, LOGGING_CLI, ("claude", "codex", "gemini"))

    def most_at_once(concurrency: str) -> int:
        log = tmp_path / f"cli-{concurrency}.log"
        monkeypatch.setenv("CLI_LOG", str(log))
        limited = load_settings(
            {
                "SELENE_CLI_ASSESSORS": "claude,codex,gemini",
                "SELENE_ASSESSOR_CONCURRENCY": concurrency,
            },
            home=settings.home,
        )
        result = service.distill_assess(limited, chunk_id)
        assert len(result["failed"]) == 3  # none answered a rating
        running = peak = 0
        for line in sorted(log.read_text().splitlines(), key=lambda x: float(x.split()[0])):
            running += 1 if line.endswith("start") else -1
            peak = max(peak, running)
        return peak

    assert most_at_once("1") == 1
    assert most_at_once("3") >= 2


def test_the_hint_names_why_a_session_kept_no_chunk() -> None:
    # The budget left a chunk out: not the minimum consensus's doing, and said apart.
    by_budget = {
        "distilled_chunks": 0,
        "dropped_chunks": 2,
        "chunks": 3,
        "min_consensus": 5.0,
        "budget": 1000,
    }
    by_minimum = {"distilled_chunks": 0, "dropped_chunks": 0, "chunks": 3, "min_consensus": 5.0}
    no_chunks = {"distilled_chunks": 0, "dropped_chunks": 0, "chunks": 0, "min_consensus": 5.0}
    assert service.kept_no_chunk_hint([no_chunks]) == ""
    minimum, budget = service.kept_no_chunk_hint([by_budget, by_minimum, by_minimum]).split("\n")
    assert minimum.startswith("2 sessions kept no chunk: none reached consensus 5;")
    assert budget.startswith("1 session kept no chunk: each chunk that reached consensus is")
    assert "budget of 1,000 tokens" in budget


def test_a_file_in_another_format_does_not_make_every_run_distill_again(tmp_path: Path) -> None:
    _copy_sessions(tmp_path)
    instance = dg.DagsterInstance.ephemeral()
    settings = _settings(tmp_path)
    service.distill_run(settings, all_files=True, instance=instance)
    # A run that asked for Gemini files (the Dagster launchpad's config) adds rows in that
    # format, with their own budget; then a setting changes.
    as_gemini = {
        "ops": {"distilled_sessions": {"config": {"platform": "gemini", "max_tokens": 900}}}
    }
    keys = [r["session_key"] for r in service.distill_report(settings)]
    service.distill_run(settings, keys, run_config=as_gemini, instance=instance)
    lowered = _settings(tmp_path, min_consensus="0")
    assert len(service.distill_run(lowered, all_files=True, instance=instance)) == 2
    assert service.distill_run(lowered, all_files=True, instance=instance) == []


def test_only_the_projects_of_the_sessions_that_ran_are_distilled_again(tmp_path: Path) -> None:
    _copy_sessions(tmp_path)
    instance = dg.DagsterInstance.ephemeral()
    settings = _settings(tmp_path)
    service.distill_run(settings, all_files=True, instance=instance)

    def project_files() -> dict[str, tuple[str, int]]:
        with duckdb.connect(str(settings.db_path), read_only=True) as conn:
            rows = conn.execute(
                "SELECT session_key, path FROM distilled_sessions "
                "WHERE starts_with(session_key, 'project:')"
            ).fetchall()
        return {key: (path, Path(path).stat().st_mtime_ns) for key, path in rows}

    before = project_files()
    assert sorted(before) == ["project:/tmp", "project:/tmp/repo"]  # the two sessions' cwd
    # The Codex session grows (its last record again): it runs, and only its project.
    grown = tmp_path / "sessions" / "codex" / FILES[0].name
    with grown.open("a", encoding="utf-8") as handle:
        handle.write(FILES[0].read_text(encoding="utf-8").splitlines()[-1] + "\n")
    again = service.distill_run(settings, all_files=True, instance=instance)
    assert [r["platform"] for r in again] == ["codex"]
    after = project_files()
    assert after["project:/tmp"] == before["project:/tmp"]  # not written again
    assert after["project:/tmp/repo"][1] != before["project:/tmp/repo"][1]


def test_assess_keeps_the_other_ratings_when_the_model_gives_none(tmp_path: Path) -> None:
    # A server down (or an answer unusable twice) failed `distill assess` outright: no
    # rating at all, where the docs promise the others and the model under `failed`.
    from tests.support.fake_ollama import FakeOllama, free_port

    settings, chunk_id = _distilled_chunk(tmp_path)
    down = settings.replace(
        llm="ollama", ollama_host=f"http://127.0.0.1:{free_port()}", ollama_timeout=2
    )
    result = service.distill_assess(down, chunk_id)
    assert {a["assessor"] for a in result["assessments"]} == {"extractive", "importance"}
    (failed,) = result["failed"]
    assert failed.startswith("ollama: cannot reach Ollama at http://127.0.0.1:")
    with FakeOllama(malformed=10_000) as fake:
        broken = settings.replace(llm="ollama", ollama_host=fake.url, ollama_timeout=5)
        result = service.distill_assess(broken, chunk_id)
    assert {a["assessor"] for a in result["assessments"]} == {"extractive", "importance"}
    assert len(result["failed"]) == 1 and "unusable" in result["failed"][0]
