"""Bad input never raises: session parsers and the notes reader count what they skip.

Random bytes, truncated lines, records with wrong types, huge lines and deep nesting go
through ``parse_file`` of all three platforms and through ``read_notes``; 10,000 garbage
lines interleaved in a real session file lose none of its events.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from selene_dag.notes.ingest import read_notes
from selene_dag.sessions.parsers import parse_file

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "sessions"
REAL = {
    "claude": FIXTURES / "claude" / "claude-code-log_326189cf-5676-4237-8cde-1ce80aae4a9f.jsonl",
    "codex": FIXTURES
    / "codex"
    / "rollout-2025-11-17T15-30-28-019a93b9-f380-7600-98ff-940e6b99603c.jsonl",
    "gemini": FIXTURES / "gemini" / "VibeCodingTracker_gemini.jsonl",
}
DEMO_NOTES = Path(__file__).resolve().parents[2] / "assets" / "demo" / "notes" / "til.jsonl"
FUZZ = settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def _real_records(platform: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in REAL[platform].read_text().splitlines() if line.strip()]


RECORDS = {platform: _real_records(platform) for platform in REAL}

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False)
    | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)


def _deep(depth: int) -> Any:
    """A value nested ``depth`` levels (orjson writes at most 255 levels)."""
    value: Any = "x"
    for i in range(min(depth, 250)):
        value = [value] if i % 2 else {"content": value}
    return value


def _deep_text(depth: int) -> bytes:
    """JSON text nested ``depth`` levels, deeper than any decoder accepts when large."""
    return b'{"content": ' * depth + b'"x"' + b"}" * depth


@st.composite
def bad_line(draw: st.DrawFn, platform: str) -> bytes:
    """One line that a careless parser could choke on (never a newline inside)."""
    records = RECORDS[platform]
    pick = st.integers(0, len(records) - 1).map(lambda i: records[i])
    kind = draw(
        st.sampled_from(["bytes", "truncated", "wrong_type", "huge", "deep", "deep_invalid"])
    )
    if kind == "bytes":
        raw = draw(st.binary(max_size=200))
    elif kind == "truncated":
        full = orjson.dumps(draw(pick))
        raw = full[: draw(st.integers(0, max(len(full) - 1, 0)))]
    elif kind == "wrong_type":
        record = dict(draw(pick))
        for key in draw(st.lists(st.sampled_from(sorted(record)), min_size=1, max_size=3)):
            record[key] = draw(json_values)
        if isinstance(record.get("message"), dict) or isinstance(record.get("payload"), dict):
            inner_key = "message" if "message" in record else "payload"
            inner = dict(record[inner_key])
            for key in list(inner)[:2]:
                inner[key] = draw(json_values)
            record[inner_key] = inner
        raw = orjson.dumps(record)
    elif kind == "huge":
        record = dict(draw(pick))
        record["message" if platform == "claude" else "payload"] = {"content": "y" * 1_500_000}
        raw = orjson.dumps(record)
    elif kind == "deep":
        record = dict(draw(pick))
        record["message" if "message" in record else "payload"] = _deep(200)
        raw = orjson.dumps(record)
    else:  # nesting beyond any JSON decoder's limit
        raw = b"[" * 100_000 + b"]" * draw(st.integers(0, 3))
    return raw.replace(b"\n", b" ").replace(b"\r", b" ")


def _lines(platform: str) -> st.SearchStrategy[list[bytes]]:
    records = RECORDS[platform]
    good = st.integers(0, len(records) - 1).map(lambda i: orjson.dumps(records[i]))
    return st.lists(bad_line(platform) | good, min_size=1, max_size=12)


def _not_an_object(raw: bytes) -> bool:
    if not raw.strip():
        return False
    try:
        return not isinstance(orjson.loads(raw), dict)
    except orjson.JSONDecodeError:
        return True


@pytest.mark.parametrize("platform", sorted(REAL))
@FUZZ
@given(data=st.data())
def test_parsers_never_raise_on_bad_lines(platform: str, tmp_path: Path, data: st.DataObject):
    lines = data.draw(_lines(platform))
    path = tmp_path / f"fuzz-{platform}.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")

    result = parse_file(path, platform)

    assert result.platform == platform
    assert result.errors >= 0 and len(result.error_samples) <= result.errors
    for event in result.events:
        assert isinstance(event.text, str)
    first = next((raw for raw in lines if raw.strip()), b"")
    if platform != "gemini" or not _not_an_object(first):
        # Every line that is not a JSON object was counted as an error, not silently dropped.
        # (A Gemini file whose first line is not an object is read as one JSON document:
        # one error for the whole file.)
        # (A byte-order mark opening the file is no line of its own: a line holding
        # nothing else is blank.)
        read = [lines[0].removeprefix(b"\xef\xbb\xbf"), *lines[1:]] if lines else []
        assert result.errors >= sum(_not_an_object(raw) for raw in read)


@FUZZ
@given(doc=json_values, deep=st.integers(0, 3000))
def test_gemini_single_document_of_any_shape_never_raises(
    tmp_path: Path, doc: Any, deep: int
) -> None:
    path = tmp_path / "chat.json"
    if deep % 2:
        text = b'{"sessionId": "s", "messages": [' + orjson.dumps(doc) + b", "
        text += _deep_text(deep) + b"]}"
    else:
        text = orjson.dumps(doc)
    path.write_bytes(text)
    result = parse_file(path, "gemini")
    assert result.errors >= 0


def _garbage(rng: random.Random, platform: str) -> bytes:
    choice = rng.randrange(5)
    if choice == 0:
        raw = rng.randbytes(rng.randrange(1, 120))
    elif choice == 1:
        full = orjson.dumps(rng.choice(RECORDS[platform]))
        raw = full[: rng.randrange(1, len(full) - 1)]
    elif choice == 2:
        raw = orjson.dumps(rng.choice([[1, 2], 3, "text", None, True, [{"type": "user"}]]))
    elif choice == 3:
        raw = b"{" * rng.randrange(1, 3000)
    else:
        raw = b'{"type": "user", "message": ' + b"x" * rng.randrange(1, 5000)
    raw = raw.replace(b"\n", b" ").replace(b"\r", b" ")
    return raw if _not_an_object(raw) else b"not json"


@pytest.mark.parametrize("platform", sorted(REAL))
def test_ten_thousand_garbage_lines_lose_no_good_line(platform: str, tmp_path: Path) -> None:
    clean = parse_file(REAL[platform], platform)
    assert clean.events and clean.errors == 0

    rng = random.Random(f"ops-{platform}")
    good = [line for line in REAL[platform].read_bytes().splitlines() if line.strip()]
    garbage = [_garbage(rng, platform) for _ in range(10_000)]
    # Spread the garbage between (and before) the good lines, keeping their order.
    slots = sorted(rng.randrange(len(good) + 1) for _ in garbage)
    mixed: list[bytes] = []
    g = 0
    for position in range(len(good) + 1):
        while g < len(slots) and slots[g] == position:
            mixed.append(garbage[g])
            g += 1
        if position < len(good):
            mixed.append(good[position])
    path = tmp_path / REAL[platform].name
    path.write_bytes(b"\n".join(mixed) + b"\n")

    dirty = parse_file(path, platform)

    assert len(dirty.events) == len(clean.events)
    assert [e.text for e in dirty.events] == [e.text for e in clean.events]
    assert dirty.errors == len(garbage)


@FUZZ
@given(
    lines=st.lists(
        st.binary(max_size=80)
        | json_values.map(orjson.dumps)
        | st.builds(
            lambda d: orjson.dumps(d),
            st.fixed_dictionaries(
                {"id": json_values, "title": json_values, "content": json_values},
                optional={"created_at": json_values, "tags": json_values, "topic": json_values},
            ),
        ),
        max_size=15,
    ),
    markdown=st.binary(max_size=300),
)
def test_read_notes_never_raises_on_bad_input(
    tmp_path: Path, lines: list[bytes], markdown: bytes
) -> None:
    folder = tmp_path / "notes"
    folder.mkdir(exist_ok=True)
    (folder / "a.jsonl").write_bytes(b"\n".join(x.replace(b"\n", b" ") for x in lines) + b"\n")
    (folder / "b.md").write_bytes(markdown)
    (folder / "deep.jsonl").write_bytes(b"[" * 50_000 + b"\n" + _deep_text(5_000) + b"\n")

    result = read_notes(folder)

    assert len(result.notes) + len(result.errors) >= 1
    for note in result.notes:
        assert note.id and isinstance(note.title, str) and isinstance(note.content, str)
    assert len(result.files_ok) + len(result.files_failed) == 3


def _notes_among_garbage(tmp_path: Path, garbage: list[bytes]) -> tuple[int, Path]:
    rng = random.Random("ops-notes")
    good = [line for line in DEMO_NOTES.read_bytes().splitlines() if line.strip()]
    mixed = good + garbage
    rng.shuffle(mixed)
    path = tmp_path / "notes.jsonl"
    path.write_bytes(b"\n".join(mixed) + b"\n")
    return len(good), path


def test_read_notes_keeps_every_good_note_among_garbage(tmp_path: Path) -> None:
    rng = random.Random("ops-garbage")
    alphabet = 'abc{}[]":,0123 é€😀\\'
    garbage = [
        rng.choice(
            [
                "".join(rng.choice(alphabet) for _ in range(40)).encode(),
                b"[1, 2]",
                b'{"id": 3',
                b'{"id": [], "title": {}, "content": 5}',
                b"{" * 2000,
            ]
        )
        for _ in range(2_000)
    ]
    good, path = _notes_among_garbage(tmp_path, garbage)

    result = read_notes(path)

    assert len(result.notes) == good
    assert len(result.errors) == len(garbage)


def test_read_notes_keeps_the_good_lines_of_a_jsonl_file_with_one_non_utf8_line(
    tmp_path: Path,
) -> None:
    good, path = _notes_among_garbage(tmp_path, [b'{"id": "x", "title": "\xff\xfe broken"}'])

    result = read_notes(path)

    assert len(result.notes) == good
    assert len(result.errors) == 1 and result.errors[0].line is not None


ODD_VALUES: list[Any] = [None, [], {}, 7, -1.5, True, "x", [1, {"a": None}], {"type": []}]


def _mutations(record: dict[str, Any]) -> list[dict[str, Any]]:
    """Copies of ``record`` with one field (top level or one level down) set to an odd value."""
    out = []
    for key, value in record.items():
        for odd in ODD_VALUES:
            out.append({**record, key: odd})
        if isinstance(value, dict):
            for inner in value:
                for odd in ODD_VALUES:
                    out.append({**record, key: {**value, inner: odd}})
    return out


@pytest.mark.parametrize("platform", sorted(REAL))
def test_every_field_of_real_records_may_hold_a_wrong_type(platform: str, tmp_path: Path) -> None:
    lines = [
        orjson.dumps(mutated)
        for record in RECORDS[platform][:40]
        for mutated in _mutations(record)
        if len(orjson.dumps(record)) < 20_000
    ]
    path = tmp_path / f"types-{platform}.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")

    result = parse_file(path, platform)  # must not raise

    assert result.stats.lines == len(lines)


@pytest.mark.parametrize("platform", ["codex", "gemini"])
def test_every_field_of_a_headless_stream_may_hold_a_wrong_type(
    platform: str, tmp_path: Path
) -> None:
    # `codex exec --json` and `gemini --output-format stream-json` saved to a file.
    from tests.unit.test_parsers_headless import CODEX_EXEC, GEMINI_STREAM

    records = [
        r for r in (CODEX_EXEC if platform == "codex" else GEMINI_STREAM) if isinstance(r, dict)
    ]
    lines = [orjson.dumps(records[0])] + [
        orjson.dumps(mutated) for record in records for mutated in _mutations(record)
    ]
    path = tmp_path / f"headless-{platform}.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")

    result = parse_file(path)  # detected from content; must not raise

    assert result.platform == platform and result.stats.lines == len(lines)


@pytest.mark.parametrize("platform", sorted(REAL))
def test_a_last_line_still_being_written_is_no_error_and_is_read_once_complete(
    platform: str, tmp_path: Path
) -> None:
    # A session is read while its agent runs: the last record may be half written.
    good = [line for line in REAL[platform].read_bytes().splitlines() if line.strip()]
    whole = parse_file(REAL[platform], platform)
    path = tmp_path / REAL[platform].name
    last = good[-1]
    path.write_bytes(b"\n".join(good[:-1]) + b"\n" + last[: len(last) // 2])

    writing = parse_file(path, platform)

    assert writing.errors == 0 and writing.error_samples == []
    assert writing.stats.unfinished_line == len(good)
    assert [e.text for e in writing.events] == [
        e.text for e in parse_file(_without_last(REAL[platform], tmp_path), platform).events
    ]

    path.write_bytes(b"\n".join(good) + b"\n")
    done = parse_file(path, platform)
    assert done.stats.unfinished_line is None
    assert [e.text for e in done.events] == [e.text for e in whole.events]


def test_a_broken_line_that_is_not_the_last_still_counts(tmp_path: Path) -> None:
    good = [line for line in REAL["claude"].read_bytes().splitlines() if line.strip()]
    path = tmp_path / "a.jsonl"
    path.write_bytes(b"\n".join([*good[:-1], good[-1][:20], good[-1]]))  # no final break

    result = parse_file(path, "claude")

    assert result.errors == 1 and result.stats.unfinished_line is None


def test_a_text_line_without_its_break_is_no_record_in_progress(tmp_path: Path) -> None:
    # A one-line text file under a session root was taken for an empty transcript.
    path = tmp_path / "notes.jsonl"
    path.write_bytes(b"just some words, no JSON here")

    result = parse_file(path, "claude")

    assert result.errors == 1 and result.stats.unfinished_line is None


def _without_last(source: Path, tmp_path: Path) -> Path:
    lines = [line for line in source.read_bytes().splitlines() if line.strip()]
    path = tmp_path / "without_last" / source.name
    path.parent.mkdir()
    path.write_bytes(b"\n".join(lines[:-1]) + b"\n")
    return path
