"""The documents the HTTP API answers with, as OpenAPI shows them at ``/docs``.

These models describe the successful answers for a client reading the schema; the routes
return the same documents as the CLI's ``--format json`` (built by ``selene_dag.service``),
so a key added there appears in the answer before it is described here.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

_OPEN = ConfigDict(extra="allow", populate_by_name=True)


class AskItem(BaseModel):
    """One part of a pack: a note or a session chunk at the level the budget afforded."""

    model_config = _OPEN

    id: str = Field(description="`note:<id>` or `chunk:<id>`.")
    kind: str = Field(description="`note` or `chunk`.")
    level: str = Field(description="`full`, `summary`, `keywords` or `reference`.")
    score: float = Field(description="Relevance to the question, 0–1.")
    citation: str = Field(description="`note <id>` or `<session key> events a-b`.")
    title: str
    text: str = Field(description="The rendered block, its citation header included.")
    tokens: int = Field(description="The block's tokens in the target model.")
    excerpt: bool = Field(description="True when the block shows part of the document.")
    location: str = Field(
        description="What an excerpt shows (`note <id> lines 12-30`); '' when whole."
    )
    path: str = Field(description="The session's transcript file (chunks); '' for notes.")


class AskResponse(BaseModel):
    """``ask --format json``: the pack as text and as items, with its accounting."""

    model_config = _OPEN

    schema_version: int = Field(alias="schema", description="1; keys are added, never renamed.")
    question: str
    budget: int
    model: str
    total_tokens: int = Field(description="Tokens of `text` in the target model (≤ budget).")
    text: str = Field(description="The exact pack the md form prints.")
    items: list[AskItem]
    stats: dict[str, Any] = Field(
        description="terms, sources, fts_matches, after_dedup, considered, levels, note, "
        "search_ms, elapsed_ms, notes_marked, index_refreshed, refresh_ms, tokenizer, tokens_exact, "
        "mode, passages, passage_docs (and rewrite, reranked, rerank with a model server)."
    )


class ShowResponse(BaseModel):
    """What a citation points at, whole."""

    model_config = _OPEN

    citation: str = Field(description="The citation as asked.")
    shown: str = Field(description="What `text` holds: the lines or events shown.")
    text: str
    source: str = Field(description="The note's file or the session's transcript.")
    records: str = Field(description="The transcript's records of the events shown ('' for notes).")
    file_line_offset: int | None = Field(
        default=None, description="For a note whose file opens with front matter: its lines."
    )
    note: str | None = Field(
        default=None, description="Said when the citation was moved or retired."
    )


class ContextEntry(BaseModel):
    model_config = _OPEN

    id: str
    name: str | None = Field(default=None, description="A thread's name.")
    tier: str | None = Field(default=None, description="A note's tier as shown.")


class ContextResponse(BaseModel):
    """``context --format json``: the tiered context of every note."""

    model_config = _OPEN

    budget: int
    model: str
    tokenizer: str = Field(description="What counted the model's tokens.")
    tokens_exact: bool = Field(description="False when the count is an upper estimate.")
    total_tokens: int
    counts: dict[str, int] = Field(description="Notes per tier shown, and `excluded`.")
    threads: list[ContextEntry] = Field(description="The threads shown, in order.")
    notes: list[ContextEntry] = Field(description="The notes shown, in order.")
    text: str
    note: str | None = Field(default=None, description="Why no note is shown, when none is.")


class CompactStep(BaseModel):
    """One step of the compaction that ran."""

    model_config = _OPEN

    name: str = Field(
        description="memory digest, P1 strip chitchat, P2 compact stages, P3 summarize, "
        "P4 signal caller, or brute prune (the chain's steps in order)."
    )
    removed: int = Field(description="Messages removed or replaced.")
    tokens_before: int
    tokens_after: int
    detail: str


class CompactResponse(BaseModel):
    """The compacted messages and what each step removed."""

    model_config = _OPEN

    window: int
    model: str
    tokenizer: str
    tokens_exact: bool
    tokens_before: int
    tokens_after: int = Field(description="Tokens of `messages` (≤ window).")
    compaction_threshold: int = Field(
        description="Tokens the chain aims at or under (the lower of 85% and 80% of window)."
    )
    resolved_at: str = Field(
        description="Where it got under the threshold: none (nothing to do), P1, P2 or P3 "
        "(after that step), P4 (staged messages: shrink their detail), prune, or unresolved."
    )
    removed: int = Field(description="Messages removed or replaced in all.")
    shrink_stage_detail: bool = Field(
        description="Whether the caller should shrink the detail of staged messages (P4)."
    )
    compacted_stages: list[str] = Field(description="Stages whose messages P2 compacted.")
    steps: list[CompactStep]
    messages: list[dict[str, Any]]


class HealthResponse(BaseModel):
    """``health --json``: compression health of the home."""

    model_config = _OPEN

    status: str
    timestamp: str
    tiers: dict[str, int] = Field(description="Notes per stored tier.")
    essences: dict[str, Any] = Field(description="total, computed, remaining, percent.")
    threadDigests: dict[str, Any] = Field(
        description="activeThreads, withDigest, eligible, eligibleWithoutDigest."
    )
    skippedInputs: dict[str, Any] = Field(description="count, newest.")
    noteFolders: list[dict[str, Any]] = Field(description="Every ingested folder.")
    sessions: dict[str, Any] = Field(
        description="files, events, chunks, distilled, filesWithUnreadableLines, "
        "unreadableLines, worst."
    )
