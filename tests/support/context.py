"""Helpers for the context library tests: texts of an exact token size, notes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from selene_dag.context import count_tokens

MODELS = ("mistral:7b", "gpt-4o", "some-unknown-model")


def text_of_tokens(n: int, model: str, word: str = "hello") -> str:
    """A text of exactly ``n`` tokens of ``model`` (asserted)."""
    text = " ".join([word] * n)
    while count_tokens(text, model) > n:
        text = text.rsplit(" ", 1)[0]
    while count_tokens(text, model) < n:
        text += f" {word}"
    assert count_tokens(text, model) == n, (n, model)
    return text


def note(i: int, tier: str = "full", **extra: Any) -> dict[str, Any]:
    """A note whose fields vary with ``i`` (newer for a larger i)."""
    base = {
        "id": i,
        "title": f"Note {i} about topic {i % 7}",
        "content": f"Body of note {i}. " + "It explains one idea in detail. " * (i % 5 + 1),
        "essence": f"Note {i} distilled." if i % 3 else None,
        "concepts": ["idea", f"topic-{i % 7}"],
        "primary_theme": f"theme-{i % 4}" if i % 2 else None,
        "created_at": (datetime(2024, 1, 1, tzinfo=UTC) + timedelta(days=i)).isoformat(),
        "fidelity_tier": tier,
    }
    base.update(extra)
    return base
