"""Question-driven context packs (seed 003 §5.12 query flow + seed 002 relevance levels).

``ask`` runs: BM25 candidates → dedup (sha256 of the first 500 characters) → question-aware
rerank (0.6 question + 0.4 static) → relevance levels FULL / SUMMARY / KEYWORDS / REFERENCE
packed into the budget by ``compress_context``. Every item is headed by its citation (note
id, or session file + event range). The pack counts at most ``budget`` tokens of the target
model: the final text is counted and trimmed if it ever were over.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any

import duckdb

from selene_dag.context.levels import (
    LevelConfig,
    LevelItem,
    Summarizer,
    compress_context,
    estimate_compressed_size,
    extractive_summary,
)
from selene_dag.context.tokens import (
    count_tokens,
    count_tokens_batch,
    default_model,
    truncate_to_tokens,
)
from selene_dag.retrieval.rerank import Ranked, RerankConfig, dedup, rerank, stem
from selene_dag.retrieval.search import Candidate, parse_sources, query_terms, search

JSON_SCHEMA_VERSION = 1
# Relative relevance (final / best final) → level: the best items go in full, the next
# ones as question-focused summaries, then keywords, then a citation line.
ASK_LEVELS = LevelConfig(full_threshold=0.85, summary_threshold=0.6, keywords_threshold=0.45)


@dataclass(frozen=True)
class AskItem:
    """One item of the pack as rendered (``text`` includes its citation header)."""

    id: str
    kind: str
    level: str
    score: float
    citation: str
    title: str
    text: str
    tokens: int
    excerpt: bool = False


@dataclass
class AskResult:
    """The pack for one question: ``text`` is what ``ask`` prints (≤ ``budget`` tokens)."""

    question: str
    budget: int
    model: str
    total_tokens: int
    items: list[AskItem]
    text: str
    stats: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The stable JSON document (docs/ask.md)."""
        return {
            "schema": JSON_SCHEMA_VERSION,
            "question": self.question,
            "budget": self.budget,
            "model": self.model,
            "total_tokens": self.total_tokens,
            "items": [asdict(item) for item in self.items],
            "stats": self.stats,
        }

    @property
    def note_ids(self) -> list[str]:
        """Ids of the notes the pack uses (for ``last_accessed_at``)."""
        return [item.id.removeprefix("note:") for item in self.items if item.kind == "note"]


def check_budget(budget: object) -> int:
    """A positive int budget, else ValueError/TypeError with a clear message."""
    if isinstance(budget, bool) or not isinstance(budget, int):
        raise TypeError(f"budget must be an int, got {type(budget).__name__}")
    if budget < 1:
        raise ValueError(f"budget must be >= 1 token, got {budget}")
    return budget


_PIECES = re.compile(r"(?<=[.!?])\s+|\n+")


def focused_summarizer(terms: Sequence[str], essences: dict[str, str], model: str):
    """A summarizer ``(text, max_tokens) -> str`` that keeps, in reading order, the
    sentences or lines holding the most question terms; with no term in the text it falls
    back to the note's essence, then to the leading sentences."""
    stems = [stem(t) for t in terms]

    def summarize(text: str, max_tokens: int) -> str:
        pieces = [p.strip() for p in _PIECES.split(text) if p and p.strip()]
        scored = []
        for i, piece in enumerate(pieces):
            low = piece.lower()
            hits = sum(1 for s in stems if s in low)
            if hits:
                scored.append((hits, i))
        if not scored:
            essence = essences.get(text)
            base = essence if essence else text
            return extractive_summary(base, max_tokens, model)
        scored.sort(key=lambda x: (-x[0], x[1]))
        sizes = count_tokens_batch([pieces[i] for _, i in scored], model)
        chosen: list[int] = []
        used = 0
        for (_, i), size in zip(scored, sizes, strict=True):
            if used + size + 2 > max_tokens:  # 2: the " … " joint
                continue
            chosen.append(i)
            used += size + 2
        if not chosen:
            return truncate_to_tokens(pieces[scored[0][1]], max_tokens, model)
        out = " … ".join(pieces[j] for j in sorted(chosen))
        return truncate_to_tokens(out, max_tokens, model)

    return summarize


# A document longer than this share of the budget enters as its question-focused excerpt,
# so one long note cannot crowd out the rest (nor be demoted whole to a short summary).
EXCERPT_SHARE = 0.5


