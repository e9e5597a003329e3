"""Importance score: seed weights, clamp, and the vectorized version agrees (hypothesis)."""

from __future__ import annotations

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from selene_dag.sessions.parsers import KINDS, parse_file
from selene_dag.sessions.parsers.model import SessionEvent
from selene_dag.sessions.scoring import ScoringConfig, score_event, score_events, score_frame
from tests.support.sessions import ALL_FILES


def ev(
    kind: str = "assistant_text", text: str = "hello", tool: str | None = None, error: bool = False
) -> SessionEvent:
    return SessionEvent(
        "s", "claude", 0, None, "assistant", kind, text, tool_name=tool, is_error=error
    )


@pytest.mark.parametrize(
    ("event", "expected"),
    [
        (ev(), 50),
        (ev("tool_use", tool="Bash"), 65),
        (ev("tool_result", error=True), 70),
        (ev("error"), 70),
        (ev("user_prompt"), 60),
        (ev(text="see ```py\nx\n```"), 60),
        (ev("tool_use", tool="Edit"), 77),
        (ev("tool_use", tool="shell", text="*** Begin Patch\n*** Update File: a.py"), 77),
        (ev(text="x" * 2001), 45),
        (ev(text="x" * 2000), 50),
        (ev("system"), 30),
        (ev("hook"), 35),
        (ev("tool_use", tool="Write", text="```" + "x" * 3000, error=True), 100),
    ],
)
def test_seed_weights(event: SessionEvent, expected: int) -> None:
    assert score_event(event) == expected


def test_clamp_low_and_custom_config() -> None:
    harsh = ScoringConfig(system_event_penalty=-90)
    assert score_event(ev("system"), harsh) == 0
    generous = ScoringConfig(tool_use_bonus=80)
    assert score_event(ev("tool_use", tool="Edit"), generous) == 100


event_strategy = st.builds(
    ev,
    kind=st.sampled_from(KINDS),
    text=st.one_of(
        st.text(max_size=40),
        st.sampled_from(["```code```", "*** Begin Patch", "y" * 2001, "```" + "z" * 2100]),
    ),
    tool=st.one_of(
        st.none(),
        st.sampled_from(["Edit", "Bash", "write_file", "apply_patch", "Read", "MultiEdit"]),
    ),
    error=st.booleans(),
)


@settings(max_examples=60, deadline=None)
@given(st.lists(event_strategy, min_size=1, max_size=40))
def test_vectorized_agrees_with_per_event(events: list[SessionEvent]) -> None:
    frame = pd.DataFrame(
        {
            "kind": [e.kind for e in events],
            "is_error": [e.is_error for e in events],
            "text": [e.text for e in events],
            "tool_name": [e.tool_name for e in events],
        }
    )
    assert score_frame(frame).tolist() == [score_event(e) for e in events]


@pytest.mark.parametrize("path", ALL_FILES[:4], ids=lambda p: p.name[:30])
def test_real_files_agree_and_stay_in_range(path) -> None:
    events = parse_file(path).events
    per_event = [score_event(e) for e in events]
    assert score_events(events) == per_event
    assert all(e.importance == s for e, s in zip(events, per_event, strict=True))
    assert all(0 <= s <= 100 for s in per_event)


def test_bad_input() -> None:
    with pytest.raises(TypeError):
        score_event({"kind": "x"})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="columns"):
        score_frame(pd.DataFrame({"kind": ["x"]}))
