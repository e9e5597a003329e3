"""Question-driven context packs (seed 003 §5.12 query flow + seed 002 relevance levels).

``ask`` ranks passages across all documents (BM25 and dense embedding ranks fused, with
their documents' BM25 rank as a third list). Unless one document clearly dominates the
best passages, the pack is passage-first (``select``): the best passages across documents
while they fit, each cut to its most relevant pieces when longer than a third of the
budget or than the room left, grouped per document under a citation narrowed to note lines
or session events; citation lines of further documents fill what is left. When one
document dominates, the pack concentrates on it: BM25 document candidates joined by the
passages' documents → dedup (sha256 of the first 500 characters) → question-aware rerank
(0.6 question + 0.4 static) → relevance levels FULL / SUMMARY / KEYWORDS / REFERENCE packed
into the budget by ``compress_context``, the retrieved passages' pieces valued highest.
Every item is headed by its citation. The pack counts at most ``budget`` tokens of the
target model: the final text is counted and trimmed if it ever were over.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

import duckdb

from selene_dag.context.levels import (
    LEVELS,
    Level,
    LevelConfig,
    LevelItem,
    compress_context,
    estimate_compressed_size,
    reference_cap,
)
from selene_dag.context.tokens import (
    count_tokens,
    default_model,
    separator_tokens,
    truncate_to_tokens,
)
from selene_dag.errors import check_budget
from selene_dag.retrieval import bm25
from selene_dag.retrieval.allocate import (
    CHARS_PER_TOKEN_BOUND,
    DocPlan,
    allocate,
    document_weight,
    piece_value,
)
from selene_dag.retrieval.excerpts import (
    PassageSummarizer,
    excerpt_text,
    passage_summarizer,
    window_best_cut,
)
from selene_dag.retrieval.index import header_text
from selene_dag.retrieval.passages import (
    boost_spans,
    lowered,
    span_values,
)
from selene_dag.retrieval.rerank import Ranked, RerankConfig, dedup, rerank
from selene_dag.retrieval.search import (
    Candidate,
    PassageHit,
    chunk_paths,
    documents,
    events_holding,
    hybrid_passages,
    index_build,
    literal_terms,
    parse_sources,
    passage_matrix,
    passage_texts,
    question_term_ids,
    search,
    term_frequencies,
)
from selene_dag.retrieval.select import (
    MIN_EXCERPT_TOKENS,
    Document,
    RankedPassage,
    Selection,
    dominant_document,
    locate,
    select_passages,
)
from selene_dag.retrieval.terms import (
    MAX_TERMS,
    query_terms,
    unsearched_words,
    weights_by_stem,
    whole_terms,
)
from selene_dag.text import close_open_fence, plural, replace_lone_surrogates

JSON_SCHEMA_VERSION = 1
# How many of a long question's words past MAX_TERMS are looked for to be named as such.
UNSEARCHED_LIMIT = 200
# Relative relevance (final / best final) → level: the best items go in full, the next
# ones as question-focused summaries, then keywords, then a citation line.
ASK_LEVELS = LevelConfig(full_threshold=0.85, summary_threshold=0.6, keywords_threshold=0.45)
# Passage retrieval (chosen on assets/eval/dev.jsonl and sessions_dev.jsonl only): passages
# per list (BM25, dense), documents of the best PASSAGE_DOCS passages added to the
# candidates, the rerank's share for a document's best passage, the relevance its
# retrieved passages' pieces get (× their relative fused score), and the level floor they
# give their document.
PASSAGE_LIMIT = 50
PASSAGE_DOCS = 10
ASK_RERANK = RerankConfig(passage_share=0.5)
PASSAGE_BOOST = 1.0
PASSAGE_OWN = 0.0
# A document's pieces outside its retrieved passages keep this share of their relevance.
PASSAGE_OUTSIDE = 0.5
PASSAGE_LEVEL = 0.9
# A retrieved passage's pieces are worth at least PASSAGE_ACROSS × its value, whatever its
# document's weight: when no document clearly leads, the budget goes to the best passages
# of several documents rather than to the leader's filler. Soft: × relative score ** 2.
# (This, PASSAGE_DOC_FUSE and allocate.SPILL were chosen on conversations_dev.jsonl,
# checked on dev.jsonl and sessions_dev.jsonl.)
PASSAGE_ACROSS = 1.0
PASSAGE_ACROSS_SHARPNESS = 2.0
# A retrieved passage's value falls by this factor per rank of the fused list (RRF scores
# themselves are nearly flat over the first ranks); None: fused score / best fused score.
PASSAGE_DECAY: float | None = 0.7
# Reciprocal rank fusion's k for ask (dev sets: 5 beat 60 on notes and sessions).
PASSAGE_RRF_K = 5.0
# With a model to rerank (``ask(passage_ranker=...)``): how many of the best fused passages it
# orders, and how much of each it reads (a passage is ~100-300 tokens; the prompt stays
# near 2,000 tokens).
RERANK_TOP = 8
RERANK_CHARS = 1_000
# A function that reads a question and passage texts and returns the indexes of the
# passages that help, most useful first (a model's reranking; see ``model_order``).
PassageRanker = Callable[[str, Sequence[str]], Sequence[int]]
# Weight of the documents' BM25 rank as a third list of the passages' fusion; 0: off.
PASSAGE_DOC_FUSE = 1.0
# Passage-first packing: a passage longer than this share of the budget (never below
# MIN_PASSAGE_CAP tokens) is cut, so that a small budget holds several passages: a note's
# to its most relevant pieces, a session chunk's to one run of pieces (see
# PassageSummarizer.run). (Chosen on the dev sets: 1/3 against 1/4, 1/2 and no cap.)
PASSAGE_CAP_SHARE = 1 / 3
MIN_PASSAGE_CAP = 80


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
    # The citation narrowed to the excerpt (note lines, session events); "" when whole.
    location: str = ""
    # A session chunk's transcript file (its citation names the session key); "" for notes.
    path: str = ""


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
        """The stable JSON document (docs/ask.md); ``text`` is the md form's pack, exactly."""
        return {
            "schema": JSON_SCHEMA_VERSION,
            "question": self.question,
            "budget": self.budget,
            "model": self.model,
            "total_tokens": self.total_tokens,
            "text": self.text,
            "items": [asdict(item) for item in self.items],
            "stats": self.stats,
        }

    @property
    def note_ids(self) -> list[str]:
        """Ids of the notes whose text the pack shows (for ``last_accessed_at``): a
        REFERENCE line names a note without reading it, and a KEYWORDS line lists its
        words, so neither counts as a use (notes a question only brushed took the place
        of fresh ones in ``context`` and moved up a tier)."""
        shown = (Level.FULL.value, Level.SUMMARY.value)
        return [
            item.id.removeprefix("note:")
            for item in self.items
            if item.kind == "note" and item.level in shown
        ]


