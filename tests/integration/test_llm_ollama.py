"""OllamaEngine: the real `ollama` client against the fake Ollama server on 127.0.0.1."""

from __future__ import annotations

from pathlib import Path

import pytest

from selene_dag.config import load_settings
from selene_dag.context.tokens import count_tokens
from selene_dag.llm import get_engine
from selene_dag.llm.cache import LLMCache, cache_stats
from selene_dag.llm.engine import Engine, EngineResponseError, EngineUnavailable
from selene_dag.llm.ollama import OllamaEngine
from selene_dag.store import connect
from selene_dag.text import split_sentences
from tests.support.fake_ollama import FakeOllama, fake_ollama, free_port  # noqa: F401

NOTE_TITLE = "Avoiding length errors in Apache Bench"
NOTE_BODY = "Apache Bench counts differing response sizes as length errors. Pass -l to accept them."


def engine_for(fake: FakeOllama, **kwargs) -> OllamaEngine:
    kwargs.setdefault("timeout", 5)
    kwargs.setdefault("backoff", 0.01)
    return OllamaEngine(host=fake.url, model=kwargs.pop("model", "mistral:7b"), **kwargs)


def test_every_operation_succeeds_with_pinned_options(fake_ollama: FakeOllama) -> None:  # noqa: F811
    engine = engine_for(fake_ollama)
    assert isinstance(engine, Engine)
    analysis = engine.analyze_note(NOTE_TITLE, NOTE_BODY)
    assert len(analysis.essence) > 10 and analysis.concepts and analysis.primary_theme

    body = fake_ollama.bodies[-1]
    assert body["path"] == "/api/chat" and body["model"] == "mistral:7b"
    assert body["format"]["required"] == ["concepts", "primary_theme", "essence"]
    prompt = body["messages"][0]["content"]
    assert NOTE_BODY in prompt
    options = body["options"]
    assert options["temperature"] == 0 and options["seed"] == 42
    assert options["num_ctx"] >= count_tokens(prompt, model="mistral:7b") + options["num_predict"]

    notes = [{"id": f"n{i}", "title": f"Bench note {i}"} for i in range(4)]
    threads = engine.detect_threads("--- Bench note 0 ---\nab -l", notes)
    assert threads and set(threads[0].note_ids) <= {"n0", "n1", "n2", "n3"}

    digest = engine.digest_thread("Benchmarks", "Fast servers", ["One.", "Two essences here."])
    assert len(digest) >= 30 and 1 <= len(split_sentences(digest)) <= 5

    summary = engine.summarize(NOTE_BODY * 20, 12)
    assert count_tokens(summary, model="mistral:7b") <= 12

    rating = engine.assess_chunk("$ pytest -q\n3 failed", context="why do tests fail?")
    assert all(1 <= v <= 10 for v in (rating.relevance, rating.signal_density, rating.reusability))
    assert "why do tests fail?" in fake_ollama.bodies[-1]["messages"][0]["content"]

    assert engine.answer("What does -l do?", "[1] " + NOTE_BODY)
    assert (engine.calls_made, engine.calls_cached) == (6, 0)
    assert fake_ollama.requests["/api/chat"] == 6

    info = engine.check()
    assert info["version"] and info["model"] == "mistral:7b"


def test_rerank_passages_numbers_the_passages_and_keeps_only_real_ones(
    fake_ollama: FakeOllama,  # noqa: F811
) -> None:
    engine = engine_for(fake_ollama)
    passages = ["ab -l accepts differing lengths", "zsh prompt", "docker exec -it ID bash"]
    picked = engine.rerank_passages("what does ab -l do?", passages)
    assert picked and len(set(picked)) == len(picked)
    assert all(0 <= i < len(passages) for i in picked)
    body = fake_ollama.bodies[-1]
    prompt = body["messages"][0]["content"]
    assert "[1] ab -l accepts differing lengths" in prompt and "[3] docker exec" in prompt
    ranking = body["format"]["properties"]["ranking"]
    assert ranking["items"]["maximum"] == 3 and ranking["maxItems"] == 3
    assert engine.rerank_passages("what does ab -l do?", passages) == picked
    assert (engine.calls_made, engine.calls_cached) == (1, 1)
    assert engine.rerank_passages("what does ab -l do?", []) == []


def test_missing_model_says_how_to_pull_it() -> None:
    with FakeOllama(models=["llama3:8b"]) as fake:
        engine = engine_for(fake)
        with pytest.raises(EngineUnavailable) as err:
            engine.analyze_note(NOTE_TITLE, NOTE_BODY)
        message = str(err.value)
        assert message == f"model mistral:7b not found on {fake.url}: run `ollama pull mistral:7b`"
        with pytest.raises(EngineUnavailable, match="ollama pull"):
            engine.check()


