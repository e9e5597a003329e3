"""Priority tiers packed into a token budget (seed 001): ``pack_context``, ``compress_to_fit``.

Tiers are ordered by priority, highest first (stable for equal priorities). When the total
exceeds the budget, the lowest-priority tiers give way first: ``pack_context`` truncates
the tier at the boundary (by tokens, never by characters) and drops the ones below it;
``compress_to_fit`` drops whole tiers from the lowest priority up and truncates only a
lone top tier that cannot fit whole.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from selene_dag.context.tokens import (
    count_tokens,
    count_tokens_batch,
    separator_tokens,
    truncate_to_tokens,
)
from selene_dag.errors import check_budget

PRIORITY_SYSTEM = 100
PRIORITY_RECENT = 90
PRIORITY_OUTLINE = 70
PRIORITY_COMPRESSED_HISTORY = 50
PRIORITY_LONG_TERM = 30


@dataclass(frozen=True)
class ContextTier:
    """A labelled piece of context with a priority (higher survives longer).

    ``tokens`` is its size in the target model's tokens once counted (``pack_context`` and
    ``create_context_tier`` fill it); ``color`` is a display hint only.
    """

    label: str
    content: str
    priority: int
    color: str | None = None
    tokens: int | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.label, str):
            raise TypeError(f"tier label must be a str, got {type(self.label).__name__}")
        if not isinstance(self.content, str):
            raise TypeError(f"tier {self.label!r}: content must be a str")
        if isinstance(self.priority, bool) or not isinstance(self.priority, int | float):
            raise TypeError(f"tier {self.label!r}: priority must be a number")
        if self.priority != self.priority:  # NaN sorts nowhere: the order became arbitrary
            raise ValueError(f"tier {self.label!r}: priority must not be NaN")


@dataclass(frozen=True)
class PackResult:
    """What ``pack_context`` kept.

    ``packed``: kept tiers, highest priority first, each with ``tokens`` set;
    ``total_tokens``: their total (with ``separator`` set: the exact count of ``text``);
    ``overflow``: True when even the highest-priority tier could not fit whole;
    ``dropped``: labels of the tiers removed entirely.
    """

    packed: list[ContextTier]
    total_tokens: int
    overflow: bool
    dropped: list[str]
    separator: str | None = None

    @property
    def text(self) -> str:
        """The kept contents joined by the separator (``"\\n\\n"`` when none was given;
        then only the contents, not the separators, are inside the budget)."""
        sep = "\n\n" if self.separator is None else self.separator
        return sep.join(t.content for t in self.packed if t.content)


def create_context_tier(
    label: str, content: str, priority: int, color: str | None = None, model: str | None = None
) -> ContextTier:
    """A ``ContextTier`` with its token count in ``model``'s tokens filled in."""
    return ContextTier(label, content, priority, color, count_tokens(content, model))


def _check(tiers: Sequence[ContextTier], max_tokens: int) -> list[ContextTier]:
    if isinstance(tiers, str | bytes) or not isinstance(tiers, Sequence):
        raise TypeError("tiers must be a sequence of ContextTier")
    for t in tiers:
        if not isinstance(t, ContextTier):
            raise TypeError(f"tiers must hold ContextTier objects, got {type(t).__name__}")
    check_budget(max_tokens, "max_tokens", minimum=0)
    # sorted() is stable: equal priorities keep their input order.
    return sorted(tiers, key=lambda t: -t.priority)


def _counted(tiers: list[ContextTier], model: str | None) -> list[ContextTier]:
    counts = count_tokens_batch([t.content for t in tiers], model) if tiers else []
    return [replace(t, tokens=n) for t, n in zip(tiers, counts, strict=True)]


def _fit_exact(
    kept: list[ContextTier], dropped: list[str], max_tokens: int, sep: str, model: str | None
) -> tuple[list[ContextTier], int]:
    """Trim the lowest kept tier until the joined text counts within the budget: token
    counts of pieces do not add up exactly across a join."""
    while True:
        total = count_tokens(sep.join(t.content for t in kept if t.content), model)
        if total <= max_tokens or not kept:
            return kept, total
        last = kept[-1]
        target = (last.tokens or 0) - (total - max_tokens)
        if target <= 0:
            dropped.append(last.label)
            kept = kept[:-1]
            continue
        content = truncate_to_tokens(last.content, target, model)
        kept[-1] = replace(last, content=content, tokens=count_tokens(content, model))


def pack_context(
    tiers: Sequence[ContextTier],
    max_tokens: int,
    model: str | None = None,
    separator: str | None = None,
) -> PackResult:
    """Fit ``tiers`` into ``max_tokens`` of ``model``'s tokens, trimming lowest priority first.

    Tiers are sorted by priority (highest first); if they all fit they come back
    unchanged. Otherwise higher tiers are kept whole while they fit, the first tier that
    does not fit is truncated to the tokens left (``truncate_to_tokens``), and every
    lower tier is dropped (a tier truncated to nothing is dropped too). ``overflow`` is
    True when a tier of the highest priority itself had to be cut (with several at that
    priority, any of them: the content ranked highest did not all fit).

    The budget covers the tiers' contents; with ``separator`` (e.g. ``"\\n\\n"``) it covers
    the exact joined ``text`` instead. Raises TypeError/ValueError on bad input.
    """
    ordered = _counted(_check(tiers, max_tokens), model)
    sep_cost = separator_tokens(separator, model) if separator else 0
    kept: list[ContextTier] = []
    dropped: list[str] = []
    remaining = max_tokens
    overflow = False
    top = ordered[0].priority if ordered else 0
    full = False
    for tier in ordered:
        if full:  # the boundary tier was cut: everything below it goes
            dropped.append(tier.label)
            continue
        cost = tier.tokens or 0
        gap = sep_cost if kept else 0
        if cost + gap <= remaining:
            kept.append(tier)
            remaining -= cost + gap
            continue
        if tier.priority == top:
            overflow = True
        room = remaining - gap
        content = truncate_to_tokens(tier.content, room, model) if room > 0 else ""
        if content:
            n = count_tokens(content, model)
            kept.append(replace(tier, content=content, tokens=n))
            remaining -= n + gap
        else:
            dropped.append(tier.label)
        full = True
    if separator is not None:
        kept, total = _fit_exact(kept, dropped, max_tokens, separator, model)
    else:
        total = sum(t.tokens or 0 for t in kept)
    return PackResult(kept, total, overflow, dropped, separator)


def compress_to_fit(
    tiers: Sequence[ContextTier], max_tokens: int, model: str | None = None
) -> list[ContextTier]:
    """Drop whole tiers, lowest priority first, until the rest fit ``max_tokens``.

    Returns the surviving tiers highest priority first, unchanged and with ``tokens`` set.
    Only when the single highest-priority tier alone exceeds the budget is it truncated
    (to the budget). Raises TypeError/ValueError on bad input.
    """
    ordered = _counted(_check(tiers, max_tokens), model)
    kept = list(ordered)
    total = sum(t.tokens or 0 for t in kept)
    while len(kept) > 1 and total > max_tokens:
        total -= kept.pop().tokens or 0
    if kept and total > max_tokens:
        content = truncate_to_tokens(kept[0].content, max_tokens, model)
        if not content:
            return []
        kept[0] = replace(kept[0], content=content, tokens=count_tokens(content, model))
    return kept
