"""Tiered note context (seed 000): ``ContextBuilder`` and ``pack_notes``.

Tier formats (exactly seed 000's):

* ``full``: ``--- title ---\\ncontent``
* ``high``: ``--- title ---\\n[Essence] essence\\ncontent`` (``full`` without an essence)
* ``summary``: ``--- title [theme] ---\\nessence``; without an essence
  ``--- title ---\\nConcepts: a, b, ...`` (top 5) or ``--- title ---\\ncontent[:150]...``
* ``skeleton``: ``- title [theme|unthemed]``
* thread: ``=== Thread: name (N notes) ===`` then the digest, else the summary and
  ``Motivation: why``.

``pack_with_threads`` puts thread blocks before the notes, within a share of the budget.

Blocks are joined by ``"\\n\\n"`` and the budget counts the joined text, separators
included, in the target model's own tokens.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from selene_dag.context.tokens import (
    count_tokens,
    count_tokens_batch,
    separator_tokens,
    tokenizer_for,
)
from selene_dag.errors import check_budget
from selene_dag.text import close_open_fence

TIERS: tuple[str, ...] = ("full", "high", "summary", "skeleton")
TIER_RANK = {tier: i for i, tier in enumerate(TIERS)}  # 0 = highest fidelity
SEPARATOR = "\n\n"
FALLBACK_CONTENT_LENGTH = 150
MAX_FALLBACK_CONCEPTS = 5


def _check_note(note: object) -> Mapping[str, Any]:
    if not isinstance(note, Mapping):
        raise TypeError(f"a note must be a mapping, got {type(note).__name__}")
    for key in ("title", "content"):
        if not isinstance(note.get(key), str):
            raise TypeError(f"note {note.get('id')!r}: {key!r} must be a str")
    return note


def parse_concepts(value: object) -> list[str]:
    """Concepts as a list of str from a list, a JSON-encoded list, or None.

    Invalid JSON or a JSON value that is not a list gives ``[]`` (the seed's fallback
    chain then uses the content); non-str items are converted with ``str``.
    """
    if value is None:
        return []
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return []
    if isinstance(value, list | tuple):
        return [str(v) for v in value if v is not None and str(v).strip()]
    return []


def note_tier(note: Mapping[str, Any]) -> str:
    """The note's stored ``fidelity_tier``, ``full`` when absent or unknown."""
    tier = note.get("fidelity_tier")
    return tier if tier in TIER_RANK else "full"


def _fallback_preview(note: Mapping[str, Any]) -> str:
    concepts = parse_concepts(note.get("concepts"))
    if concepts:
        return f"Concepts: {', '.join(concepts[:MAX_FALLBACK_CONCEPTS])}"
    content = note["content"]
    suffix = "..." if len(content) > FALLBACK_CONTENT_LENGTH else ""
    return content[:FALLBACK_CONTENT_LENGTH] + suffix


# A skeleton line shows at most this much of the title: a pack that cannot hold every
# skeleton line keeps the leading ones that fit, and one long title (a clipped web page's)
# took the room of all of them.
SKELETON_TITLE_CHARS = 120


def render_note(note: Mapping[str, Any], tier: str) -> str:
    """The block of ``note`` at ``tier`` in seed 000's format (unknown tier: ``full``)."""
    _check_note(note)
    title, content = note["title"], note["content"]
    essence = note.get("essence") or None
    content = close_open_fence(content)
    if tier == "high" and essence:
        return f"--- {title} ---\n[Essence] {essence}\n{content}"
    if tier == "summary":
        if essence:
            theme = note.get("primary_theme")
            theme_part = f" [{theme}]" if theme else ""
            return f"--- {title}{theme_part} ---\n{essence}"
        return f"--- {title} ---\n{_fallback_preview(note)}"
    if tier == "skeleton":
        if len(title) > SKELETON_TITLE_CHARS:
            title = title[: SKELETON_TITLE_CHARS - 1].rstrip() + "…"
        return f"- {title} [{note.get('primary_theme') or 'unthemed'}]"
    return f"--- {title} ---\n{content}"


