"""Passage-first selection: spend a budget on the best passages across documents.

The ranked passages (BM25 and dense ranks fused) are taken best first while they fit; one
that no longer fits whole gives way to its most relevant pieces in the room left (when the
room is worth it). Passages of one document are grouped under a single citation header,
in reading order, adjacent ones joined and gaps marked with an ellipsis line. A citation
locates its excerpt: ``lines a-b`` of a note, or the event range of a session chunk.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from selene_dag.retrieval.passages import is_event_line
from selene_dag.text import close_open_fence

# A passage cut down to its best pieces must keep at least this many tokens to be worth
# a place (below that, the header costs more than the excerpt tells).
MIN_EXCERPT_TOKENS = 40
# The top document "clearly dominates" when it holds at least DOMINANT_SHARE of the
# DOMINANT_WINDOW best passages, or all of its own (a short note found whole): the pack
# then concentrates on it (document levels). Chosen on the dev sets.
DOMINANT_WINDOW = 5
DOMINANT_SHARE = 3
# A passage whose word 6-grams are mostly (more than REPEAT_SHARE) in what is already
# chosen is skipped: agent transcripts repeat text (a message and the tool's echo of it,
# the events two overlapping chunks share), and a small budget spent twice on one text
# leaves out the next passage.
REPEAT_SHARE = 0.5
SHINGLE_WORDS = 6
GAP = "\n…\n"
_WORD = re.compile(r"\w+")
_CHUNK_EVENTS = re.compile(r"^(?P<path>.*) events (?P<first>\d+)-(?P<last>\d+)$")


@dataclass(frozen=True)
class RankedPassage:
    """A passage to consider: its document, span ``[start, end)`` in the document's body,
    token count and fused score (higher is better)."""

    doc_id: str
    start: int
    end: int
    tokens: int
    score: float


@dataclass(frozen=True)
class Document:
    """What selection needs of a document: its kind (``note`` | ``chunk``), citation,
    title and body; for a session chunk, ``events``: the seq of each event its body
    holds, in order (a chunk leaves out events of low importance, so its seqs have gaps)."""

    doc_id: str
    kind: str
    citation: str
    title: str
    body: str
    events: tuple[int, ...] = ()


@dataclass
class Excerpt:
    """A chosen passage (``text`` is the passage, or its best pieces when cut)."""

    start: int
    end: int
    text: str
    score: float
    cut: bool = False


@dataclass
class Selection:
    """One document's chosen excerpts, in the order they were chosen."""

    doc: Document
    excerpts: list[Excerpt] = field(default_factory=list)

    @property
    def score(self) -> float:
        """The best chosen passage's score."""
        return max((e.score for e in self.excerpts), default=0.0)

    @property
    def whole(self) -> bool:
        """True when the excerpts cover every non-blank character of the body uncut."""
        if any(e.cut for e in self.excerpts):
            return False
        pos = 0
        body = self.doc.body
        for e in sorted(self.excerpts, key=lambda e: e.start):
            if body[pos : e.start].strip():
                return False
            pos = max(pos, e.end)
        return not body[pos:].strip()

    def citation(self) -> str:
        """The document's citation, narrowed to the excerpts' location (``locate``: what
        each shows, ``shown_spans``) unless the whole body is shown."""
        if self.whole:
            return self.doc.citation
        body = self.doc.body
        return locate(self.doc, [s for e in self.excerpts for s in shown_spans(body, e)])

    def header(self) -> str:
        """``[citation] title`` with the narrowed citation."""
        citation = self.citation()
        return f"[{citation}] {self.doc.title}" if self.doc.title else f"[{citation}]"

    def content(self) -> str:
        """The excerpts in reading order: adjacent ones joined by a newline, a gap marked
        by an ellipsis line; no blank line before or after (the pack's separator is the
        blank line between items)."""
        parts: list[str] = []
        prev_end: int | None = None
        body = self.doc.body
        for e in sorted(self.excerpts, key=lambda e: e.start):
            # Adjacent by what each shows: a cut excerpt ends at its last piece, and the
            # text between that and the next excerpt was left out.
            start, end = shown_span(body, e)
            if parts:
                adjacent = prev_end is not None and not body[prev_end:start].strip()
                parts.append("\n" if adjacent else GAP)
            parts.append(e.text)
            prev_end = end
        return close_open_fence("".join(parts).lstrip("\n").rstrip())

    def render(self) -> str:
        """The item as it appears in the pack: header line, then content."""
        content = self.content()
        return f"{self.header()}\n{content}" if content else self.header()


