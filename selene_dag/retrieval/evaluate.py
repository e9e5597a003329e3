"""Recall at a budget: ask's pack versus two baselines with the same budget and model.

A question file is JSONL, one ``{"question": str, "must_contain": [str, ...]}`` per line
(other keys are kept but ignored). Recall of a pack is the share of required facts found in
it (case-insensitive substring). Baselines: *newest-first* (notes newest first, full text,
cut at the budget) and *BM25 top-k* (search hits in BM25 order, full text, cut at the budget).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb

from selene_dag.context.tokens import count_tokens, default_model, truncate_to_tokens
from selene_dag.errors import UsageError, check_budget
from selene_dag.retrieval.pack import ask
from selene_dag.retrieval.search import Candidate, newest_notes, search

METHODS = ("ask", "newest_first", "bm25_topk")


@dataclass(frozen=True)
class Question:
    """One evaluation question and the facts its pack must contain."""

    question: str
    must_contain: tuple[str, ...]
    source: str | None = None  # "note:<id>" or "session:<text in its file path or project>"


def load_questions(path: str | Path) -> list[Question]:
    """Parse a JSONL question file into its questions, in file order.

    Raises FileNotFoundError when ``path`` is not a file, and UsageError (a ValueError)
    naming the line of any malformed entry, or when the file holds no question.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such question file")
    questions = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            raise UsageError(f"{path}:{number}: not JSON ({exc.msg})") from None
        question = data.get("question") if isinstance(data, dict) else None
        facts = data.get("must_contain") if isinstance(data, dict) else None
        if not isinstance(question, str) or not question.strip():
            raise UsageError(f"{path}:{number}: 'question' must be a non-empty string")
        if (
            not isinstance(facts, list)
            or not facts
            or not all(isinstance(f, str) and f for f in facts)
        ):
            raise UsageError(f"{path}:{number}: 'must_contain' must be a non-empty list of strings")
        source = data.get("source")
        if source is not None and not isinstance(source, str):
            raise UsageError(f"{path}:{number}: 'source' must be a string")
        questions.append(Question(question, tuple(facts), source))
    if not questions:
        raise UsageError(f"{path}: no questions")
    return questions


def recall(text: str, facts: Sequence[str]) -> float:
    """Share of ``facts`` found in ``text`` (case-insensitive substring); 1.0 for none."""
    if not facts:
        return 1.0
    low = text.lower()
    return sum(1 for f in facts if f.lower() in low) / len(facts)


def truncation_pack(candidates: Sequence[Candidate], budget: int, model: str) -> str:
    """Full texts (citation header + body) in the given order, cut at ``budget`` tokens."""
    parts: list[str] = []
    used = 0
    for cand in candidates:
        block = f"[{cand.citation}] {cand.title}\n{cand.body}"
        parts.append(block)
        used += count_tokens(block, model)
        if used >= budget:
            break
    return truncate_to_tokens("\n\n".join(parts), budget, model)


def applicable(conn: duckdb.DuckDBPyConnection, questions: Sequence[Question]) -> list[Question]:
    """The questions whose ``source`` is in the index (all questions without a source):
    the shipped demo questions say nothing about a corpus that lacks their notes."""
    kept = []
    for q in questions:
        if q.source is None:
            kept.append(q)
            continue
        kind, _, ref = q.source.partition(":")
        if kind == "note":
            sql = "SELECT count(*) FROM search_docs WHERE kind = 'note' AND ref = ?"
            args = [ref]
        else:
            sql = (
                "SELECT count(*) FROM search_docs WHERE kind = 'chunk' "
                "AND (citation ILIKE ? OR title ILIKE ?)"
            )
            args = [f"%{ref}%", f"%{ref}%"]
        if conn.execute(sql, args).fetchone()[0]:
            kept.append(q)
    return kept


@dataclass
class EvalReport:
    """Per-question recall for each method, and the mean over questions."""

    budget: int
    model: str
    rows: list[dict[str, Any]] = field(default_factory=list)

    @property
    def overall(self) -> dict[str, float]:
        """Mean recall per method (0.0 with no rows)."""
        n = len(self.rows) or 1
        return {m: round(sum(r[m] for r in self.rows) / n, 4) for m in METHODS}

    def to_json(self) -> dict[str, Any]:
        """Plain data for ``--format json`` and the asset check's metadata."""
        return {
            "budget": self.budget,
            "model": self.model,
            "overall": self.overall,
            "questions": self.rows,
        }


def evaluate(
    conn: duckdb.DuckDBPyConnection,
    questions: Sequence[Question],
    budget: int,
    *,
    model: str | None = None,
    now: datetime | None = None,
    sources: Sequence[str] | None = None,
) -> EvalReport:
    """Recall of ask and both baselines for every question, at the same budget and model.

    Read-only: no ``last_accessed_at`` stamps. Needs a built ``search_index``.
    """
    budget = check_budget(budget, "budget", minimum=1)
    model = model or default_model()
    report = EvalReport(budget, model)
    newest = truncation_pack(newest_notes(conn), budget, model)
    for q in questions:
        result = ask(conn, q.question, budget, model=model, now=now, sources=sources)
        hits = search(conn, q.question, sources or ("notes", "sessions"), limit=20)
        bm25 = truncation_pack(hits, budget, model)
        row = {
            "question": q.question,
            "facts": len(q.must_contain),
            "ask": recall(result.text, q.must_contain),
            "newest_first": recall(newest, q.must_contain),
            "bm25_topk": recall(bm25, q.must_contain),
            "missing": [f for f in q.must_contain if f.lower() not in result.text.lower()],
            "ask_tokens": result.total_tokens,
        }
        report.rows.append(row)
    return report