# A FULL-level document no longer than SHORT_SHARE of the budget is read whole: each of
# its pieces is worth WHOLE_VALUE of its best one (fragments of a short note lose what ties
# them together, and the answer often sits on the line without a question word).
SHORT_SHARE = 0.5
WHOLE_VALUE = 1.0


# The note of a pack that found nothing; the service may say why (an empty source).
NOTHING_MATCHED = "nothing matched the question"


_ABSENT_SHOWN = 8
# Absent words looked for in the stored session events, at most (each a scan of their
# text): those the note names.
_EVENTS_LOOKED_UP = _ABSENT_SHOWN


def absent_words(
    terms: Sequence[str],
    frequencies: Sequence[tuple[str, int]],
    too_common: Collection[str] = (),
    held_nowhere: Collection[str] = (),
) -> list[str]:
    """The words of the question (``terms``, in their order) that no searched note or
    session holds (``frequencies``: each term's document frequency, in any order). Words
    with a digit are absent only when in ``held_nowhere`` (looked up word for word, not by
    the index's words, which drop digits), and those of ``too_common`` never: the index's
    stopwords, which it holds for no document."""
    held = {w for w, df in frequencies if df > 0}
    return [
        w
        for w in terms
        if (w in held_nowhere if any(c.isdigit() for c in w) else w not in held)
        and w not in too_common
    ]


def absent_words_note(absent: Sequence[str], unsearched: Mapping[str, str] | None = None) -> str:
    """What a pack's reader should know when words of the question (``absent``) are in no
    note or session ask searches: the pack then holds what matched the other words only (a
    question about something the home never mentions, or a word misspelt). A word of
    ``unsearched`` (word -> the citation of a session event holding it) is in a part of a
    session ask does not search, and its note says where. Empty when ``absent`` is."""
    unsearched = unsearched or {}
    nowhere = [w for w in absent if w not in unsearched]
    parts = []
    if nowhere:
        words = ", ".join(f"'{w}'" for w in nowhere[:_ABSENT_SHOWN])
        if len(nowhere) > _ABSENT_SHOWN:
            words += f" and {plural(len(nowhere) - _ABSENT_SHOWN, 'other word')}"
        parts.append(
            f"no note or session holds {words}: the pack holds the best matches of the "
            "question's other words"
        )
    for word in absent:
        if word in unsearched:
            parts.append(
                f"'{word}' is in a part of a session ask does not search (the middle of a "
                "long event, or an event left out of its chunks): "
                f'`selene-dag show "{unsearched[word]}"`'
            )
    return "; ".join(parts)


