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
from itertools import pairwise
from typing import Any

import duckdb

from selene_dag.context.levels import (
    LEVELS,
    Level,
    LevelConfig,
    LevelItem,
    Summarizer,
    compress_context,
    extractive_summary,
)
from selene_dag.context.tokens import count_tokens, default_model, truncate_to_tokens
from selene_dag.retrieval.index import header_text
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


_PIECES = re.compile(r"((?<=[.!?])\s+|\n+)")


def split_pieces(text: str) -> tuple[list[str], list[str]]:
    """Sentences or lines of ``text`` (stripped, non-empty) and, for each, the joint to the
    next one as it was: a newline when a line break separated them, else a space."""
    parts = _PIECES.split(text)
    pieces: list[str] = []
    joints: list[str] = []
    gap = ""
    for k, part in enumerate(parts):
        if k % 2:  # a separator
            gap += part
            continue
        piece = part.strip()
        if not piece:
            gap += part
            continue
        if pieces:
            joints.append("\n" if "\n" in gap else " ")
        pieces.append(piece)
        gap = ""
    joints.append("")
    return pieces, joints


# How many pieces on each side of a matching piece may fill an excerpt's remaining room.
NEIGHBOR_WINDOW = 3


class FocusedSummarizer:
    """``(text, max_tokens) -> str``: keeps, in reading order, the sentences or lines
    holding the most question terms, then fills the room left with the pieces right after
    and before them (the command after "compile it:"); with no term in the text it falls
    back to the note's essence, then to the leading sentences.

    Pieces are counted when reached (each distinct piece once) and the excerpt is counted
    and kept within ``max_tokens``. Results are memoized per (text, max_tokens):
    admission and packing ask for the same excerpts.
    """

    def __init__(self, terms: Sequence[str], essences: dict[str, str], model: str) -> None:
        self.stems = [stem(t) for t in terms]
        self.essences = essences
        self.model = model
        self._sizes: dict[str, int] = {}
        self._memo: dict[tuple[str, int], str] = {}

    def _size(self, piece: str) -> int:
        size = self._sizes.get(piece)
        if size is None:
            size = self._sizes[piece] = count_tokens(piece, self.model)
        return size

    def _ranked_pieces(self, pieces: list[str]) -> list[int]:
        hits_at: dict[int, int] = {}
        for i, piece in enumerate(pieces):
            low = piece.lower()
            hits = sum(1 for s in self.stems if s in low)
            if hits:
                hits_at[i] = hits
        scored: list[tuple[float, int]] = [(h, i) for i, h in hits_at.items()]
        near: dict[int, float] = {}
        for gap in range(1, NEIGHBOR_WINDOW + 1):
            for i in hits_at:
                for j, weight in ((i + gap, 0.5 / gap), (i - gap, 0.25 / gap)):
                    if 0 <= j < len(pieces) and j not in hits_at:
                        near[j] = max(near.get(j, 0.0), weight)
        scored += [(w, j) for j, w in near.items()]
        scored.sort(key=lambda x: (-x[0], x[1]))
        return [i for _, i in scored] if hits_at else []

    def _pick(self, pieces: list[str], order: list[int], max_tokens: int) -> list[int]:
        chosen: list[int] = []
        used = 0
        for i in order:
            if max_tokens - used < 3:  # no piece fits: at least 1 token + the joint
                break
            size = self._size(pieces[i])
            if used + size + 2 > max_tokens:  # 2: the " … " joint
                continue
            chosen.append(i)
            used += size + 2
        return chosen

    @staticmethod
    def _join(pieces: list[str], joints: list[str], chosen: list[int]) -> str:
        # Neighbours keep their own joint (a command split at "-I. " stays whole); a gap
        # in the text is marked " … ".
        out = [pieces[chosen[0]]]
        for prev, j in pairwise(chosen):
            out.append(joints[prev] if j == prev + 1 else " … ")
            out.append(pieces[j])
        return "".join(out)

    def __call__(self, text: str, max_tokens: int) -> str:
        key = (text, max_tokens)
        if key not in self._memo:
            self._memo[key] = self._summarize(text, max_tokens)
        return self._memo[key]

    def _summarize(self, text: str, max_tokens: int) -> str:
        model = self.model
        pieces, joints = split_pieces(text)
        order = self._ranked_pieces(pieces)
        if not order:
            essence = self.essences.get(text)
            return extractive_summary(essence if essence else text, max_tokens, model)
        chosen = self._pick(pieces, order, max_tokens)
        if not chosen:
            return truncate_to_tokens(pieces[order[0]], max_tokens, model)
        rank = {i: r for r, i in enumerate(order)}
        while True:
            out = self._join(pieces, joints, sorted(chosen))
            n = count_tokens(out, model)
            if n <= max_tokens:
                break
            if len(chosen) == 1:
                return truncate_to_tokens(out, max_tokens, model)
            # Joined pieces can count more than their sum: drop the least relevant piece,
            # not the excerpt's tail.
            chosen.remove(max(chosen, key=rank.__getitem__))
        return out


