"""``distill seed PLATFORM --question Q`` (seed 003 §5.12): a fresh, resumable session
assembled from the chunks of every session that best answer a question, scored 0.6 ×
relevance + 0.4 × consensus, written in the resuming agent's format. Real transcripts,
real distillation, the file read back with the parser of its platform."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import dagster as dg
import pytest

from selene_dag import service
from selene_dag.config import Settings, load_settings
from selene_dag.errors import NotFoundError, UsageError
from selene_dag.retrieval.pack import RERANK_TOP
from selene_dag.retrieval.question_seed import QUESTION_WEIGHT, STATIC_WEIGHT, question_chunks
from selene_dag.sessions.parsers import parse_file
from selene_dag.store import connect
from tests.support.fake_ollama import FakeOllama, free_port
from tests.support.sessions import FIXTURES

CLAUDE = FIXTURES / "claude" / "claude-code-log_326189cf-5676-4237-8cde-1ce80aae4a9f.jsonl"
CODEX = (
    FIXTURES / "codex" / "rollout-2025-11-17T15-30-28-019a93b9-f380-7600-98ff-940e6b99603c.jsonl"
)
QUESTION = "What happens to the cache when get_library_version reports a new version?"


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    root = tmp_path_factory.mktemp("q")
    for source in (CLAUDE, CODEX):
        target = root / "sessions" / source.parent.name / source.name
        target.parent.mkdir(parents=True)
        shutil.copy(source, target)
    settings = load_settings(
        {
            "SELENE_SESSION_ROOTS": str(root / "sessions"),
            "SELENE_LLM": "extractive",
            "SELENE_CLI_ASSESSORS": "",
            "SELENE_NOW": "2026-05-01T00:00:00Z",
        },
        home=root / "home",
    )
    rows = service.distill_run(settings, all_files=True, instance=dg.DagsterInstance.ephemeral())
    assert len(rows) == 2 and all(r["ok"] for r in rows)
    return settings


def _keys(settings: Settings) -> dict[str, str]:
    return {r["platform"]: r["session_key"] for r in service.distill_report(settings)}


def test_the_session_holds_the_chunks_that_answer_the_question(
    home: Settings, tmp_path: Path
) -> None:
    out = service.distill_seed(home, "codex", question=QUESTION, out_dir=tmp_path)
    assert out["sessions"][0] == _keys(home)["claude"]  # the answer is in the Claude session
    assert 0 < out["chunks"] <= out["candidates"] and out["tokens"] <= out["budget"] == 80_000
    assert "rerank" in out  # the JSON always says whether and how the candidates were reranked
    # Which of the question's search words the best chunk holds (a weak match is said).
    assert out["question_words"][:2] == ["happens", "cache"]
    assert "cache" in out["question_words_found"]
    assert set(out["question_words_found"]) <= set(out["question_words"])
    weak = service.distill_seed(
        home, "codex", question="cache xylophone quasar zebra", out_dir=tmp_path
    )
    assert weak["question_words_found"] == ["cache"] and len(weak["question_words"]) == 4
    written = parse_file(out["path"], "codex")
    assert written.errors == 0
    text = "\n".join(e.text or "" for e in written.events)
    assert "get_library_version" in text
    # Seed 003 §5.14: the preamble says what question the session was assembled for.
    preamble = next(e.text for e in written.events if "assembled from" in (e.text or ""))
    assert f"chunks relevant to: {QUESTION}" in preamble
    # It names every platform its chunks come from, not the most common one alone.
    platforms = sorted({key.split("-")[0] for key in out["sessions"]})
    assert f"They come from {' and '.join(platforms)} session(s)" in preamble


def test_scores_weigh_relevance_and_consensus(home: Settings) -> None:
    service.refresh_index_if_stale(home)
    conn = connect(home.db_path)
    try:
        chunks, reranked = question_chunks(conn, QUESTION)
        consensus = dict(conn.execute("SELECT chunk_id, consensus FROM chunk_scores").fetchall())
    finally:
        conn.close()
    assert chunks and reranked == []
    for scored in chunks:
        static = STATIC_WEIGHT * consensus[scored.chunk.id]
        assert static <= scored.consensus <= static + QUESTION_WEIGHT * 10 + 1e-9
    # The best match gets the whole relevance share.
    assert any(
        abs(s.consensus - (QUESTION_WEIGHT * 10 + STATIC_WEIGHT * consensus[s.chunk.id])) < 1e-3
        for s in chunks
    )
    times = [s.chunk.first_timestamp or "" for s in chunks]
    assert times == sorted(times)  # chronological, as a resumed session reads
    # The weights are settings (seed 003 §10): relevance alone puts the best match at 10.
    conn = connect(home.db_path)
    try:
        alone, _ = question_chunks(conn, QUESTION, weights=(1.0, 0.0))
    finally:
        conn.close()
    assert max(s.consensus for s in alone) == 10.0
    assert all(0 < s.consensus <= 10.0 for s in alone)


def test_one_session_only_and_the_errors(home: Settings, tmp_path: Path) -> None:
    codex_key = _keys(home)["codex"]
    out = service.distill_seed(
        home, "claude", codex_key, question="rollout session tokens", out_dir=tmp_path
    )
    assert out["sessions"] == [codex_key]
    assert parse_file(out["path"], "claude").events
    with pytest.raises(NotFoundError, match="no scored session chunk matches"):
        service.distill_seed(home, "claude", question="xylophone quasar", out_dir=tmp_path)
    with pytest.raises(
        NotFoundError, match=r"no session matches .nope. \(`selene-dag distill report`"
    ):
        service.distill_seed(home, "claude", "nope", question=QUESTION, out_dir=tmp_path)
    # Every command names a session the same way: a uuid's first characters, never "".
    (row,) = service.distill_report(home, "019a93b9")
    assert row["session_key"] == codex_key
    seeded = service.distill_seed(
        home, "claude", "019a93b9", question="rollout session tokens", out_dir=tmp_path
    )
    assert seeded["sessions"] == [codex_key]
    for call in (
        lambda: service.distill_report(home, ""),
        lambda: service.distill_seed(home, "claude", " ", question=QUESTION, out_dir=tmp_path),
    ):
        with pytest.raises(UsageError, match="empty session id"):
            call()
    later = home.session_roots[0].path / "later" / "late-session.jsonl"
    later.parent.mkdir()
    shutil.copy(CLAUDE, later)
    try:
        with pytest.raises(NotFoundError, match="'late-session' is not distilled yet: run"):
            service.distill_seed(home, "claude", "late-session", question=QUESTION)
    finally:
        shutil.rmtree(later.parent)
    with pytest.raises(UsageError, match="empty"):
        service.distill_seed(home, "claude", question="  ", out_dir=tmp_path)
    with pytest.raises(UsageError):
        service.distill_seed(home, "cursor", question=QUESTION, out_dir=tmp_path)


def test_the_file_names_only_the_sessions_of_the_chunks_it_holds(
    home: Settings, tmp_path: Path
) -> None:
    wide = service.distill_seed(home, "claude", question=QUESTION, out_dir=tmp_path / "wide")
    assert len(wide["sessions"]) == 2 and wide["chunks"] >= 2
    with pytest.raises(NotFoundError, match="none fits in 100 tokens with the session's"):
        service.distill_seed(home, "claude", question=QUESTION, out_dir=tmp_path, max_tokens=100)
    low, high = 100, wide["tokens"]  # the least budget that holds a chunk, by bisection
    while high - low > 10:
        try:
            service.distill_seed(
                home, "claude", question=QUESTION, out_dir=tmp_path, max_tokens=(low + high) // 2
            )
            high = (low + high) // 2
        except NotFoundError:
            low = (low + high) // 2
    narrow = service.distill_seed(
        home, "claude", question=QUESTION, out_dir=tmp_path / "narrow", max_tokens=high
    )
    assert narrow["chunks"] == 1 and len(narrow["sessions"]) == 1
    written = parse_file(narrow["path"], "claude")
    preamble = next(e.text for e in written.events if "assembled from" in (e.text or ""))
    other = next(key for key in wide["sessions"] if key not in narrow["sessions"])
    assert other.split("-", 1)[1][:8] not in preamble
    # Every chunk found but none scoring the minimum: said, with the setting that decides.
    strict = home.model_copy(update={"distill_min_consensus": 9.99})
    with pytest.raises(NotFoundError, match=r"none with a score of at least 9\.99"):
        service.distill_seed(strict, "claude", question=QUESTION, out_dir=tmp_path / "strict")


def test_a_model_reading_the_candidates_raises_those_it_picks(home: Settings) -> None:
    service.refresh_index_if_stale(home)
    conn = connect(home.db_path)
    try:
        offline, _ = question_chunks(conn, QUESTION)
        seen: list[int] = []

        def pick_the_last(question: str, texts) -> list[int]:
            assert question == QUESTION and 1 < len(texts) <= RERANK_TOP
            seen.append(len(texts))
            return [len(texts) - 1, 99, -1]  # invented numbers are dropped

        ranked, reranked = question_chunks(conn, QUESTION, ranker=pick_the_last)
    finally:
        conn.close()
    assert reranked == [seen[0]]
    before = {s.chunk.id: s.consensus for s in offline}
    after = {s.chunk.id: s.consensus for s in ranked}
    raised = [c for c in after if after[c] > before[c] + 1e-9]
    assert len(raised) == 1 and after[raised[0]] >= QUESTION_WEIGHT * 10 - 1e-9
    assert all(after[c] == before[c] for c in after if c not in raised)


def test_with_a_model_server_the_model_reads_the_candidates(home: Settings, tmp_path: Path) -> None:
    with FakeOllama() as server:
        settings = home.replace(llm="ollama", ollama_host=server.url)
        out = service.distill_seed(settings, "gemini", question=QUESTION, out_dir=tmp_path)
        assert server.requests["/api/chat"] + server.requests["/api/generate"] == 1
        assert "get_library_version" in " ".join(str(b) for b in server.bodies)
    assert out["rerank"].startswith("candidates the model put first (full-text ranks)"), out
    assert parse_file(out["path"], "gemini").events
    # A server that is down leaves the seed on its offline path, and says so.
    down = home.replace(
        llm="ollama", ollama_host=f"http://127.0.0.1:{free_port()}", ollama_timeout=2
    )
    # (another question: the model's answer to the first is cached, and stands)
    offline = service.distill_seed(
        down, "gemini", question="how are cached sessions read back", out_dir=tmp_path
    )
    assert offline["rerank"].startswith("not reranked") and offline["chunks"] > 0
    # SELENE_DISTILL_RERANK=0: the model is not asked at all.
    with FakeOllama() as server:
        plain = home.replace(llm="ollama", ollama_host=server.url, distill_rerank=False)
        kept = service.distill_seed(
            plain, "gemini", question="which cache is cleared", out_dir=tmp_path
        )
        assert sum(server.requests.values()) == 0
    assert kept["rerank"] == "not reranked (SELENE_DISTILL_RERANK=0)" and kept["chunks"] > 0


RATING_CLI = """
import json, os, sys
prompt = sys.stdin.read()
with open(os.environ["CLI_LOG"], "a") as log:
    log.write(json.dumps(prompt) + "\\n")