def _unsearched(
    conn: duckdb.DuckDBPyConnection, words: Sequence[str], kinds: Sequence[str]
) -> dict[str, str]:
    """Of ``words`` no searched text holds, those a stored session event holds (the first
    few looked up), with its citation; none when sessions are not searched."""
    if not words or "sessions" not in kinds:
        return {}
    return events_holding(conn, words[:_EVENTS_LOOKED_UP])


def _is_short(cand: Candidate, budget: int, model: str) -> bool:
    limit = budget * SHORT_SHARE
    if len(cand.body) > limit * CHARS_PER_TOKEN_BOUND:
        return False
    size = cand.body_tokens if cand.body_tokens is not None else count_tokens(cand.body, model)
    return size <= limit


# A KEYWORDS item needs only this much of its body to pick its keywords.
_KEYWORD_SOURCE_CHARS = 4000


def plan_items(
    ranked: Sequence[Ranked],
    budget: int,
    model: str,
    summarizer: PassageSummarizer,
    level_config: LevelConfig = ASK_LEVELS,
    spans: Mapping[str, Sequence[tuple[int, int, float]]] | None = None,
) -> list[LevelItem]:
    """Level items for the pack: each candidate's level comes from its relevance (final /
    best final), raised to ``PASSAGE_LEVEL × v`` by its best retrieved passage; ``allocate``
    then shares the budget among the FULL and SUMMARY candidates piece by piece, best value
    first, and gives a line to KEYWORDS/REFERENCE ones while there is room. ``spans``: per
    document id, its retrieved passages ``(char start, end, relative score v)``; their
    pieces are worth at least ``PASSAGE_BOOST × v``. The items' rendered texts fit
    ``budget`` (checked by counting).
    """
    spans = spans or {}
    if not ranked:
        return []
    top = ranked[0].final if ranked[0].final > 0 else 1.0
    sep = separator_tokens(level_config.separator, model) if level_config.separator else 0
    plans: list[DocPlan] = []
    for r in ranked:
        cand = r.candidate
        relative = r.final / top
        found = spans.get(cand.doc_id, ())
        lift = PASSAGE_LEVEL * max((v for _, _, v in found), default=0.0)
        level = level_config.level_for(max(relative, lift))
        if r.coverage <= 0 and level is not Level.REFERENCE:
            level = Level.REFERENCE  # no word of the question: named, its text not shown
        head = cand.header_tokens
        if head is None:
            head = count_tokens(header_text(cand.citation, cand.title), model)
        if level in (Level.FULL, Level.SUMMARY):
            pieces, relevance, _ = summarizer.analyse(cand.body, cand.title)
            if level is Level.FULL and _is_short(cand, budget, model):
                whole = max(relevance, default=0.0) * WHOLE_VALUE
                relevance = [max(r, whole) for r in relevance]
            if found:
                offsets = summarizer.offsets(cand.body, pieces)
                relevance = boost_spans(
                    offsets, relevance, found, PASSAGE_BOOST, PASSAGE_OWN, PASSAGE_OUTSIDE
                )
        else:
            pieces, relevance = [], []
        floor: list[float] = []
        if found and pieces and PASSAGE_ACROSS > 0:
            offsets = summarizer.offsets(cand.body, pieces)
            soft = PASSAGE_ACROSS * relative**PASSAGE_ACROSS_SHARPNESS
            floor = [soft * v for v in span_values(offsets, found)]
        if found and pieces:
            ties = summarizer.cut_tie_breaks(cand.body, cand.title)
            relevance, floor = lowered(relevance, ties), lowered(floor, ties)
        line = (
            head + 1 + level_config.keywords_max_tokens
            if level is Level.KEYWORDS
            else min(head, reference_cap(cand.citation, level_config, model))
        )
        plans.append(
            DocPlan(
                level,
                document_weight(relative),
                pieces,
                relevance,
                header_cost=head + 1 + sep,
                line_cost=line + sep,
                floor=floor,
            )
        )
    allocate(plans, budget - level_config.reserved_tokens, summarizer.count, level_config)
    for r, plan in zip(ranked, plans, strict=True):
        # allocate let it past its ceiling with room to spare: render it as given.
        if plan.level is Level.SUMMARY and plan.body_tokens > level_config.summary_max_tokens:
            plan.level = Level.FULL
        if plan.chosen:
            window_best_cut(plan, summarizer, summarizer.direct(r.candidate.body))
    return _fit_items(ranked, plans, budget, model, level_config, top, summarizer)