def focused_summarizer(
    terms: Sequence[str], essences: dict[str, str], model: str
) -> FocusedSummarizer:
    """The question-focused summarizer of ask (see :class:`FocusedSummarizer`)."""
    return FocusedSummarizer(terms, essences, model)


# A document longer than this share of the budget enters as its question-focused excerpt,
# so one long note cannot crowd out the rest (nor be demoted whole to a short summary).
EXCERPT_SHARE = 0.5
# ...except the best candidate when it clearly leads (the runner-up scores below DOMINANCE
# of it): then it may take TOP_SHARE of the budget, because a question-focused excerpt
# picks lines by question words and misses an answer worded otherwise, while most of the
# note keeps it (the BM25 top-k baseline's strength); the rest still holds the others.
DOMINANCE = 0.8
TOP_SHARE = 0.8
# No tokenizer we know yields a token per more than 6 characters on prose, so a body this
# many characters per token of the cap needs no count to know it is over the cap.
_CHARS_PER_TOKEN_BOUND = 6


def _level_costs(head: int, full: int, sep: int, config: LevelConfig) -> list[int]:
    # The estimate of ``context.levels``: FULL, SUMMARY, KEYWORDS, REFERENCE.
    return [
        full + sep,
        min(full, head + 1 + config.summary_max_tokens) + sep,
        min(full, head + 1 + config.keywords_max_tokens) + sep,
        min(head, config.reference_max_tokens) + sep,
    ]


def admit(
    ranked: Sequence[Ranked],
    budget: int,
    model: str,
    summarize: Summarizer,
    level_config: LevelConfig = ASK_LEVELS,
) -> list[LevelItem]:
    """Level items for the best candidates whose estimated cost at their earned level
    still fits the budget (relevance = final score / best final score).

    A body over ``EXCERPT_SHARE`` of the budget enters as its question-focused excerpt;
    the best candidate's limit is ``TOP_SHARE`` instead when the runner-up's final score
    is below ``DOMINANCE`` of its own.

    Planning only: token counts stored at index time are used when they are in ``model``;
    otherwise a body is counted (at most ``cap × 6`` characters of it). The packer counts
    the real texts afterwards.
    """
    top = ranked[0].final if ranked and ranked[0].final > 0 else 1.0
    cap = max(32, int(budget * EXCERPT_SHARE))
    runner_up = ranked[1].final / top if len(ranked) > 1 else 0.0
    top_cap = max(cap, int(budget * TOP_SHARE)) if runner_up < DOMINANCE else cap
    sep = count_tokens(level_config.separator, model) if level_config.separator else 0
    items: list[LevelItem] = []
    used = 0
    for rank, r in enumerate(ranked):
        cand = r.candidate
        score = r.final / top
        earned = level_config.level_for(score)
        # Below FULL only a summary, keywords or a reference is rendered: an excerpt twice
        # the summary's size holds everything those can use.
        full_cap = top_cap if rank == 0 else cap
        limit = full_cap if earned is Level.FULL else min(cap, 2 * level_config.summary_max_tokens)
        content, excerpt = cand.body, False
        head = cand.header_tokens
        if head is None:
            head = count_tokens(header_text(cand.citation, cand.title), model)
        body = cand.body_tokens
        if body is None and len(content) <= limit * _CHARS_PER_TOKEN_BOUND:
            body = count_tokens(content, model)
        if body is None or body > limit:
            content, excerpt = summarize(content, limit), True
            body = count_tokens(content, model)
        item = LevelItem(
            id=cand.doc_id,
            content=content,
            score=score,
            title=cand.title,
            citation=cand.citation,
            metadata={"kind": cand.kind, "final": r.final, "excerpt": excerpt},
        )
        # "\n" joins header and body: about one token, never estimated below the parts.
        costs = _level_costs(head, head + 1 + body if content else head, sep, level_config)
        cost = costs[LEVELS.index(earned)]
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
    # result.total_tokens is the exact count of result.text; ask() counts the final text.
    if result.total_tokens > budget:  # the hard promise, whatever happened above
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
    candidates: list[Candidate] = search(conn, question, kinds, limit=candidate_limit, model=model)
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
