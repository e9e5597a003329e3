"""OllamaEngine: every operation as one chat request to a local Ollama server.

Uses the official ``ollama`` client (``ollama.Client(host=..., timeout=...)``, ``/api/chat``).
Every request sets ``options``: ``num_ctx`` from the prompt's token count in the model's own
tokenizer plus the answer allowance (Ollama's small default context would silently cut the
prompt), ``num_predict``, ``temperature`` 0 and a fixed ``seed``, so a call is repeatable and
its cached answer stands for it. Note analysis, thread detection and chunk assessment ask for
JSON-schema structured output (``format=<schema>``); the answer is validated and the request
retried once when it is malformed.

Failures become one actionable line: connection errors, timeouts and 5xx answers are retried
with exponential backoff (tenacity, ``retries`` extra attempts), then raise
:class:`EngineUnavailable` ("cannot reach Ollama at HOST: start it with `ollama serve` or set
SELENE_LLM=extractive"); a missing model raises "model X not found on HOST: run
`ollama pull X`"; a twice-malformed answer raises :class:`EngineResponseError`.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import httpx
import ollama
from tenacity import Retrying, retry_if_exception, stop_after_attempt, wait_exponential

from selene_dag import text as _text
from selene_dag.context.tokens import DEFAULT_MODEL, count_tokens, truncate_to_tokens
from selene_dag.errors import UsageError, check_budget
from selene_dag.llm.cache import LLMCache
from selene_dag.llm.engine import (
    MAX_CONCEPT_CHARS,
    MIN_DIGEST_CHARS,
    MIN_DIGEST_SENTENCES,
    MIN_ESSENCE_CHARS,
    Assessment,
    BaseEngine,
    EngineError,
    EngineResponseError,
    EngineUnavailable,
    NoteAnalysis,
    ThreadProposal,
    ThreadRevision,
    note_ids_of,
    require_kind,
    require_text,
)
from selene_dag.llm.prompts import PromptTemplate, load_prompt
from selene_dag.redact import redact

DEFAULT_HOST = "http://127.0.0.1:11434"

ANALYSIS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "concepts": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 8},
        "primary_theme": {"type": "string"},
        "essence": {"type": "string", "minLength": MIN_ESSENCE_CHARS},
    },
    "required": ["concepts", "primary_theme", "essence"],
}
THREADS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "threads": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "why": {"type": "string"},
                    "summary": {"type": "string"},
                    "direction": {"type": "string", "enum": ["exploring", "emerging", "clear"]},
                    "note_ids": {"type": "array", "items": {"type": "string"}},
                },
                "required": ["name", "why", "note_ids"],
            },
        }
    },
    "required": ["threads"],
}
DIRECTIONS = ("exploring", "emerging", "clear")
REVISION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "summary": {"type": "string"},
        "why": {"type": "string"},
        "direction": {"type": "string", "enum": list(DIRECTIONS)},
        "shifted": {"type": "boolean"},
    },
    "required": ["summary", "why", "direction", "shifted"],
}
_RATING = {"type": "integer", "minimum": 1, "maximum": 10}
ASSESSMENT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "relevance": _RATING,
        "signal_density": _RATING,
        "reusability": _RATING,
        "reason": {"type": "string"},
    },
    "required": ["relevance", "signal_density", "reusability", "reason"],
}

# Answer allowance (num_predict) per task, in tokens.
ANSWER_TOKENS = {
    "analyze_note": 512,
    "detect_threads": 2048,
    "digest_thread": 400,
    "reconsolidate_thread": 512,
    "assess_chunk": 256,
    "answer": 1024,
    "rewrite_question": 64,
    "rerank_passages": 96,
}
# A rewritten question longer than this is cut (a model that ignores "one line").
REWRITE_MAX_CHARS = 300
_CTX_MARGIN = 64
_CTX_STEP = 256
_MIN_CTX = 2048


class _Malformed(ValueError):
    """A model answer that does not satisfy the task's schema or rules."""


def _is_transient(exc: BaseException) -> bool:
    if isinstance(exc, ollama.ResponseError):
        return exc.status_code >= 500 or exc.status_code == 429
    return isinstance(exc, (ConnectionError, httpx.TransportError))