def _fit_items(
    ranked: Sequence[Ranked],
    plans: Sequence[DocPlan],
    budget: int,
    model: str,
    level_config: LevelConfig,
    top: float,
    summarizer: PassageSummarizer,
) -> list[LevelItem]:
    # The allocation is an estimate: count the items and, while they are over, drop the
    # least valuable chosen piece (a line item goes before any piece).
    while True:
        items = []
        for r, plan in zip(ranked, plans, strict=True):
            if not plan.included:
                continue
            cand = r.candidate
            if plan.chosen:
                content = excerpt_text(plan, cand.body)
            elif plan.level is Level.KEYWORDS:
                content = cand.body[:_KEYWORD_SOURCE_CHARS]
            else:
                content = ""
            excerpt = bool(plan.chosen) and content != cand.body
            # Trailing blank lines would add to the blank line between items.
            content = close_open_fence(content.rstrip())
            location = _excerpt_location(cand, plan, summarizer) if excerpt else ""
            score = r.final / top
            if not plan.chosen and plan.level in (Level.FULL, Level.SUMMARY):
                # None of its pieces fitted, only its citation line: render it as REFERENCE.
                score = min(score, level_config.keywords_threshold) * (1.0 - 1e-6)
            elif plan.level is Level.FULL and level_config.level_for(score) is not Level.FULL:
                # Promoted by allocate: just above the FULL threshold, order kept.
                score = level_config.full_threshold + 1e-6 * (1.0 + score)
            elif plan.level is Level.REFERENCE and score >= level_config.keywords_threshold:
                # Held to its citation (it holds no word of the question): just below the
                # KEYWORDS threshold, order kept.
                score = level_config.keywords_threshold * (1.0 - 1e-6 * (2.0 - score))
            items.append(
                LevelItem(
                    id=cand.doc_id,
                    content=content,
                    score=score,
                    title=cand.title,
                    citation=location or cand.citation,
                    metadata={
                        "kind": cand.kind,
                        "final": r.final,
                        "excerpt": excerpt,
                        "citation": cand.citation,
                        "location": location,
                    },
                )
            )
        # compress_context demotes while its own estimate (each item + a separator) is
        # over: the plan must fit that estimate, or the leader would lose its level.
        limit = budget - level_config.reserved_tokens
        estimate = estimate_compressed_size(items, level_config, model)
        if estimate <= limit or not _drop_least(plans):
            return items


def _excerpt_location(cand: Candidate, plan: DocPlan, summarizer: PassageSummarizer) -> str:
    """The citation of ``cand`` narrowed to the lines or events of its chosen pieces."""
    offsets = summarizer.offsets(cand.body, plan.pieces)
    spans = [(offsets[i], offsets[i] + len(plan.pieces[i].text)) for i in plan.chosen]
    doc = Document(cand.doc_id, cand.kind, cand.citation, cand.title, cand.body, cand.events)
    return locate(doc, spans)


def _drop_least(plans: Sequence[DocPlan]) -> bool:
    lines = [p for p in plans if p.line]
    if lines:
        min(lines, key=lambda p: p.weight).line = False
        return True
    options = [(piece_value(p, i), -i, k, i) for k, p in enumerate(plans) for i in p.chosen]
    if not options:
        return False
    _, _, k, i = min(options)
    plans[k].chosen.remove(i)
    return True


