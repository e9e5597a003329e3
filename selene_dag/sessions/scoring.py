"""Importance score of a session event (seed 003 §5.3): base + bonuses, clamped to 0..100.

Defaults: base 50, +15 tool use, +20 error, +10 user prompt, +10 code block (a ``````` fence
in the text), +12 file edit (a tool use of an editing tool, or an apply_patch payload),
−5 content over 2,000 characters, −20 system event, −15 hook event. Bonuses add up.

:func:`score_event` scores one event; :func:`score_frame` scores a whole partition with numpy
and gives the same numbers (property-tested).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from selene_dag.sessions.parsers.model import SessionEvent

# pandas is imported where frames are built: the Dagster definitions load without it.
if TYPE_CHECKING:
    import pandas as pd

EDIT_TOOLS = frozenset(
    {
        "edit",
        "multiedit",
        "write",
        "notebookedit",
        "write_file",
        "replace",
        "edit_file",
        "apply_patch",
        "str_replace_editor",
        "create_file",
        "str_replace_based_edit_tool",
    }
)
PATCH_MARKER = "*** Begin Patch"
CODE_FENCE = "```"
_CODE_FENCE_RE = re.compile(re.escape(CODE_FENCE))
_PATCH_RE = re.compile(re.escape(PATCH_MARKER))


@dataclass(frozen=True)
class ScoringConfig:
    """Weights of the importance score (seed 003 defaults)."""

    base_score: int = 50
    tool_use_bonus: int = 15
    error_bonus: int = 20
    user_prompt_bonus: int = 10
    code_block_bonus: int = 10
    file_edit_bonus: int = 12
    long_content_penalty: int = -5
    long_content_chars: int = 2000
    system_event_penalty: int = -20
    hook_event_penalty: int = -15


DEFAULT_SCORING = ScoringConfig()


def is_file_edit(kind: str, tool_name: str | None, text: str) -> bool:
    """True for a tool call that edits files (editing tool name, or an apply_patch body)."""
    if kind != "tool_use":
        return False
    return (tool_name or "").lower() in EDIT_TOOLS or PATCH_MARKER in text


def score_event(event: SessionEvent, config: ScoringConfig = DEFAULT_SCORING) -> int:
    """Importance of one event, 0..100 (seed 003 weights; see the module docstring)."""
    if not isinstance(event, SessionEvent):
        raise TypeError(f"score_event() expects a SessionEvent, got {type(event).__name__}")
    kind, text = event.kind, event.text
    score = config.base_score
    if kind == "tool_use":
        score += config.tool_use_bonus
    if event.is_error or kind == "error":
        score += config.error_bonus
    if kind == "user_prompt":
        score += config.user_prompt_bonus
    if CODE_FENCE in text:
        score += config.code_block_bonus
    if is_file_edit(kind, event.tool_name, text):
        score += config.file_edit_bonus
    if len(text) > config.long_content_chars:
        score += config.long_content_penalty
    if kind == "system":
        score += config.system_event_penalty
    if kind == "hook":
        score += config.hook_event_penalty
    return max(0, min(100, score))


def score_arrays(
    kind: np.ndarray,
    is_error: np.ndarray,
    text_len: np.ndarray,
    has_code: np.ndarray,
    file_edit: np.ndarray,
    config: ScoringConfig = DEFAULT_SCORING,
) -> np.ndarray:
    """Vectorized score from precomputed per-event features (arrays of equal length)."""
    c = config
    score = np.full(len(kind), c.base_score, dtype=np.int32)
    score += np.where(kind == "tool_use", c.tool_use_bonus, 0).astype(np.int32)
    score += np.where(is_error | (kind == "error"), c.error_bonus, 0).astype(np.int32)
    score += np.where(kind == "user_prompt", c.user_prompt_bonus, 0).astype(np.int32)
    score += np.where(has_code, c.code_block_bonus, 0).astype(np.int32)
    score += np.where(file_edit, c.file_edit_bonus, 0).astype(np.int32)
    score += np.where(text_len > c.long_content_chars, c.long_content_penalty, 0).astype(np.int32)
    score += np.where(kind == "system", c.system_event_penalty, 0).astype(np.int32)
    score += np.where(kind == "hook", c.hook_event_penalty, 0).astype(np.int32)
    return np.clip(score, 0, 100)


def score_frame(frame: pd.DataFrame, config: ScoringConfig = DEFAULT_SCORING) -> np.ndarray:
    """Scores of every row of ``frame`` (columns kind, is_error, text, tool_name), vectorized.

    Agrees with :func:`score_event` row by row. Raises ValueError when a column is missing.
    """
    missing = {"kind", "is_error", "text", "tool_name"} - set(frame.columns)
    if missing:
        raise ValueError(f"score_frame() needs columns {sorted(missing)}")
    kind = frame["kind"].to_numpy(dtype=object)
    # Plain Python over the list beats pandas' str accessor (without pyarrow it calls a
    # lambda per row), and a compiled literal pattern beats ``in``: substring search is
    # nearly the whole cost of the features.
    texts = frame["text"].fillna("").astype(str).tolist()
    n = len(texts)
    text_len = np.fromiter(map(len, texts), dtype=np.int64, count=n)
    code = _CODE_FENCE_RE.search
    has_code = np.array([code(t) is not None for t in texts], dtype=bool)
    tool_use = kind == "tool_use"
    file_edit = np.zeros(n, dtype=bool)
    if tool_use.any():  # only tool calls can be file edits: test just those rows
        rows = np.flatnonzero(tool_use)
        tools = (
            frame["tool_name"].iloc[rows].fillna("").astype(str).str.lower().isin(EDIT_TOOLS)
        ).to_numpy()
        patch = _PATCH_RE.search
        patched = np.array([patch(texts[i]) is not None for i in rows.tolist()], dtype=bool)
        file_edit[rows] = tools | patched
    is_error = frame["is_error"].fillna(False).to_numpy(dtype=bool)
    return score_arrays(kind, is_error, text_len, has_code, file_edit, config)


def score_events(
    events: Sequence[SessionEvent], config: ScoringConfig = DEFAULT_SCORING
) -> list[int]:
    """Score a list of events in place (sets ``event.importance``) and return the scores."""
    import pandas as pd

    if not events:
        return []
    frame = pd.DataFrame(
        {
            "kind": [e.kind for e in events],
            "is_error": [e.is_error for e in events],
            "text": [e.text for e in events],
            "tool_name": [e.tool_name for e in events],
        }
    )
    scores = score_frame(frame, config).tolist()
    for event, value in zip(events, scores, strict=True):
        event.importance = int(value)
    return scores