def test_server_down_is_one_clear_line() -> None:
    host = f"http://127.0.0.1:{free_port()}"
    engine = OllamaEngine(host=host, timeout=2, backoff=0.01)
    with pytest.raises(EngineUnavailable) as err:
        engine.summarize("some text to summarize", 10)
    message = str(err.value)
    assert message.startswith(f"cannot reach Ollama at {host}: start it with `ollama serve`")
    assert "SELENE_LLM=extractive" in message and "\n" not in message
    assert engine.requests_sent == 2  # retried once
    assert engine.calls_made == 0


def test_slow_server_times_out_after_one_retry() -> None:
    with FakeOllama(delay=3) as fake:
        engine = engine_for(fake, timeout=0.3)
        with pytest.raises(
            EngineUnavailable, match=r"did not answer the analyze_note task within 0\.3 s"
        ):
            engine.analyze_note(NOTE_TITLE, NOTE_BODY)
        assert fake.requests["/api/chat"] == 2


def test_malformed_json_is_retried_once() -> None:
    with FakeOllama(malformed=1) as fake:
        engine = engine_for(fake)
        analysis = engine.analyze_note(NOTE_TITLE, NOTE_BODY)
        assert len(analysis.essence) > 10
        assert fake.requests["/api/chat"] == 2
    with FakeOllama(malformed=2) as fake:
        engine = engine_for(fake)
        with pytest.raises(EngineResponseError, match="unusable output for assess_chunk twice"):
            engine.assess_chunk("some chunk")
        assert fake.requests["/api/chat"] == 2
        assert engine.calls_made == 0


def test_server_errors_and_a_dying_server() -> None:
    with FakeOllama(fail_after=1, fail_mode="500") as fake:
        engine = engine_for(fake)
        engine.assess_chunk("first chunk")
        with pytest.raises(EngineUnavailable, match="HTTP 500"):
            engine.assess_chunk("second chunk")
        assert fake.requests["/api/chat"] == 3  # one good, then one failure retried once
    with FakeOllama(fail_after=1, fail_mode="refuse") as fake:
        engine = engine_for(fake)
        engine.assess_chunk("first chunk")
        with pytest.raises(EngineUnavailable, match="cannot reach Ollama"):
            engine.assess_chunk("second chunk")


def test_identical_call_makes_no_request_with_a_duckdb_cache(tmp_path: Path) -> None:
    db = tmp_path / "selene.duckdb"
    with FakeOllama() as fake:
        conn = connect(db)
        first = engine_for(fake, cache=LLMCache(conn))
        result = first.analyze_note(NOTE_TITLE, NOTE_BODY)
        conn.close()
        before = fake.total_requests

        conn = connect(db)
        env = {"SELENE_LLM": "ollama", "SELENE_OLLAMA_HOST": fake.url, "SELENE_HOME": str(tmp_path)}
        second = get_engine(load_settings(env), cache_conn=conn)
        assert isinstance(second, OllamaEngine)
        assert second.analyze_note(NOTE_TITLE, NOTE_BODY) == result
        assert fake.total_requests == before
        assert (second.calls_made, second.calls_cached) == (0, 1)
        [row] = cache_stats(conn)
        assert (row.engine, row.model, row.task, row.entries) == (
            "ollama",
            "mistral:7b",
            "analyze_note",
            1,
        )
        assert row.prompt_tokens > 0 and row.output_tokens > 0
        conn.close()


def test_constructor_validates_arguments() -> None:
    with pytest.raises(ValueError):
        OllamaEngine(host="localhost:11434")
    with pytest.raises(ValueError):
        OllamaEngine(model=" ")
    with pytest.raises(ValueError):
        OllamaEngine(timeout=0)


def test_a_model_is_never_sent_a_secret(fake_ollama: FakeOllama) -> None:  # noqa: F811
    # A note's AWS key and password went into the analysis and thread prompts, and came
    # back in a thread's stored text; the model may not be on this machine.
    import json

    key = "AKIA" + "QWERTYUIOPASDFGH"
    note = f"Deploy notes. The key is {key} and db_password: hunter2-supersecret for staging."
    engine = engine_for(fake_ollama)
    engine.analyze_note("Deploy", note)
    engine.summarize(note, 50)
    sent = json.dumps(fake_ollama.bodies)
    assert "Deploy notes" in sent and "[REDACTED:aws_access_key]" in sent
    assert key not in sent and "hunter2-supersecret" not in sent
