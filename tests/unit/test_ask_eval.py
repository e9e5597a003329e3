"""The *BM25 passages* baseline of ``eval`` (cut, rank, pack within budget) and ``eval``
with several budgets, over a real DuckDB file with the fts extension."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from selene_dag.context.tokens import count_tokens
from selene_dag.retrieval import evaluate as ev
from selene_dag.retrieval.evaluate import (
    METHODS,
    PASSAGE_TOKENS,
    PairedDifference,
    PassageIndex,
    Question,
    cut_document,
    evaluate,
    paired_difference,
    passage_index,
    passage_pack,
)
from selene_dag.retrieval.index import build_index
from selene_dag.store import connect
from tests.support.ask import NOW, seed_store

MODEL = "gpt-4"
UNIQUE = "quetzalcoatlite"
# A long note: many paragraphs about the same things, the unique term in one of them only.
FILLER = "The garden hose leaks when the tap is open and the valve is old. " * 6
LONG_NOTE = "\n\n".join(
    [f"Paragraph {i}. {FILLER}" for i in range(12)]
    + [f"The {UNIQUE} valve fixed the garden hose for good."]
    + [f"Paragraph {i}. {FILLER}" for i in range(12, 20)]
)


def _add_long_note(db: Path) -> None:
    conn = connect(db)
    try:
        conn.execute(
            "INSERT INTO notes (id, title, content, content_hash, created_at, updated_at, "
            "source) VALUES ('garden/hose.md', 'Garden hose repairs', ?, md5(?), ?, ?, 'test')",
            [LONG_NOTE, LONG_NOTE, NOW, NOW],
        )
        conn.execute(
            "INSERT INTO processed_notes (note_id, essence, fidelity_tier) "
            "VALUES ('garden/hose.md', 'hose', 'full')"
        )
        build_index(conn, NOW, model=MODEL)
    finally:
        conn.close()


@pytest.fixture(scope="module")
def store_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("eval") / "selene.duckdb"
    seed_store(path)
    _add_long_note(path)
    return path


@pytest.fixture
def store(store_path: Path):
    conn = connect(store_path)
    yield conn
    conn.close()


def test_cut_keeps_title_first_and_passages_near_target() -> None:
    passages = cut_document("Garden hose repairs", LONG_NOTE, MODEL)
    assert len(passages) > 3
    for p in passages:
        assert p.startswith("Garden hose repairs\n")
        assert count_tokens(p, MODEL) <= PASSAGE_TOKENS + 10
    # Nothing is lost: every paragraph is in some passage.
    for paragraph in LONG_NOTE.split("\n\n"):
        assert any(paragraph.strip() in p for p in passages)


def test_cut_splits_one_huge_line() -> None:
    passages = cut_document("t", "word " * 3000, MODEL)
    assert len(passages) > 10
    assert all(count_tokens(p, MODEL) <= PASSAGE_TOKENS + 10 for p in passages)


def test_passage_holding_the_unique_term_comes_first(store) -> None:
    index = passage_index(store, MODEL)
    ranked = index.rank(f"{UNIQUE} hose", ["note", "chunk"])
    assert UNIQUE in index.texts[ranked[0]]
    assert index.texts[ranked[0]].startswith("Garden hose repairs\n")
    question = f"which {UNIQUE} valve fixed the hose"
    first = index.texts[index.rank(question, ["note", "chunk"])[0]]
    assert UNIQUE in first
    pack = passage_pack(store, question, 250, MODEL)
    assert pack.startswith(first)
    assert count_tokens(pack, MODEL) <= 250
    # The same (database, corpus version, model) is cut once.
    assert passage_index(store, MODEL) is index


def test_sources_restrict_the_passages(store) -> None:
    pack = passage_pack(store, "LM Studio provider hose", 500, MODEL, sources=["sessions"])
    assert "LM Studio" in pack and "hose" not in pack.lower()


def test_a_passage_too_big_is_skipped_for_the_next(store) -> None:
    index = passage_index(store, MODEL)
    ranked = index.rank("garden hose valve", ["note"])
    smallest = min(index.tokens[i] for i in ranked)
    budget = smallest + 1
    pack = index.pack("garden hose valve", budget, ["note"])
    assert pack  # the big first hits were skipped, a smaller one fits
    assert count_tokens(pack, MODEL) <= budget


_WORDS = ["hose", "valve", "garden", "tap", "leak", "docker", "shell", "zsh", "prompt", "tomato"]
_word = st.one_of(st.sampled_from(_WORDS), st.text(min_size=1, max_size=12))
_paragraph = st.lists(_word, min_size=1, max_size=80).map(" ".join)
_body = st.lists(_paragraph, min_size=1, max_size=8).map(
    lambda ps: "\n\n".join(p.replace(" ; ", "\n") for p in ps)
)
_doc = st.tuples(st.sampled_from(["note", "chunk"]), st.text(max_size=30), _body)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    docs=st.lists(_doc, min_size=1, max_size=6),
    question=st.lists(st.sampled_from(_WORDS), min_size=1, max_size=4).map(" ".join),
    budget=st.integers(min_value=1, max_value=600),
)
def test_passage_pack_never_exceeds_the_budget(
    docs: list[tuple[str, str, str]], question: str, budget: int
) -> None:
    index = PassageIndex(docs, MODEL)
    pack = index.pack(question, budget, ["note", "chunk"])
    assert count_tokens(pack, MODEL) <= budget
    # Whole passages only, in BM25 rank order.
    ranked = [index.texts[i] for i in index.rank(question, ["note", "chunk"])]
    assert _joins_a_subsequence(pack, ranked)


def _joins_a_subsequence(text: str, items: list[str], pos: int = 0, start: int = 0) -> bool:
    """True when ``text[pos:]`` is ``items[k1], items[k2], ...`` (start <= k1 < k2 ...)
    joined by blank lines."""
    if pos == len(text):
        return True
    if pos > 0:
        if not text.startswith("\n\n", pos):
            return False
        pos += 2
    for k in range(start, len(items)):
        end = pos + len(items[k])
        if text.startswith(items[k], pos) and _joins_a_subsequence(text, items, end, k + 1):
            return True
    return False


def test_evaluate_reports_four_methods_within_budget(store) -> None:
    questions = [
        Question(f"what fixed the hose, the {UNIQUE}?", (UNIQUE,)),
        Question("docker container shell", ("docker exec -it",)),
    ]
    for budget in (60, 300):
        report = evaluate(store, questions, budget, model=MODEL, now=NOW)
        assert (
            set(report.overall)
            == set(METHODS)
            == {
                "ask",
                "newest_first",
                "bm25_topk",
                "bm25_passages",
            }
        )
        assert report.over_budget == dict.fromkeys(METHODS, 0)
        assert report.passages == len(passage_index(store, MODEL))
    assert report.overall["bm25_passages"] == 1.0


def test_evaluate_without_the_passage_baseline_cuts_no_passages(store) -> None:
    questions = [Question("docker container shell", ("docker exec -it",))]
    methods = ("ask", "newest_first", "bm25_topk")
    report = evaluate(store, questions, 300, model=MODEL, now=NOW, methods=methods)
    assert set(report.overall) == set(methods) and report.passages == 0
    assert set(report.rows[0]["tokens"]) == set(methods)


def test_eval_command_reports_each_budget(
    store_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from selene_dag.cli import app

    monkeypatch.setenv("SELENE_DB", str(store_path))
    monkeypatch.setenv("SELENE_MODEL", MODEL)
    monkeypatch.setenv("SELENE_NOW", NOW.isoformat())
    questions = tmp_path / "q.jsonl"
    questions.write_text(
        json.dumps({"question": f"the {UNIQUE} valve", "must_contain": [UNIQUE]})
        + "\n"
        + json.dumps({"question": "zsh prompt", "must_contain": ["PROMPT='%1~ %# '"]})
        + "\n"
    )
    runner = CliRunner()
    args = ["eval", str(questions), "--budget", "400", "--budget", "80", "--format", "json"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["model"] == MODEL
    assert [r["budget"] for r in doc["budgets"]] == [400, 80]
    for report in doc["budgets"]:
        assert set(report["overall"]) == set(METHODS)
        assert len(report["questions"]) == 2
        for row in report["questions"]:
            assert all(n <= report["budget"] for n in row["tokens"].values())
    assert "at 400 tokens" in result.stderr and "at 80 tokens" in result.stderr
    # One budget keeps the single-report shape.
    one = json.loads(runner.invoke(app, [*args[:4], "--format", "json"]).stdout)
    assert one["budget"] == 400
    assert set(one) == {"budget", "model", "overall", "questions", "ask_vs_bm25_passages"}
    table = runner.invoke(app, ["eval", str(questions), "--budget", "400", "--budget", "80"])
    assert table.exit_code == 0, table.output
    assert "recall at 400 tokens" in table.stdout and "recall at 80 tokens" in table.stdout
    assert "bm25 passages" in table.stdout
    assert "ask − bm25 passages: +0.000 (the same on each of the 2 questions)" in table.stdout
    single = tmp_path / "one.jsonl"
    single.write_text(questions.read_text().splitlines()[0] + "\n")
    alone = runner.invoke(app, ["eval", str(single), "--budget", "400"])
    assert "ask − bm25 passages: +0.000 (one question: no interval)" in alone.stdout


def test_paired_difference_is_the_mean_difference_with_a_95_percent_interval() -> None:
    rows = [
        {"ask": 1.0, "bm25_passages": 0.0},
        {"ask": 0.5, "bm25_passages": 0.5},
        {"ask": 1.0, "bm25_passages": 1.0},
        {"ask": 0.0, "bm25_passages": 1.0},
    ]
    # Differences 1, 0, 0, -1: mean 0, sample variance 2/3, standard error sqrt(1/6).
    versus = paired_difference(rows)
    assert versus.questions == 4 and versus.difference == 0.0
    assert versus.high == pytest.approx(1.96 * (1 / 6) ** 0.5) == -versus.low
    one = paired_difference(rows[:1])
    assert (one.difference, one.low, one.high) == (1.0, 1.0, 1.0)
    assert paired_difference([]) == PairedDifference(0, 0.0, 0.0, 0.0)
    # A difference of recalls lies in [-1, 1]: two questions, 1 and 0, reached 1.48.
    two = paired_difference(
        [{"ask": 1.0, "bm25_passages": 0.0}, {"ask": 0.5, "bm25_passages": 0.5}]
    )
    assert two.difference == 0.5 and (two.low, two.high) == (pytest.approx(-0.48), 1.0)
    # The report's own figure, and none without the passage baseline.
    report = ev.EvalReport(
        500, MODEL, rows=[{**r, "newest_first": 0.0, "bm25_topk": 0.0} for r in rows]
    )
    assert report.versus_passages == versus
    assert report.to_json()["ask_vs_bm25_passages"]["high"] == round(versus.high, 4)
    only = ev.EvalReport(500, MODEL, rows=rows, methods=("ask",))
    assert only.versus_passages is None and "ask_vs_bm25_passages" not in only.to_json()


def test_cache_is_bounded() -> None:
    assert ev._PASSAGE_CACHE_SIZE >= 1
    assert len(ev._PASSAGE_CACHE) <= ev._PASSAGE_CACHE_SIZE


def test_a_question_file_names_its_bad_lines_in_file_order(tmp_path) -> None:
    from selene_dag.retrieval.evaluate import read_question_file

    path = tmp_path / "q.jsonl"
    path.write_text(
        '{"question": "a", "must_contain": ["x"]}\n{"nope": 1}\nnot json\n'
        '{"question": "b", "must_contain": "y"}\n'
    )
    loaded = read_question_file(path)
    assert [q.question for q in loaded.questions] == ["a", "b"]
    assert [where for where, _ in loaded.problems] == ["line 2", "line 3"]


def test_a_question_file_cut_inside_an_emoji_is_evaluated(store, tmp_path) -> None:
    # A lone surrogate reached the BM25 baselines and crashed eval (a pybind11 cast).
    from selene_dag.retrieval.evaluate import load_questions

    path = tmp_path / "q.jsonl"
    path.write_text(
        '{"question": "docker container shell \\ud83d", "must_contain": ["docker exec -it"]}\n'
    )
    (question,) = load_questions(path)
    assert question.question == "docker container shell \ufffd"
    report = evaluate(store, [question], 300, model=MODEL, now=NOW)
    assert report.overall["ask"] == 1.0