def pack_ranked(
    question: str,
    ranked: Sequence[Ranked],
    budget: int,
    model: str,
    terms: Sequence[str],
    level_config: LevelConfig = ASK_LEVELS,
    weights: Mapping[str, float] | None = None,
    spans: Mapping[str, Sequence[tuple[int, int, float]]] | None = None,
) -> tuple[str, list[AskItem], dict[str, int]]:
    """Pack reranked candidates into ``budget`` tokens; returns text, items, level counts.

    ``weights`` are the terms' IDF by stem (``search.term_weights``); without them every
    term weighs the same. ``spans``: retrieved passages per document (see ``plan_items``).
    """
    essences = {r.candidate.body: r.candidate.essence for r in ranked if r.candidate.essence}
    summarize = passage_summarizer(terms, weights or {}, essences, model)
    result = compress_context(
        plan_items(ranked, budget, model, summarize, level_config, spans),
        budget,
        model=model,
        config=level_config,
        summarizer=summarize,
    )
    text = result.text
    # result.total_tokens is the exact count of result.text; ask() counts the final text.
    if result.total_tokens > budget:  # the hard promise, whatever happened above
        text = truncate_to_tokens(text, budget, model)
    # A SUMMARY-level item planned within its 150 tokens renders the same as FULL, and the
    # packer then files it as FULL; report the level that set its ceiling. (An item shown
    # above its score's level, because its keywords were no shorter, keeps the level shown.)
    levels = [
        LEVELS[max(LEVELS.index(li.level), LEVELS.index(level_config.level_for(li.item.score)))]
        if li.level is Level.FULL
        else li.level
        for li in result.items
    ]
    counts = {lv.value: 0 for lv in LEVELS} | {"excluded": result.stats.counts["excluded"]}
    for level in levels:
        counts[level.value] += 1
    items = [
        AskItem(
            id=li.item.id,
            kind=str(li.item.metadata.get("kind", "")),
            level=level.value,
            score=round(float(li.item.metadata.get("final", li.item.score)), 4),
            citation=str(li.item.metadata.get("citation") or li.item.citation or li.item.id),
            title=li.item.title or "",
            text=li.text,
            tokens=li.tokens,
            # A summary is never the whole text (one as long as the text is shown FULL).
            excerpt=bool(li.item.metadata.get("excerpt", False)) or li.level is Level.SUMMARY,
            location=str(li.item.metadata.get("location", "")),
        )
        for li, level in zip(result.items, levels, strict=True)
    ]
    return text, items, counts


def _documents(candidates: Sequence[Candidate]) -> dict[str, Document]:
    return {
        c.doc_id: Document(c.doc_id, c.kind, c.citation, c.title, c.body, c.events)
        for c in candidates
    }


def pack_passages(
    hits: Sequence[PassageHit],
    candidates: Sequence[Candidate],
    ranked: Sequence[Ranked],
    budget: int,
    model: str,
    summarizer: PassageSummarizer,
    level_config: LevelConfig = ASK_LEVELS,
) -> tuple[str, list[AskItem], dict[str, int]]:
    """The passage-first pack: ``hits`` best first within the budget (``select.
    select_passages``; a passage that no longer fits gives its most relevant pieces, a
    session chunk's one run of pieces: ``PassageSummarizer.run``), one item per document
    in the order of its best passage; then a citation line for each
    further document of ``ranked`` while there is room (its whole citation, and as much
    of its title as the reference cap leaves). ``candidates``: the documents the
    passages may come from (already de-duplicated). The text counts at most ``budget``
    tokens: the lowest-scored excerpt goes first while it is over.
    Returns text, items and level counts."""
    sep_text = level_config.separator
    sep = separator_tokens(sep_text, model) if sep_text else 0
    limit = budget - level_config.reserved_tokens
    selections = select_passages(
        _ranked_passages(hits),
        _documents(candidates),
        limit,
        summarizer.count,
        summarizer,
        sep,
        max_passage=max(MIN_PASSAGE_CAP, int(limit * PASSAGE_CAP_SHARE)),
        shorten_chunk=summarizer.run,
    )
    while True:
        blocks = [s.render() for s in selections]
        text = sep_text.join(blocks)
        over = count_tokens(text, model) - limit if selections else 0
        if over <= 0:
            break
        _trim_lowest(selections, over, summarizer)
    # Levels fill what is left: a citation line for each further candidate while it fits.
    shown = {s.doc.doc_id for s in selections}
    used = count_tokens(text, model) if text else 0
    lines: list[tuple[Ranked, str]] = []
    for r in ranked:
        cand = r.candidate
        if cand.doc_id in shown:
            continue
        # A reference names its source whole: a citation cut short ("[claude-6149") points
        # nowhere, so the line's cap grows to the citation's length.
        cap = reference_cap(cand.citation, level_config, model)
        line = truncate_to_tokens(header_text(cand.citation, cand.title), cap, model)
        cost = count_tokens(line, model) + sep
        if used + cost > limit:
            break
        lines.append((r, line))
        used += cost
    while lines:
        text = sep_text.join([*blocks, *(line for _, line in lines)])
        if count_tokens(text, model) <= limit:
            break
        lines.pop()
        text = sep_text.join(blocks)
    items = [
        AskItem(
            id=s.doc.doc_id,
            kind=s.doc.kind,
            level=Level.FULL.value,
            score=round(s.score, 4),
            citation=s.doc.citation,
            title=s.doc.title,
            text=block,
            tokens=count_tokens(block, model),
            excerpt=not s.whole,
            location="" if s.whole else s.citation(),
        )
        for s, block in zip(selections, blocks, strict=True)
    ]
    items += [
        AskItem(
            id=r.candidate.doc_id,
            kind=r.candidate.kind,
            level=Level.REFERENCE.value,
            score=round(float(r.final), 4),
            citation=r.candidate.citation,
            title=r.candidate.title,
            text=line,
            tokens=count_tokens(line, model),
        )
        for r, line in lines
    ]
    counts = {lv.value: 0 for lv in LEVELS} | {"excluded": max(0, len(ranked) - len(items))}
    for item in items:
        counts[item.level] += 1
    return text, items, counts