# The answers a server gives to one request it cannot take (a prompt too long, a schema it
# refuses): that item falls back, the others go on. Any other 4xx (a proxy's 401 or 403, a
# 404 from a host that is not Ollama) refuses every request alike: the step fails.
_REQUEST_REFUSED = frozenset({400, 413, 422})
# ... unless it refuses this many requests in a row with no answer between (an Ollama too
# old for a JSON schema in ``format`` answers 400 to every structured request): then it is
# the server, and every note would be analysed offline for good.
_REFUSED_IN_A_ROW = 3
_TAG = re.compile(r"<[^>]*>")


def _one_line(message: str, limit: int = 160) -> str:
    """A server's error as one line: an HTML page's tags left out, cut at ``limit``
    characters with "…"."""
    page = "</" in message or "<html" in message.lower()  # not "must be < 5 and > 3"
    text = " ".join((_TAG.sub(" ", message) if page else message).split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


# A reasoning model (qwen3, deepseek-r1) opens its answer with its thinking; an answer cut
# short by its token budget may hold nothing else.
_THINKING = re.compile(r"\A\s*<think>.*?(?:</think>\s*|\Z)", re.DOTALL)


def without_thinking(content: str) -> str:
    """``content`` without a leading ``<think>…</think>`` block (all of it when the block
    is never closed): the answer a reasoning model gives after its thinking."""
    return _THINKING.sub("", content, count=1)


class OllamaEngine(BaseEngine):
    """Engine over a local Ollama server; construction makes no request."""

    name = "ollama"

    def __init__(
        self,
        host: str = DEFAULT_HOST,
        model: str = DEFAULT_MODEL,
        timeout: float = 120.0,
        cache: LLMCache | None = None,
        *,
        retries: int = 1,
        backoff: float = 0.5,
        seed: int = 42,
        max_ctx: int = 32768,
        min_thread_notes: int = 3,
    ) -> None:
        """Raise ValueError for an empty model, a host without http(s)://, or timeout ≤ 0."""
        super().__init__(cache)
        if not isinstance(model, str) or not model.strip():
            raise ValueError("model must be a non-empty name such as 'mistral:7b'")
        if not isinstance(host, str) or not host.startswith(("http://", "https://")):
            raise ValueError(f"host must be a URL starting with http:// or https://, got {host!r}")
        if not timeout or timeout <= 0:
            raise ValueError(f"timeout must be > 0 seconds, got {timeout!r}")
        if retries < 0:
            raise ValueError(f"retries must be >= 0, got {retries}")
        self.host = host.rstrip("/")
        self.model = model.strip()
        self.timeout = float(timeout)
        self.retries = retries
        self.backoff = backoff
        self.seed = seed
        self.max_ctx = max_ctx
        self.min_thread_notes = min_thread_notes
        self.requests_sent = 0
        self._refused_in_a_row = 0
        self._client = ollama.Client(host=self.host, timeout=self.timeout)

    # -- transport ------------------------------------------------------------------------

    def _fail(self, exc: BaseException, task: str) -> EngineError:
        attempts = self.retries + 1
        tried = f" (tried {attempts} times)" if attempts > 1 else ""
        if isinstance(exc, ollama.ResponseError):
            # One line of what the server said (a proxy's error page is many).
            message = _one_line(str(exc.error))
            code = exc.status_code
            if code == 404 and "model" in message.lower() and "not found" in message.lower():
                return EngineUnavailable(
                    f"model {self.model} not found on {self.host}: run `ollama pull {self.model}`"
                )
            if code == 429:
                return EngineUnavailable(
                    f"Ollama at {self.host} is limiting requests (HTTP 429){tried}: {message}; "
                    "run the command again later"
                )
            if code >= 500:
                return EngineUnavailable(
                    f"Ollama at {self.host} failed on the {task} task{tried}: {message} "
                    f"(HTTP {code}); check the server log"
                )
            if code in _REQUEST_REFUSED:
                self._refused_in_a_row += 1
                if self._refused_in_a_row < _REFUSED_IN_A_ROW:
                    return EngineResponseError(
                        f"Ollama at {self.host} rejected the {task} task: "
                        f"{message or 'no reason given'} (HTTP {code})"
                    )
                return EngineUnavailable(
                    f"Ollama at {self.host} refused {self._refused_in_a_row} requests in a row "
                    f"(the {task} task: {message or 'no reason given'}, HTTP {code}): if the "
                    "reason is a prompt too long, use a model with a larger context; else "
                    "update Ollama (one too old for structured answers refuses them all), or "
                    "check that SELENE_OLLAMA_HOST is an Ollama server"
                )
            return EngineUnavailable(
                f"{self.host} refused the {task} task: {message or 'no reason given'} "
                f"(HTTP {code}): is SELENE_OLLAMA_HOST an Ollama server that needs no "
                "credentials?"
            )
        if isinstance(exc, httpx.TimeoutException):
            return EngineUnavailable(
                f"Ollama at {self.host} did not answer the {task} task within {self.timeout:g} s{tried}: "
                "raise SELENE_OLLAMA_TIMEOUT or use a smaller model"
            )
        return EngineUnavailable(
            f"cannot reach Ollama at {self.host}: start it with `ollama serve` "
            "or set SELENE_LLM=extractive"
        )

    def _request(self, call: Callable[[], Any], task: str) -> Any:
        retrying = Retrying(
            retry=retry_if_exception(_is_transient),
            stop=stop_after_attempt(self.retries + 1),
            wait=wait_exponential(multiplier=self.backoff, max=8),
            reraise=True,
        )
        try:
            for attempt in retrying:
                with attempt:
                    self.requests_sent += 1
                    answer = call()
                    self._refused_in_a_row = 0
                    return answer
        except (ollama.ResponseError, ConnectionError, httpx.HTTPError) as exc:
            raise self._fail(exc, task) from None
        except ValueError as exc:  # a 200 whose body is not Ollama's JSON (a proxy's page)
            raise EngineUnavailable(
                f"{self.host} answered the {task} task with something that is not Ollama's JSON "
                f"({' '.join(str(exc).split())[:80]}): is SELENE_OLLAMA_HOST an Ollama server?"
            ) from None
        raise AssertionError("unreachable")  # pragma: no cover

    def _num_ctx(self, prompt_tokens: int, num_predict: int) -> int:
        needed = prompt_tokens + num_predict + _CTX_MARGIN
        if needed > self.max_ctx:
            # A request the caller must change (one line, not a traceback).
            raise UsageError(
                f"a prompt of {prompt_tokens:,} tokens plus {num_predict:,} answer tokens "
                f"exceeds the {self.max_ctx:,}-token context allowed for {self.model}; send "
                "less text"
            )
        return max(_MIN_CTX, math.ceil(needed / _CTX_STEP) * _CTX_STEP)

    def _chat(
        self, task: str, prompt: str, num_predict: int, schema: dict[str, Any] | None = None
    ) -> tuple[str, int | None, int | None]:
        """One chat request; returns (answer text, prompt tokens, output tokens). Secrets in
        the prompt are redacted first: a note's AWS key or password was sent to the model
        (which may not be on this machine) and came back in a thread's stored text."""
        prompt = redact(prompt)
        prompt_tokens = count_tokens(prompt, model=self.model)
        options = {
            "num_ctx": self._num_ctx(prompt_tokens, num_predict),
            "num_predict": num_predict,
            "temperature": 0,
            "seed": self.seed,
        }
        response = self._request(
            lambda: self._client.chat(
                model=self.model,
                messages=[{"role": "user", "content": prompt}],
                format=schema,
                options=options,
                stream=False,
            ),
            task,
        )
        content = (response.message.content or "") if response.message else ""
        return without_thinking(content), response.prompt_eval_count, response.eval_count

    def _ask(
        self,
        task: str,
        prompt: str,
        num_predict: int,
        parse: Callable[[str], Any],
        schema: dict[str, Any] | None = None,
    ) -> tuple[Any, int | None, int | None]:
        """Chat, then ``parse`` the answer; one retry when it is malformed."""
        problem = ""
        content = ""
        for _ in range(2):
            content, p_tokens, o_tokens = self._chat(task, prompt, num_predict, schema)
            try:
                return parse(content), p_tokens, o_tokens
            except _Malformed as exc:
                problem = str(exc)
        snippet = " ".join(content.split())[:120]
        raise EngineResponseError(
            f"model {self.model} at {self.host} gave unusable output for {task} twice "
            f"({problem}); last answer began {snippet!r}"
        )

    def _op(
        self,
        task: str,
        template: PromptTemplate,
        payload: dict[str, Any],
        prompt: str,
        parse: Callable[[str], Any],
        *,
        num_predict: int | None = None,
        schema: dict[str, Any] | None = None,
    ) -> Any:
        """One cached operation: the output cached for ``task`` and ``payload`` under
        ``template``'s recipe, or else ``prompt`` asked and ``parse``d (``num_predict``
        defaults to the task's answer budget), stored and returned."""
        tokens = ANSWER_TOKENS[task] if num_predict is None else num_predict
        return self._cached(
            task,
            template.recipe,
            payload,
            lambda: self._ask(task, prompt, tokens, parse, schema),
        )

    def check(self) -> dict[str, Any]:
        """Ask the server for its version and the model's details; raise EngineUnavailable."""
        version = self._request(lambda: self._client._request_raw("GET", "/api/version"), "check")
        shown = self._request(lambda: self._client.show(self.model), "check")
        details = shown.details.model_dump() if shown.details else {}
        return {
            "host": self.host,
            "version": version.json().get("version"),
            "model": self.model,
            "details": details,
        }

    # -- operations -----------------------------------------------------------------------

    def analyze_note(self, title: str, content: str) -> NoteAnalysis:
        """Concepts, primary theme and essence in one structured request (note_analysis.md)."""
        require_text(title, "title")
        require_text(content, "content")
        if not title.strip() and not content.strip():
            raise ValueError("a note needs a title or content")
        template = load_prompt("note_analysis")
        prompt = template.render(title=title, content=content)
        out = self._op(
            "analyze_note",
            template,
            {"title": title, "content": content, "seed": self.seed},
            prompt,
            _parse_analysis,
            schema=ANALYSIS_SCHEMA,
        )
        return NoteAnalysis(**out)

    def detect_threads(
        self, context: str, notes: Sequence[Mapping[str, Any]]
    ) -> list[ThreadProposal]:
        """Threads over ``notes`` (detect_threads.md); ``context`` is the rendered notes text.

        The prompt appends an index of ``[id:...] title`` lines so the model can name members;
        ids the model invents are dropped, and threads left with fewer than
        ``min_thread_notes`` notes are discarded.
        """
        require_text(context, "context")
        ids = note_ids_of(notes)
        index = "\n".join(
            f"[id:{nid}] {str(note.get('title') or '').strip()}".rstrip()
            for nid, note in zip(ids, notes, strict=True)
        )
        block = (context.strip() + "\n\nNote index:\n" if context.strip() else "") + index
        template = load_prompt("detect_threads")
        prompt = template.render(notes=block, min_notes=self.min_thread_notes)
        known = set(ids)

        def parse(content: str) -> list[dict[str, Any]]:
            return _parse_threads(content, known, self.min_thread_notes)

        out = self._op(
            "detect_threads",
            template,
            {"context": context, "ids": ids, "index": index, "min": self.min_thread_notes},
            prompt,
            parse,
            schema=THREADS_SCHEMA,
        )
        return [ThreadProposal(**t) for t in out]

    def digest_thread(self, name: str, why: str, essences: Sequence[str]) -> str:
        """A 3–5 sentence paragraph of the thread's arc (thread_digest.md), ≥ 30 characters."""
        require_text(name, "name", allow_empty=False)
        require_text(why, "why")
        cleaned = [require_text(e, "essence").strip() for e in essences]
        cleaned = [e for e in cleaned if e]
        if not cleaned:
            raise ValueError("digest_thread needs at least one non-empty essence")
        # A large thread's essences (oldest first) are cut to the newest that fit half the
        # model's context: all of them overflowed it, on every run.
        room, kept = self.max_ctx // 2, 0
        for essence in reversed(cleaned):
            room -= count_tokens(essence, model=self.model) + 4
            if room < 0 and kept:
                break
            kept += 1
        cleaned = cleaned[len(cleaned) - kept :]
        template = load_prompt("thread_digest")
        prompt = template.render(
            name=name,
            why=why.strip() or "(none)",
            essences="\n".join(f"{i}. {e}" for i, e in enumerate(cleaned, 1)),
        )
        return self._op(
            "digest_thread",
            template,
            {"name": name, "why": why, "essences": cleaned, "seed": self.seed},
            prompt,
            _parse_digest,
        )

    def reconsolidate_thread(
        self, name: str, summary: str, why: str, context: str
    ) -> ThreadRevision:
        """The thread read again over its newest notes (reconsolidate_thread.md): summary,
        motivation, direction and whether it shifted."""
        require_text(name, "name", allow_empty=False)
        require_text(summary, "summary")
        require_text(why, "why")
        require_text(context, "context", allow_empty=False)
        template = load_prompt("reconsolidate_thread")
        prompt = template.render(
            name=name,
            summary=summary.strip() or "(none)",
            why=why.strip() or "(none)",
            notes=context.strip(),
        )
        out = self._op(
            "reconsolidate_thread",
            template,
            {"name": name, "summary": summary, "why": why, "context": context, "seed": self.seed},
            prompt,
            _parse_revision,
            schema=REVISION_SCHEMA,
        )
        return ThreadRevision(**out)

    def summarize(
        self, text: str, max_tokens: int, model: str | None = None, *, kind: str = "text"
    ) -> str:
        """A summary counting ≤ ``max_tokens`` in ``model``'s tokens (default: this model).

        ``kind`` "text" uses summarize.md, "conversation" compaction_summary.md (bullets).
        The input is cut to fit the context window; the answer is cut by
        ``truncate_to_tokens`` if the model overshoots.
        """
        require_text(text, "text")
        check_budget(max_tokens, "max_tokens")
        require_kind(kind)
        target = model or self.model
        template = load_prompt("summarize" if kind == "text" else "compaction_summary")
        num_predict = max_tokens + 32
        max_words = max(1, int(max_tokens * 0.7))
        overhead = count_tokens(template.render(text="", max_words=max_words), model=self.model)
        room = self.max_ctx - overhead - num_predict - 2 * _CTX_MARGIN
        if room < 1:
            raise ValueError(f"max_tokens={max_tokens} leaves no room in a {self.max_ctx} context")
        body = truncate_to_tokens(text, room, model=self.model)
        prompt = template.render(text=body, max_words=max_words)

        def parse(content: str) -> str:
            summary = content.strip()
            if not summary:
                raise _Malformed("empty summary")
            return truncate_to_tokens(summary, max_tokens, model=target)

        return self._op(
            "summarize",
            template,
            {"text": text, "max_tokens": max_tokens, "model": target, "kind": kind},
            prompt,
            parse,
            num_predict=num_predict,
        )

    def assess_chunk(self, text: str, context: str | None = None) -> Assessment:
        """Seed 003's three 1–10 ratings (assess_chunk.md); ``context`` is a question or task."""
        require_text(text, "text", allow_empty=False)
        if context is not None:
            require_text(context, "context")
        template = load_prompt("assess_chunk")
        has_context = bool(context and context.strip())
        prompt = template.render(
            text=text,
            context=f"\n**What the reader wants to know:**\n{context.strip()}\n"
            if has_context
            else "",
            relevance_target=" and for the question above" if has_context else "",
        )
        out = self._op(
            "assess_chunk",
            template,
            {"text": text, "context": context, "seed": self.seed},
            prompt,
            _parse_assessment,
            schema=ASSESSMENT_SCHEMA,
        )
        return Assessment(**out)

    def answer(self, question: str, context: str) -> str:
        """An answer from ``context`` only, citing its source markers (answer.md)."""
        require_text(question, "question", allow_empty=False)
        require_text(context, "context")
        template = load_prompt("answer")
        prompt = template.render(question=question.strip(), context=context)

        def parse(content: str) -> str:
            if not content.strip():
                raise _Malformed("empty answer")
            return content.strip()

        return self._op(
            "answer",
            template,
            {"question": question, "context": context, "seed": self.seed},
            prompt,
            parse,
        )

    def rewrite_question(self, question: str) -> str:
        """Search words for ``question`` from the model (rewrite_question.md), cached."""
        require_text(question, "question", allow_empty=False)
        template = load_prompt("rewrite_question")
        prompt = template.render(question=question.strip())
        return self._op(
            "rewrite_question",
            template,
            {"question": question, "seed": self.seed},
            prompt,
            _parse_rewrite,
        )

    def rerank_passages(self, question: str, passages: Sequence[str]) -> list[int]:
        """Indexes of ``passages`` that help answer ``question``, most useful first, from
        the model (rerank_passages.md), cached. Numbers the model invents are dropped."""
        require_text(question, "question", allow_empty=False)
        texts = [require_text(p, "passage") for p in passages]
        if not texts:
            return []
        template = load_prompt("rerank_passages")
        listing = "\n\n".join(f"[{i}] {' '.join(t.split())}" for i, t in enumerate(texts, 1))
        prompt = template.render(question=question.strip(), passages=listing)
        schema = {
            "type": "object",
            "properties": {
                "ranking": {
                    "type": "array",
                    "items": {"type": "integer", "minimum": 1, "maximum": len(texts)},
                    "maxItems": len(texts),
                }
            },
            "required": ["ranking"],
        }
        numbers = self._op(
            "rerank_passages",
            template,
            {"question": question, "passages": texts, "seed": self.seed},
            prompt,
            _parse_ranking,
            schema=schema,
        )
        return [n - 1 for n in numbers if 1 <= n <= len(texts)]


def _parse_ranking(content: str) -> list[int]:
    ranking = _load_object(content).get("ranking")
    if not isinstance(ranking, list):
        raise _Malformed("'ranking' is not a list")
    return list(dict.fromkeys(n for n in ranking if isinstance(n, int) and not isinstance(n, bool)))


def _parse_rewrite(content: str) -> str:
    lines = [ln.strip().strip("\"'`") for ln in content.strip().splitlines() if ln.strip()]
    if not lines:
        raise _Malformed("empty search query")
    return lines[0][:REWRITE_MAX_CHARS].strip()


def _load_object(content: str) -> dict[str, Any]:
    """The JSON object in an answer; tolerates a code fence or prose around one object."""
    text = content.strip()
    try:
        value = json.loads(text)
    except ValueError as exc:
        start, end = text.find("{"), text.rfind("}")
        if start < 0 or end <= start:
            raise _Malformed(f"not JSON: {exc.msg}") from None
        try:
            value = json.loads(text[start : end + 1])
        except ValueError as inner:
            raise _Malformed(f"not JSON: {inner.msg}") from None
    if not isinstance(value, dict):
        raise _Malformed("JSON is not an object")
    return value


def _string(value: Any, field: str) -> str:
    if not isinstance(value, str):
        raise _Malformed(f"{field} is not a string")
    return " ".join(value.split()).strip("\"'“”")


# What a model's answer may store, whatever it wrote: a concept or a theme is a few words, an
# essence one or two sentences, a thread's name a title and its summary a paragraph (an
# over-long answer was stored whole, and every later digest prompt overflowed the context).
MAX_ESSENCE_SENTENCES, MAX_ESSENCE_CHARS = 2, 400
MAX_THREAD_NAME_CHARS = 80
MAX_THREAD_TEXT_CHARS = 600


def _capped_essence(essence: str) -> str:
    sentences = _text.split_sentences(essence) or [essence]
    return _text.shorten(" ".join(sentences[:MAX_ESSENCE_SENTENCES]), MAX_ESSENCE_CHARS)


def _parse_analysis(content: str) -> dict[str, Any]:
    data = _load_object(content)
    raw = data.get("concepts")
    if not isinstance(raw, list) or not raw:
        raise _Malformed("concepts is not a non-empty list")
    concepts: list[str] = []
    for item in raw:
        concept = _text.shorten(_string(item, "concept").lower(), MAX_CONCEPT_CHARS)
        if concept and concept not in concepts:
            concepts.append(concept)
    if not concepts:
        raise _Malformed("concepts are all empty")
    essence = _capped_essence(_string(data.get("essence"), "essence"))
    if len(essence) < MIN_ESSENCE_CHARS:
        raise _Malformed(f"essence is {len(essence)} characters, needs more than 10")
    theme = _string(data.get("primary_theme"), "primary_theme").lower()
    if not theme or len(theme) > MAX_CONCEPT_CHARS:  # a theme is a few words
        theme = concepts[0]
    return {"concepts": concepts[:8], "primary_theme": theme, "essence": essence}


def _parse_threads(content: str, known: set[str], min_notes: int) -> list[dict[str, Any]]:
    data = _load_object(content)
    threads = data.get("threads")
    if not isinstance(threads, list):
        raise _Malformed("threads is not a list")
    out = []
    for item in threads:
        if not isinstance(item, dict):
            raise _Malformed("a thread is not an object")
        name = _text.shorten(_string(item.get("name"), "name"), MAX_THREAD_NAME_CHARS)
        raw_ids = item.get("note_ids")
        if not isinstance(raw_ids, list):
            raise _Malformed("note_ids is not a list")
        members = list(dict.fromkeys(str(i) for i in raw_ids if str(i) in known))
        if not name or len(members) < min_notes:
            continue
        direction = item.get("direction")
        out.append(
            {
                "name": name,
                "why": _text.shorten(_string(item.get("why", ""), "why"), MAX_THREAD_TEXT_CHARS),
                "note_ids": members,
                "summary": _text.shorten(
                    _string(item.get("summary", ""), "summary"), MAX_THREAD_TEXT_CHARS
                ),
                "direction": direction
                if direction in ("exploring", "emerging", "clear")
                else "exploring",
            }
        )
    return out


def _parse_digest(content: str) -> str:
    paragraph = " ".join(content.split()).strip("\"'“”")
    if paragraph.lower().startswith("paragraph:"):
        paragraph = paragraph[len("paragraph:") :].strip()
    sentences = _text.split_sentences(paragraph)
    digest = " ".join(sentences[:5])
    if len(digest) < MIN_DIGEST_CHARS:
        raise _Malformed(f"digest is {len(digest)} characters, needs at least {MIN_DIGEST_CHARS}")
    # What the step stores: an answer it would reject was cached as accepted, and kept the
    # thread without a digest after the model answered well again.
    if len(sentences) < MIN_DIGEST_SENTENCES:
        raise _Malformed(
            f"digest has {len(sentences)} sentences, needs at least {MIN_DIGEST_SENTENCES}"
        )
    return digest


def _parse_revision(content: str) -> dict[str, Any]:
    data = _load_object(content)
    out: dict[str, Any] = {}
    for field in ("summary", "why"):
        value = data.get(field)
        if not isinstance(value, str) or not value.strip():
            raise _Malformed(f"{field} is not a non-empty string")
        out[field] = _text.shorten(" ".join(value.split()), 600)
    direction = str(data.get("direction", "")).strip().lower()
    if direction not in DIRECTIONS:
        raise _Malformed(f"direction={direction!r} is not one of {', '.join(DIRECTIONS)}")
    out["direction"] = direction
    shifted = data.get("shifted")
    if not isinstance(shifted, bool):
        raise _Malformed("shifted is not true or false")
    out["shifted"] = shifted
    return out


def _parse_assessment(content: str) -> dict[str, Any]:
    data = _load_object(content)
    out: dict[str, Any] = {}
    for field in ("relevance", "signal_density", "reusability"):
        value = data.get(field)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise _Malformed(f"{field} is not a number")
        rounded = round(value)
        if not 1 <= rounded <= 10:
            raise _Malformed(f"{field}={value} is outside 1-10")
        out[field] = int(rounded)
    reason = data.get("reason", "")
    reason = reason if isinstance(reason, str) else str(reason)
    out["reason"] = _text.shorten(" ".join(reason.split()), 200)
    return out


def parse_assessment_answer(content: str) -> Assessment:
    """An :class:`Assessment` from a model's or CLI's answer text (JSON, maybe fenced).

    Raises EngineResponseError when it has no object with three 1–10 ratings.
    """
    try:
        return Assessment(**_parse_assessment(content))
    except _Malformed as exc:
        snippet = " ".join(content.split())[:80]
        raise EngineResponseError(f"unusable assessment ({exc}): {snippet!r}") from None
