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


def test_ask_and_its_answer_let_the_store_go_while_the_model_writes(notes_home, monkeypatch):  # noqa: F811
    # `ask --answer` held the home's database through the model's rewrite, rerank and
    # answer (a minute on a laptop's CPU): an ingest started meanwhile failed.
    import subprocess
    import sys
    import threading
    import time

    from selene_dag.config import load_settings

    _ingest()
    with FakeOllama(delay=3.0) as server:
        monkeypatch.setenv("SELENE_LLM", "ollama")
        monkeypatch.setenv("SELENE_OLLAMA_HOST", server.url)
        db = load_settings().db_path
        result: list = []
        asking = threading.Thread(
            target=lambda: result.append(CliRunner().invoke(app, ASKED)), daemon=True
        )
        asking.start()
        written: list[int] = []
        while asking.is_alive():
            if server.total_requests > len(written):  # a model call is under way
                writer = subprocess.run(
                    [
                        sys.executable,
                        "-c",
                        "import sys, duckdb; c = duckdb.connect(sys.argv[1]); "
                        "c.execute('CREATE TABLE IF NOT EXISTS beside (i INT)'); c.close()",
                        str(db),
                    ],
                    capture_output=True,
                    text=True,
                    timeout=30,
                )
                assert writer.returncode == 0, writer.stderr
                written.append(server.total_requests)
            time.sleep(0.05)
        asking.join()
    assert result[0].exit_code == 0, result[0].output
    assert len(written) == 3  # during the rewrite, the rerank and the answer
    assert result[0].stdout.strip() and "answer from mistral:7b" in result[0].stderr


def test_a_pack_past_the_models_context_is_a_one_line_user_error(notes_home, monkeypatch):  # noqa: F811
    # `ask --budget 40000 --answer`: the pack was built, then a ValueError's traceback.
    import pytest

    from selene_dag import service
    from selene_dag.config import load_settings
    from selene_dag.errors import UsageError

    _ingest()
    with FakeOllama() as server:
        monkeypatch.setenv("SELENE_LLM", "ollama")
        monkeypatch.setenv("SELENE_OLLAMA_HOST", server.url)
        pack = "[note a.md] A note\nwords of a long note about docker containers. " * 4_000
        with pytest.raises(UsageError, match=r"context allowed for mistral:7b.*smaller --budget"):
            service.answer(load_settings(), "what about docker?", pack)
        assert server.requests["/api/chat"] == 0  # refused before asking


def test_a_model_server_that_is_down_leaves_the_pack_printed(notes_home, monkeypatch):  # noqa: F811
    # The pack was built, then "cannot reach Ollama" and nothing on stdout: asked again
    # without --answer, the same work was done twice.
    import socket

    _ingest()
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv("SELENE_LLM", "ollama")
    monkeypatch.setenv("SELENE_OLLAMA_HOST", f"http://127.0.0.1:{port}")
    result = CliRunner().invoke(app, ASKED)
    assert result.exit_code == 1
    assert result.stdout.startswith("[") and "docker" in result.stdout.lower()
    assert "cannot reach Ollama" in result.stderr and "pack is printed instead" in result.stderr
    as_json = CliRunner().invoke(app, [*ASKED, "--format", "json"])
    assert as_json.exit_code == 1 and "answer" not in json.loads(as_json.stdout)
