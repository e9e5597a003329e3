"""search_index as a Dagster asset, and the ask / eval commands through typer."""

from __future__ import annotations

import json
from pathlib import Path

import dagster as dg
import pytest
import typer
from typer.testing import CliRunner

from selene_dag.context.tokens import count_tokens
from selene_dag.defs.resources import default_resources
from selene_dag.defs.retrieval import RETRIEVAL_ASSETS, RETRIEVAL_CHECKS, search_index
from selene_dag.store import connect
from tests.support.ask import NOTES


def _defs() -> dg.Definitions:
    from selene_dag.definitions import defs

    assets = [a for a in defs.assets or [] if a not in RETRIEVAL_ASSETS]
    checks = [c for c in defs.asset_checks or [] if c not in RETRIEVAL_CHECKS]
    return dg.Definitions(
        assets=[*assets, *RETRIEVAL_ASSETS],
        asset_checks=[*checks, *RETRIEVAL_CHECKS],
        resources=default_resources(),
    )


def _notes_file(tmp_path: Path) -> Path:
    # In a folder named "notes": note ids are "notes/<JSONL id>".
    path = tmp_path / "notes" / "notes.jsonl"
    path.parent.mkdir()
    lines = [
        json.dumps(
            {
                "id": nid,
                "title": title,
                "content": content,
                "created_at": "2026-07-01T00:00:00Z",
                "updated_at": "2026-07-01T00:00:00Z",
            }
        )
        for nid, title, content, _tier, _age in NOTES
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def notes_home(tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SELENE_NOTES_DIR", str(_notes_file(tmp_path)))
    monkeypatch.setenv("SELENE_NOW", "2026-07-15T00:00:00+00:00")
    return home


def test_definitions_with_context_assets_validate() -> None:
    defs = _defs()
    dg.Definitions.validate_loadable(defs)
    node = defs.get_assets_def(search_index.key)
    assert node.group_names_by_key[search_index.key] == "context"
    assert node.partitions_def is None


def test_unpartitioned_run_without_session_partitions(notes_home: Path) -> None:
    defs = _defs()
    keys = [
        k
        for a in defs.assets
        if isinstance(a, dg.AssetsDefinition) and a.partitions_def is None
        for k in a.keys
    ]
    result = dg.materialize(
        [*defs.assets, *defs.asset_checks],
        selection=dg.AssetSelection.assets(*keys),
        instance=dg.DagsterInstance.ephemeral(),
        resources=default_resources(),
    )
    assert result.success
    mats = result.asset_materializations_for_node("search_index")
    assert mats[0].metadata["notes"].value == len(NOTES)
    assert mats[0].metadata["chunks"].value == 0
    checks = {e.check_name: e for e in result.get_asset_check_evaluations()}
    # The shipped questions name demo notes absent here: the check has nothing to judge.
    assert checks["ask_quality"].passed
    assert checks["ask_quality"].metadata["questions"].value == 0


def _ingest() -> None:
    from selene_dag.defs.runs import materialize

    materialize(
        ["raw_notes", "processed_notes", "threads", "fidelity_tiers"],
        dg.DagsterInstance.ephemeral(),
    )


def _cli() -> typer.Typer:
    from selene_dag.cli import app

    return app


def test_ask_command_refreshes_stale_index_and_prints_only_the_pack(notes_home: Path) -> None:
    _ingest()
    runner = CliRunner()
    result = runner.invoke(
        _cli(), ["ask", "running docker container bash shell", "--budget", "150"]
    )
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("[note notes/docker/exec.md]")
    assert count_tokens(result.stdout, "mistral:7b") <= 150  # its line break included
    assert "refreshed" in result.stderr
    conn = connect(notes_home / "selene.duckdb")
    try:
        stamped = conn.execute(
            "SELECT last_accessed_at FROM processed_notes WHERE note_id = 'notes/docker/exec.md'"
        ).fetchone()[0]
    finally:
        conn.close()
    assert stamped is not None
    again = runner.invoke(_cli(), ["ask", "zsh prompt", "--budget", "200", "--format", "json"])
    assert again.exit_code == 0
    doc = json.loads(again.stdout)
    assert "refreshed" not in again.stderr  # access stamps keep the index fresh
    assert set(doc) == {
        "schema",
        "question",
        "budget",
        "model",
        "total_tokens",
        "text",
        "items",
        "stats",
    }
    # text is exactly the pack the md form prints.
    md = runner.invoke(_cli(), ["ask", "zsh prompt", "--budget", "200"])
    assert md.exit_code == 0
    assert doc["text"] + "\n" == md.stdout
    # The accounting line counts the items shown in part, whatever their level.
    cut = sum(1 for item in doc["items"] if item["excerpt"])
    assert (f"; {cut} excerpt" in md.stderr) == (cut > 0)
    assert set(doc["items"][0]) >= {
        "id",
        "kind",
        "level",
        "score",
        "citation",
        "title",
        "text",
        "tokens",
    }
    assert doc["total_tokens"] <= 200
    # A question with no searchable word: nothing on stdout, one note line on stderr.
    empty = runner.invoke(_cli(), ["ask", "the of and", "--budget", "100"])
    assert empty.exit_code == 0 and empty.stdout == ""
    assert empty.stderr.strip() == "note: the question has no searchable words"
    # Its JSON has the same stats keys as any other answer's (mode "none": no search ran).
    empty_doc = json.loads(
        runner.invoke(_cli(), ["ask", "the of and", "--budget", "100", "--format", "json"]).stdout
    )
    assert set(empty_doc["stats"]) == set(doc["stats"]) and empty_doc["stats"]["mode"] == "none"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["ask", "docker", "--budget", "0"], "--budget"),
        (["ask", "docker", "--budget", "10", "--format", "xml"], "--format"),
        (["ask", "docker", "--budget", "10", "--sources", "web"], "unknown source"),
        (["ask", "docker", "--budget", "10", "--answer"], "SELENE_LLM=ollama"),
        (["eval", "missing.jsonl", "--budget", "10"], "missing.jsonl"),
    ],
)
def test_user_errors_are_one_line(notes_home: Path, args: list[str], message: str) -> None:
    result = CliRunner().invoke(_cli(), args)
    assert result.exit_code == 1
    assert message in result.stderr
    assert "Traceback" not in result.output
    assert len(result.stderr.strip().splitlines()) <= 2


