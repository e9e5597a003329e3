"""Group scored events into assessment chunks (seed 003 §5.5).

Defaults: at most 20 events and 4,000 tokens per chunk, events below importance 30 (and
events without text or on an abandoned branch) left out, 2 events of overlap carried from one chunk into the next.
Tokens are counted in the target model's tokens (``count_tokens_batch``), so a chunk's
``token_count`` is exact and never above ``max_tokens``; a single event longer than the
budget keeps its first two thirds and its last third within it (``cut_middle``): a file
read says most at its start, a log or a test run what came of it at its end. Chunk ids are ``sha1(session_key:first_seq:last_seq)[:16]``:
re-chunking unchanged events gives the same ids.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

from selene_dag.context.tokens import (
    count_line_spans,
    count_tokens,
    count_tokens_batch,
    cut_middle,
    truncate_to_tokens,
)
from selene_dag.sessions.parsers.model import SessionEvent
from selene_dag.sessions.scoring import score_event


@dataclass(frozen=True)
class ChunkConfig:
    """Chunking limits (seed 003 defaults)."""

    max_events: int = 20
    max_tokens: int = 4000
    min_importance: int = 30
    overlap: int = 2

    def __post_init__(self) -> None:
        if self.max_events < 1 or self.max_tokens < 16:
            raise ValueError("ChunkConfig needs max_events >= 1 and max_tokens >= 16")
        if not 0 <= self.overlap < self.max_events:
            raise ValueError("ChunkConfig.overlap must be >= 0 and < max_events")


@dataclass(frozen=True)
class Chunk:
    """A window of consecutive kept events, rendered as text for assessment/distillation."""

    id: str
    session_key: str
    chunk_index: int
    first_seq: int
    last_seq: int
    text: str
    token_count: int
    importance_avg: float
    event_count: int
    seqs: tuple[int, ...]
    first_timestamp: str | None = None
    last_timestamp: str | None = None


def chunk_id(session_key: str, first_seq: int, last_seq: int) -> str:
    """Stable id of a chunk from its session key and first/last event seq."""
    return hashlib.sha1(f"{session_key}:{first_seq}:{last_seq}".encode()).hexdigest()[:16]


def render_event(event: SessionEvent) -> str:
    """One line (or block) of chunk text for an event: ``[role/kind tool] text``."""
    label = f"{event.role}/{event.kind}"
    if event.tool_name:
        label += f" {event.tool_name}"
    if event.is_error:
        label += " ERROR"
    return f"[{label}] {event.text.strip()}"


def chunk_line(event: SessionEvent) -> str:
    """The event's line in a chunk's text: :func:`render_event` and a line break."""
    return render_event(event) + "\n"


def is_chunked(event: SessionEvent, config: ChunkConfig) -> bool:
    """Whether ``config`` keeps ``event`` in a chunk (see the module docstring); an event
    whose ``importance`` is None is scored with :func:`score_event`."""
    if event.abandoned or not event.text.strip():
        return False
    importance = event.importance if event.importance is not None else score_event(event)
    return importance >= config.min_importance


def build_chunks(
    events: Sequence[SessionEvent],
    session_key: str,
    config: ChunkConfig = ChunkConfig(),
    model: str | None = None,
) -> list[Chunk]:
    """Chunks of ``events`` (in seq order) for ``session_key``; see the module docstring.

    Events whose ``importance`` is None are scored with :func:`score_event` first. An
    event's ``line_tokens``, when set, is taken as the count of its line in ``model``.
    """
    if not session_key:
        raise ValueError("build_chunks() needs a non-empty session_key")
    kept = [e for e in sorted(events, key=lambda e: e.seq) if is_chunked(e, config)]
    if not kept:
        return []
    lines = [chunk_line(e) for e in kept]
    todo = [i for i, e in enumerate(kept) if e.line_tokens is None]
    counts = [e.line_tokens or 0 for e in kept]
    for i, n in zip(todo, count_tokens_batch([lines[i] for i in todo], model=model), strict=True):
        counts[i] = n
    for i, n in enumerate(counts):
        if n > config.max_tokens:
            lines[i] = (
                cut_middle(lines[i].rstrip("\n"), config.max_tokens - 1, model, head=2 / 3) + "\n"
            )
            counts[i] = count_tokens(lines[i], model=model)
    windows: list[list[int]] = []
    current: list[int] = []
    used = 0
    for i, n in enumerate(counts):
        if current and (len(current) >= config.max_events or used + n > config.max_tokens):
            windows.append(current)
            carry = current[-config.overlap :] if config.overlap else []
            while carry and sum(counts[j] for j in carry) + n > config.max_tokens:
                carry = carry[1:]
            current, used = list(carry), sum(counts[j] for j in carry)
        current.append(i)
        used += n
    windows.append(current)
    texts = ["".join(lines[j] for j in window).rstrip("\n") for window in windows]
    # A window is a run of consecutive lines: its count follows from theirs.
    if all(w[-1] - w[0] + 1 == len(w) for w in windows):
        totals = count_line_spans(lines, [(w[0], w[-1] + 1) for w in windows], model, counts)
    else:  # not reached: the carry is a suffix of the window before
        totals = count_tokens_batch(texts, model=model)
    chunks: list[Chunk] = []
    for index, window in enumerate(windows):
        members = [kept[j] for j in window]
        text, tokens = texts[index], totals[index]
        if tokens > config.max_tokens:  # tokenizers almost never merge across lines; guard anyway
            text = truncate_to_tokens(text, config.max_tokens, model=model)
            tokens = count_tokens(text, model=model)
        scores = [m.importance if m.importance is not None else score_event(m) for m in members]
        first, last = members[0].seq, members[-1].seq
        chunks.append(
            Chunk(
                id=chunk_id(session_key, first, last),
                session_key=session_key,
                chunk_index=index,
                first_seq=first,
                last_seq=last,
                text=text,
                token_count=tokens,
                importance_avg=round(sum(scores) / len(scores), 3),
                event_count=len(members),
                seqs=tuple(m.seq for m in members),
                # The first and last times among its events: an event without one (a tool's
                # record some transcripts leave undated) does not blank the chunk's.
                first_timestamp=next((m.timestamp for m in members if m.timestamp), None),
                last_timestamp=next((m.timestamp for m in reversed(members) if m.timestamp), None),
            )
        )
    return chunks
