"""A small Ollama-API-compatible HTTP server for tests (127.0.0.1, free port, own thread).

It implements ``GET /api/version``, ``GET /api/tags``, ``POST /api/show``,
``POST /api/generate`` and ``POST /api/chat`` (non-streaming answers; a streaming request
gets the whole answer as one final chunk). Answers are deterministic and depend on the
prompt: with ``format`` set to a JSON schema the answer is JSON built from the schema
(strings from the prompt's words, integers in range from a hash of the prompt, ``note_ids``
from the ``[id:...]`` markers in the prompt); without it, a 3-sentence paragraph of prompt words.

Usage::

    with FakeOllama() as fake:                      # or fake = FakeOllama().start(); fake.stop()
        engine = OllamaEngine(host=fake.url, model=fake.models[0])
        ...
        assert fake.requests["/api/chat"] == 1

Knobs (constructor arguments, also settable as attributes while running):

* ``models``: the models the server has (default ``("mistral:7b",)``); any other gets a 404
  "model 'x' not found" like the real server.
* ``delay``: seconds to wait before answering a model request (timeouts).
* ``fail_after``: after this many requests in total, fail every later one, as ``fail_mode``
  ``"refuse"`` (the server stops listening: connection refused) or ``"500"``.
* ``malformed``: the first N model answers that should be JSON are broken JSON instead.
* ``malformed_when``: JSON answers to prompts holding this text are always broken JSON.
* ``overlong``: every string of a JSON answer is this many characters long (0: as built).
* ``not_json``: model calls answer 200 with an HTML page, not Ollama's JSON (a proxy).
* ``status``: model calls answer this HTTP status with ``{"error": status_error}`` (a
  proxy's 401, a host that is not Ollama's 404).
* ``content``: every model answer is this text (a model answering off its task).
* ``thinking``: every model answer opens with ``<think>`` this text ``</think>``, as a
  reasoning model's does.

``requests`` counts requests per path; ``bodies`` keeps every decoded request body in order;
``most_at_once`` is the largest number of model requests answered at the same time.
A pytest fixture is available as ``fake_ollama`` (import it into a test module or conftest).
"""

from __future__ import annotations

import hashlib
import json
import re
import socket
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

_WORD = re.compile(r"[A-Za-z][A-Za-z0-9'-]{2,}")
_ID = re.compile(r"\[id:([^\]\s]+)\]")
_STOP = frozenset(
    [
        "the",
        "and",
        "for",
        "with",
        "that",
        "this",
        "from",
        "into",
        "your",
        "you",
        "are",
        "was",
        "were",
        "have",
        "has",
        "not",
        "but",
        "its",
        "all",
        "any",
        "one",
        "two",
        "can",
        "will",
        "what",
        "how",
        "why",
        "who",
        "use",
        "used",
        "using",
        "only",
        "each",
        "note",
        "notes",
        "json",
        "respond",
        "valid",
        "explanation",
        "answer",
        "write",
        "rate",
    ]
)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _seed(text: str) -> int:
    return int(hashlib.sha256(text.encode()).hexdigest()[:8], 16)


def _prompt_words(prompt: str) -> list[str]:
    words = [w.lower() for w in _WORD.findall(prompt) if w.lower() not in _STOP]
    return list(dict.fromkeys(words)) or ["placeholder", "words", "fallback"]


def _fake_text(prompt: str) -> str:
    """Three deterministic sentences made of the prompt's last distinct words."""
    words = _prompt_words(prompt)[-24:]
    while len(words) < 18:
        words = words + words
    sentences = []
    for i in range(3):
        chunk = words[i * 6 : i * 6 + 6]
        sentences.append(" ".join(chunk).capitalize() + ".")
    return " ".join(sentences)


