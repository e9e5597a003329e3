"""The HTTP API through httpx against a real uvicorn on a free 127.0.0.1 port."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import duckdb
import httpx
import pytest
import uvicorn

from selene_dag.api import create_app
from selene_dag.context.tokens import count_tokens
from selene_dag.retrieval.index import build_index
from selene_dag.store import connect
from tests.support.ask import NOTES, NOW, seed_store
from tests.support.ops import lock_held

# Thirty turns of about 60 words: more than a 600-token window holds.
LONG_CONVERSATION = [
    {"role": "user" if i % 2 else "assistant", "content": f"message {i} " + "word " * 60}
    for i in range(30)
]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def api(home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[httpx.Client]:
    monkeypatch.setenv("SELENE_NOW", NOW.isoformat())
    db = home / "selene.duckdb"
    seed_store(db)
    conn = connect(db)
    build_index(conn, NOW)
    conn.close()
    port = _free_port()
    app = create_app()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.05)
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:
        client.app_store = app.state.store  # type: ignore[attr-defined]
        yield client
    server.should_exit = True
    thread.join(timeout=10)


def test_endpoints(api: httpx.Client, home: Path) -> None:
    health = api.get("/health/compression").json()
    assert health["essences"]["total"] == 6 and health["status"] == "ok"
    # The same document as `health --json`: the skipped inputs and the folders too.
    assert health["skippedInputs"]["count"] == 0 and isinstance(health["noteFolders"], list)

    resp = api.post("/ask", json={"question": "bash shell in docker container", "budget": 120})
    assert resp.status_code == 200
    doc = resp.json()
    assert doc["items"][0]["citation"] == "note docker/exec.md"
    assert doc["total_tokens"] <= 120

    sessions = api.post(
        "/ask", json={"question": "LM Studio", "budget": 100, "sources": ["sessions"]}
    ).json()
    assert sessions["items"] and {i["kind"] for i in sessions["items"]} == {"chunk"}
    # The CLI's form of --sources, one comma-separated string, is taken as the list is.
    as_text = api.post("/ask", json={"question": "LM Studio", "budget": 100, "sources": "sessions"})
    assert as_text.status_code == 200 and as_text.json()["items"] == sessions["items"]

    shown = api.post("/show", json={"citation": doc["items"][0]["citation"]}).json()
    assert shown["text"].startswith("[note docker/exec.md] Attaching a bash shell")
    assert "docker exec -it" in shown["text"] and shown["source"] == "test"
    # A note's id alone, as `context --format json` gives it, as `selene-dag show` takes it
    # (it was "not a citation" here).
    bare = api.post("/show", json={"citation": "docker/exec.md"})
    assert bare.status_code == 200 and bare.json()["text"] == shown["text"]

    context = api.post("/context", json={"budget": 200}).json()
    assert context["tokens_exact"] is True and context["tokenizer"]
    # A model counted by an estimate says so, as /ask does (the CLI said it on stderr only).
    guessed = api.post(
        "/compact",
        json={"messages": [{"role": "user", "content": "hi"}], "window": 100, "model": "x-9b"},
    ).json()
    assert guessed["tokens_exact"] is False and guessed["tokenizer"]
    assert context["text"] and count_tokens(context["text"], context["model"]) <= 200
    # The document `context --format json` prints: the threads and notes shown, by id.
    assert context["threads"] == [] and context["notes"]
    titles = {note_id: title for note_id, title, *_ in NOTES}
    assert {n["id"] for n in context["notes"]} <= set(titles)
    places = [context["text"].index(titles[n["id"]]) for n in context["notes"]]
    assert places == sorted(places)
    assert "note" not in context
    # A budget too small for one title line said nothing (the CLI said why on stderr).
    tiny = api.post("/context", json={"budget": 1}).json()
    assert tiny["text"] == "" and "holds no note" in tiny["note"]

    messages = [{"role": "system", "content": "be brief"}] + [
        {"role": "user" if i % 2 else "assistant", "content": f"message {i} " + "word " * 60}
        for i in range(30)
    ]
    # Content as chat APIs send it, a list of parts, is compacted as its text, and a
    # message kept whole goes back as it came.
    messages[-1]["content"] = [{"type": "text", "text": "the last question, kept whole"}]
    compact = api.post("/compact", json={"messages": messages, "window": 600}).json()
    assert compact["tokens_after"] <= 600 < compact["tokens_before"]
    assert compact["messages"][-1]["content"] == messages[-1]["content"]
    # The same messages as `selene-dag compact` gives: the engine writes the summary (the
    # API's was the oldest messages' text cut short).
    from selene_dag import service
    from selene_dag.config import load_settings

    cli = service.compact(load_settings(home=home), messages, 600)
    assert compact["messages"] == cli.messages
    assert any(m["content"].startswith("[SUMMARY") for m in cli.messages)
    # A memory digest's decisions are always carried, compacted or not.
    digest = [{"stage": "plan", "decision": "ship on Friday"}]
    kept = api.post("/compact", json={"messages": messages[:3], "window": 600, "digest": digest})
    assert kept.json()["messages"][1]["content"].endswith("- plan: ship on Friday")
    # An assistant message of tool calls alone may leave its content out, as chat APIs send it.
    call = {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
    calls_only = [
        {"role": "user", "content": "List the files."},
        {"role": "assistant", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "a.txt"},
    ]
    answer = api.post("/compact", json={"messages": calls_only, "window": 600})
    assert answer.status_code == 200 and answer.json()["messages"] == calls_only

    assert api.get("/docs").status_code == 200
    assert "/ask" in api.get("/openapi.json").json()["paths"]
    # The shared connection is released once the server is idle (after its linger):
    # then a connection with another configuration (read-only) can open the file.
    db = home / "selene.duckdb"
    deadline = time.monotonic() + 30
    while api.app_store.is_open(db):  # type: ignore[attr-defined]
        assert time.monotonic() < deadline, "the server kept the database open while idle"
        time.sleep(0.05)
    duckdb.connect(str(db), read_only=True).close()


@pytest.mark.parametrize(
    ("path", "body", "needle"),
    [
        ("/compact", {"messages": [], "window": 100, "digest": ["not an entry"]}, "digest"),
        # An entry without its decision was dropped silently (a typo lost the decision).
        ("/compact", {"messages": [], "window": 100, "digest": [{"stage": "a"}]}, "decision"),
        # "false" as a string was true: the decision was left out as superseded.
        (
            "/compact",
            {
                "messages": [],
                "window": 100,
                "digest": [{"stage": "a", "decision": "pg", "superseded": "false"}],
            },
            "superseded",
        ),
        ("/ask", {"question": "docker", "budget": 0}, "budget"),
        ("/ask", {"budget": 10}, "question"),
        ("/ask", {"question": "docker", "budget": 10, "sources": ["web"]}, "unknown source"),
        # Two clauses of pydantic's union wording ("sources.list[str].0: …; sources.str: …").
        ("/ask", {"question": "x", "budget": 10, "sources": [1]}, "sources must be a list"),
        ("/context", {"budget": -1}, "budget"),
        ("/show", {"citation": "what is this?"}, "not a citation"),
        ("/show", {"citation": "note docker/exec.md", "around": -1}, "around"),
        ("/compact", {"messages": [{"role": "user"}], "window": 100}, "content"),
        ("/compact", {"messages": [{"role": "user", "content": 3}], "window": 100}, "parts"),
        # A misspelt field is named, not ignored (it asked with the default budget).
        (
            "/ask",
            {"question": "docker", "budget": 10, "budjet": 5},
            "budjet: is not a field of this request",
        ),
        ("/show", {"citation": "note docker/exec.md", "arround": 3}, "arround"),
        # A number past any model's window (it stamped every note as used), a budget
        # written as a string or a boolean (taken as 500 and 1).
        ("/ask", {"question": "docker", "budget": 10**30}, "budget"),
        ("/context", {"budget": "500"}, "budget"),
        ("/compact", {"messages": [], "window": True}, "window"),
        ("/show", {"citation": "note docker/exec.md", "around": True}, "around"),
        # A blank model name was a 500 (a traceback on the command line).
        ("/context", {"budget": 100, "model": " "}, "model"),
        ("/ask", {"question": "docker", "budget": 100, "model": "  "}, "model"),
        # An empty one silently meant the default (and "  " was refused).
        ("/ask", {"question": "docker", "budget": 100, "model": ""}, "model"),
        ("/context", {"budget": 100, "model": ""}, "model"),
        ("/compact", {"messages": [], "window": 100, "model": ""}, "model"),
    ],
)
def test_bad_requests_get_422(api: httpx.Client, path: str, body: dict, needle: str) -> None:
    resp = api.post(path, json=body)
    assert resp.status_code == 422
    detail = resp.json()["detail"]
    assert isinstance(detail, str) and needle in detail  # one shape: a sentence
    # ... and the list of problems, each naming its field when it is one field's (an
    # unknown source, a blank model, a message without content had only `detail`).
    errors = resp.json()["errors"]
    assert errors and all(set(e) == {"loc", "msg", "type"} for e in errors), errors
    assert not any(e["msg"].startswith("Value error") for e in errors), errors
    # Each body above has one bad field (given, or the question left out).
    fields = {e["loc"][1] for e in errors if len(e["loc"]) > 1 and e["loc"][0] == "body"}
    assert len(fields) == 1 and fields <= {*body, "question"}, errors


def test_a_fields_problem_says_what_to_send(api: httpx.Client) -> None:
    # "budget: Input should be a valid integer" said what the validator wanted.
    for body, said in (
        ({"budget": "500"}, "budget: must be a whole number (not a string or a float)"),
        ({"budget": 0}, "budget: must be more than 0"),
        ({"budget": 10**12}, "budget: must be at most 100,000,000"),
        ({}, "budget: is required"),
    ):
        resp = api.post("/context", json=body)
        assert resp.status_code == 422 and resp.json()["detail"] == said, body


def test_what_the_home_lacks_is_404_and_a_body_that_is_not_json_says_so(
    api: httpx.Client,
) -> None:
    resp = api.post("/show", json={"citation": "note absent.md"})
    assert resp.status_code == 404 and "no note absent.md" in resp.json()["detail"]
    resp = api.post("/ask", content=b"{not json", headers={"content-type": "application/json"})
    assert resp.status_code == 422 and resp.json()["detail"].startswith("the body is not JSON")
    assert resp.json()["errors"][0]["loc"] == ["body"]  # it was ["body", 1], an offset
    resp = api.post("/show", content=b"not json")  # curl -d's form type
    assert resp.status_code == 422 and resp.json()["detail"].startswith("the body is not")
    body = b'{"question": "\xff\xfe", "budget": 100}'  # not UTF-8: a bare 400 before
    resp = api.post("/ask", content=body, headers={"content-type": "application/json"})
    assert resp.status_code == 422 and resp.json()["detail"] == (
        "the body is not JSON (it is not UTF-8 text)"
    )
    # A number too long for Python's parser, nesting too deep: UTF-8 text both, said to be
    # "not UTF-8 text", with no `errors`.
    for body, why in (
        (b'{"question": "x", "budget": ' + b"9" * 5000 + b"}", "more than 4,300 digits"),
        (b'{"question": "x", "sources": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", "too deep"),
    ):
        resp = api.post("/ask", content=body, headers={"content-type": "application/json"})
        assert resp.status_code == 422 and why in resp.json()["detail"], resp.json()
        assert resp.json()["errors"][0]["loc"] == ["body"]
    # JSON sent without its content type (curl --data) was "not a JSON object".
    resp = api.post("/context", content=b'{"budget": 100}')
    assert resp.status_code == 422 and "Content-Type: application/json" in resp.json()["detail"]
    # A route or a method the API lacks says where the routes are.
    resp = api.get("/no-such-page")
    assert resp.status_code == 404 and resp.json()["detail"] == (
        "no route GET /no-such-page: the routes are listed at /docs"
    )
    resp = api.get("/ask")
    assert resp.status_code == 405 and "/ask does not take GET" in resp.json()["detail"]
    assert "POST" in resp.headers["allow"]


def test_a_body_over_the_limit_is_refused_before_it_is_read(api: httpx.Client) -> None:
    from selene_dag.api import MAX_BODY_BYTES

    # Only the headers are sent: the answer comes without the body being read.
    host, port = str(api.base_url.host), int(api.base_url.port or 80)
    with socket.create_connection((host, port), timeout=10) as sock:
        sock.sendall(
            b"POST /compact HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            + f"Content-Length: {MAX_BODY_BYTES + 1}\r\n\r\n".encode()
        )
        answer = sock.recv(4096).decode()
    assert answer.startswith("HTTP/1.1 413") and "limit" in answer

    # A chunked upload carries no length: it is refused once it is over the limit, not read
    # whole into memory.
    with socket.create_connection((host, port), timeout=30) as sock:
        sock.sendall(
            b"POST /ask HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n"
        )
        chunk = b"x" * (1 << 20)
        try:
            for _ in range(MAX_BODY_BYTES // len(chunk) + 2):
                sock.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        except OSError:
            pass  # the server answered and closed while the rest was on its way
        answer = sock.recv(4096).decode(errors="replace")
    assert answer.startswith("HTTP/1.1 413"), answer[:200]


def test_a_client_that_leaves_mid_body_costs_no_traceback(
    api: httpx.Client, caplog: pytest.LogCaptureFixture
) -> None:
    # Each dropped upload was "Exception in ASGI application" and 80 lines of traceback.
    port = int(str(api.base_url).rsplit(":", 1)[1].rstrip("/"))
    with caplog.at_level("ERROR", logger="uvicorn.error"):
        with socket.create_connection(("127.0.0.1", port)) as sock:
            sock.sendall(
                b"POST /ask HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                b'Content-Length: 1000\r\n\r\n{"question": "dock'
            )
            time.sleep(0.3)
        time.sleep(0.5)
        assert api.get("/health/compression").status_code == 200
    assert not [r for r in caplog.records if "Exception in ASGI" in r.getMessage()]


def test_docs_page_is_served_with_no_network(api: httpx.Client) -> None:
    """/docs names only files this server serves; each of them answers 200."""
    import re

    page = api.get("/docs")
    assert page.status_code == 200 and "swagger" in page.text.lower()
    urls = re.findall(r"""(?:src|href|url)\s*[:=]\s*['"]([^'"]+)['"]""", page.text)
    assert urls and not [u for u in urls if u.startswith(("http://", "https://", "//"))]
    for url in urls:
        assert api.get(url).status_code == 200, url
    # A monitor's HEAD probe was a 405.
    for path in ("/docs", "/health/compression"):
        head = api.head(path)
        assert head.status_code == 200 and head.content == b"", (path, head.status_code)
    assert (
        api.get("/static/swagger-ui/swagger-ui-bundle.js")
        .headers["content-type"]
        .startswith(("application/javascript", "text/javascript"))
    )


def test_a_store_held_by_another_process_is_waited_for_then_503(
    api: httpx.Client, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A request waits up to SELENE_LOCK_WAIT for another process's hold on the file, then
    answers 503 with what to do; once the file is free the same request answers 200."""
    monkeypatch.setenv("SELENE_LOCK_WAIT", "0.5")
    question = {"question": "bash shell in docker container", "budget": 120}
    with lock_held(home / "selene.duckdb"):
        started = time.monotonic()
        resp = api.post("/ask", json=question)
        took = time.monotonic() - started
    assert resp.status_code == 503, resp.text
    assert "locked by another process" in resp.json()["detail"]
    assert "SELENE_LOCK_WAIT" in resp.json()["detail"]
    assert 0.5 <= took < 20
    # The holder has let go: a request held up the same way now gets through.
    monkeypatch.setenv("SELENE_LOCK_WAIT", "30")
    with lock_held(home / "selene.duckdb", release_after=1.0):
        resp = api.post("/ask", json=question)
    assert resp.status_code == 200
    assert resp.json()["items"][0]["citation"] == "note docker/exec.md"


