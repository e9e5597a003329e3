"""Compaction through the configured engine (seed 004, P3): with a model server the real
Ollama client writes the summary of the oldest messages; a server that is down skips that
step, says why, and the conversation still fits its window."""

from __future__ import annotations

from pathlib import Path

from selene_dag import service
from selene_dag.config import Settings, load_settings
from selene_dag.context.compaction import message_tokens
from tests.support.fake_ollama import FakeOllama, free_port

MODEL = "mistral:7b"
PARA = "We compared DuckDB and SQLite for the notes store and measured the ingest. " * 6


def _messages() -> list[dict[str, str]]:
    msgs = [{"role": "system", "content": "You are a careful assistant."}]
    for i in range(30):
        msgs.append({"role": "user", "content": f"Question {i}: {PARA}?"})
        msgs.append({"role": "assistant", "content": f"Answer {i}: {PARA}"})
    return msgs


def _settings(tmp_path: Path, host: str) -> Settings:
    env = {"SELENE_LLM": "ollama", "SELENE_OLLAMA_HOST": host, "SELENE_OLLAMA_TIMEOUT": "2"}
    return load_settings(env, home=tmp_path / "home")


def _window(msgs: list[dict[str, str]]) -> int:
    # Over the compaction threshold; P1 and P2 remove nothing, so P3 runs.
    return int(message_tokens(msgs, MODEL) / 0.85 * 0.75)


def test_the_model_writes_the_summary_of_the_oldest_messages(tmp_path: Path) -> None:
    msgs = _messages()
    with FakeOllama() as server:
        report = service.compact(_settings(tmp_path, server.url), msgs, _window(msgs), MODEL)
        assert server.requests["/api/generate"] + server.requests["/api/chat"] == 1
    p3 = next(s for s in report.steps if s.name.startswith("P3"))
    assert p3.removed == 20 and not p3.detail.startswith("skipped")
    assert report.messages[1]["content"].startswith("[SUMMARY OF EARLIER DISCUSSION]")
    assert report.tokens_after <= _window(msgs)


def test_the_models_summary_is_cached_in_the_home(tmp_path: Path) -> None:
    # compact asked the model again on every run: its cache lived for the run only.
    from selene_dag.store import connect

    msgs = _messages()
    settings = _settings(tmp_path, "")
    connect(settings.db_path).close()  # a home with a store
    with FakeOllama() as server:
        settings = _settings(tmp_path, server.url)
        first = service.compact(settings, msgs, _window(msgs), MODEL)
        second = service.compact(settings, msgs, _window(msgs), MODEL)
        assert server.requests["/api/generate"] + server.requests["/api/chat"] == 1
    assert first.messages == second.messages


def test_a_server_that_is_down_leaves_the_summary_to_the_offline_engine(tmp_path: Path) -> None:
    # The step was skipped, and the prune then cut the opening request: a server that is
    # down gave a worse result than no server. The offline summary stands in, and says so.
    msgs = _messages()
    window = _window(msgs)
    down = _settings(tmp_path, f"http://127.0.0.1:{free_port()}")
    report = service.compact(down, msgs, window, MODEL)
    offline = service.compact(load_settings(home=tmp_path / "offline"), msgs, window, MODEL)
    p3 = next(s for s in report.steps if s.name.startswith("P3"))
    assert p3.removed == 20
    assert "(the offline summary: cannot reach Ollama at http://127.0.0.1:" in p3.detail
    assert report.messages == offline.messages
    assert report.tokens_after <= window and message_tokens(report.messages, MODEL) <= window
    assert report.messages[-1] == msgs[-1]  # the newest message is kept whole


def test_a_summary_never_repeats_a_secret_and_the_model_never_reads_one(tmp_path: Path) -> None:
    # A JSON conversation's secrets went into the summary (and so into the model's prompt
    # and the home's cache); the messages kept whole are the caller's own, as given.
    import json

    key = "AKIA" + "QWERTYUIOPASDFGH"
    msgs = _messages()
    msgs[1]["content"] = f"Question 0: deploy with {key} and password=hunter2secret. {PARA}?"
    offline = service.compact(load_settings(home=tmp_path / "offline"), msgs, _window(msgs), MODEL)
    summary = offline.messages[1]["content"]
    assert summary.startswith("[SUMMARY") and "[REDACTED:aws_access_key]" in summary
    assert key not in summary and "hunter2secret" not in summary
    with FakeOllama() as server:
        service.compact(_settings(tmp_path, server.url), msgs, _window(msgs), MODEL)
        sent = json.dumps(server.bodies)
    assert "Question 0" in sent and key not in sent and "hunter2secret" not in sent
