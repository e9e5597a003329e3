"""The chunk assessors of the ``chunk_scores`` asset, behind one small interface.

Each assessor maps a chunk (text + its events) to seed 003's three 1–10 ratings.

* ``extractive`` — the ExtractiveEngine's content heuristics (code, file paths, errors,
  decisions, noise) over the chunk text. Always present.
* ``importance`` — a second, independent heuristic over the *structure* of the chunk: its
  mean importance score and which kinds of events it holds (prompts, edits, errors). With
  the offline engine alone these two give the 2 assessments seed 003 requires for a
  consensus, from different evidence (what the text says vs. what happened).
* ``ollama`` — the Ollama engine's model rating, when SELENE_LLM=ollama.
* ``claude`` / ``codex`` / ``gemini`` — the CLIs named in SELENE_CLI_ASSESSORS that are on PATH.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from selene_dag.llm.engine import Assessment, EngineResponseError

ASSESS_CONTENT_KINDS = ("user_prompt", "assistant_text", "tool_use", "error")


@dataclass(frozen=True)
class ChunkView:
    """What an assessor sees: the chunk text, mean importance and its events' features."""

    chunk_id: str
    text: str
    importance_avg: float
    kinds: tuple[str, ...]
    errors: int
    file_edits: int
    code_blocks: int


@dataclass(frozen=True)
class NamedAssessment:
    """One assessor's ratings of one chunk."""

    assessor: str
    assessment: Assessment


Assessor = Callable[[ChunkView], Assessment]


def _clamp(value: float) -> int:
    return max(1, min(10, round(value)))


def importance_assessment(view: ChunkView) -> Assessment:
    """Structural heuristic (see the module docstring), deterministic.

    relevance = 1 + 9 × (importance_avg − 30) / 60; signal_density = 1 + 9 × share of
    prompt/answer/tool/error events; reusability = 2 + 3 (a file edit) + 2 (an error)
    + 2 (a user prompt) + 1 (a code block).
    """
    n = max(len(view.kinds), 1)
    relevance = _clamp(1 + 9 * max(0.0, min(1.0, (view.importance_avg - 30) / 60)))
    content = sum(k in ASSESS_CONTENT_KINDS for k in view.kinds) + view.errors
    density = _clamp(1 + 9 * min(1.0, content / n))
    reuse = 2 + 3 * (view.file_edits > 0) + 2 * (view.errors > 0)
    reuse += 2 * ("user_prompt" in view.kinds) + (view.code_blocks > 0)
    reason = (
        f"importance: mean {view.importance_avg:.1f}, {content}/{n} content events, "
        f"{view.file_edits} file edits, {view.errors} errors"
    )
    return Assessment(relevance, density, _clamp(reuse), reason)


def run_assessors(
    view: ChunkView,
    assessors: Sequence[tuple[str, Assessor]],
    unusable: list[str] | None = None,
) -> list[NamedAssessment]:
    """Run each ``(name, assessor)`` on ``view``. A model that answers one chunk unusably
    (:class:`EngineResponseError`) leaves that chunk to the other assessors, the reason
    added to ``unusable``; other errors propagate (an Ollama server that is down fails the
    step with its message); CLI assessors report their own failures."""
    out: list[NamedAssessment] = []
    for name, assess in assessors:
        try:
            out.append(NamedAssessment(name, assess(view)))
        except EngineResponseError as exc:
            if unusable is None:
                raise
            unusable.append(f"chunk {view.chunk_id}: {exc}")
    return out