_FENCE = re.compile(r"(?:`{3,}|~{3,})[\w+.#-]*")


def shown_spans(body: str, excerpt: Excerpt) -> list[tuple[int, int]]:
    """The spans of ``body`` that ``excerpt`` shows: its passage's span, or for a cut one
    the span of each of its pieces (found in the passage one after the other; the
    passage's span when one is not found)."""
    whole = [(excerpt.start, excerpt.end)]
    if not excerpt.cut:
        return whole
    parts = [
        p.strip() for line in excerpt.text.splitlines() for p in line.split(" … ") if p.strip()
    ]
    parts = [p for p in parts if p != "…"]
    spans: list[tuple[int, int]] = []
    at = excerpt.start
    for part in parts:  # in reading order: each found after the one before
        if _FENCE.fullmatch(part):
            # A fence the cut shows: the body's own when it is the next line there, else
            # one the cut added to close a code block it cut (the body's is far below).
            ahead = at + len(body[at : excerpt.end]) - len(body[at : excerpt.end].lstrip())
            if body.startswith(part, ahead):
                at = ahead + len(part)
                spans.append((ahead, at))
            continue
        found = body.find(part, at, excerpt.end)
        if found < 0:
            return whole
        at = found + len(part)
        spans.append((found, at))
    return spans or whole


def shown_span(body: str, excerpt: Excerpt) -> tuple[int, int]:
    """From where the first span ``excerpt`` shows starts to where its last one ends
    (:func:`shown_spans`)."""
    spans = shown_spans(body, excerpt)
    return spans[0][0], spans[-1][1]


def shingles(text: str, size: int = SHINGLE_WORDS) -> set[tuple[str, ...]]:
    """The word ``size``-grams of ``text`` (lower case); a text shorter than ``size`` words
    is one gram of all its words, an empty one none."""
    words = _WORD.findall(text.lower())
    if len(words) <= size:
        return {tuple(words)} if words else set()
    return {tuple(words[i : i + size]) for i in range(len(words) - size + 1)}


def _mostly_shown(grams: set[tuple[str, ...]], shown: set[tuple[str, ...]]) -> bool:
    """Whether more than REPEAT_SHARE of ``grams`` are already in ``shown``."""
    return bool(grams) and len(grams & shown) > REPEAT_SHARE * len(grams)


def dominant_document(
    passages: Sequence[RankedPassage], sizes: Mapping[str, int] | None = None
) -> str | None:
    """The document of the best passage when it holds at least DOMINANT_SHARE of the
    DOMINANT_WINDOW best passages, or (``sizes``: passages per document) when every one of
    its passages is among them; else None."""
    if not passages:
        return None
    top = passages[0].doc_id
    held = sum(p.doc_id == top for p in passages[:DOMINANT_WINDOW])
    need = min(DOMINANT_SHARE, sizes.get(top, DOMINANT_SHARE)) if sizes else DOMINANT_SHARE
    return top if held >= need else None


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _merge(spans: Sequence[tuple[int, int]], body: str) -> list[tuple[int, int]]:
    merged: list[list[int]] = []
    for a, b in sorted(spans):
        if merged and not body[merged[-1][1] : a].strip():
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    return [(a, b) for a, b in merged]


def locate(doc: Document, spans: Sequence[tuple[int, int]]) -> str:
    """The citation of ``doc`` narrowed to ``spans`` (character spans of its body): a
    session chunk's event range (``<session key> events a-b``: the seqs, from
    ``doc.events``, of the first and last event whose header line the spans reach), a
    note's line ranges (``note id lines 3-9, 20-24``). The plain citation when the spans
    are empty, the chunk's citation carries no event range, or its body's event lines
    are not one per seq of ``doc.events``. A chunk without ``events`` is taken to hold
    every event of its range."""
    if not spans:
        return doc.citation
    merged = _merge(spans, doc.body)
    body = doc.body
    if doc.kind == "chunk":
        found = _CHUNK_EVENTS.match(doc.citation)
        if not found:
            return doc.citation
        first, last = int(found["first"]), int(found["last"])
        starts = [0] + [m.start() + 1 for m in re.finditer("\n", body)]
        lines = [s for s in starts if is_event_line(body[s : s + 40])]
        seqs = doc.events or tuple(range(first, last + 1))
        if not lines or len(lines) != len(seqs):
            return doc.citation
        a, b = merged[0][0], merged[-1][1]
        before = sum(1 for s in lines if s <= a)
        through = sum(1 for s in lines if s < b)
        lo = seqs[max(before - 1, 0)]
        hi = seqs[max(through - 1, 0)]
        return f"{found['path']} events {lo}-{max(lo, hi)}"
    lines = [(_line_of(body, a), _line_of(body, max(a, b - 1))) for a, b in merged]
    return f"{doc.citation} {lines_text(lines)}"