def test_a_process_waiting_for_the_store_gets_it_from_a_busy_server(
    api: httpx.Client, home: Path
) -> None:
    # Under steady requests the server never went idle, so it never let the file go: an
    # ingest beside it failed after SELENE_LOCK_WAIT. A waiting process says so, and the
    # server lets it have the file between requests.
    import subprocess
    import sys

    stop = threading.Event()
    statuses: list[int] = []

    def ask_again() -> None:
        while not stop.is_set():
            statuses.append(
                api.post("/ask", json={"question": "docker", "budget": 200}).status_code
            )

    load = [threading.Thread(target=ask_again, daemon=True) for _ in range(4)]
    for thread in load:
        thread.start()
    try:
        while len(statuses) < 8:  # the server is busy
            time.sleep(0.02)
        writer = subprocess.run(
            [
                sys.executable,
                "-c",
                "import sys; from selene_dag.store import connect; "
                "c = connect(sys.argv[1], wait=8); "
                "c.execute('CREATE TABLE IF NOT EXISTS written_beside (i INT)'); c.close()",
                str(home / "selene.duckdb"),
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
        served_after = len(statuses)
        while len(statuses) < served_after + 8:  # and serves again after the write
            time.sleep(0.02)
    finally:
        stop.set()
        for thread in load:
            thread.join(timeout=30)
    assert writer.returncode == 0, writer.stderr
    assert set(statuses) == {200}
    assert not list(home.glob("selene.duckdb.waiting-*"))  # the mark went with the wait


def test_context_of_a_home_without_notes_says_so_as_the_cli_does(tmp_path: Path) -> None:
    from selene_dag import service
    from selene_dag.config import load_settings
    from selene_dag.errors import NotFoundError

    conn = connect(tmp_path / "selene.duckdb")  # a store, no note yet
    try:
        with pytest.raises(NotFoundError, match="no notes yet: run `selene-dag ingest PATH`"):
            service.context_in(conn, load_settings(home=tmp_path), 500)
    finally:
        conn.close()


def test_compact_with_a_model_lets_the_store_go_while_it_writes(
    api: httpx.Client, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # POST /compact kept the shared connection through the model's call: an ingest beside
    # it failed after SELENE_LOCK_WAIT.
    import subprocess
    import sys

    from tests.support.fake_ollama import FakeOllama

    messages = LONG_CONVERSATION
    with FakeOllama(delay=4.0) as server:
        monkeypatch.setenv("SELENE_LLM", "ollama")
        monkeypatch.setenv("SELENE_OLLAMA_HOST", server.url)
        answer: list[httpx.Response] = []
        request = threading.Thread(
            target=lambda: answer.append(
                api.post("/compact", json={"messages": messages, "window": 600})
            )
        )
        request.start()
        deadline = time.monotonic() + 20
        # The model is writing, and the server let go of the file (1 s after its last use).
        while not server.total_requests or api.app_store.is_open(home / "selene.duckdb"):  # type: ignore[attr-defined]
            assert time.monotonic() < deadline, "the store stayed open while the model wrote"
            time.sleep(0.05)
        writer = subprocess.run(
            [
                sys.executable,
                "-c",
                "import sys, duckdb; duckdb.connect(sys.argv[1]).close()",
                str(home / "selene.duckdb"),
            ],
            capture_output=True,
            text=True,
            timeout=30,
        )
        during = request.is_alive()
        request.join(timeout=60)
    assert writer.returncode == 0, writer.stderr
    assert during  # the write happened while the model wrote
    assert answer and answer[0].status_code == 200
    # The summary is cached in the home, written once the model had answered.
    with duckdb.connect(str(home / "selene.duckdb")) as conn:
        tasks = conn.execute("SELECT task FROM llm_cache").fetchall()
    assert tasks == [("summarize",)]


def test_ask_with_a_model_lets_the_store_go_while_the_model_thinks(
    api: httpx.Client, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # POST /ask held the shared connection through the model's rewrite and rerank, and the
    # write lock too: an ingest beside the server waited for every model call, and two
    # questions asked at once waited for each other's model.
    import subprocess
    import sys

    from tests.support.fake_ollama import FakeOllama

    db = home / "selene.duckdb"
    questions = ["bash shell in docker container", "how do I list docker images"]
    with FakeOllama(delay=3.0) as server:
        monkeypatch.setenv("SELENE_LLM", "ollama")
        monkeypatch.setenv("SELENE_OLLAMA_HOST", server.url)
        answers: list[httpx.Response] = []
        requests = [
            threading.Thread(
                target=lambda q=q: answers.append(
                    api.post("/ask", json={"question": q, "budget": 200})
                )
            )
            for q in questions
        ]
        for request in requests:
            request.start()
        deadline = time.monotonic() + 20
        while not server.total_requests or api.app_store.is_open(db):  # type: ignore[attr-defined]
            assert time.monotonic() < deadline, "the store stayed open while the model thought"
            time.sleep(0.05)
        writer = subprocess.run(
            [
                sys.executable,
                "-c",
                "import sys, duckdb; c = duckdb.connect(sys.argv[1]); "
                "c.execute('CREATE TABLE written_beside (i INT)'); c.close()",
                str(db),
            ],
            capture_output=True,
            text=True,
            timeout=30,
        )
        waited_on_model = any(request.is_alive() for request in requests)
        for request in requests:
            request.join(timeout=60)
    assert writer.returncode == 0, writer.stderr
    assert waited_on_model  # the write happened while a question waited for the model
    assert server.most_at_once == 2  # the two questions' model calls ran side by side
    assert [a.status_code for a in answers] == [200, 200], [a.text for a in answers]
    for answer in answers:
        stats = answer.json()["stats"]
        assert not stats["rewrite"].startswith("not rewritten"), stats
        assert stats["rerank"].startswith("passages the model put first"), stats
        assert stats["elapsed_ms"] >= 2 * 3000  # the rewrite and the rerank, each 3 s
    made = server.total_requests
    again = api.post("/ask", json={"question": questions[0], "budget": 200})
    assert again.status_code == 200 and server.total_requests == made  # cached in the home
    with duckdb.connect(str(db)) as conn:
        tasks = conn.execute("SELECT task, count(*) FROM llm_cache GROUP BY task").fetchall()
    assert dict(tasks) == {"rewrite_question": 2, "rerank_passages": 2}


def test_compact_with_a_model_goes_on_without_the_cache_when_another_process_holds_the_store(
    api: httpx.Client, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Compact needs no store: with the home's cache of model calls it failed (503) while an
    # ingest or a run held the file.
    from tests.support.fake_ollama import FakeOllama

    messages = LONG_CONVERSATION
    monkeypatch.setenv("SELENE_LOCK_WAIT", "60")
    with FakeOllama() as server, lock_held(home / "selene.duckdb"):
        monkeypatch.setenv("SELENE_LLM", "ollama")
        monkeypatch.setenv("SELENE_OLLAMA_HOST", server.url)
        started = time.monotonic()
        resp = api.post("/compact", json={"messages": messages, "window": 600})
        took = time.monotonic() - started
        made = server.total_requests
    assert resp.status_code == 200, resp.text
    assert made == 1  # the model wrote the summary once
    assert took < 30  # not SELENE_LOCK_WAIT's minute
    assert resp.json()["tokens_after"] <= 600


def test_a_question_cut_inside_an_emoji_is_answered(api: httpx.Client) -> None:
    # JSON cut inside an emoji's escape decodes to a lone surrogate: the embedder's
    # tokenizer failed on it and POST /ask answered 500.
    body = '{"question": "bash shell in docker \\ud83d", "budget": 120}'
    resp = api.post("/ask", content=body, headers={"content-type": "application/json"})
    assert resp.status_code == 200, resp.text
    assert resp.json()["items"][0]["citation"] == "note docker/exec.md"


def test_lone_surrogates_are_a_clear_answer_on_every_endpoint(api: httpx.Client) -> None:
    # A digest entry, a message's name or a citation holding one gave a 500.
    def post(path: str, body: str) -> httpx.Response:
        return api.post(path, content=body, headers={"content-type": "application/json"})

    message = '{"role": "user", "content": "q"}'
    digest = f'{{"messages": [{message}], "window": 500, "digest": [{{"stage": "s", "decision": "\\ud83d"}}]}}'
    named = '{"messages": [{"role": "user", "content": "q", "name": "\\ud83d"}], "window": 500}'
    for body, needle in (
        (digest, "digest entry 0: 'decision' holds a lone surrogate"),
        (named, "message 0"),
    ):
        resp = post("/compact", body)
        assert resp.status_code == 422 and needle in resp.json()["detail"], resp.text
    shown = post("/show", '{"citation": "note:\\ud83d"}')
    assert shown.status_code == 404, shown.text
    # A model's name holding one was a 500 in plain text (DuckDB could not bind it, and
    # the answer could not echo it).
    for path, fields in (
        ("/context", '"budget": 200'),
        ("/ask", '"question": "docker", "budget": 200'),
        ("/compact", '"messages": [' + message + '], "window": 100'),
    ):
        resp = post(path, "{" + fields + ', "model": "\\ud800"}')
        assert resp.status_code == 422 and "lone surrogate" in resp.json()["detail"], resp.text
    # In `sources`, as a list or one string: a 500 (the message quoting it was not UTF-8).
    for sources in ('["\\ud800"]', '"notes,\\ud800"'):
        resp = post("/ask", '{"question": "docker", "budget": 200, "sources": ' + sources + "}")
        assert resp.status_code == 422 and "sources holds a lone surrogate" in resp.text, resp.text


def test_an_empty_pack_still_counts_every_level(api: httpx.Client) -> None:
    # Every stats key is always there: an empty pack's levels were {}, so a client's
    # stats["levels"]["full"] raised KeyError.
    resp = api.post("/ask", json={"question": "x", "budget": 10})
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body["items"] == [] and body["text"] == ""
    assert body["stats"]["levels"] == {
        "full": 0,
        "summary": 0,
        "keywords": 0,
        "reference": 0,
        "excluded": 0,
    }


def test_compact_gives_back_an_image_part_it_keeps(api: httpx.Client) -> None:
    # The service read the messages to text before compacting them: an image part went
    # out as the words "[image_url]", with nothing to compact.
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBO"}}
    message = {"role": "user", "content": [{"type": "text", "text": "what is this?"}, image]}
    resp = api.post("/compact", json={"messages": [message], "window": 100})
    assert resp.status_code == 200, resp.text
    assert resp.json()["messages"] == [message]


def test_the_published_schema_describes_the_errors_the_server_gives(api: httpx.Client) -> None:
    # /openapi.json declared FastAPI's 422 (detail: a list of objects) while every error
    # is {detail: a sentence, errors?}: a generated client failed to read each one; 404,
    # 413 and 503 were not declared at all.
    spec = api.get("/openapi.json").json()
    error = spec["components"]["schemas"]["ErrorBody"]
    assert error["properties"]["detail"]["type"] == "string" and error["required"] == ["detail"]
    declared = {
        path: {code for code, answer in op["post"]["responses"].items() if code != "200"}
        for path, op in spec["paths"].items()
        if "post" in op
    }
    assert declared == {
        "/ask": {"413", "422", "500", "503", "507"},
        "/show": {"404", "413", "422", "500", "503"},
        "/context": {"404", "413", "422", "500", "503", "507"},
        "/compact": {"413", "422", "500", "507"},
    }
    for path, op in spec["paths"].items():
        for code, answer in next(iter(op.values()))["responses"].items():
            if code != "200":
                schema = answer["content"]["application/json"]["schema"]
                assert schema == {"$ref": "#/components/schemas/ErrorBody"}, (path, code)
    answer = api.post("/ask", json={"question": "docker", "budget": 0})
    assert answer.status_code == 422
    assert set(answer.json()) <= {"detail", "errors"} and isinstance(answer.json()["detail"], str)
    assert all(set(e) == {"loc", "msg", "type"} for e in answer.json()["errors"])


def test_a_home_without_a_database_suggests_commands_on_the_served_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The 503 suggested `selene-dag ingest PATH` with no --home: run where the user stood,
    # it filled another home than the one served.
    from fastapi.testclient import TestClient

    served = tmp_path / "served home"
    monkeypatch.setenv("SELENE_HOME", str(served))
    with TestClient(create_app()) as client:
        resp = client.post("/ask", json={"question": "anything", "budget": 100})
    assert resp.status_code == 503, resp.text
    detail = resp.json()["detail"]
    assert "`selene-dag ingest PATH --home " in detail and f"'{served}'" in detail, detail


def test_a_model_name_is_echoed_without_its_spaces(api: httpx.Client) -> None:
    # "  mistral:7b " was counted as mistral:7b and echoed with its spaces.
    for path, body in (
        ("/ask", {"question": "docker", "budget": 100, "model": "  mistral:7b "}),
        ("/context", {"budget": 100, "model": "mistral:7b\n"}),
        ("/compact", {"messages": [], "window": 100, "model": " mistral:7b"}),
    ):
        resp = api.post(path, json=body)
        assert resp.status_code == 200 and resp.json()["model"] == "mistral:7b", resp.text


def test_the_published_schema_describes_each_answer(api: httpx.Client) -> None:
    # Every 200 was declared a bare object: none of the documented fields were in /docs.
    spec = api.get("/openapi.json").json()
    schemas = spec["components"]["schemas"]
    # A client built from the schema sent `"model": ""` and `"citation": ""`, which the
    # server refuses: the schema bounds them as the server does.
    for name in ("AskRequest", "ContextRequest", "CompactRequest"):
        model = schemas[name]["properties"]["model"]
        assert (model["minLength"], model["maxLength"], model["pattern"]) == (1, 200, r"\S")
    assert schemas["ShowRequest"]["properties"]["citation"]["minLength"] == 1
    assert api.post("/context", json={"budget": 10, "model": ""}).status_code == 422
    calls = {
        "/ask": {"question": "docker", "budget": 300},
        "/show": {"citation": "note docker/exec.md"},
        "/context": {"budget": 300},
        "/compact": {"messages": [{"role": "user", "content": "hi"}], "window": 100},
    }
    for path, body in [*calls.items(), ("/health/compression", None)]:
        op = spec["paths"][path]["post" if body is not None else "get"]
        ref = op["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
        schema = schemas[ref.rsplit("/", 1)[1]]
        answer = (api.post(path, json=body) if body is not None else api.get(path)).json()
        # Every key answered is described, and every key described as required is there.
        assert set(answer) <= set(schema["properties"]), (
            path,
            set(answer) - set(schema["properties"]),
        )
        assert set(schema.get("required", [])) <= set(answer), path
