"""A document as pieces (sentences, lines, code lines) and how much each piece answers a
question.

Pure functions: no database, no tokenizer. ``segment`` keeps enough structure for the
relevance model: fenced and indented code lines know their block, every piece knows its
section (the heading above it). ``piece_relevance`` scores each piece in [0, 1]:

* direct: the IDF-weighted share of the question's terms the piece holds (rare words such
  as ``matrix`` weigh more than ``python``);
* carried forward: the lines after a matching piece hold what it introduces ("compile it
  like this:" followed by the command), most of all the code block right after it;
* carried back a little: the sentence before a match often names the subject;
* section: a heading that matches lends part of its score to its whole section;
* titled after the question: a note whose title holds most of the question answers it
  from its opening, so its first pieces get a share that fades with the position;
* a small floor, higher for the opening lines, so whole notes read in order when there
  is room.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from selene_dag.retrieval.terms import CoverageMatcher
from selene_dag.text import FENCE_LINE, split_sentences

_ESCAPED_NEWLINE = "\\n"
# A numbered list item's number ("1.", "2)"), and a list item's start (defined with the
# passages' units below): a nested item keeps its indentation in a piece.
_ITEM_NUMBER = re.compile(r"\d{1,3}[.)]")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s")

# Relevance model (see the module docstring). Forward carry decays per piece; code lines
# right after a match decay slowly (a command block is read as one unit).
FORWARD_PROSE = (0.6, 0.45, 0.3)
FORWARD_CODE_START = 0.85
FORWARD_CODE_DECAY = 0.93
FORWARD_CODE_LINES = 40
BACKWARD = (0.3, 0.15)
SECTION_SHARE = 0.35
FLOOR = 0.02
OPENING_FLOOR = 0.08
OPENING_PIECES = 3
PREFIX = 0.8
PREFIX_DECAY = 0.95
# A sentence or code line longer than this many characters (minified JSON, a pasted log
# line, a paragraph with no sentence end) is cut into pieces of at most this many, at a
# space or else after a punctuation mark: a piece no room can hold is a note no pack shows.
MAX_PIECE_CHARS = 500
BREAK_AFTER = frozenset(",;:}])>|&")


@dataclass(frozen=True)
class Piece:
    """One unit of a document: ``joint`` is what separated it from the next piece in the
    source (a newline, a space, or nothing inside a cut line); ``block`` numbers code
    blocks (-1 for prose)."""

    text: str
    kind: str  # "heading" | "code" | "text"
    section: int
    block: int
    joint: str
    cut: bool = False  # one of the pieces a line too long for one was cut into


def split_long(text: str, limit: int = MAX_PIECE_CHARS) -> list[tuple[str, str]]:
    """``text`` as ``(part, joint)`` pairs of at most ``limit`` characters each, joints
    included: ``"".join(part + joint)`` is ``text`` with the spaces at each cut kept as
    one. A cut goes at the last space of the second half of a window, else after its last
    punctuation mark there (``,`` ``;`` ``}`` …), else at the window's end. The last
    pair's joint is ``""``."""
    out: list[tuple[str, str]] = []
    rest = text
    while len(rest) > limit:
        cut = rest.rfind(" ", limit // 2, limit + 1)
        if cut > 0:
            if rest[:cut].strip():
                out.append((rest[:cut].rstrip(), " "))
            rest = rest[cut:].lstrip()
            continue
        cut = next(
            (i + 1 for i in range(limit - 1, limit // 2 - 1, -1) if rest[i] in BREAK_AFTER),
            limit,
        )
        if rest[cut - 1].isspace() or (0xD800 <= ord(rest[cut - 1]) <= 0xDBFF):
            # A piece never ends on a tab or other non-space blank; a high surrogate shows
            # up only in text decoded with "surrogatepass", and keeps its pair.
            cut -= 1
        out.append((rest[:cut], ""))
        rest = rest[cut:]
    if rest:
        out.append((rest, ""))
    return out


def segment(text: str) -> list[Piece]:
    """Split ``text`` into pieces: headings, code lines (fenced or indented, fences kept as
    their own lines) and sentences of the other lines; blank lines are dropped."""
    pieces: list[Piece] = []
    section = 0
    block = -1
    blocks = 0
    in_fence = False
    prev_blank = True
    for raw in text.splitlines():
        line = raw.rstrip()
        if not line.strip():
            prev_blank = True
            if not in_fence:
                block = -1
            continue
        if FENCE_LINE.match(line):
            if not in_fence:
                block, blocks = blocks, blocks + 1
            pieces.append(Piece(line.strip(), "code", section, block, "\n"))
            in_fence = not in_fence
            if not in_fence:
                block = -1
            prev_blank = False
            continue
        if in_fence:
            _append_long(pieces, line, "code", section, block, "\n")
            continue
        indented = line.startswith(("    ", "\t"))
        if indented and (prev_blank or block >= 0):
            if block < 0:
                block, blocks = blocks, blocks + 1
            _append_long(pieces, line, "code", section, block, "\n")
            prev_blank = False
            continue
        block = -1
        prev_blank = False
        if _HEADING.match(line):
            section += 1
            pieces.append(Piece(line.strip(), "heading", section, -1, "\n"))
            continue
        # Pieces are units of relevance, not prose: any . ! ? before a non-space ends one.
        # Text quoted as JSON (a tool's input in a transcript) keeps its line breaks as the
        # two characters backslash-n: they end a piece as a real line break does.
        # A part keeps its indentation (an edited file's code, quoted in a tool's input), and
        # a nested list item its own: an outline's child read as its parent's sibling.
        stripped = line.strip()
        lead = line[: len(line) - len(line.lstrip())] if _LIST_ITEM.match(stripped) else ""
        parts = [part.rstrip() for part in stripped.split(_ESCAPED_NEWLINE)]
        parts = [part for part in parts if part.strip()]
        if parts and lead:
            parts[0] = lead + parts[0]
        for n, part in enumerate(parts):
            sentences = split_sentences(part, boundary="any")
            # A numbered item's number is no sentence of its own ("1." | "Install it."): it
            # stays with the item's first sentence.
            if len(sentences) > 1 and _ITEM_NUMBER.fullmatch(sentences[0].strip()):
                first = part.find(sentences[0])
                second = part.find(sentences[1], first + len(sentences[0]))
                joined = part[first : second + len(sentences[1])] if first >= 0 <= second else ""
                sentences[:2] = [joined or f"{sentences[0]} {sentences[1]}"]
            indent = part[: len(part) - len(part.lstrip())]
            if sentences and indent and not sentences[0].startswith(indent):
                sentences[0] = indent + sentences[0]
            for k, sentence in enumerate(sentences):
                if k < len(sentences) - 1:
                    joint = " "
                else:
                    joint = _ESCAPED_NEWLINE if n < len(parts) - 1 else "\n"
                _append_long(pieces, sentence, "text", section, -1, joint)
    return pieces


def _append_long(
    pieces: list[Piece], text: str, kind: str, section: int, block: int, joint: str
) -> None:
    """Append ``text`` as one piece, or as several when it is longer than a piece may be
    (the last keeps ``joint``)."""
    if len(text) <= MAX_PIECE_CHARS:
        pieces.append(Piece(text, kind, section, block, joint))
        return
    parts = split_long(text)
    for n, (part, inner) in enumerate(parts):
        last = n == len(parts) - 1
        pieces.append(Piece(part, kind, section, block, joint if last else inner, cut=True))


def cut_tie_breaks(pieces: Sequence[Piece], direct: Sequence[float]) -> dict[int, float]:
    """How much lower each piece cut from a long line (``Piece.cut``) goes (``lowered``):
    1e-6 × (1 − its share of the question's words, ``direct``). A retrieved passage lifts
    all its pieces to one value and equal pieces go in reading order; where a line was cut
    is arbitrary, so the cut holding the word asked about (the rare one: a row of a JSON
    dump that names it, not its neighbours that only share "port") goes first."""
    return {i: 1e-6 * (1.0 - direct[i]) for i, piece in enumerate(pieces) if piece.cut}


def lowered(values: Sequence[float], by: Mapping[int, float]) -> list[float]:
    """``values`` with the one at each index of ``by`` lowered by its amount (never
    below 0)."""
    return [max(0.0, v - by[i]) if i in by else v for i, v in enumerate(values)]


# Sums over sets of stems are exact (``math.fsum``): a plain sum would depend on the order a
# set iterates in, which changes with each process's string hashing, and the last bit of a
# piece's relevance decided which of two equal pieces a cut kept.
def _weighted_share(found: set[str], weights: Mapping[str, float], total: float) -> float:
    return math.fsum(weights.get(s, 1.0) for s in found) / total if found else 0.0


def _total_weight(matcher: CoverageMatcher, weights: Mapping[str, float]) -> float:
    return math.fsum(weights.get(s, 1.0) for s in set(matcher.stems)) or 1.0


def title_share(title: str, matcher: CoverageMatcher, weights: Mapping[str, float]) -> float:
    """The IDF-weighted share of the question's stems found in ``title``, in [0, 1]."""
    total = _total_weight(matcher, weights)
    return _weighted_share(matcher.found(title), weights, total)


def direct_scores(
    pieces: Sequence[Piece], matcher: CoverageMatcher, weights: Mapping[str, float]
) -> list[float]:
    """Per piece, the IDF-weighted share of the question's stems it contains, in [0, 1]
    (``weights`` by stem; a stem without one weighs 1)."""
    total = _total_weight(matcher, weights)
    return [_weighted_share(matcher.found(p.text), weights, total) for p in pieces]


def piece_relevance(
    pieces: Sequence[Piece],
    matcher: CoverageMatcher,
    weights: Mapping[str, float],
    title_share: float = 0.0,
    direct: Sequence[float] | None = None,
) -> list[float]:
    """Relevance in [0, 1] of each piece to the question (see the module docstring).

    ``title_share`` is the IDF-weighted share of the question found in the document's
    title: a note titled after the question answers it in its opening, so its first
    pieces are worth ``PREFIX × title_share``, fading with the position. ``direct``: the
    pieces' :func:`direct_scores` when the caller has them already.
    """
    if direct is None:
        direct = direct_scores(pieces, matcher, weights)
    n = len(pieces)
    rel = [OPENING_FLOOR if i < OPENING_PIECES else FLOOR for i in range(n)]
    if title_share > 0:
        lead = PREFIX * title_share
        rel = [max(r, lead * PREFIX_DECAY**i) for i, r in enumerate(rel)]
    headings = {p.section: direct[i] for i, p in enumerate(pieces) if p.kind == "heading"}
    for i, piece in enumerate(pieces):
        lent = SECTION_SHARE * headings.get(piece.section, 0.0)
        rel[i] = max(rel[i], direct[i], lent)
    for i, d in enumerate(direct):
        if d <= 0.0:
            continue
        for gap, share in enumerate(BACKWARD, 1):
            j = i - gap
            if j < 0 or pieces[j].kind == "heading":
                break
            rel[j] = max(rel[j], share * d)
        _carry_forward(pieces, rel, i, d)
    return [min(1.0, r) for r in rel]


def _carry_forward(pieces: Sequence[Piece], rel: list[float], i: int, d: float) -> None:
    n = len(pieces)
    source_block = pieces[i].block
    j = i + 1
    # Prose after the match, up to the first code line or heading.
    for share in FORWARD_PROSE:
        if j >= n or pieces[j].kind != "text":
            break
        rel[j] = max(rel[j], share * d)
        j += 1
    # The code block that follows (or the rest of the block the match sits in).
    if j < n and pieces[j].kind == "code":
        block = pieces[j].block
        if block != source_block or source_block < 0:
            value = FORWARD_CODE_START * d
        else:
            value = FORWARD_CODE_DECAY * d
        lines = 0
        while j < n and pieces[j].kind == "code" and pieces[j].block == block:
            rel[j] = max(rel[j], value)
            value *= FORWARD_CODE_DECAY
            lines += 1
            j += 1
            if lines >= FORWARD_CODE_LINES:
                break


def join_pieces(pieces: Sequence[Piece], chosen: Sequence[int]) -> str:
    """The chosen pieces in reading order: neighbours keep their own joint; a gap in the
    source is marked " … " inside a paragraph and a line "…" between lines (and before a
    line of code or a heading), and "… "
    opens an excerpt that starts inside a cut line. Lines of a
    fenced code block come with its fences, chosen or not (and a closing one when the text
    ends inside the block): without them the code read as prose, and a fence left open
    turned the rest of a markdown pack into code. A fence chosen without a line of its
    block is left out (an empty block says nothing)."""
    fences = _fences(pieces)
    fence_pieces = {i for pair in fences.values() for i in pair if i is not None}
    # A block is shown when one of its lines is; a fence chosen alone made an empty block.
    blocks = {
        pieces[j].block for j in chosen if pieces[j].kind == "code" and j not in fence_pieces
    } & set(fences)
    with_fences = {j for j in chosen if j not in fence_pieces}
    for block in blocks:
        with_fences.update(i for i in fences[block] if i is not None)
    order = sorted(with_fences)
    if not order:
        return ""
    first = order[0]
    # An excerpt starting inside a cut line says so, as a gap inside a paragraph does.
    out = ["… " if continues_line(pieces, first) else "", pieces[first].text]
    for prev, j in itertools.pairwise(order):
        joint = pieces[prev].joint
        if j != prev + 1:
            # A line of code (a fence too) or a heading starts its own line after a gap:
            # after " … " a fence is no fence, and the block it closed ran on to the end.
            opens_line = pieces[j].kind != "text" and pieces[j - 1].joint == "\n"
            joint = "\n…\n" if joint == "\n" or opens_line else " … "
        out.append(joint)
        out.append(pieces[j].text)
    unclosed = [b for b in blocks if fences[b][1] is None]
    if unclosed:  # the text ends inside that block: so does the excerpt
        fence = FENCE_LINE.match(pieces[fences[unclosed[0]][0]].text)
        out.append("\n" + (fence.group(1) if fence else "```"))
    return "".join(out)


def continues_line(pieces: Sequence[Piece], i: int) -> bool:
    """Whether piece ``i`` continues the line of the piece before it (both cut from it)."""
    if i < 1:
        return False
    before = pieces[i - 1]
    return pieces[i].cut and before.cut and before.joint != "\n"


def _fences(pieces: Sequence[Piece]) -> dict[int, tuple[int, int | None]]:
    """Fenced code blocks of ``pieces``: block -> (its opening fence piece, its closing
    one, None when the text ends inside the block)."""
    out: dict[int, tuple[int, int | None]] = {}
    for i, piece in enumerate(pieces):
        if piece.kind != "code" or piece.block < 0 or not FENCE_LINE.match(piece.text):
            continue
        if piece.block not in out:
            out[piece.block] = (i, None)
        else:
            out[piece.block] = (out[piece.block][0], i)
    return out


# --- Passages: the retrieval unit (cut once, when the index is built) -----------------

# Characters per passage: about 200 tokens of prose aimed at, 100-300 allowed.
PASSAGE_TARGET_CHARS = 800
PASSAGE_MIN_CHARS = 400
PASSAGE_MAX_CHARS = 1200
# A code block stays with the line introducing it up to this much over the maximum.
_GLUE_SLACK = 1.5
_LIST_ITEM = re.compile(r"^\s{0,6}(?:[-*+]|\d{1,3}[.)])\s")
_TURN = re.compile(r"^\s{0,3}(?:\*\*)?[A-Z][\w .'’-]{0,40}(?:\*\*)?:\s")
_EVENT = re.compile(r"^\[[a-z_]+/[a-z_]+")


def is_event_line(line: str) -> bool:
    """True when ``line`` starts a session event (``[role/kind …]``, as chunks are written)."""
    return _EVENT.match(line) is not None


@dataclass(frozen=True)
class _Unit:
    start: int
    end: int
    kind: str  # "heading" | "code" | "text"
    glue: bool  # never separated from the unit before it (when sizes allow)


def _units(text: str) -> list[_Unit]:
    """Structural units with their spans: headings, fenced blocks (glued to the line
    before), list items, dialogue turns, session events and paragraphs."""
    units: list[_Unit] = []
    start = end = -1
    kind = "text"
    glue = False
    in_fence = False
    after_blank = True

    def close() -> None:
        nonlocal start
        if start >= 0:
            units.append(_Unit(start, end, kind, glue))
        start = -1

    pos = 0
    for line in text.splitlines(keepends=True):
        begin, stripped = pos, line.rstrip()
        pos += len(line)
        finish = begin + len(stripped)
        if in_fence:
            end = finish if stripped else end
            if FENCE_LINE.match(line):
                in_fence = False
                close()
            continue
        if not stripped.strip():
            close()
            after_blank = True
            continue
        if FENCE_LINE.match(line):
            close()
            prev_prose = bool(units) and units[-1].kind == "text"
            start, end, kind, glue, in_fence = begin, finish, "code", prev_prose, True
        elif _HEADING.match(line):
            close()
            start, end, kind, glue = begin, finish, "heading", False
            close()
        elif (
            start < 0
            or _LIST_ITEM.match(line)
            or _TURN.match(line)
            or _EVENT.match(line)
            or (after_blank and start < 0)
        ):
            close()
            heading_before = bool(units) and units[-1].kind == "heading"
            start, end, kind, glue = begin, finish, "text", heading_before
        else:
            end = finish
        after_blank = False
    close()
    return [piece for unit in units for piece in _split_long(text, unit)]


def _split_long(text: str, unit: _Unit) -> list[_Unit]:
    """``unit`` itself, or consecutive slices of at most PASSAGE_MAX_CHARS cut at a line
    end, else a sentence end, else a space (else anywhere)."""
    out: list[_Unit] = []
    start, glue = unit.start, unit.glue
    while unit.end - start > PASSAGE_MAX_CHARS:
        window = text[start : start + PASSAGE_MAX_CHARS]
        cut = -1
        for mark in ("\n", ". ", " "):
            k = window.rfind(mark, PASSAGE_MIN_CHARS // 2)
            if k > 0:
                cut = k + len(mark)
                break
        cut = start + (cut if cut > 0 else PASSAGE_MAX_CHARS)
        out.append(_Unit(start, cut, unit.kind, glue))
        start, glue = cut, False
        while start < unit.end and text[start].isspace():
            start += 1
    if start < unit.end:
        out.append(_Unit(start, unit.end, unit.kind, glue))
    return out


def cut_passages(text: str) -> list[tuple[int, int]]:
    """Character spans ``[start, end)`` of ``text``'s passages, in order, covering every
    non-blank character once: structural units (see ``_units``) merged up to about
    PASSAGE_TARGET_CHARS (never past PASSAGE_MAX_CHARS, except a code block kept with its
    introducing line), a new passage at each heading once the current one is substantial;
    a short tail joins the passage before it. Empty for a blank text."""
    spans: list[list[int]] = []
    length = 0
    for unit in _units(text):
        size = unit.end - unit.start
        if spans:
            joined = unit.end - spans[-1][0]
            if unit.kind == "heading":
                join = length < PASSAGE_MIN_CHARS // 2
            elif unit.glue:
                join = joined <= PASSAGE_MAX_CHARS * _GLUE_SLACK
            else:
                join = joined <= PASSAGE_TARGET_CHARS or (
                    length < PASSAGE_MIN_CHARS and joined <= PASSAGE_MAX_CHARS
                )
            if join:
                spans[-1][1] = unit.end
                length = joined
                continue
        spans.append([unit.start, unit.end])
        length = size
    short_tail = len(spans) > 1 and spans[-1][1] - spans[-1][0] < PASSAGE_MIN_CHARS // 2
    if short_tail and spans[-1][1] - spans[-2][0] <= PASSAGE_MAX_CHARS:
        tail = spans.pop()
        spans[-1][1] = tail[1]
    return [(a, b) for a, b in spans]


def piece_offsets(text: str, pieces: Sequence[Piece]) -> list[int]:
    """The character offset in ``text`` where each of ``segment(text)``'s pieces starts
    (found in order, each after the one before; a piece not found, which ``segment`` never
    yields, takes the offset reached so far)."""
    out: list[int] = []
    pos = 0
    for piece in pieces:
        k = text.find(piece.text, pos)
        if k >= 0:
            out.append(k)
            # Past the piece: a piece repeated (a closing brace, a cut of a long run of one
            # text) is found at its own place, not at its first copy's.
            pos = k + len(piece.text)
        else:
            out.append(pos)
    return out


def boost_spans(
    offsets: Sequence[int],
    relevance: Sequence[float],
    spans: Sequence[tuple[int, int, float]],
    boost: float,
    own: float = 0.0,
    outside: float = 1.0,
) -> list[float]:
    """Relevance once the document's retrieved passages are known: every piece's own
    relevance ``r`` scaled by ``outside``, and a piece starting inside a span
    ``(start, end, value)`` raised to ``boost × (outside + (1 - outside) × value) ×
    (1 - own + own × r)`` (``own`` > 0 keeps the passage's matching lines first within
    it); capped at 1. With ``outside`` < 1 the retrieved passages come before the rest."""
    out = [outside * r for r in relevance]
    for start, end, value in spans:
        lift = boost * (outside + (1.0 - outside) * value)
        for i, at in enumerate(offsets):
            if start <= at < end:
                out[i] = min(1.0, max(out[i], lift * (1.0 - own + own * relevance[i])))
    return out


def span_values(offsets: Sequence[int], spans: Sequence[tuple[int, int, float]]) -> list[float]:
    """Per piece (by its start offset), the best ``value`` of the spans
    ``(start, end, value)`` it starts in; 0.0 outside every span."""
    out = [0.0] * len(offsets)
    for start, end, value in spans:
        for i, at in enumerate(offsets):
            if start <= at < end and value > out[i]:
                out[i] = value
    return out