def _trim_lowest(selections: list[Selection], over: int, summarizer: PassageSummarizer) -> None:
    """Take ``over`` tokens off the lowest-scored excerpt (the last chosen among equals):
    its best pieces (a chunk's: one run of them) in what is left of it when that keeps
    MIN_EXCERPT_TOKENS, else remove it (and its document when it was the only one)."""
    k, j = min(
        ((k, j) for k, s in enumerate(selections) for j in range(len(s.excerpts))),
        key=lambda kj: (selections[kj[0]].excerpts[kj[1]].score, -kj[0], -kj[1]),
    )
    excerpt = selections[k].excerpts[j]
    keep = summarizer.count(excerpt.text) - over - 1
    cut_to = summarizer.run if selections[k].doc.kind == "chunk" else summarizer
    shorter = cut_to(excerpt.text, keep).strip() if keep >= MIN_EXCERPT_TOKENS else ""
    if shorter and shorter != excerpt.text:
        excerpt.text, excerpt.cut = shorter, True
        return
    del selections[k].excerpts[j]
    if not selections[k].excerpts:
        del selections[k]


def _ranked_passages(hits: Sequence[PassageHit]) -> list[RankedPassage]:
    return [RankedPassage(h.doc_id, h.char_start, h.char_end, h.tokens, h.fused) for h in hits]


def passage_evidence(
    hits: Sequence[PassageHit],
) -> tuple[dict[str, float], dict[str, list[tuple[int, int, float]]]]:
    """Per document, its best passage's fused score relative to the best passage overall
    (in (0, 1]), and its passages' ``(char start, end, relative score)``: the fused score
    over the best one, or ``PASSAGE_DECAY ** rank`` when set."""
    if not hits:
        return {}, {}
    top = hits[0].fused or 1.0
    best: dict[str, float] = {}
    spans: dict[str, list[tuple[int, int, float]]] = {}
    for rank, h in enumerate(hits):
        value = h.fused / top if PASSAGE_DECAY is None else PASSAGE_DECAY**rank
        best[h.doc_id] = max(best.get(h.doc_id, 0.0), value)
        spans.setdefault(h.doc_id, []).append((h.char_start, h.char_end, value))
    return best, spans


def fuse_documents(
    hits: Sequence[PassageHit], ranking: Sequence[str], k: float
) -> list[PassageHit]:
    """``hits`` re-ranked with their documents' rank in ``ranking`` (BM25 over whole
    documents) as a third reciprocal-rank list: each passage gains
    ``PASSAGE_DOC_FUSE / (k + rank of its document)``, so a passage's standing also
    reflects how well its whole document matches (a long conversation's answer turn often
    shares few words with the question while its document matches best)."""
    rank = {d: i for i, d in enumerate(dict.fromkeys(ranking), 1)}
    fused = [
        replace(
            h,
            fused=h.fused + (PASSAGE_DOC_FUSE / (k + rank[h.doc_id]) if h.doc_id in rank else 0.0),
        )
        for h in hits
    ]
    fused.sort(key=lambda h: (-h.fused, h.passage_id))
    return fused


def model_order(
    conn: duckdb.DuckDBPyConnection,
    question: str,
    hits: Sequence[PassageHit],
    ranker: PassageRanker,
) -> tuple[list[PassageHit], list[int]]:
    """``hits`` with their RERANK_TOP best reordered by ``ranker``: the passages it picks
    first, in its order, then the rest of those in fused order, then every other hit.
    The fused scores stay where they were, so the picked passages take the best ones and
    everything downstream (dominance, the value of a passage by rank) follows the model.
    Returns the hits and the ranker's picks (0-based indexes into the top)."""
    top = list(hits[:RERANK_TOP])
    if not top:
        return list(hits), []
    texts = [t[:RERANK_CHARS] for t in passage_texts(conn, [h.passage_id for h in top])]
    picked = [i for i in dict.fromkeys(ranker(question, texts)) if 0 <= i < len(top)]
    order = picked + [i for i in range(len(top)) if i not in picked]
    scores = [h.fused for h in top]
    reordered = [replace(top[i], fused=scores[n]) for n, i in enumerate(order)]
    return reordered + list(hits[RERANK_TOP:]), picked