def render_thread(thread: Mapping[str, Any]) -> str:
    """A thread block: header, then the digest, else the summary and its motivation."""
    if not isinstance(thread, Mapping):
        raise TypeError(f"a thread must be a mapping, got {type(thread).__name__}")
    if not isinstance(thread.get("name"), str):
        raise TypeError(f"thread {thread.get('id')!r}: 'name' must be a str")
    lines = [f"=== Thread: {thread['name']} ({thread.get('note_count') or 0} notes) ==="]
    if thread.get("thread_digest"):
        lines.append(str(thread["thread_digest"]))
    elif thread.get("summary"):
        lines.append(str(thread["summary"]))
        if thread.get("why"):
            lines.append(f"Motivation: {thread['why']}")
    return "\n".join(lines)


class ContextBuilder:
    """Assemble note and thread blocks within ``budget_tokens`` of ``model``'s tokens.

    Every ``add_*`` renders one block and appends it only if the whole text, separators
    included, still counts within the budget; it returns whether the block was added
    (a block that does not fit is skipped, later smaller ones may still fit).
    """

    # A block whose own count exceeds what is left by more than this cannot fit: the
    # join changes a count by a token or two at the boundary, never by this much.
    _QUICK_REJECT_SLACK = 8

    def __init__(self, budget_tokens: int, model: str | None = None) -> None:
        self.budget_tokens = check_budget(budget_tokens, "budget_tokens", minimum=0)
        tokenizer_for(model)  # validate the model name now, not on the first add
        self.model = model
        self._blocks: list[str] = []
        self._text = ""
        self._used = 0

    @property
    def used_tokens(self) -> int:
        """Tokens of the text built so far."""
        return self._used

    @property
    def remaining_tokens(self) -> int:
        """Budget left: ``budget_tokens`` minus the tokens of the text built so far."""
        return self.budget_tokens - self._used

    @property
    def blocks(self) -> list[str]:
        """The blocks added so far, in order."""
        return list(self._blocks)

    def add_note(self, note: Mapping[str, Any], tier: str | None = None) -> bool:
        """Add ``note`` at ``tier`` (default: its ``fidelity_tier``, else ``full``)."""
        _check_note(note)
        if tier is not None and tier not in TIER_RANK:
            raise ValueError(f"tier must be one of {', '.join(TIERS)}, got {tier!r}")
        return self._append(render_note(note, tier or note_tier(note)))

    def add_full_text(self, note: Mapping[str, Any]) -> bool:
        """Add ``note`` at ``full`` whatever its stored tier."""
        return self._append(render_note(_check_note(note), "full"))

    def add_thread(self, thread: Mapping[str, Any]) -> bool:
        """Add a thread block (digest, else summary + motivation)."""
        return self._append(render_thread(thread))

    def add_text(self, block: str) -> bool:
        """Add a pre-rendered block of text."""
        if not isinstance(block, str):
            raise TypeError(f"block must be a str, got {type(block).__name__}")
        return self._append(block)

    def _append(self, block: str) -> bool:
        if not block:
            return False
        remaining = self.budget_tokens - self._used
        if count_tokens(block, self.model) > remaining + self._QUICK_REJECT_SLACK:
            return False
        candidate = f"{self._text}{SEPARATOR}{block}" if self._blocks else block
        used = count_tokens(candidate, self.model)
        if used > self.budget_tokens:
            return False
        self._blocks.append(block)
        self._text = candidate
        self._used = used
        return True

    def build(self) -> str:
        """The blocks joined by ``"\\n\\n"`` ("" when empty); counts ≤ the budget."""
        return self._text


# --------------------------------------------------------------------------- pack_notes


@dataclass(frozen=True)
class NotesPack:
    """Result of ``pack_notes``.

    ``text``: the pack; ``total_tokens``: its exact count (≤ ``budget``); ``tiers``: note id
    → tier used, or None when the note was left out; ``counts``: notes per tier plus
    ``excluded``; ``order``: note ids in output order.
    """

    text: str
    total_tokens: int
    tiers: dict[Any, str | None]
    counts: dict[str, int]
    budget: int
    model: str | None = None
    order: list[Any] = field(default_factory=list)


