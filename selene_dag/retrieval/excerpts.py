"""Question-focused excerpts of a text within a token budget: ask's one cutter.

:class:`PassageSummarizer` keeps a text whole when it fits, else its pieces most relevant
to the question in reading order (or, for a session chunk, one unbroken run of pieces from
the most relevant one); it also caches each text's segmentation, relevance and piece
counts for the rest of the packing. ``fit_excerpt`` keeps an allocated excerpt within its
tokens.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from selene_dag.context.levels import Level, LevelConfig, extractive_summary
from selene_dag.context.tokens import count_tokens, truncate_to_tokens
from selene_dag.retrieval.allocate import CHARS_PER_TOKEN_BOUND, DocPlan, allocate
from selene_dag.retrieval.passages import (
    BREAK_AFTER,
    Piece,
    continues_line,
    cut_tie_breaks,
    direct_scores,
    join_pieces,
    piece_offsets,
    piece_relevance,
    segment,
    title_share,
)
from selene_dag.retrieval.terms import CoverageMatcher
from selene_dag.text import fold_marks_at


class PassageSummarizer:
    """``(text, max_tokens) -> str``: ``text`` itself when it fits, else its pieces most
    relevant to the question (``passages.piece_relevance``) in reading order within
    ``max_tokens``; a text holding no question word falls back to its essence when known,
    and one none of whose pieces that hold a question word fits to the words around the
    question's first word in its most relevant piece (``window``; not with
    ``window=False``).

    Also the shared cache of ask's packing: each text is segmented and scored once, each
    distinct piece counted once.
    """

    def __init__(
        self,
        terms: Sequence[str],
        weights: Mapping[str, float],
        essences: Mapping[str, str],
        model: str,
    ) -> None:
        self.matcher = CoverageMatcher(terms)
        self.weights = dict(weights)
        self.essences = essences
        self.model = model
        self._sizes: dict[str, int] = {}
        self._analysed: dict[tuple[str, str], tuple[list[Piece], list[float], bool]] = {}
        self._offsets: dict[str, list[int]] = {}
        self._direct: dict[str, list[float]] = {}

    def count(self, text: str) -> int:
        """Tokens of ``text`` in the model (memoized)."""
        size = self._sizes.get(text)
        if size is None:
            size = self._sizes[text] = count_tokens(text, self.model)
        return size

    def analyse(self, text: str, title: str = "") -> tuple[list[Piece], list[float], bool]:
        """Pieces of ``text``, their relevance, and whether any question word is in it
        (``title``: the document's title, see ``passages.piece_relevance``)."""
        found = self._analysed.get((text, title))
        if found is None:
            pieces = segment(text)
            direct = self._direct[text] = direct_scores(pieces, self.matcher, self.weights)
            matched = any(d > 0 for d in direct)
            share = title_share(title, self.matcher, self.weights) if title else 0.0
            relevance = piece_relevance(pieces, self.matcher, self.weights, share, direct)
            found = self._analysed[(text, title)] = (pieces, relevance, matched)
        return found

    def direct(self, text: str) -> list[float]:
        """``passages.direct_scores`` of the pieces ``analyse(text)`` returns (memoized)."""
        if text not in self._direct:
            self.analyse(text)
        return self._direct[text]

    def cut_tie_breaks(self, text: str, title: str = "") -> dict[int, float]:
        """``passages.cut_tie_breaks`` of the pieces ``analyse(text, title)`` returns."""
        pieces, _, _ = self.analyse(text, title)
        return cut_tie_breaks(pieces, self.direct(text))

    def offsets(self, text: str, pieces: Sequence[Piece]) -> list[int]:
        """Where each piece of ``text`` starts (``passages.piece_offsets``, memoized)."""
        found = self._offsets.get(text)
        if found is None:
            found = self._offsets[text] = piece_offsets(text, pieces)
        return found

    def fits(self, text: str, max_tokens: int) -> bool:
        """Whether ``text`` counts at most ``max_tokens`` tokens."""
        # A text with more characters than CHARS_PER_TOKEN_BOUND per allowed token cannot
        # fit: it is not counted whole (the pieces are counted anyway).
        return len(text) <= max_tokens or (
            len(text) // CHARS_PER_TOKEN_BOUND <= max_tokens and self.count(text) <= max_tokens
        )

    def __call__(self, text: str, max_tokens: int, *, window: bool = True) -> str:
        if max_tokens < 1 or not text:
            return ""
        if self.fits(text, max_tokens):
            return text
        pieces, relevance, matched = self.analyse(text)
        if not matched and self.essences.get(text):
            return extractive_summary(self.essences[text], max_tokens, self.model)
        plan = DocPlan(Level.FULL, 1.0, pieces, relevance, header_cost=0, line_cost=0)
        allocate([plan], max_tokens, self.count, LevelConfig())
        out = fit_excerpt(plan, text, max_tokens, self.model)
        if not pieces or not window or (out and (not matched or self.matcher.found(out))):
            return out
        # No piece fits whole, or none that holds a question word (a paragraph with no
        # sentence end: a pasted log, minified JSON): the words around the question's
        # first word in the most relevant piece.
        best = max(range(len(pieces)), key=lambda i: (relevance[i], -i))
        return self.window(pieces[best].text, max_tokens, inside=continues_line(pieces, best))

    def window(self, text: str, max_tokens: int, *, inside: bool = False) -> str:
        """Part of ``text`` within ``max_tokens``: from a little before the rarest question
        word it holds (by ``weights``; its start when it holds none), at a word start, marked "… " when
        it does not start the text (or ``text`` itself continues a cut line: ``inside``),
        and cut at the end to fit."""
        # The stems are folded (no combining marks, as the index compares words): so is the
        # text searched, each place found mapped back to the text's.
        low, where = fold_marks_at(text.lower())
        # Around the rarest question word it holds (the name asked about, not "port" that
        # every row of a dump repeats), its first place.
        hits = [
            (-self.weights.get(s, 1.0), at)
            for s in self.matcher.stems
            if s and (at := low.find(s)) >= 0
        ]
        at = min(hits, default=(0.0, 0))[1]
        at = min(where[at], len(text)) if at < len(where) else 0
        # About a third of the room goes before the word (what leads to it): the latest
        # word start whose words up to the hit count no more than that.
        # A word start: after a space, or after a punctuation mark not followed by one
        # (minified JSON has no spaces: its window started at the text's start and was cut
        # before the word).
        starts = [0] + [
            i + 1
            for i in range(max(0, at - 4000), at)
            if text[i] == " " or (text[i] in BREAK_AFTER and text[i + 1] != " ")
        ]
        starts = [i for i in starts if i <= at]
        lo, hi = 0, len(starts) - 1
        while lo < hi:  # the first start whose lead fits (leads shrink as starts grow)
            mid = (lo + hi) // 2
            if self.count(text[starts[mid] : at]) <= max_tokens // 3:
                hi = mid
            else:
                lo = mid + 1
        start = starts[lo]
        piece = ("… " if start or inside else "") + text[start:]
        return truncate_to_tokens(piece, max_tokens, self.model)

    def run(self, text: str, max_tokens: int) -> str:
        """``text`` itself when it fits, else one unbroken run of its pieces within
        ``max_tokens``: its most relevant piece (the first of equals) and the pieces after
        it while they fit; when that piece alone does not fit (a tool's input as one long
        line), its most relevant pieces wherever they are (``__call__``). A session's tool
        call holds the question's words, the result after it the answer: pieces picked
        wherever they score leave the result out. The pieces before the best one are not
        added to fill the room: a small budget is better spent on the next passage."""
        if max_tokens < 1 or not text:
            return ""
        if self.fits(text, max_tokens):
            return text
        pieces, relevance, _ = self.analyse(text)
        if not pieces:
            return ""
        first = max(range(len(pieces)), key=lambda i: (relevance[i], -i))
        last, used = first, self.count(pieces[first].text)
        if used > max_tokens:  # one line longer than the room: no run holds it
            # (Not a window of that line: on the session dev sets the room went better
            # to the next passage.)
            return self(text, max_tokens, window=False)
        while last + 1 < len(pieces) and used + self.count(pieces[last + 1].text) <= max_tokens:
            last += 1
            used += self.count(pieces[last].text)
        # Joined pieces can count more than their sum: the last ones go until it fits.
        out = join_pieces(pieces, range(first, last + 1))
        while last > first and self.count(out) > max_tokens:
            last -= 1
            out = join_pieces(pieces, range(first, last + 1))
        return (
            out
            if self.count(out) <= max_tokens
            else truncate_to_tokens(out, max_tokens, self.model)
        )


def excerpt_text(plan: DocPlan, body: str) -> str:
    """The body when every piece was chosen, else the chosen pieces in reading order (a
    piece of ``plan.window`` as its window)."""
    if len(plan.chosen) == len(plan.pieces):
        return body
    pieces = plan.pieces
    if plan.window is not None and plan.window[0] in plan.chosen:
        at, text = plan.window
        first = at == min(plan.chosen)
        if continues_line(pieces, at) if first else at - 1 not in plan.chosen:
            text = text.removeprefix("… ")  # join_pieces marks the gap before it
        pieces = [*pieces[:at], replace(pieces[at], text=text), *pieces[at + 1 :]]
    return join_pieces(pieces, plan.chosen)


def window_best_cut(plan: DocPlan, summarizer: PassageSummarizer, direct: Sequence[float]) -> None:
    """When the piece holding most of the question's words is a cut of a long line that
    was not chosen (too long for the room) and the chosen cuts hold fewer of them, show a
    window of it around its rarest question word in the room those cuts took (a JSON
    dump's row named in the question, not the short last row that fitted). ``direct``:
    the pieces' direct scores (``PassageSummarizer.direct``)."""
    pieces = plan.pieces
    cuts = [i for i in plan.chosen if pieces[i].cut]
    if not cuts:
        return
    best = max(range(len(pieces)), key=lambda i: (direct[i], -i))
    if best in plan.chosen or not pieces[best].cut or direct[best] <= max(direct[i] for i in cuts):
        return
    room = sum(summarizer.count(pieces[i].text) for i in cuts)
    text = summarizer.window(pieces[best].text, room, inside=continues_line(pieces, best))
    if text and summarizer.count(text) <= room:
        plan.chosen = sorted({*(i for i in plan.chosen if i not in cuts), best})
        plan.window = (best, text)


def fit_excerpt(plan: DocPlan, body: str, max_tokens: int, model: str) -> str:
    """``excerpt_text`` within ``max_tokens``: joined pieces can count more than their
    sum, so the least relevant chosen piece is dropped until the excerpt fits."""
    while plan.chosen:
        out = excerpt_text(plan, body)
        if count_tokens(out, model) <= max_tokens:
            return out
        if len(plan.chosen) == 1:
            return truncate_to_tokens(out, max_tokens, model)
        plan.chosen.remove(min(plan.chosen, key=lambda i: (plan.relevance[i], -i)))
    return ""


def passage_summarizer(
    terms: Sequence[str],
    weights: Mapping[str, float],
    essences: Mapping[str, str],
    model: str,
) -> PassageSummarizer:
    """The question-focused summarizer of ask (see :class:`PassageSummarizer`)."""
    return PassageSummarizer(terms, weights, essences, model)
