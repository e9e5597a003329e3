"""Relevance levels with progressive demotion (seed 002).

Each scored item gets a level from its relevance score: FULL (> 0.8, exact content),
SUMMARY (0.5–0.8, ~150 tokens from a summarizer), KEYWORDS (0.3–0.5, ~30 tokens of TF-IDF
terms) or REFERENCE (< 0.3, ~10 tokens: citation and title). While the estimated total is
over the budget, items are demoted one level per round, lowest score first, FULL → SUMMARY →
KEYWORDS → REFERENCE → excluded. The rendered text is then counted exactly in the target model's
tokens and demotion continues until it fits: ``total_tokens <= budget - reserved_tokens``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from selene_dag.context.keywords import extract_keywords
from selene_dag.context.tokens import (
    count_tokens,
    count_tokens_batch,
    default_model,
    separator_tokens,
    truncate_to_tokens,
)
from selene_dag.errors import check_budget
from selene_dag.text import split_sentences

Summarizer = Callable[[str, int], str]


class Level(StrEnum):
    """Compression level of one item, from most to least faithful."""

    FULL = "full"
    SUMMARY = "summary"
    KEYWORDS = "keywords"
    REFERENCE = "reference"


LEVELS: tuple[Level, ...] = (Level.FULL, Level.SUMMARY, Level.KEYWORDS, Level.REFERENCE)


@dataclass(frozen=True)
class LevelConfig:
    """Thresholds (score > full_threshold → FULL, ≥ summary_threshold → SUMMARY,
    ≥ keywords_threshold → KEYWORDS, else REFERENCE), per-level token targets, the
    tokens reserved for the caller (system prompt, formatting) and the block separator."""

    full_threshold: float = 0.8
    summary_threshold: float = 0.5
    keywords_threshold: float = 0.3
    summary_max_tokens: int = 150
    keywords_max_tokens: int = 30
    reference_max_tokens: int = 10
    keywords_k: int = 8
    reserved_tokens: int = 0
    separator: str = "\n\n"

    def __post_init__(self) -> None:
        if not (self.full_threshold >= self.summary_threshold >= self.keywords_threshold):
            raise ValueError("thresholds must satisfy full >= summary >= keywords")
        for name in (
            "summary_max_tokens",
            "keywords_max_tokens",
            "reference_max_tokens",
            "keywords_k",
        ):
            check_budget(getattr(self, name), name, minimum=1)
        check_budget(self.reserved_tokens, "reserved_tokens", minimum=0)

    def level_for(self, score: float) -> Level:
        """The level a relevance score earns before any budget demotion."""
        if score > self.full_threshold:
            return Level.FULL
        if score >= self.summary_threshold:
            return Level.SUMMARY
        if score >= self.keywords_threshold:
            return Level.KEYWORDS
        return Level.REFERENCE


@dataclass(frozen=True)
class LevelItem:
    """One scored piece of context: a search hit, a chunk, a note.

    ``citation`` is what a reader needs to find the source (path, URL, "note 12"); it
    defaults to ``id`` in the rendered header. ``metadata`` travels untouched.
    """

    id: str
    content: str
    score: float
    title: str | None = None
    citation: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.content, str):
            raise TypeError(f"item {self.id!r}: content must be a str")
        if isinstance(self.score, bool) or not isinstance(self.score, int | float):
            raise TypeError(f"item {self.id!r}: score must be a number")
        if self.score != self.score:  # NaN
            raise ValueError(f"item {self.id!r}: score is NaN")

    @property
    def header(self) -> str:
        """``[citation] title`` (citation defaults to the id)."""
        return f"{self.citation_text} {self.title}" if self.title else self.citation_text

    @property
    def citation_text(self) -> str:
        """``[citation]`` (citation defaults to the id)."""
        return f"[{self.citation or self.id}]"


@dataclass(frozen=True)
class LeveledItem:
    """An included item: its level, rendered text, and token counts (full vs used)."""

    item: LevelItem
    level: Level
    text: str
    original_tokens: int
    tokens: int


@dataclass(frozen=True)
class LevelStats:
    """Items per level (plus ``excluded``); ``original_tokens``: every item at FULL;
    ``compressed_tokens``: the included items as rendered (separators not counted)."""

    counts: dict[str, int]
    original_tokens: int
    compressed_tokens: int

    @property
    def tokens_saved(self) -> int:
        """``original_tokens - compressed_tokens`` (all items at FULL vs the pack)."""
        return self.original_tokens - self.compressed_tokens


@dataclass(frozen=True)
class LevelsResult:
    """The pack: included items by descending score, excluded items, ``text`` (items
    joined by the separator) and its exact ``total_tokens`` (≤ ``budget``)."""

    items: list[LeveledItem]
    excluded: list[LevelItem]
    text: str
    total_tokens: int
    budget: int
    stats: LevelStats

    def level_of(self, item_id: str) -> Level | None:
        """The level an item got, None when it was excluded or unknown."""
        for li in self.items:
            if li.item.id == item_id:
                return li.level
        return None


def extractive_summary(text: str, max_tokens: int, model: str | None = None) -> str:
    """Default summarizer: the leading sentences of ``text`` that fit ``max_tokens``
    (whitespace collapsed), the first sentence truncated when even it does not fit.
    Raises TypeError for a text that is not a str or a budget that is not an int."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    check_budget(max_tokens, "max_tokens", minimum=0)
    flat = " ".join(text.split())
    if count_tokens(flat, model) <= max_tokens:
        return flat
    out = ""
    for sentence in split_sentences(flat, boundary="any"):
        candidate = f"{out} {sentence}" if out else sentence
        if count_tokens(candidate, model) > max_tokens:
            break
        out = candidate
    return out or truncate_to_tokens(flat, max_tokens, model)