def _fake_value(schema: dict[str, Any], name: str, prompt: str, depth: int = 0) -> Any:
    kind = schema.get("type")
    seed = _seed(f"{name}:{prompt}")
    if "enum" in schema:
        return schema["enum"][seed % len(schema["enum"])]
    if kind == "object":
        props = schema.get("properties", {})
        return {key: _fake_value(sub, key, prompt, depth + 1) for key, sub in props.items()}
    if kind == "array":
        items = schema.get("items", {"type": "string"})
        if name == "note_ids":
            return list(dict.fromkeys(_ID.findall(prompt)))
        if items.get("type") == "object":
            return [_fake_value(items, name, prompt, depth + 1)]
        words = _prompt_words(prompt)
        size = max(int(schema.get("minItems", 1)), min(int(schema.get("maxItems", 5)), 5))
        start = seed % max(len(words) - size, 1)
        return [
            _fake_value(items, f"{name}{i}", " ".join(words[start + i :]), depth + 1)
            for i in range(size)
        ]
    if kind in ("integer", "number"):
        low = int(schema.get("minimum", 0))
        high = int(schema.get("maximum", low + 100))
        return low + seed % (high - low + 1)
    if kind == "boolean":
        return bool(seed % 2)
    words = _prompt_words(prompt)
    if name in ("essence", "reason", "why", "summary"):
        start = seed % max(len(words) - 8, 1)
        return " ".join(words[start : start + 8]).capitalize() + "."
    return words[seed % len(words)]


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        import sys

        if isinstance(sys.exc_info()[1], ConnectionError):
            return  # the client gave up (timeout test): nothing to report
        super().handle_error(request, client_address)


