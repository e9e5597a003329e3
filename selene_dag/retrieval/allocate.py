"""Share one token budget among ranked documents, passage by passage.

Each candidate brings its pieces (``passages.segment``) with a relevance to the question;
a piece is worth ``weight(document) × relevance(piece)``, where the document's weight
falls steeply with its relative final score. Pieces enter best value first while they
fit — so a clearly leading note takes most of the room, its matching lines and the code
after them first, and close runners-up get their own best lines before anyone's filler.

Seed 002's levels set each document's ceiling: FULL may use the whole budget, SUMMARY at
most ``summary_max_tokens`` of body, KEYWORDS and REFERENCE a single line.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from selene_dag.context.levels import Level, LevelConfig
from selene_dag.retrieval.passages import Piece

# A document's weight is relative_score ** SHARPNESS: at 0.9 of the best score a
# runner-up's lines are worth about half as much as the leader's.
SHARPNESS = 6.0
# A citation or keyword line's worth, per unit of document weight (a reader can follow it).
LINE_VALUE = 0.05
# Tokens charged for the joint before a piece (a newline, or the " … " gap marker).
JOINT_TOKENS = 2
# No tokenizer we know yields a token per more than 6 characters of text.
CHARS_PER_TOKEN_BOUND = 6
# A piece longer than this (about 60 tokens of prose) is worth less per piece.
LONG_PIECE_CHARS = 240
# Consecutive pieces that did not fit before the search gives up on the leftover room.
MAX_MISSES = 60


@dataclass
class DocPlan:
    """One ranked document to allocate: ``header_cost`` is header + newline + separator;
    ``line_cost`` what its KEYWORDS/REFERENCE line costs."""

    level: Level
    weight: float
    pieces: Sequence[Piece]
    relevance: Sequence[float]
    header_cost: int
    line_cost: int
    chosen: list[int] = field(default_factory=list)
    body_tokens: int = 0
    line: bool = False
    # Per piece, a value it has whatever the document's weight (a retrieved passage's
    # pieces: the budget reaches good passages of several documents); empty: none.
    floor: Sequence[float] = ()
    # A chosen piece shown as a window of its text instead (a long line's cut holding the
    # question's rarest word, which did not fit whole): (piece index, text).
    window: tuple[int, str] | None = None

    @property
    def included(self) -> bool:
        """Whether the document has anything in the pack."""
        return bool(self.chosen) or self.line


def document_weight(relative_score: float, sharpness: float = SHARPNESS) -> float:
    """``relative_score ** sharpness`` for a score in [0, 1] (clipped)."""
    return max(0.0, min(1.0, relative_score)) ** sharpness


def _length_discount(text: str) -> float:
    # About LONG_PIECE_CHARS or less: full value; longer, value falls with the length, so
    # one long matching line (an image's alt text) does not outbid several short ones.
    return min(1.0, LONG_PIECE_CHARS / max(1, len(text)))


def piece_value(plan: DocPlan, i: int) -> float:
    """What piece ``i`` of ``plan`` is worth: ``weight × relevance``, discounted by its
    length, and at least its ``floor``."""
    value = plan.weight * plan.relevance[i] * _length_discount(plan.pieces[i].text)
    return max(value, plan.floor[i]) if plan.floor else value


def allocate(
    plans: Sequence[DocPlan],
    budget: int,
    count: Callable[[str], int],
    config: LevelConfig,
) -> int:
    """Fill ``plans[i].chosen`` / ``.line`` best value first within ``budget`` tokens.

    ``count`` gives a piece's tokens (called only for pieces that might still fit).
    Returns the estimated tokens used (headers, pieces, joints and separators); the real
    text is counted by the caller.
    """
    entries: list[tuple[float, int, int]] = []  # (-value, plan, piece or -1 for a line)
    for p, plan in enumerate(plans):
        if plan.level in (Level.FULL, Level.SUMMARY):
            entries += [(-piece_value(plan, i), p, i) for i in range(len(plan.relevance))]
        else:
            entries.append((-plan.weight * LINE_VALUE, p, -1))
    entries.sort()
    if not SPILL:
        return _fill(plans, entries, budget, 0, count, config.summary_max_tokens)
    # Pieces first, within each document's ceiling; then, with room left, SUMMARY
    # documents past theirs (the caller renders them FULL): a retrieved document's next
    # lines are worth more than another citation line; then the lines, while they fit.
    pieces = [e for e in entries if e[2] >= 0]
    used = _fill(plans, pieces, budget, 0, count, config.summary_max_tokens)
    taken = [set(plan.chosen) for plan in plans]
    rest = [e for e in pieces if plans[e[1]].level is Level.SUMMARY and e[2] not in taken[e[1]]]
    used = _fill(plans, rest, budget, used, count, budget)
    # A FULL or SUMMARY document none of whose pieces fitted is still named: it competes
    # for a citation line like a REFERENCE one (the caller renders it as one).
    unplaced = [
        (-plan.weight * LINE_VALUE, p, -1)
        for p, plan in enumerate(plans)
        if plan.level in (Level.FULL, Level.SUMMARY) and not plan.chosen
    ]
    lines = sorted([e for e in entries if e[2] < 0] + unplaced)
    return _fill(plans, lines, budget, used, count, budget)


# Whether room left after the first pass goes to SUMMARY documents past their ceiling.
SPILL = True


def _fill(
    plans: Sequence[DocPlan],
    entries: Sequence[tuple[float, int, int]],
    budget: int,
    used: int,
    count: Callable[[str], int],
    summary_cap: int,
) -> int:
    misses = 0
    for _, p, i in entries:
        room = budget - used
        if room < 3 or misses >= MAX_MISSES:
            break
        plan = plans[p]
        if i < 0:
            if plan.line_cost <= room:
                plan.line = True
                used += plan.line_cost
                misses = 0
            else:
                misses += 1
            continue
        cap = budget if plan.level is Level.FULL else summary_cap
        extra = JOINT_TOKENS + (0 if plan.chosen else plan.header_cost)
        text = plan.pieces[i].text
        bound = len(text) // CHARS_PER_TOKEN_BOUND
        if bound + extra > room or plan.body_tokens + bound > cap:
            misses += 1
            continue
        size = count(text)
        if size + extra > room or plan.body_tokens + size > cap:
            misses += 1
            continue
        plan.chosen.append(i)
        plan.body_tokens += size + JOINT_TOKENS
        used += size + extra
        misses = 0
    return used
