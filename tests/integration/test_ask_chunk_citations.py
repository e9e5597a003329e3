"""A session chunk leaves out events of low importance, so its events' seqs have gaps: the
citation of a chunk excerpt names the seqs of the events it shows, read from the chunk,
not counted from the chunk's first seq (issue #15: citations give session file + event
range)."""

from __future__ import annotations

import re

import pytest

from selene_dag.config import load_settings
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
    [scanned] = scan_roots(settings.session_roots)
    ingest_session(conn, scanned, NOW, MODEL)
    events = load_events(conn, scanned.session_key)
    chunks = build_chunks(events, scanned.session_key, model=MODEL)
    replace_chunks(conn, scanned.session_key, chunks)
    build_index(conn, NOW, model=MODEL)
    yield conn, {e.seq: e for e in events}, chunks
    conn.close()


def test_the_transcript_has_chunks_with_gaps(store) -> None:
    _, _, chunks = store
    gapped = [c for c in chunks if c.last_seq - c.first_seq + 1 != len(c.seqs)]
    assert gapped, "the real transcript should leave out some events of low importance"


def test_a_chunk_excerpt_cites_the_events_it_shows(store) -> None:
    conn, events, chunks = store
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
