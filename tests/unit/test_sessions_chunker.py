"""Chunker: threshold, event/token limits (in real tokens), overlap, stable ids."""

from __future__ import annotations

import pytest

from selene_dag.context.tokens import count_tokens, count_tokens_batch
from selene_dag.sessions.chunker import ChunkConfig, build_chunks, chunk_id
from selene_dag.sessions.parsers import parse_file
from selene_dag.sessions.parsers.model import SessionEvent
from selene_dag.sessions.scoring import score_events
from tests.support.sessions import ALL_FILES


def events(n: int, text: str = "word " * 5, importance: int = 60) -> list[SessionEvent]:
    out = []
    for i in range(n):
        e = SessionEvent("s", "claude", i, None, "user", "user_prompt", f"{i}: {text}")
        e.importance = importance
        out.append(e)
    return out


def test_threshold_filters_low_importance_and_empty_text() -> None:
    evs = events(6)
    evs[1].importance = 29
    evs[2].importance = 30
    evs[3].text = "   "
    chunks = build_chunks(evs, "k")
    assert chunks[0].seqs == (0, 2, 4, 5)


def test_a_chunk_takes_the_times_its_dated_events_give() -> None:
    evs = events(5)
    stamps = [None, "2026-08-03T10:48:56.000Z", None, "2026-08-03T11:00:00.000Z", None]
    for e, ts in zip(evs, stamps, strict=True):
        e.timestamp = ts
    (chunk,) = build_chunks(evs, "k")
    assert (chunk.first_timestamp, chunk.last_timestamp) == (
        "2026-08-03T10:48:56.000Z",
        "2026-08-03T11:00:00.000Z",
    )
    for e in evs:
        e.timestamp = None
    (undated,) = build_chunks(evs, "k")
    assert (undated.first_timestamp, undated.last_timestamp) == (None, None)


def test_event_limit_and_overlap() -> None:
    chunks = build_chunks(events(45), "k", ChunkConfig(max_events=20, overlap=2))
    assert [c.event_count for c in chunks] == [20, 20, 9]
    assert chunks[1].seqs[:2] == chunks[0].seqs[-2:]
    assert chunks[2].seqs[:2] == chunks[1].seqs[-2:]
    covered = sorted({s for c in chunks for s in c.seqs})
    assert covered == list(range(45))
    assert [c.chunk_index for c in chunks] == [0, 1, 2]


def test_token_limit_is_exact_and_huge_events_are_truncated() -> None:
    evs = events(12, text="lorem ipsum dolor sit amet " * 60)
    evs[5].text = "giant " * 9000
    config = ChunkConfig(max_tokens=1000, overlap=1)
    chunks = build_chunks(evs, "k", config)
    for c in chunks:
        assert c.token_count == count_tokens(c.text)
        assert c.token_count <= 1000
    assert any(5 in c.seqs for c in chunks)


def test_a_huge_event_keeps_its_start_and_its_end() -> None:
    # A 17 MB log's last line (what came of the run) was beyond the chunk: ask found
    # nothing of it.
    evs = events(3)
    log = "\n".join(f"batch {i} processed by worker-{i % 7}" for i in range(40_000))
    evs[1].text = "$ cat logs/worker.log\n" + log + "\nqueue drained, root cause: ostrich"
    chunks = build_chunks(evs, "k", ChunkConfig(max_tokens=1000))
    (chunk,) = [c for c in chunks if 1 in c.seqs]
    assert chunk.token_count <= 1000
    assert "$ cat logs/worker.log" in chunk.text
    assert "batch 39999 processed" in chunk.text and "root cause: ostrich" in chunk.text
    assert "batch 20000 processed" not in chunk.text


@pytest.mark.parametrize("path", ALL_FILES[1:4] + ALL_FILES[-4:-2], ids=lambda p: p.name[:30])
def test_real_sessions_chunk_within_defaults(path) -> None:
    evs = parse_file(path).events
    score_events(evs)
    chunks = build_chunks(evs, "claude-abc")
    assert chunks
    for c in chunks:
        assert c.event_count <= 20
        assert c.token_count <= 4000
        assert c.importance_avg >= 30
        assert c.id == chunk_id("claude-abc", c.first_seq, c.last_seq)
    # Counted from the lines' counts, exactly the count of the chunk's text.
    assert [c.token_count for c in chunks] == count_tokens_batch([c.text for c in chunks])
    again = build_chunks(evs, "claude-abc")
    assert [c.id for c in again] == [c.id for c in chunks]
    assert len({c.id for c in chunks}) == len(chunks)


def test_bad_config() -> None:
    with pytest.raises(ValueError):
        ChunkConfig(overlap=20)
    with pytest.raises(ValueError):
        build_chunks(events(2), "")