def admit(
    ranked: Sequence[Ranked],
    budget: int,
    model: str,
    summarize: Summarizer,
    level_config: LevelConfig = ASK_LEVELS,
) -> list[LevelItem]:
    """Level items for the best candidates whose estimated cost at their earned level
    still fits the budget (relevance = final score / best final score)."""
    top = ranked[0].final if ranked and ranked[0].final > 0 else 1.0
    cap = max(32, int(budget * EXCERPT_SHARE))
    items: list[LevelItem] = []
    used = 0
    for r in ranked:
        cand = r.candidate
        content, excerpt = cand.body, False
        # ~1 token per 2 characters at worst: longer bodies need no exact count to excerpt.
        if len(content) > cap * 6 or count_tokens(content, model) > cap:
            content, excerpt = summarize(content, cap), True
        item = LevelItem(
            id=cand.doc_id,
            content=content,
            score=r.final / top,
            title=cand.title,
            citation=cand.citation,
            metadata={"kind": cand.kind, "final": r.final, "excerpt": excerpt},
        )
        cost = estimate_compressed_size([item], level_config, model)
        if items and used + cost > budget:
            continue
        items.append(item)
        used += cost
    return items


def pack_ranked(
    question: str,
    ranked: Sequence[Ranked],
    budget: int,
    model: str,
    terms: Sequence[str],
    level_config: LevelConfig = ASK_LEVELS,
) -> tuple[str, list[AskItem], dict[str, int]]:
    """Pack reranked candidates into ``budget`` tokens; returns text, items, level counts."""
    essences = {r.candidate.body: r.candidate.essence for r in ranked if r.candidate.essence}
    summarize = focused_summarizer(terms, essences, model)
    result = compress_context(
        admit(ranked, budget, model, summarize, level_config),
        budget,
        model=model,
        config=level_config,
        summarizer=summarize,
    )
    text = result.text
    if count_tokens(text, model) > budget:  # the hard promise, whatever happened above
        text = truncate_to_tokens(text, budget, model)
    items = [
        AskItem(
            id=li.item.id,
            kind=str(li.item.metadata.get("kind", "")),
            level=li.level.value,
            score=round(float(li.item.metadata.get("final", li.item.score)), 4),
            citation=li.item.citation or li.item.id,
            title=li.item.title or "",
            text=li.text,
            tokens=li.tokens,
            excerpt=bool(li.item.metadata.get("excerpt", False)),
        )
        for li in result.items
    ]
    return text, items, dict(result.stats.counts)


def ask(
    conn: duckdb.DuckDBPyConnection,
    question: str,
    budget: int,
    *,
    model: str | None = None,
    sources: str | Sequence[str] | None = None,
    now: datetime | None = None,
    rerank_config: RerankConfig | None = None,
    level_config: LevelConfig = ASK_LEVELS,
    candidate_limit: int = 40,
    max_items: int = 20,
) -> AskResult:
    """Build the context pack for ``question`` within ``budget`` tokens of ``model``.

    Reads the ``search_index`` (it must exist; the caller refreshes a stale one). An empty
    question, one with no searchable word or no match gives an empty pack with
    ``stats["note"]`` saying why. Raises ValueError/TypeError on a bad budget or sources.
    Does not write: the caller stamps ``last_accessed_at`` with ``result.note_ids``.
    """
    started = time.perf_counter()
    if not isinstance(question, str):
        raise TypeError(f"question must be a str, got {type(question).__name__}")
    budget = check_budget(budget)
    model = model or default_model()
    kinds = parse_sources(sources)
    now = now or datetime.now(UTC)
    terms = query_terms(question)
    stats: dict[str, Any] = {
        "terms": terms,
        "sources": list(kinds),
        "fts_matches": 0,
        "after_dedup": 0,
        "considered": 0,
        "levels": {},
        "note": "",
    }
    result = AskResult(question, budget, model, 0, [], "", stats)
    if not terms:
        stats["note"] = "the question has no searchable words"
        stats["elapsed_ms"] = round((time.perf_counter() - started) * 1000, 1)
        return result
    candidates: list[Candidate] = search(conn, question, kinds, limit=candidate_limit)
    searched = time.perf_counter()
    unique = dedup(candidates)
    ranked = rerank(unique, terms, now, rerank_config)[:max_items]
    stats.update(fts_matches=len(candidates), after_dedup=len(unique), considered=len(ranked))
    if ranked:
        text, items, levels = pack_ranked(question, ranked, budget, model, terms, level_config)
        result.text, result.items = text, items
        result.total_tokens = count_tokens(text, model) if text else 0
        stats["levels"] = levels
        if not items:
            stats["note"] = f"the budget of {budget} tokens cannot hold even one citation line"
    else:
        stats["note"] = "nothing matched the question"
    stats["search_ms"] = round((searched - started) * 1000, 1)
    stats["elapsed_ms"] = round((time.perf_counter() - started) * 1000, 1)
    return result