chunk = prompt.split("Conversation chunk:")[-1].split("Rate this chunk")[0]
relevant = "version" in chunk
print(json.dumps({"relevance": 9 if relevant else 2, "signal_density": 5, "reusability": 5,
                  "reason": "fake"}))
"""


def test_without_a_model_the_cli_assessors_rate_the_candidates_for_the_question(
    home: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Seed 003 §5.12: candidates re-ranked by question-aware assessment of the providers.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("claude", "codex"):
        fake = bin_dir / name
        fake.write_text(f"#!{sys.executable}\n{RATING_CLI}", encoding="utf-8")
        fake.chmod(0o755)
    log = tmp_path / "prompts.jsonl"
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.setenv("CLI_LOG", str(log))
    rated = home.replace(cli_assessors=("claude", "codex"))
    assert service.seed_rerank_notice(rated).startswith(
        "rating the best candidates for the question with claude, codex"
    )
    out = service.distill_seed(rated, "claude", question=QUESTION, out_dir=tmp_path)
    assert out["rerank"].startswith("candidates the CLI assessors put first (full-text ranks)")
    prompts = [json.loads(line) for line in log.read_text().splitlines()]
    assert prompts and all(QUESTION in p for p in prompts)  # rated for the question
    assert len(prompts) == 2 * min(RERANK_TOP, out["candidates"])  # both CLIs, each candidate
    # Switched off, no CLI runs.
    log.unlink()
    plain = rated.replace(distill_rerank=False)
    assert service.seed_rerank_notice(plain) == ""
    kept = service.distill_seed(plain, "claude", question=QUESTION, out_dir=tmp_path)
    assert kept["rerank"] == "not reranked (SELENE_DISTILL_RERANK=0)" and not log.exists()


def test_a_seed_for_a_question_no_session_talks_about_says_so(
    home: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A newcomer's seed for a test no session mentions packed 18,000 tokens of unrelated
    # chunks with no word about it.
    from typer.testing import CliRunner

    from selene_dag.cli import app

    env = {
        "SELENE_SESSION_ROOTS": str(home.home.parent / "sessions"),
        "SELENE_LLM": "extractive",
        "SELENE_CLI_ASSESSORS": "",
        "SELENE_NOW": "2026-05-01T00:00:00Z",
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    args = ["distill", "seed", "codex", "--out-dir", str(tmp_path), "--home", str(home.home)]
    weak = CliRunner().invoke(app, [*args, "--question", "cache xylophone quasar zebra"])
    assert weak.exit_code == 0, weak.output
    assert "weak match: the chunk that best matches holds 1 of the question's 4" in weak.stderr
    strong = CliRunner().invoke(app, [*args, "--question", QUESTION])
    assert strong.exit_code == 0 and "weak match" not in strong.stderr


def test_the_command_says_on_stderr_when_the_model_did_not_rerank(
    home: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `ask` says "rerank: not reranked (…)" on stderr; `distill seed` said it in its JSON
    # only, and exited 0 with a server down.
    from typer.testing import CliRunner

    from selene_dag.cli import app

    env = {
        "SELENE_HOME": str(home.home),
        "SELENE_SESSION_ROOTS": ":".join(str(r.path) for r in home.session_roots),
        "SELENE_NOW": "2026-05-01T00:00:00Z",
        "SELENE_LLM": "ollama",
        "SELENE_OLLAMA_HOST": f"http://127.0.0.1:{free_port()}",
        "SELENE_OLLAMA_TIMEOUT": "2",
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    args = ["distill", "seed", "gemini", "--question", "which files were read", "--out-dir"]
    result = CliRunner().invoke(app, [*args, str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "rerank: not reranked (cannot reach Ollama" in result.stderr
    monkeypatch.setenv("SELENE_DISTILL_RERANK", "0")  # asked not to: nothing to say
    result = CliRunner().invoke(app, [*args, str(tmp_path)])
    assert result.exit_code == 0 and "rerank:" not in result.stderr