def _padded(value: Any, length: int) -> Any:
    """``value`` with every string repeated to ``length`` characters (an over-long answer)."""
    if isinstance(value, str):
        return (value + " ") * (length // (len(value) + 1) + 1) if value else value
    if isinstance(value, list):
        return [_padded(v, length) for v in value]
    if isinstance(value, dict):
        return {k: _padded(v, length) for k, v in value.items()}
    return value


class FakeOllama:
    """The fake server; see the module docstring."""

    def __init__(
        self,
        models: tuple[str, ...] | list[str] = ("mistral:7b",),
        *,
        delay: float = 0.0,
        fail_after: int | None = None,
        fail_mode: str = "refuse",
        malformed: int = 0,
        malformed_when: str | None = None,
        overlong: int = 0,
        not_json: bool = False,
        status: int | None = None,
        status_error: str = "",
        thinking: str | None = None,
        content: str | None = None,
    ) -> None:
        if fail_mode not in ("refuse", "500"):
            raise ValueError("fail_mode must be 'refuse' or '500'")
        self.models = list(models)
        self.delay = delay
        self.fail_after = fail_after
        self.fail_mode = fail_mode
        self.malformed = malformed
        self.malformed_when = malformed_when
        self.overlong = overlong
        self.not_json = not_json
        self.status = status
        self.status_error = status_error
        self.thinking = thinking
        self.content = content
        self.requests: Counter[str] = Counter()
        self.bodies: list[dict[str, Any]] = []
        self.most_at_once = 0
        self._at_once = 0
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self.port = 0

    @property
    def url(self) -> str:
        """Base URL, e.g. ``http://127.0.0.1:54321``."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def total_requests(self) -> int:
        """Requests received on every path."""
        return sum(self.requests.values())

    def start(self) -> FakeOllama:
        """Listen on a free 127.0.0.1 port in a daemon thread; return self."""
        handler = type("Handler", (_Handler,), {"fake": self})
        self._server = _Server(("127.0.0.1", 0), handler)
        self.port = int(self._server.server_address[1])
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop listening (later connections are refused); idempotent."""
        self._stopping.set()
        with self._lock:
            server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> FakeOllama:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # called by the handler ------------------------------------------------------------

    def _count(self, path: str, body: dict[str, Any]) -> tuple[int, bool]:
        with self._lock:
            self.requests[path] += 1
            self.bodies.append({"path": path, **body})
            number = self.total_requests
        over = self.fail_after is not None and number > self.fail_after
        return number, over

    def _take_malformed(self) -> bool:
        with self._lock:
            if self.malformed > 0:
                self.malformed -= 1
                return True
            return False

    def _refuse_later(self) -> None:
        threading.Thread(target=self.stop, daemon=True).start()


class _Handler(BaseHTTPRequestHandler):
    fake: FakeOllama
    protocol_version = "HTTP/1.0"  # one request per connection: a stopped server refuses the next

    def log_message(self, format: str, *args: Any) -> None:  # quiet test output
        return

    def _send(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _body(self) -> dict[str, Any]:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            value = json.loads(raw or b"{}")
        except ValueError:
            return {}
        return value if isinstance(value, dict) else {}

    def do_GET(self) -> None:
        self._handle(self.path, {})

    def do_POST(self) -> None:
        self._handle(self.path, self._body())

    def do_HEAD(self) -> None:
        self._handle(self.path, {})

    def _handle(self, path: str, body: dict[str, Any]) -> None:
        fake = self.fake
        number, over = fake._count(path, body)
        if over:
            if fake.fail_mode == "500":
                self._send(500, {"error": "fake ollama: internal error (fail_after reached)"})
                return
            fake._refuse_later()
            self.close_connection = True
            self.connection.close()
            return
        if path == "/api/version":
            self._send(200, {"version": "0.0.0-fake"})
        elif path == "/api/tags":
            self._send(200, {"models": [_model_entry(m) for m in fake.models]})
        elif path == "/api/show":
            name = body.get("model") or body.get("name")
            if name not in fake.models:
                self._send(404, {"error": f"model '{name}' not found"})
            else:
                self._send(
                    200,
                    {
                        "modelfile": "",
                        "parameters": "",
                        "template": "",
                        "details": _model_entry(name)["details"],
                        "model_info": {},
                    },
                )
        elif path in ("/api/chat", "/api/generate"):
            self._model_call(path, body)
        else:
            self._send(404, {"error": f"unknown path {path}"})
        if fake.fail_after is not None and number >= fake.fail_after and fake.fail_mode == "refuse":
            fake._refuse_later()

    def _model_call(self, path: str, body: dict[str, Any]) -> None:
        fake = self.fake
        model = body.get("model")
        if model not in fake.models:
            self._send(404, {"error": f"model '{model}' not found"})
            return
        with fake._lock:
            fake._at_once += 1
            fake.most_at_once = max(fake.most_at_once, fake._at_once)
        try:
            if fake.delay:
                fake._stopping.wait(fake.delay)
        finally:
            with fake._lock:
                fake._at_once -= 1
        if fake.status is not None:
            self._send(fake.status, {"error": fake.status_error})
            return
        if fake.not_json:
            page = b"<html><body>not an Ollama server</body></html>"
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(page)))
            self.end_headers()
            self.wfile.write(page)
            return
        if path == "/api/chat":
            messages = body.get("messages") or []
            prompt = "\n".join(str(m.get("content", "")) for m in messages)
        else:
            prompt = str(body.get("prompt", ""))
        fmt = body.get("format")
        if isinstance(fmt, dict) or fmt == "json":
            poisoned = fake.malformed_when is not None and fake.malformed_when in prompt
            if poisoned or fake._take_malformed():
                text = '{"this is": not valid json'
            else:
                schema = fmt if isinstance(fmt, dict) else {"type": "object", "properties": {}}
                value = _fake_value(schema, "root", prompt)
                text = json.dumps(_padded(value, fake.overlong) if fake.overlong else value)
        else:
            text = _fake_text(prompt)
        if fake.content is not None:
            text = fake.content
        if fake.thinking is not None:
            text = f"<think>{fake.thinking}</think>\n\n{text}"
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        common = {
            "model": model,
            "created_at": now,
            "done": True,
            "done_reason": "stop",
            "total_duration": 1_000_000,
            "prompt_eval_count": len(prompt.split()),
            "eval_count": len(text.split()),
        }
        if path == "/api/chat":
            self._send(200, {**common, "message": {"role": "assistant", "content": text}})
        else:
            self._send(200, {**common, "response": text})


def _model_entry(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "model": name,
        "modified_at": "2024-01-01T00:00:00Z",
        "size": 1,
        "digest": hashlib.sha256(name.encode()).hexdigest(),
        "details": {
            "format": "gguf",
            "family": name.split(":")[0],
            "parameter_size": "7B",
            "quantization_level": "Q4_0",
        },
    }


@pytest.fixture
def fake_ollama():
    """A running :class:`FakeOllama` with default knobs, stopped after the test."""
    fake = FakeOllama().start()
    try:
        yield fake
    finally:
        fake.stop()
