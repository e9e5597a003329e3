"""Citations (issue #15: note id + span, or session file + event range) name what the
pack shows, and ``show`` prints what they point at whole.

A session chunk leaves out events of low importance, so its events' numbers have gaps:
the citation of a chunk excerpt names the numbers of the events it shows, read from the
chunk, not counted from the chunk's first event. Every item's citation read back by
``show`` holds the item's text, with context around it on request."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from selene_dag.config import load_settings
from selene_dag.errors import NotFoundError, UsageError
from selene_dag.retrieval.citations import show
from selene_dag.retrieval.index import build_index
from selene_dag.retrieval.pack import ask
from selene_dag.sessions.chunker import build_chunks, render_event
from selene_dag.sessions.scanner import scan_roots
from selene_dag.sessions.steps import ingest_session
from selene_dag.sessions.store import load_events, replace_chunks
from selene_dag.store import connect
from tests.support.ask import NOW
from tests.support.sessions import REAL_CODEX

MODEL = "mistral:7b"
QUESTIONS = (
    "How was the LM Studio provider added?",
    "Which files were changed for the provider?",
    "What command ran the tests or the build?",
    "What did the user ask for first?",
)


NOTE_ID = "notes/providers.md"
# A long note: an answer in it is an excerpt of some of its lines.
NOTE = "\n".join(
    [
        "# Provider settings",
        *(f"Line {i}: the gateway keeps request log number {i} for the audit." for i in range(40)),
        "The LM Studio provider listens on port 1234 and needs no API key.",
        *(f"Line {i}: nightly job {i} rotates the archive of old reports." for i in range(40, 80)),
    ]
)


def _flat(text: str) -> str:
    # A piece ends at a line break or at an escaped one (a tool's JSON input): compare
    # texts with both as line breaks, each line stripped.
    return "\n".join(line.strip() for line in text.replace("\\n", "\n").splitlines())


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("citations")
    sessions = root / "codex"
    sessions.mkdir()
    (sessions / REAL_CODEX.name).write_bytes(REAL_CODEX.read_bytes())
    settings = load_settings(
        {"SELENE_HOME": str(root / "home"), "SELENE_SESSION_ROOTS": f"codex={sessions}"}
    )
    conn = connect(settings.db_path)
    conn.execute(
        "INSERT INTO notes (id, title, content, content_hash, created_at, updated_at, source) "
        "VALUES (?, 'Provider settings', ?, md5(?), ?, ?, '/notes/providers.md')",
        [NOTE_ID, NOTE, NOTE, NOW, NOW],
    )
    [scanned] = scan_roots(settings.session_roots)
    ingest_session(conn, scanned, NOW, MODEL)
    events = load_events(conn, scanned.session_key)
    chunks = build_chunks(events, scanned.session_key, model=MODEL)
    replace_chunks(conn, scanned.session_key, chunks)
    build_index(conn, NOW, model=MODEL)
    yield conn, {e.seq: e for e in events}, chunks, settings.home
    conn.close()


def test_the_transcript_has_chunks_with_gaps(store) -> None:
    _, _, chunks, _ = store
    gapped = [c for c in chunks if c.last_seq - c.first_seq + 1 != len(c.seqs)]
    assert gapped, "the real transcript should leave out some events of low importance"


def test_a_chunk_excerpt_cites_the_events_it_shows(store) -> None:
    conn, events, chunks, _ = store
    seqs_of = {c.session_key + f" events {c.first_seq}-{c.last_seq}": c.seqs for c in chunks}
    narrowed = 0
    for question in QUESTIONS:
        for budget in (150, 300, 600):
            result = ask(conn, question, budget, model=MODEL, now=NOW, sources="sessions")
            for item in result.items:
                if item.kind != "chunk" or not item.location:
                    continue
                found = re.fullmatch(r"(?P<key>\S+) events (?P<a>\d+)-(?P<b>\d+)", item.location)
                assert found, item.location
                a, b = int(found["a"]), int(found["b"])
                [chunk_seqs] = [s for c, s in seqs_of.items() if c == item.citation]
                assert a in chunk_seqs and b in chunk_seqs and a <= b
                # Everything shown is text of events a to b; the first of it is event a's,
                # the last event b's.
                fragments = [
                    f.strip()
                    for line in item.text.splitlines()[1:]
                    for f in line.split(" … ")
                    if f.strip() and f.strip() != "…"
                ]
                shown = [_flat(render_event(events[q])) for q in chunk_seqs if a <= q <= b]
                assert fragments and all(f in "\n".join(shown) for f in fragments)
                assert fragments[0] in shown[0] and fragments[-1] in shown[-1]
                narrowed += 1
    assert narrowed, "some answer should be an excerpt of a chunk"


def _fragments(text: str) -> list[str]:
    """The text an item shows below its header, piece by piece (gap markers left out, the
    "… " that opens an excerpt starting inside a cut line too)."""
    return [
        f.strip().removeprefix("… ")
        for line in text.splitlines()[1:]
        for f in line.split(" … ")
        if f.strip() and f.strip() != "…"
    ]


def test_show_prints_whole_what_each_citation_points_at(store) -> None:
    conn, _, _, _ = store
    shown_kinds = set()
    for question in (*QUESTIONS, "Which port does the LM Studio provider listen on?"):
        for budget in (150, 600):
            result = ask(conn, question, budget, model=MODEL, now=NOW)
            for item in result.items:
                if item.level == "reference":
                    continue
                shown = show(conn, item.location or item.citation)
                flat = _flat(shown.text)
                assert shown.text.startswith(f"[{item.location or item.citation}]")
                assert all(_flat(f) in flat for f in _fragments(item.text)), item.citation
                shown_kinds.add((item.kind, bool(item.location)))
    assert {("note", True), ("chunk", True)} <= shown_kinds


def test_show_adds_context_and_takes_ids(store) -> None:
    conn, events, chunks, _ = store
    chunk = chunks[1]
    key = chunk.session_key
    a, b = chunk.seqs[2], chunk.seqs[3]
    plain = show(conn, f"{key} events {a}-{b}")
    # Every event of the range, those the chunk leaves out included.
    assert plain.text.splitlines()[0].startswith(f"[{key} events {a}-{b}] codex session")
    body = plain.text.split("\n", 1)[1]
    for seq in range(a, b + 1):
        if seq in events and not events[seq].abandoned:
            event = events[seq]
            if event.text.strip() or event.tool_name or event.is_error:
                assert render_event(event) in body
            else:  # nothing to read: no bare label
                assert f"{render_event(event)}\n" not in f"{body}\n"
    assert plain.source.endswith(REAL_CODEX.name) and plain.records
    wider = show(conn, f"{key} events {a}-{b}", around=2)
    before = max(s for s in events if s < a)
    assert render_event(events[before]) in wider.text and len(wider.text) > len(plain.text)
    # A range wider than the session is the session (found by bisection, not by counting).
    everything = show(conn, f"{key} events 0-999999999")
    kept = sorted(s for s, e in events.items() if not e.abandoned)
    assert everything.text.startswith(f"[{key} events {kept[0]}-{kept[-1]}]")
    assert (
        everything.note == f"the session's last event is {kept[-1]}: events past it are not there"
    )
    assert not plain.note and everything.to_json("x")["note"] == everything.note
    by_id = show(conn, f"chunk:{chunk.id}")
    assert by_id.text.startswith(f"[{key} events {chunk.first_seq}-{chunk.last_seq}]")
    note = show(conn, f"note {NOTE_ID} lines 42", around=1)
    assert note.text.splitlines()[1:] == NOTE.splitlines()[40:43]
    assert note.text.startswith(f"[note {NOTE_ID} lines 41-43] Provider settings")
    assert note.source == "/notes/providers.md"
    lines = len(NOTE.splitlines())
    past = show(conn, f"note {NOTE_ID} lines {lines - 1}-{lines + 9}")  # said, not silent
    assert past.note == f"the note has {lines} lines: lines past {lines} are not there"
    assert past.text.startswith(f"[note {NOTE_ID} lines {lines - 1}-{lines}]")
    assert show(conn, f"note:{NOTE_ID}").text.split("\n", 1)[1] == NOTE
    # A note's id alone, as `context --format json` gives it, was "not a citation".
    assert show(conn, f" {NOTE_ID} ").text == show(conn, f"note {NOTE_ID}").text


@pytest.mark.parametrize(
    ("citation", "error"),
    [
        ("note notes/absent.md", NotFoundError),
        ("codex-000000000000 events 1-2", NotFoundError),
        ("chunk:ffffffffffffffff", NotFoundError),
        (f"note {NOTE_ID} lines 500-501", NotFoundError),
        ("what is this?", UsageError),
    ],
)
def test_show_says_what_is_wrong(store, citation: str, error: type[Exception]) -> None:
    conn, _, _, _ = store
    with pytest.raises(error):
        show(conn, citation)


def test_the_show_command(store, monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from selene_dag import cli

    _, _, chunks, home = store
    monkeypatch.setenv("SELENE_HOME", str(home))
    key = chunks[0].session_key
    ran = CliRunner().invoke(cli.app, ["show", key, "events", "2-3", "--around", "1"])
    assert ran.exit_code == 0, ran.output
    assert ran.stdout.startswith(f"[{key} events 1-4] codex session")
    assert ran.stderr.startswith("from ") and REAL_CODEX.name in ran.stderr
    # the file's own lines, not the events the citation numbers
    assert re.search(r"\(lines \d+-\d+ of the file\)", ran.stderr), ran.stderr
    as_json = CliRunner().invoke(cli.app, ["show", f"chunk:{chunks[0].id}", "--format", "json"])
    assert as_json.exit_code == 0, as_json.output
    doc = json.loads(as_json.stdout)
    assert doc["citation"] == f"chunk:{chunks[0].id}" and doc["text"].startswith(f"[{key} events")
    assert doc["source"].endswith(REAL_CODEX.name) and doc["records"]
    assert doc["shown"] == doc["text"].split("]", 1)[0].removeprefix("[")
    around = CliRunner().invoke(
        cli.app, ["show", key, "events", "2-3", "--around", "1", "--format", "json"]
    )
    assert json.loads(around.stdout)["shown"] == f"{key} events 1-4"  # what --around added
    # Two ranges of events come from two ranges of the file's lines, not one span of both.
    one, two = (
        json.loads(
            CliRunner().invoke(cli.app, ["show", f"{key} events {r}", "--format", "json"]).stdout
        )["records"]
        for r in ("1-2", "8-9")
    )
    both = CliRunner().invoke(cli.app, ["show", f"{key} events 1-2, 8-9", "--format", "json"])
    assert json.loads(both.stdout)["records"] == f"{one}, {two}", (one, two)
    bad = CliRunner().invoke(cli.app, ["show", "what", "is", "this?"])
    assert bad.exit_code == 1 and bad.stdout == ""
    assert bad.stderr.startswith("error: not a citation") and bad.stderr.count("\n") == 1


def test_show_of_a_session_whose_file_is_gone_says_so(store) -> None:
    # The events are the stored ones; `show` named the old path as if it were there.
    conn, _events, chunks, _ = store
    chunk = chunks[0]
    citation = f"{chunk.session_key} events {chunk.seqs[0]}-{chunk.seqs[0]}"
    shown = show(conn, citation)
    assert "gone" not in shown.note
    source = Path(shown.source)
    kept = source.with_suffix(".kept")
    source.rename(kept)
    try:
        gone = show(conn, citation)
    finally:
        kept.rename(source)
    assert gone.text == shown.text
    assert gone.note == f"{source} is gone: these are the events stored when it was read"