def _check_items(items: Sequence[LevelItem]) -> list[LevelItem]:
    if isinstance(items, str | bytes) or not isinstance(items, Sequence):
        raise TypeError("items must be a sequence of LevelItem")
    for it in items:
        if not isinstance(it, LevelItem):
            raise TypeError(f"items must hold LevelItem objects, got {type(it).__name__}")
    # Highest score first; ties keep input order (sorted is stable).
    return sorted(items, key=lambda it: -it.score)


def _render(
    item: LevelItem,
    level: Level,
    config: LevelConfig,
    summarizer: Summarizer,
    model: str | None,
) -> str:
    header = item.header
    if level is Level.FULL:
        return f"{header}\n{item.content}" if item.content else header
    if level is Level.SUMMARY:
        summary = summarizer(item.content, config.summary_max_tokens)
        if not isinstance(summary, str):
            raise TypeError("summarizer must return a str")
        summary = truncate_to_tokens(summary, config.summary_max_tokens, model)
        return f"{header}\n{summary}" if summary else header
    if level is Level.KEYWORDS:
        words = extract_keywords(item.content, k=config.keywords_k) if item.content else []
        line = _keywords_line(words, config.keywords_max_tokens, model)
        return f"{header}\n{line}" if line else header
    cap = reference_cap(item.citation or str(item.id), config, model)
    return truncate_to_tokens(header, cap, model) or "[ref]"


def _keywords_line(words: Sequence[str], max_tokens: int, model: str | None) -> str:
    """``Keywords: a, b, c`` within ``max_tokens``: the best words that fit whole (a word
    cut short reads as another word: "ünïc"); only a first word too long alone is cut."""
    line = ""
    for n in range(len(words), 0, -1):
        line = "Keywords: " + ", ".join(words[:n])
        if count_tokens(line, model) <= max_tokens:
            return line
    return truncate_to_tokens(line, max_tokens, model)


def reference_cap(citation: str, config: LevelConfig, model: str | None) -> int:
    """Tokens a REFERENCE line citing ``citation`` may take: ``reference_max_tokens``, or
    its whole ``[citation]`` when that is longer (a source link cut short points nowhere)."""
    return max(config.reference_max_tokens, count_tokens(f"[{citation}]", model))


# Counts of the texts estimates were made of, by (model, text): a caller that estimates,
# drops one piece and estimates again (ask's planner) recounts only what changed. Bounded
# by the characters it holds.
_ESTIMATED: dict[tuple[str, str], int] = {}
_ESTIMATED_CHARS = [0]
_ESTIMATED_MAX_CHARS = 8_000_000