def test_eval_command_reports_ask_and_baselines(notes_home: Path, tmp_path: Path) -> None:
    _ingest()
    questions = tmp_path / "q.jsonl"
    questions.write_text(
        json.dumps({"question": "docker container shell", "must_contain": ["docker exec -it"]})
        + "\n"
        + json.dumps({"question": "zsh prompt", "must_contain": ["PROMPT='%1~ %# '"]})
        + "\n"
    )
    result = CliRunner().invoke(
        _cli(), ["eval", str(questions), "--budget", "300", "--format", "json"]
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["overall"]["ask"] == 1.0
    assert set(report) == {"budget", "model", "overall", "questions", "ask_vs_bm25_passages"}
    assert set(report["overall"]) == {"ask", "newest_first", "bm25_topk", "bm25_passages"}
    assert report["overall"]["bm25_passages"] == 1.0
    assert report["ask_vs_bm25_passages"] == {
        "questions": 2,
        "difference": 0.0,
        "low": 0.0,
        "high": 0.0,
    }
    for row in report["questions"]:
        assert set(row["tokens"]) == set(report["overall"])
        assert all(n <= 300 for n in row["tokens"].values())
    table = CliRunner().invoke(_cli(), ["eval", str(questions), "--budget", "300"])
    assert table.exit_code == 0, table.output
    assert "bm25 passages" in table.stdout
    # A question holding what rich reads as markup is shown as written (it raised).
    marked = tmp_path / "marked.jsonl"
    marked.write_text(json.dumps({"question": "[/bold] docker [test]", "must_contain": ["x"]}))
    table = CliRunner().invoke(_cli(), ["eval", str(marked), "--budget", "300"])
    assert table.exit_code == 0, table.output
    assert "[/bold] docker [test]" in table.stdout
    several = CliRunner().invoke(
        _cli(),
        ["eval", str(questions), "--budget", "300", "--budget", "100", "--format", "json"],
    )
    assert several.exit_code == 0, several.output
    doc = json.loads(several.stdout)
    assert [r["budget"] for r in doc["budgets"]] == [300, 100]
    assert doc["budgets"][0]["overall"] == report["overall"]
    # A JSON list of questions (with a byte order mark), one fact given as a string, and
    # an entry that is not a question: the good ones are evaluated, the bad one named.
    listed = tmp_path / "q.json"
    entries = [
        {"question": "docker container shell", "must_contain": "docker exec -it"},
        {"question": "zsh prompt", "must_contain": ["PROMPT='%1~ %# '"]},
        {"question": "", "must_contain": ["x"]},
    ]
    listed.write_bytes(b"\xef\xbb\xbf" + json.dumps(entries).encode())
    lenient = CliRunner().invoke(
        _cli(), ["eval", str(listed), "--budget", "300", "--format", "json"]
    )
    assert lenient.exit_code == 0, lenient.output
    assert json.loads(lenient.stdout)["overall"] == report["overall"]
    assert f"note: {listed}: entry 3 skipped: 'question' must be a non-empty string" in (
        lenient.stderr
    )
    assert "eval: 2 questions at 300 tokens" in lenient.stderr


def test_eval_leaves_out_questions_about_what_the_home_lacks_and_takes_sources(
    notes_home: Path, tmp_path: Path
) -> None:
    # A question set written for another corpus scored 0 for each of its questions, as
    # if ask had missed them; a question twice counted twice; there was no --sources.
    _ingest()
    shell = {"question": "docker container shell", "must_contain": ["docker exec -it"]}
    lines = [
        {**shell, "source": "note:docker/exec.md"},
        {"question": "kiln temperature", "must_contain": ["cone 6"], "source": "note:kiln.md"},
        {"question": "the deploy", "must_contain": ["x"], "source": "session:nowhere-1234"},
        {"question": " Docker container  SHELL ", "must_contain": ["docker exec -it"]},
        # The kind in any case, spaces around the id: the same note.
        {
            "question": "attach a shell",
            "must_contain": ["docker exec"],
            "source": "Note: docker/exec.md",
        },
        # Naming nothing: an empty session (it matched every one), an unknown kind.
        {"question": "any session", "must_contain": ["x"], "source": "session:"},
        {"question": "what", "must_contain": ["x"], "source": "nonsense"},
    ]
    questions = tmp_path / "q.jsonl"
    questions.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    result = CliRunner().invoke(
        _cli(), ["eval", str(questions), "--budget", "300", "--format", "json"]
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    asked = [row["question"] for row in report["questions"]]
    assert asked == [shell["question"], lines[3]["question"], "attach a shell"]
    assert report["overall"]["ask"] == 1.0
    assert "note: 4 questions left out: their source is not in this home" in result.stderr
    assert "note:kiln.md" in result.stderr
    assert "1 question asked more than once" in result.stderr
    sessions = CliRunner().invoke(
        _cli(),
        ["eval", str(questions), "--budget", "300", "--format", "json", "--sources", "sessions"],
    )
    # The questions about notes are left out when ask searches sessions only; this home
    # holds none, so the one question left would score 0 for every method: said instead.
    assert sessions.exit_code == 1, sessions.output
    assert "error: nothing to evaluate: no agent session in this home yet" in sessions.stderr
    # A question asked twice but left out counts for nothing: no note of it.
    assert "asked more than once" not in sessions.stderr
    assert "left out: their source is not in this home, or not among --sources" in (sessions.stderr)
    lacking = tmp_path / "elsewhere.jsonl"
    lacking.write_text("\n".join(json.dumps(line) for line in lines[1:3]) + "\n")
    nothing = CliRunner().invoke(_cli(), ["eval", str(lacking), "--budget", "300"])
    assert nothing.exit_code == 1
    assert "no question is about a note or session of this home" in nothing.stderr
    bad = CliRunner().invoke(_cli(), ["eval", str(questions), "--sources", "web"])
    assert bad.exit_code == 1 and "unknown source web" in bad.stderr