def _timestamp(value: object) -> float:
    """Seconds since the epoch of a datetime, an ISO 8601 string or a number (seconds as
    Unix tools give it, or milliseconds as JavaScript's ``Date.now()`` does: a number past
    1e11, which as seconds would be the year 5138); -inf for anything else (undated)."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        try:
            seconds = float(value)
        except OverflowError:
            return -math.inf
        if not math.isfinite(seconds) or abs(seconds) > 1e15:
            return -math.inf
        return seconds / 1000 if abs(seconds) > 1e11 else seconds
    if isinstance(value, datetime):
        dt = value
    elif isinstance(value, str) and value:
        try:
            dt = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return -math.inf
    else:
        return -math.inf
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt.timestamp()


def default_priority(note: Mapping[str, Any]) -> tuple[float, int]:
    """Default note priority (larger = more important): newer ``updated_at`` /
    ``created_at`` first (datetimes, ISO 8601 strings or epoch seconds), then a higher
    stored tier."""
    stamp = max(_timestamp(note.get("updated_at")), _timestamp(note.get("created_at")))
    return (stamp, -TIER_RANK[note_tier(note)])


@dataclass(frozen=True)
class PreparedNotes:
    """Notes in priority order with every candidate representation rendered and counted
    once: ``chains[i]`` lists ``(tier, text, cost)`` from the stored tier down, each
    strictly cheaper than the one before. Reuse it to pack the same notes at several
    budgets without counting again."""

    notes: list[Mapping[str, Any]]
    positions: list[int]
    chains: list[list[tuple[str, str, int]]]
    model: str | None


def prepare_notes(
    notes: Sequence[Mapping[str, Any]],
    model: str | None = None,
    priority: Callable[[Mapping[str, Any]], Any] | None = None,
    count_batch: Callable[[Sequence[str]], Sequence[int]] | None = None,
) -> PreparedNotes:
    """Order ``notes`` by priority and count every representation (``count_tokens_batch``
    in ``model``'s tokens, or ``count_batch`` when given: a counter that must return
    exactly those counts, e.g. read from a store of counts made before).

    ``priority`` is a key (larger = more important; default :func:`default_priority`);
    ties keep input order. Raises TypeError on bad input, ValueError when two notes share an
    ``id`` (the pack's tiers are by id: one note's was lost).
    """
    if isinstance(notes, str | bytes) or not isinstance(notes, Sequence):
        raise TypeError("notes must be a sequence of note mappings")
    seen: set[Any] = set()
    for position, note in enumerate(notes):
        _check_note(note)
        key = note.get("id", position)  # a note without one: its position
        try:
            repeated = key in seen
            seen.add(key)
        except TypeError:
            raise TypeError(f"a note's id must be hashable, got {type(key).__name__}") from None
        if repeated:
            raise ValueError(
                f"two notes have the id {key!r} (a note without an id is keyed by its "
                "position): ids must be unique"
            )
    if priority is not None and not callable(priority):
        raise TypeError("priority must be a callable note -> sort key")
    tokenizer_for(model)
    key = priority or default_priority
    # sorted(reverse=True) is stable too: ties keep input order.
    positions = sorted(range(len(notes)), key=lambda i: key(notes[i]), reverse=True)
    ordered = [notes[i] for i in positions]
    reps: list[list[tuple[str, str]]] = []
    for note in ordered:
        start = TIER_RANK[note_tier(note)]
        reps.append([(tier, render_note(note, tier)) for tier in TIERS[start:]])
    flat = sorted({text for chain in reps for _, text in chain})
    counts = count_batch(flat) if count_batch else count_tokens_batch(flat, model)
    counted = dict(zip(flat, counts, strict=True)) if flat else {}
    # Each block is budgeted with one separator: the join adds one fewer, a small margin.
    sep_cost = separator_tokens(SEPARATOR, model)
    chains: list[list[tuple[str, str, int]]] = []
    for chain in reps:
        kept: list[tuple[str, str, int]] = []
        for tier, text in chain:
            cost = counted[text] + sep_cost
            if not kept or cost < kept[-1][2]:  # a demotion that saves nothing is skipped
                kept.append((tier, text, cost))
        chains.append(kept)
    return PreparedNotes(ordered, positions, chains, model)


def pack_notes(
    notes: Sequence[Mapping[str, Any]] | PreparedNotes,
    budget: int,
    model: str | None = None,
    priority: Callable[[Mapping[str, Any]], Any] | None = None,
) -> NotesPack:
    """Represent as many notes as possible at the highest affordable fidelity.

    Each note starts at its stored tier (``full`` by default). Notes are ordered by
    ``priority`` (a key, larger = more important; default :func:`default_priority`: newer
    first, then higher stored tier; ties keep input order) and the pack lists them in that
    order. While the pack is over budget, notes are demoted one tier at a time, full →
    high → summary → skeleton (skipping a tier that is not smaller: such a step waits for
    the round that takes the other notes that low), lowest priority first, round after
    round; then freed room is given back to the highest-priority
    demoted notes. Every note appears at least as a skeleton line whenever all skeleton
    lines fit; otherwise only the highest-priority skeletons that fit are kept. When every
    note fits at its stored tier and room is left, notes are raised above it, highest
    priority first, each to its content whole if that fits the room left, else to its
    essence (a tier keeps notes small while the budget is needed for others; an archived
    note was a title line in a budget left half empty). Every representation is counted
    once (``prepare_notes``; pass a ``PreparedNotes`` to reuse the counts; a raise counts
    its new block); the final text is counted exactly and is ≤ ``budget``.
    """
    check_budget(budget, "budget", minimum=0)
    prepared = notes if isinstance(notes, PreparedNotes) else prepare_notes(notes, model, priority)
    chains, model = prepared.chains, prepared.model
    # Every block carries a separator; the join has one fewer.
    level, included = _choose_levels(chains, budget + separator_tokens(SEPARATOR, model))
    text, total = _render(chains, level, included, model)
    while total > budget:  # rare: the join tokenized longer than the sum of its parts
        level, included = _shrink(chains, level, included, total - budget)
        text, total = _render(chains, level, included, model)
    raised: dict[int, tuple[str, str]] = {}
    if included < len(chains) and _may_all_fit(chains, budget, model):
        # Each block was budgeted with a separator of its own, and joined blocks can count
        # fewer (a line break merges with what follows): notes were left out of a budget
        # that holds them all.
        every = _every_note(chains, budget, model) or _every_skeleton(prepared, budget)
        if every is not None:
            level, included, text, total, raised = every
    elif included == len(chains) and not any(level) and total < budget:
        raised, text, total = _raise_into_room(prepared, budget, text, total)

    tiers: dict[Any, str | None] = {}
    counts = {tier: 0 for tier in TIERS} | {"excluded": 0}
    ids: list[Any] = []
    for i, note in enumerate(prepared.notes):
        note_id = note.get("id", prepared.positions[i])
        if i < included:
            tier = raised[i][0] if i in raised else chains[i][level[i]][0]
            tiers[note_id] = tier
            counts[tier] += 1
            ids.append(note_id)
        else:
            tiers[note_id] = None
            counts["excluded"] += 1
    return NotesPack(text, total, tiers, counts, budget, model, ids)


# A block longer than this many characters per token of room is not counted to see if it
# fits (cl100k packs a run of up to 128 spaces into one token): a 5 MB note is not
# tokenized for a pack with 200 tokens left.
_CHARS_PER_TOKEN_CEILING = 256
# What a note is raised to, richest first: its content whole, else its essence. (``high``
# adds the essence to the content: more than the note itself, for notes in use.)
_RAISED_TO = ("full", "summary")


def _raise_into_room(
    prepared: PreparedNotes, budget: int, text: str, total: int
) -> tuple[dict[int, tuple[str, str]], str, int]:
    """Every note at its stored tier left room: raise notes above it, highest priority
    first, each to the richest of ``_RAISED_TO`` above its tier that fits the room left
    (an archived note is a title line only while the budget is needed for others).
    Decided on each block's own count with its separator, as the tiers are; the joined
    text is then counted exactly and the last raises undone while it is over. Returns the
    raised notes (index → tier, block), the text and its count."""
    chains, model = prepared.chains, prepared.model
    blocks = [chain[0][1] for chain in chains]
    tiers = [chain[0][0] for chain in chains]
    costs = [chain[0][2] for chain in chains]
    sep_cost = separator_tokens(SEPARATOR, model)
    room = budget - max(sum(costs) - sep_cost, total)
    done: list[tuple[int, str, str, int]] = []  # (note, tier and block before, cost before)
    for i, note in enumerate(prepared.notes):
        if room <= 0:
            break
        if TIER_RANK[tiers[i]] <= TIER_RANK["high"]:
            continue  # its content is shown whole already (high: with its essence)
        for tier in _RAISED_TO:
            if TIER_RANK[tier] >= TIER_RANK[tiers[i]]:
                continue  # not above the note's tier
            block = render_note(note, tier)
            if block == blocks[i] or len(block) > (room + costs[i]) * _CHARS_PER_TOKEN_CEILING:
                continue
            cost = count_tokens(block, model) + sep_cost
            if cost - costs[i] > room:  # (a richer block may count no more: taken too)
                continue
            done.append((i, tiers[i], blocks[i], costs[i]))
            room -= cost - costs[i]
            blocks[i], tiers[i], costs[i] = block, tier, cost
            break
    if not done:
        return {}, text, total
    while True:
        text = SEPARATOR.join(blocks)
        total = count_tokens(text, model)
        if total <= budget or not done:
            break
        i, tiers[i], blocks[i], costs[i] = done.pop()  # rare: the join counted longer
    base = [chain[0][1] for chain in chains]
    raised = {i: (tiers[i], blocks[i]) for i in range(len(chains)) if blocks[i] != base[i]}
    return raised, text, total


# Of a context's budget, the share the active threads' digests may take before the notes.
THREAD_SHARE = 0.25


@dataclass(frozen=True)
class ThreadedPack:
    """Result of ``pack_with_threads``: ``text`` (the threads' blocks, then the notes),
    ``total_tokens`` (its exact count, ≤ the budget), ``threads`` (the ids of the threads
    shown, in order) and ``notes`` (the notes' pack, as ``pack_notes`` returns it)."""

    text: str
    total_tokens: int
    threads: list[Any]
    notes: NotesPack


def pack_with_threads(
    prepared: PreparedNotes,
    threads: Sequence[Mapping[str, Any]],
    budget: int,
    thread_share: float = THREAD_SHARE,
) -> ThreadedPack:
    """Thread blocks (``render_thread``, in the order given) while they fit in
    ``thread_share`` of ``budget``, then the notes packed by ``pack_notes`` into the rest.

    A thread's digest stands for many notes in a few sentences, so it goes first; the share
    keeps the notes most of the budget. Threads that do not fit their share are left out
    (and the next ones, so the order given stays a priority). The joined text is counted
    exactly in the prepared notes' model and is ≤ ``budget``. Raises TypeError when
    ``prepared`` is not a ``PreparedNotes``, ValueError for a ``thread_share`` outside
    [0, 1]."""
    check_budget(budget, "budget", minimum=0)
    if isinstance(thread_share, bool) or not isinstance(thread_share, int | float):
        raise TypeError(f"thread_share must be a number, got {type(thread_share).__name__}")
    if not 0 <= thread_share <= 1:  # NaN fails this too
        raise ValueError(
            f"thread_share must be from 0 to 1 (a share of the budget), got {thread_share}"
        )
    if not isinstance(prepared, PreparedNotes):
        raise TypeError(
            "pack_with_threads takes the notes prepared once for a model: "
            f"prepare_notes(notes, model), got {type(prepared).__name__}"
        )
    model = prepared.model
    blocks = [render_thread(thread) for thread in threads]
    costs = count_tokens_batch([block + SEPARATOR for block in blocks], model) if blocks else []
    cap = int(budget * thread_share)
    shown = 0
    used = 0
    while shown < len(blocks) and used + costs[shown] <= cap:
        used += costs[shown]
        shown += 1
    room = budget - used
    while True:
        head = SEPARATOR.join(blocks[:shown])
        notes = pack_notes(prepared, max(room, 0))
        text = SEPARATOR.join(part for part in (head, notes.text) if part)
        total = count_tokens(text, model) if text else 0
        if total <= budget:
            break
        # Rare: the join tokenized longer than its parts. Give the notes less room; once
        # they have none, drop the last thread.
        if notes.text:
            room -= total - budget
        else:
            shown -= 1
    ids = [thread.get("id", i) for i, thread in enumerate(threads[:shown])]
    return ThreadedPack(text, total, ids, notes)


def _choose_levels(chains: list[list[tuple[str, str, int]]], budget: int) -> tuple[list[int], int]:
    """Per-note index into its chain, and how many leading notes are included."""
    n = len(chains)
    bottom = [len(c) - 1 for c in chains]
    floor_total = sum(c[-1][2] for c in chains)
    if floor_total > budget:
        # Not even every skeleton fits: keep the highest-priority skeletons that do.
        total = 0
        for i, chain in enumerate(chains):
            if total + chain[-1][2] > budget:
                return bottom, i
            total += chain[-1][2]
        return bottom, n
    level = [0] * n
    total = sum(c[0][2] for c in chains)
    start = [TIER_RANK[c[0][0]] for c in chains]
    # Round after round, demote one step from the lowest priority up. A step that skips
    # tiers (a short note's high and summary save nothing: full to skeleton) waits for
    # the round that takes the other notes as low: a fresh short note was a title line
    # while older notes kept their summaries.
    rounds = 0
    while total > budget:
        rounds += 1
        for i in range(n - 1, -1, -1):
            if level[i] < bottom[i]:
                chain = chains[i]
                if TIER_RANK[chain[level[i] + 1][0]] > start[i] + rounds:
                    continue
                total -= chain[level[i]][2] - chain[level[i] + 1][2]
                level[i] += 1
                if total <= budget:
                    break
    # Give freed room back, highest priority first, one step at a time.
    improved = True
    while improved:
        improved = False
        for i in range(n):
            if level[i] > 0:
                chain = chains[i]
                delta = chain[level[i] - 1][2] - chain[level[i]][2]
                if total + delta <= budget:
                    total += delta
                    level[i] -= 1
                    improved = True
    return level, n


# Tokens a join of two blocks can count fewer than the two apart (a separator merged with
# a block's last line break, a word with a mark), at most, with room to spare.
_JOIN_SAVING = 2


def _may_all_fit(chains: list[list[tuple[str, str, int]]], budget: int, model: str | None) -> bool:
    """Whether every note's lowest tier could join within ``budget``: false when their
    own counts exceed it by more than joining can save (joining 10,000 notes' lines
    to learn that took 0.2 s)."""
    sep_cost = separator_tokens(SEPARATOR, model)
    own = sum(chain[-1][2] - sep_cost for chain in chains)
    return own - _JOIN_SAVING * len(chains) <= budget


_Levels = tuple[list[int], int, str, int, dict[int, tuple[str, str]]]


def _every_note(
    chains: list[list[tuple[str, str, int]]], budget: int, model: str | None
) -> _Levels | None:
    """Every note at its lowest tier when their joined text fits ``budget`` (None when
    not), then the room left given back one step at a time, highest priority first, on
    the blocks' counts; the joined text recounted and the last steps undone while it is
    over. Returns (levels, notes included, text, its count, no tier overridden)."""
    n = len(chains)
    level = [len(chain) - 1 for chain in chains]
    text, total = _render(chains, level, n, model)
    if total > budget:
        return None
    room, raised = budget - total, []
    for i, chain in enumerate(chains):
        while level[i] > 0 and chain[level[i] - 1][2] - chain[level[i]][2] <= room:
            room -= chain[level[i] - 1][2] - chain[level[i]][2]
            level[i] -= 1
            raised.append(i)
    while raised:
        text, total = _render(chains, level, n, model)
        if total <= budget:
            return level, n, text, total, {}
        freed = 0
        while raised and freed < total - budget:
            i = raised.pop()
            freed += chains[i][level[i]][2] - chains[i][level[i] + 1][2]
            level[i] += 1
    text, total = _render(chains, level, n, model)
    return level, n, text, total, {}


def _every_skeleton(prepared: PreparedNotes, budget: int) -> _Levels | None:
    """Every note as its skeleton line when their joined text fits ``budget`` (a short
    note's lowest tier is its content, not smaller than its skeleton alone, and can join
    longer). The notes whose lowest tier is not the skeleton are overridden with it."""
    chains = prepared.chains
    blocks = [render_note(note, "skeleton") for note in prepared.notes]
    text = SEPARATOR.join(blocks)
    total = count_tokens(text, prepared.model)
    if total > budget:
        return None
    overrides = {
        i: ("skeleton", block) for i, block in enumerate(blocks) if chains[i][-1][0] != "skeleton"
    }
    return [len(chain) - 1 for chain in chains], len(chains), text, total, overrides


def _shrink(
    chains: list[list[tuple[str, str, int]]], level: list[int], included: int, excess: int
) -> tuple[list[int], int]:
    """Free at least ``excess`` estimated tokens: demote from the lowest priority up, then
    drop the lowest-priority notes."""
    level = list(level)
    freed = 0
    for i in range(included - 1, -1, -1):
        while level[i] < len(chains[i]) - 1 and freed < excess:
            freed += chains[i][level[i]][2] - chains[i][level[i] + 1][2]
            level[i] += 1
        if freed >= excess:
            return level, included
    while included > 0 and freed < excess:
        included -= 1
        freed += chains[included][level[included]][2]
    return level, included


def _render(
    chains: list[list[tuple[str, str, int]]], level: list[int], included: int, model: str | None
) -> tuple[str, int]:
    text = SEPARATOR.join(chains[i][level[i]][1] for i in range(included))
    return text, count_tokens(text, model)