def _counts(texts: list[str], model: str | None) -> list[int]:
    name = model or default_model()
    missing = [t for t in dict.fromkeys(texts) if (name, t) not in _ESTIMATED]
    if missing:
        if _ESTIMATED_CHARS[0] > _ESTIMATED_MAX_CHARS:
            _ESTIMATED.clear()
            _ESTIMATED_CHARS[0] = 0
        for text, n in zip(missing, count_tokens_batch(missing, name), strict=True):
            _ESTIMATED[(name, text)] = n
            _ESTIMATED_CHARS[0] += len(text)
    # Another thread (the server's) may have emptied the cache meanwhile: count again then.
    return [_ESTIMATED.get((name, t)) or count_tokens(t, name) for t in texts]


def _estimates(
    items: list[LevelItem], config: LevelConfig, model: str | None
) -> tuple[list[int], list[list[int]]]:
    """Full token count per item and an estimated cost per level, without any model call
    (a lower level is never estimated above a higher one)."""
    fulls = _counts([f"{it.header}\n{it.content}" for it in items], model)
    headers = _counts([it.header for it in items], model)
    cites = _counts([it.citation_text for it in items], model)
    sep = separator_tokens(config.separator, model) if config.separator else 0
    costs = []
    for full, head, cite in zip(fulls, headers, cites, strict=True):
        ref = min(head, max(config.reference_max_tokens, cite))
        kw = min(full, head + 1 + config.keywords_max_tokens)
        summ = min(full, head + 1 + config.summary_max_tokens)
        costs.append([full + sep, summ + sep, kw + sep, ref + sep])
    return fulls, costs


def estimate_compressed_size(
    items: Sequence[LevelItem], config: LevelConfig | None = None, model: str | None = None
) -> int:
    """Estimated tokens of all items at the level their score earns (no demotion, no
    summarizer or model call): full text for FULL, the targets for the other levels."""
    config = config or LevelConfig()
    ordered = _check_items(items)
    if not ordered:
        return 0
    _, costs = _estimates(ordered, config, model)
    return sum(
        c[LEVELS.index(config.level_for(it.score))] for it, c in zip(ordered, costs, strict=True)
    )


def _give_back(
    ordered: list[LevelItem],
    level: list[int],
    skip: list[list[bool]],
    config: LevelConfig,
    model: str | None,
    limit: int,
    text_of: Callable[[int, int], str],
    packed: tuple[str, int, list[int], list[str]],
) -> tuple[str, int, list[int], list[str]]:
    """Promote items again, best score first, while the pack fits: demotion goes round by
    round and can free more than needed. Never above an item's earned level nor above a
    better-scored item's level; the pack is counted exactly and promotions are undone,
    last first, if it were over."""
    excluded = len(LEVELS)
    sep = config.separator

    def cost(i: int, lv: int) -> int:
        return 0 if lv >= excluded else count_tokens(text_of(i, lv) + sep, model)

    def exact() -> int:
        return count_tokens(
            sep.join(text_of(k, lv) for k, lv in enumerate(level) if lv < excluded), model
        )

    # Each item is costed with a trailing separator the last one does not have.
    margin = count_tokens(sep, model) + 2
    text, total, kept, texts = packed
    running = total
    history: list[tuple[int, int]] = []
    for i, it in enumerate(ordered):
        ceiling = max([LEVELS.index(config.level_for(it.score)), *level[:i]])
        while level[i] > ceiling:
            up = level[i] - 1
            while up > ceiling and up < excluded and skip[i][up]:
                up -= 1
            estimate = running + cost(i, up) - cost(i, level[i])
            if estimate > limit + margin:
                break
            before = level[i]
            level[i] = up
            if estimate > limit:  # near the line: per-item counts are not exact, count
                estimate = exact()
                if estimate > limit:
                    level[i] = before
                    break
            history.append((i, before))
            running = estimate
    if not history:
        return packed
    while True:
        kept = [i for i in range(len(ordered)) if level[i] < excluded]
        texts = [text_of(i, level[i]) for i in kept]
        text = sep.join(texts)
        total = count_tokens(text, model)
        if total <= limit or not history:
            return text, total, kept, texts
        i, before = history.pop()
        level[i] = before


