"""`ask --answer` sends the pack to the model (Ollama, through the real client) and prints
only the model's answer; the extractive engine refuses with one clear line."""

import json

import dagster as dg
from typer.testing import CliRunner

from selene_dag.cli import app
from selene_dag.defs.runs import materialize
from tests.integration.test_ask_dagster import notes_home  # noqa: F401  (fixture)
from tests.support.fake_ollama import FakeOllama


def _ingest() -> None:
    materialize(
        ["raw_notes", "processed_notes", "threads", "fidelity_tiers"],
        dg.DagsterInstance.ephemeral(),
    )


ASKED = ["ask", "running docker container bash shell", "--budget", "300", "--answer"]


def test_answer_goes_through_the_model_and_prints_its_reply(notes_home, monkeypatch):  # noqa: F811
    _ingest()
    with FakeOllama() as server:
        monkeypatch.setenv("SELENE_LLM", "ollama")
        monkeypatch.setenv("SELENE_OLLAMA_HOST", server.url)
        result = CliRunner().invoke(
            app, ["ask", "running docker container bash shell", "--budget", "300", "--answer"]
        )
        assert result.exit_code == 0, result.output
        calls = server.requests["/api/chat"] + server.requests["/api/generate"]
        assert calls == 3  # the rewrite for the search, the rerank of its passages, the answer
        prompt = " ".join(str(body) for body in server.bodies)
        assert "docker" in prompt.lower()  # the pack reached the model
        assert result.stdout.strip() and not result.stdout.startswith(
            "[note "
        )  # the answer, not the pack
        assert "answer from mistral:7b" in result.stderr
        again = CliRunner().invoke(
            app, ["ask", "running docker container bash shell", "--budget", "300", "--answer"]
        )
        assert again.stdout == result.stdout
        assert server.requests["/api/chat"] + server.requests["/api/generate"] == calls  # cached
        # As JSON: the pack's document with the answer in it (the answer alone, not JSON).
        as_json = CliRunner().invoke(
            app,
            [*ASKED, "--format", "json"],
        )
        assert as_json.exit_code == 0, as_json.output
        document = json.loads(as_json.stdout)
        assert document["answer"] == result.stdout.strip() and document["items"]


def test_answer_with_the_extractive_engine_is_a_one_line_user_error(notes_home):  # noqa: F811
    result = CliRunner().invoke(app, ["ask", "docker", "--budget", "300", "--answer"])
    assert result.exit_code == 1
    assert "SELENE_LLM=ollama" in result.stderr and "Traceback" not in result.stderr
