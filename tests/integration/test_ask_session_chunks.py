"""Ask over agent-session chunks (issue #15): a chunk is a run of events, so a passage of
it is cut, when it must be, to one unbroken run of events, and a chunk is never packed as
one document chosen piece by piece; a Gemini session's project hash stays out of every
title."""

from __future__ import annotations

import pytest

from selene_dag.context.tokens import count_tokens
from selene_dag.retrieval.index import build_index
from selene_dag.retrieval.pack import ask
from selene_dag.store import connect
from tests.support.ask import NOW

MODEL = "mistral:7b"
PROJECT_HASH = "86bc0e27f2bad5ee2e2625969dc74484f7717cff50ea68e3c3f18194c802a493"
QUESTION = "Which WAYLAND_DISPLAY value did the cosmic panel process have?"

# One long chunk where every event speaks of the panel and the applet: its passages take
# every one of the best places, which would make a note "dominate". A chunk is still packed
# passage by passage (a tool call with its result), not as one document whose pieces are
# chosen by question words (on real transcripts those leave out the result that answers).
EVENTS = [
    "[assistant/assistant_text] I will check the environment of the cosmic panel process "
    "to find the display variables the battery applet needs when it is relaunched.",
    '[assistant/tool_use run_shell_command] {"command": "cat /proc/5524/environ | tr '
    "'\\\\0' '\\\\n' | grep -E 'DISPLAY|WAYLAND'\"}\n[tool/tool_result] WAYLAND_DISPLAY=wayland-1"
    "\nDISPLAY=:1",
    *(
        f"[assistant/other] Step {i}: the cosmic panel process and the battery applet process "
        f"were compared again; the panel still shows the applet twice after restart {i}. "
        + "The applet reads its settings from the panel configuration. "
        * 3
        for i in range(10)
    ),
]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory):
    conn = connect(tmp_path_factory.mktemp("chunks") / "selene.duckdb")
    conn.execute(
        "INSERT INTO session_files (session_key, path, platform, project, size, mtime, sha256, "
        "events, parse_errors, scanned_at, parsed_at) VALUES ('gemini-demo', '/s/g.json', "
        "'gemini', ?, 1, 0, 'x', ?, 0, ?, ?)",
        [PROJECT_HASH, len(EVENTS), NOW, NOW],
    )
    text = "\n".join(EVENTS)
    conn.execute(
        "INSERT INTO chunks (id, session_key, chunk_index, first_seq, last_seq, text, "
        "token_count, importance_avg, event_count) VALUES ('g1', 'gemini-demo', 0, 0, ?, ?, "
        "?, 60, ?)",
        [len(EVENTS) - 1, text, count_tokens(text, MODEL), len(EVENTS)],
    )
    conn.execute(
        "INSERT INTO chunk_scores (chunk_id, session_key, consensus, n_assessments, sufficient)"
        " VALUES ('g1', 'gemini-demo', 7.0, 2, true)"
    )
    build_index(conn, NOW, model=MODEL)
    yield conn
    conn.close()


def test_a_gemini_sessions_title_leaves_out_its_project_hash(store) -> None:
    [(title,)] = store.execute("SELECT DISTINCT title FROM search_docs").fetchall()
    assert title == "gemini session"
    result = ask(store, QUESTION, 2000, model=MODEL, now=NOW)
    assert result.items and PROJECT_HASH not in result.text


def test_a_chunk_holding_the_best_passages_is_packed_passage_by_passage(store) -> None:
    passages = store.execute("SELECT count(*) FROM search_passages").fetchone()[0]
    assert passages >= 5  # the chunk holds every one of the best five
    result = ask(store, QUESTION, 500, model=MODEL, now=NOW)
    assert result.stats["mode"] == "passages"
    assert "WAYLAND_DISPLAY=wayland-1" in result.text
    assert result.total_tokens == count_tokens(result.text, MODEL) <= 500