def compress_context(
    items: Sequence[LevelItem],
    budget: int,
    model: str | None = None,
    config: LevelConfig | None = None,
    summarizer: Summarizer | None = None,
) -> LevelsResult:
    """Pack scored items into ``budget - config.reserved_tokens`` tokens of ``model``.

    Levels come from scores (``LevelConfig``); while over budget, items are demoted one
    level at a time from the lowest score upward, round after round (REFERENCE → excluded). SUMMARY text comes from
    ``summarizer(text, max_tokens)`` (default :func:`extractive_summary`), KEYWORDS from
    :func:`extract_keywords`. A level whose text would not be smaller than the level
    above is not used (no needless compression). Room freed beyond the need is given back:
    items are promoted again, best score first, while the pack fits (never above their
    earned level, never above a better-scored item). Raises TypeError/ValueError on bad
    input.
    """
    check_budget(budget, "budget", minimum=0)
    config = LevelConfig() if config is None else config
    if not isinstance(config, LevelConfig):
        raise TypeError(f"config must be a LevelConfig, got {type(config).__name__}")
    if summarizer is not None and not callable(summarizer):
        raise TypeError("summarizer must be a callable (text, max_tokens) -> str")

    def _default_summarizer(text: str, max_tokens: int) -> str:
        return extractive_summary(text, max_tokens, model)

    summarize = summarizer or _default_summarizer
    ordered = _check_items(items)
    limit = max(0, budget - config.reserved_tokens)
    fulls, costs = _estimates(ordered, config, model) if ordered else ([], [])
    # level index per item; len(LEVELS) means excluded
    level = [LEVELS.index(config.level_for(it.score)) for it in ordered]
    excluded = len(LEVELS)
    rendered: dict[tuple[int, int], str] = {}

    def text_of(i: int, lv: int) -> str:
        key = (i, lv)
        if key not in rendered:
            rendered[key] = _render(ordered[i], LEVELS[lv], config, summarize, model)
        return rendered[key]

    # skip[i][lv]: level lv of item i turned out no smaller than the level above it.
    skip = [[False] * excluded for _ in ordered]

    def demote_until(total: int) -> int:
        # Round after round, each item one level down, lowest score first.
        while total > limit and any(lv < excluded for lv in level):
            for i in range(len(ordered) - 1, -1, -1):
                if level[i] >= excluded:
                    continue
                before = costs[i][level[i]]
                level[i] += 1
                while level[i] < excluded and skip[i][level[i]]:
                    level[i] += 1
                total -= before - (costs[i][level[i]] if level[i] < excluded else 0)
                if total <= limit:
                    break
        return total

    total_est = sum(costs[i][lv] for i, lv in enumerate(level))
    demote_until(total_est)
    while True:
        # Real texts: no level may be larger than the one above it.
        for i in range(len(ordered)):
            while 0 < level[i] < excluded and count_tokens(
                text_of(i, level[i]), model
            ) >= count_tokens(text_of(i, level[i] - 1), model):
                skip[i][level[i]] = True
                level[i] -= 1
        kept = [i for i in range(len(ordered)) if level[i] < excluded]
        texts = [text_of(i, level[i]) for i in kept]
        text = config.separator.join(texts)
        total = count_tokens(text, model)
        if total <= limit:
            break
        # Re-cost with the real counts and keep demoting.
        for i, t in zip(kept, texts, strict=True):
            costs[i][level[i]] = count_tokens(t + config.separator, model)
        demote_until(total)

    text, total, kept, texts = _give_back(
        ordered, level, skip, config, model, limit, text_of, (text, total, kept, texts)
    )
    per_item = count_tokens_batch(texts, model) if texts else []
    leveled = [
        LeveledItem(ordered[i], LEVELS[level[i]], t, fulls[i], n)
        for i, t, n in zip(kept, texts, per_item, strict=True)
    ]
    counts = {lv.value: 0 for lv in LEVELS} | {"excluded": 0}
    for li in leveled:
        counts[li.level.value] += 1
    counts["excluded"] = len(ordered) - len(kept)
    stats = LevelStats(counts, sum(fulls), sum(per_item))
    dropped = [ordered[i] for i in range(len(ordered)) if level[i] >= excluded]
    return LevelsResult(leveled, dropped, text, total, budget, stats)