# Up to a budget of 10,000 tokens ask weighs 40 candidate documents, packs at most 20 and
# ranks 50 passages per list; a larger budget (a model with a long context) widens all
# three with it, so that the pack can fill what it is given with more of what matches.
CANDIDATES_PER_TOKEN = 1 / 250
ITEMS_PER_TOKEN = 1 / 500
PASSAGES_PER_TOKEN = 1 / 200


def search_limits(
    budget: int,
    candidate_limit: int | None = None,
    max_items: int | None = None,
    passage_limit: int | None = None,
) -> tuple[int, int, int]:
    """``(candidates, items, passages)`` for ``budget``: each given value as given, else
    40 / 20 / ``PASSAGE_LIMIT`` (50), or more for a budget past 10,000 tokens."""
    return (
        candidate_limit
        if candidate_limit is not None
        else max(40, int(budget * CANDIDATES_PER_TOKEN)),
        max_items if max_items is not None else max(20, int(budget * ITEMS_PER_TOKEN)),
        passage_limit
        if passage_limit is not None
        else max(PASSAGE_LIMIT, int(budget * PASSAGES_PER_TOKEN)),
    )


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
    candidate_limit: int | None = None,
    max_items: int | None = None,
    passage_limit: int | None = None,
    expansion: str = "",
    passage_ranker: PassageRanker | None = None,
) -> AskResult:
    """Build the context pack for ``question`` within ``budget`` tokens of ``model``.

    Reads the ``search_index`` (it must exist; the caller refreshes a stale one). An empty
    question, one with no searchable word or no match gives an empty pack with
    ``stats["note"]`` saying why. Raises TypeError for a non-str question or a non-int
    budget, UsageError (a ValueError) for a budget < 1 or an unknown source, and
    SearchIndexError when the index was never built.
    ``expansion``: more search words (a model's rewrite of the question); they widen what
    is retrieved, while the excerpts are still chosen by the question's own words.
    ``passage_ranker``: a model's judgement of the best fused passages (see :func:`model_order`);
    ``stats["reranked"]`` then lists the fused ranks it put first (1-based), and when it put
    any first the budget goes to passages in its order (no concentration on one document).
    Does not write: the caller stamps ``last_accessed_at`` with ``result.note_ids``.
    """
    started = time.perf_counter()
    if not isinstance(question, str):
        raise TypeError(f"question must be a str, got {type(question).__name__}")
    question = replace_lone_surrogates(question)  # the embedder's tokenizer failed on one
    budget = check_budget(budget, "budget", minimum=1)
    candidate_limit, max_items, passage_limit = search_limits(
        budget, candidate_limit, max_items, passage_limit
    )
    model = model or default_model()
    kinds = parse_sources(sources)
    now = now or datetime.now(UTC)
    # A version (2.0.1) or an identifier (db-17) is a term as a whole: its digits alone are
    # too short to search for, its words too common.
    terms = list(dict.fromkeys([*query_terms(question), *whole_terms(question)]))
    stats: dict[str, Any] = {
        "terms": terms,
        "sources": list(kinds),
        "fts_matches": 0,
        "after_dedup": 0,
        "considered": 0,
        "passages": 0,
        "passage_docs": 0,
        "mode": "none",  # no search ran; "passages" or "documents" once one did
        "levels": {**{str(level): 0 for level in LEVELS}, "excluded": 0},
        "note": "",
        "search_ms": 0.0,
    }
    result = AskResult(question, budget, model, 0, [], "", stats)
    if not terms:
        stats["note"] = "the question has no searchable words"
        stats["elapsed_ms"] = round((time.perf_counter() - started) * 1000, 1)
        return result
    query = f"{question}\n{expansion}" if expansion.strip() else question
    # The question's term ids and the index's passage matrix are looked up once for the
    # document ranking, the passage ranking and the dominance test.
    ids = question_term_ids(conn, query)
    build = index_build(conn)
    candidates: list[Candidate] = search(
        conn, query, kinds, limit=candidate_limit, model=model, ids=ids, build=build
    )
    searchable = (
        bool(ids) or bool(literal_terms(query_terms(query), every=True)) or bool(whole_terms(query))
    )
    matrix = passage_matrix(conn, build) if passage_limit and searchable else None
    nowhere: set[str] = set()  # the question's words with a digit no passage holds
    hits = (
        hybrid_passages(
            conn,
            query,
            kinds,
            limit=passage_limit,
            k=PASSAGE_RRF_K,
            ids=ids,
            matrix=matrix,
            held_nowhere=nowhere,
        )
        if matrix is not None
        else []
    )
    own_order = hits
    if PASSAGE_DOC_FUSE and hits:
        hits = fuse_documents(hits, [c.doc_id for c in candidates], PASSAGE_RRF_K)
    if passage_ranker is not None and hits:
        hits, picked = model_order(conn, question, hits, passage_ranker)
        stats["reranked"] = [i + 1 for i in picked]
    matched = len(candidates)  # documents BM25 found, before the passages' own
    have = {c.doc_id for c in candidates}
    extra = [d for d in dict.fromkeys(h.doc_id for h in hits[:PASSAGE_DOCS]) if d not in have]
    candidates += documents(conn, extra, model)
    kinds_of = {c.doc_id: c.kind for c in candidates}
    searched = time.perf_counter()
    unique = dedup(candidates)
    frequencies, n_docs = term_frequencies(conn, terms) if unique else ([], 0)
    weights = weights_by_stem(frequencies, n_docs)
    best, spans = passage_evidence(hits)
    config = rerank_config or ASK_RERANK
    ranked = rerank(unique, terms, now, config, weights, best)[:max_items]
    stats.update(
        fts_matches=matched,
        after_dedup=len(unique),
        considered=len(ranked),
        passages=len(hits),
        passage_docs=len(extra),
    )
    # Dominance is judged on the passages' own ranking: the documents' rank lifts every
    # passage of the best document at once. A session chunk is never packed as one
    # document: its pieces chosen by question words leave out the events that answer.
    dominant = (
        dominant_document(_ranked_passages(own_order), matrix.counts) if hits and matrix else None
    )
    if dominant is not None and kinds_of.get(dominant) == "chunk":
        dominant = None
    # A model's picks are spent first, in its order: no concentrating on one document.
    passage_first = bool(hits) and (dominant is None or bool(stats.get("reranked")))
    stats["mode"] = "passages" if passage_first else "documents"
    if ranked and passage_first:
        missing = [d for d in dict.fromkeys(h.doc_id for h in hits) if d not in have]
        missing = [d for d in missing if d not in extra]
        pool = dedup([*unique, *documents(conn, missing, model)])
        essences = {c.body: c.essence for c in pool if c.essence}
        summarize = passage_summarizer(terms, weights, essences, model)
        text, items, levels = pack_passages(
            hits, pool, ranked, budget, model, summarize, level_config
        )
    elif ranked:
        text, items, levels = pack_ranked(
            question, ranked, budget, model, terms, level_config, weights, spans
        )
    if ranked:
        paths = chunk_paths(conn, [i.id for i in items if i.kind == "chunk"])
        items = [replace(i, path=paths[i.id]) if i.id in paths else i for i in items]
        result.text, result.items = text, items
        result.total_tokens = count_tokens(text, model) if text else 0
        stats["levels"] = levels
        if not items:
            stats["note"] = (
                f"the budget of {plural(budget, 'token')} cannot hold even one citation line"
            )
        else:
            missing = [w for w, df in frequencies if df == 0]
            common = bm25.stopwords_among(conn, missing) if missing else set()
            absent = absent_words(terms, frequencies, common, nowhere)
            stats["note"] = absent_words_note(absent, _unsearched(conn, absent, kinds))
    else:
        found = _unsearched(conn, terms, kinds)
        located = absent_words_note(list(found), found)
        stats["note"] = f"{NOTHING_MATCHED}; {located}" if located else NOTHING_MATCHED
    if left_out := unsearched_words(question, UNSEARCHED_LIMIT):
        # A pasted log with the question at its end: its last words were not searched.
        named = [f"'{w}'" for w in left_out]
        if len(named) > 6:
            named = [*named[:2], "…", *named[-4:]]
        said = (
            f"only the question's first {MAX_TERMS} searchable words were searched, not "
            f"{'at least ' if len(left_out) >= UNSEARCHED_LIMIT else ''}"
            f"{plural(len(left_out), 'word')} after them ({', '.join(named)})"
        )
        stats["note"] = f"{stats['note']}; {said}" if stats["note"] else said
    stats["search_ms"] = round((searched - started) * 1000, 1)
    stats["elapsed_ms"] = round((time.perf_counter() - started) * 1000, 1)
    return result