def line_ranges(ranges: Sequence[tuple[int, int]], pairs: bool = False) -> str:
    """Inclusive line ranges as a note's citation names them, in order, those that touch
    or overlap joined: ``12-30, 41``; with ``pairs``, a single line too as ``41-41`` (as
    events are cited)."""
    joined: list[list[int]] = []
    for a, b in sorted(ranges):
        if joined and a <= joined[-1][1] + 1:
            joined[-1][1] = max(joined[-1][1], b)
        else:
            joined.append([a, b])
    return ", ".join(f"{a}-{b}" if b > a or pairs else f"{a}" for a, b in joined)


def lines_text(ranges: Sequence[tuple[int, int]]) -> str:
    """``line 4`` or ``lines 12-30, 41``: :func:`line_ranges` with its word."""
    text = line_ranges(ranges)
    return f"line {text}" if text.isdigit() else f"lines {text}"


def select_passages(
    passages: Sequence[RankedPassage],
    docs: Mapping[str, Document],
    budget: int,
    count: Callable[[str], int],
    shorten: Callable[[str, int], str],
    separator_tokens: int,
    min_excerpt: int = MIN_EXCERPT_TOKENS,
    max_passage: int | None = None,
    shorten_chunk: Callable[[str, int], str] | None = None,
) -> list[Selection]:
    """Choose passages best first within ``budget`` tokens (an estimate; the caller counts
    the rendered pack): each costs its tokens plus a separator, and its document's header
    the first time. A passage that does not fit whole, or longer than ``max_passage``, is
    replaced by ``shorten(text, room)`` (a session chunk's by ``shorten_chunk`` when
    given) when the room left is at least ``min_excerpt`` tokens; else it is skipped and
    the next one tried. A passage overlapping one already chosen, one whose words (or, when
    cut, whose excerpt's words) mostly repeat what is chosen (``REPEAT_SHARE`` of its word
    grams), or of a document not in ``docs``, is skipped. Returns the documents in the
    order of their first passage."""
    chosen: dict[str, Selection] = {}
    heads: dict[str, int] = {}  # each chosen document's header cost, as narrowed now
    shown: set[tuple[str, ...]] = set()  # word grams of the excerpts chosen so far
    used = 0
    for p in passages:
        doc = docs.get(p.doc_id)
        if doc is None:
            continue
        if budget - used <= separator_tokens:
            break
        selection = chosen.get(p.doc_id) or Selection(doc)
        if any(e.start < p.end and p.start < e.end for e in selection.excerpts):
            continue
        grams = shingles(doc.body[p.start : p.end])
        if _mostly_shown(grams, shown):
            continue
        # The header as it would read with this passage cut (the longer, narrowed citation).
        trial = Selection(doc, [*selection.excerpts, Excerpt(p.start, p.end, "", 0.0, True)])
        head = count(trial.header()) + separator_tokens
        room = budget - used + heads.get(p.doc_id, 0) - head
        text = doc.body[p.start : p.end]
        cost = p.tokens + separator_tokens
        cut = False
        kept = grams
        cap = max_passage if max_passage is not None else p.tokens
        if cost > room or p.tokens > cap:
            avail = min(room - separator_tokens, cap)
            if avail < min_excerpt:
                continue
            cut_to = shorten_chunk if shorten_chunk is not None and doc.kind == "chunk" else shorten
            text = cut_to(text, avail).strip()
            if not text:
                continue
            # What is shown must not repeat either: a passage partly new can be cut to
            # exactly the part already chosen (an instruction file quoted by two sessions).
            kept = shingles(text)
            if _mostly_shown(kept, shown):
                continue
            cost = count(text) + separator_tokens
            cut = True
            if cost > room:
                continue
        selection.excerpts.append(Excerpt(p.start, p.end, text, p.score, cut))
        shown |= kept
        chosen[p.doc_id] = selection
        head = min(head, count(selection.header()) + separator_tokens)
        used += head - heads.get(p.doc_id, 0) + cost
        heads[p.doc_id] = head
    return list(chosen.values())
