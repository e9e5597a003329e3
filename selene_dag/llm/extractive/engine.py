"""ExtractiveEngine: the Engine protocol over the algorithms of this package."""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import signal
import sys
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from multiprocessing import get_context
from typing import Any

from selene_dag.context.tokens import count_tokens
from selene_dag.errors import check_budget
from selene_dag.llm.cache import LLMCache
from selene_dag.llm.engine import (
    Assessment,
    BaseEngine,
    EngineUnavailable,
    NoteAnalysis,
    ThreadProposal,
    ThreadRevision,
    note_ids_of,
    require_kind,
    require_text,
)
from selene_dag.llm.extractive import assess, digest, essence, summarize, threads
from selene_dag.llm.versions import ALGORITHM_VERSIONS, EXTRACTIVE_MODEL

_log = logging.getLogger(__name__)

# A batch of at least this many notes is analysed in worker processes: starting one costs
# about a second, analysing a note a few milliseconds.
PARALLEL_MIN_NOTES = 1_000
_CHUNK = 64


# prctl(2)'s option: the signal a process gets when the one that started it ends.
_PR_SET_PDEATHSIG = 1


def _end_with_parent(parent: int) -> None:
    """A worker's start: end it when the process that started it ends. Killed with SIGKILL
    (the out-of-memory killer, ``kill -9``), that process could not stop its pool, and its
    workers waited on their queue's pipe for ever, about 100 MB each (Linux; elsewhere a
    worker whose parent is gone before it starts ends at once)."""
    if sys.platform.startswith("linux"):
        # No C library to ask (a static build): the check below only.
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != parent:  # it ended before the request above was made
        os._exit(0)


def _analyze(note: tuple[str, str], concepts_k: int) -> dict[str, Any]:
    """One note's analysis, in a worker process."""
    return essence.analyze_note(note[0], note[1], concepts_k)


class ExtractiveEngine(BaseEngine):
    """Deterministic offline engine; each task's algorithm is described in its module."""

    name = "extractive"
    calls_are_cheap = True  # milliseconds each: callers batch their commits

    def __init__(
        self,
        cache: LLMCache | None = None,
        *,
        token_model: str | None = None,
        concepts_k: int = 5,
        min_thread_notes: int = 3,
        thread_distance: float = 0.8,
    ) -> None:
        """``token_model`` is the default model whose tokens ``summarize`` counts."""
        super().__init__(cache)
        self.model = EXTRACTIVE_MODEL
        self.token_model = token_model
        self.concepts_k = concepts_k
        self.min_thread_notes = min_thread_notes
        self.thread_distance = thread_distance

    # -- notes ---------------------------------------------------------------------------

    def analyze_note(self, title: str, content: str) -> NoteAnalysis:
        """Concepts, primary theme and essence of a note (essence > 10 chars if any text).

        Raises TypeError for non-str input and ValueError when title and content are both empty.
        """
        require_text(title, "title")
        require_text(content, "content")
        if not title.strip() and not content.strip():
            raise ValueError("a note needs a title or content")

        def compute() -> tuple[dict[str, Any], None, None]:
            return essence.analyze_note(title, content, self.concepts_k), None, None

        out = self._cached(
            "analyze_note",
            ALGORITHM_VERSIONS["analyze_note"],
            {"title": title, "content": content, "k": self.concepts_k},
            compute,
        )
        return NoteAnalysis(
            concepts=list(out["concepts"]),
            primary_theme=out["primary_theme"],
            essence=out["essence"],
        )

    def analyze_notes(
        self,
        notes: Sequence[tuple[str, str]],
        *,
        workers: int | None = None,
        parallel_min: int | None = None,
    ) -> Iterator[NoteAnalysis]:
        """``analyze_note`` of each ``(title, content)``, in order. A batch of at least
        ``parallel_min`` notes (default ``PARALLEL_MIN_NOTES``) is spread over ``workers``
        processes (default: one per CPU) with the same results (the algorithm is
        deterministic), each note counted as made rather than looked up in this engine's
        cache. In this process when the cache is persistent, there is one CPU, or the
        batch is small. Closing the iterator early cancels the notes not yet started."""
        if isinstance(notes, str | bytes) or not isinstance(notes, Sequence):
            raise TypeError(
                f"notes must be a list of (title, content) pairs, got {type(notes).__name__}"
            )
        for i, note in enumerate(notes):
            if not isinstance(note, tuple | list) or len(note) != 2:
                raise TypeError(
                    f"note {i}: expected a (title, content) pair, got {type(note).__name__}"
                )
        if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int)):
            raise TypeError(f"workers must be an int, got {type(workers).__name__}")
        workers = workers or os.cpu_count() or 1
        least = PARALLEL_MIN_NOTES if parallel_min is None else parallel_min
        if workers < 2 or len(notes) < max(least, 2) or self.cache.persistent:
            for title, content in notes:
                yield self.analyze_note(title, content)
            return
        for title, content in notes:
            require_text(title, "title")
            require_text(content, "content")
            if not title.strip() and not content.strip():
                raise ValueError("a note needs a title or content")
        pool = ProcessPoolExecutor(
            workers,
            mp_context=get_context("spawn"),
            initializer=_end_with_parent,
            initargs=(os.getpid(),),
        )
        done = 0
        try:
            ks = [self.concepts_k] * len(notes)
            for out in pool.map(_analyze, notes, ks, chunksize=_CHUNK):
                self.stats.count("analyze_note", cached=False)
                done += 1
                yield NoteAnalysis(
                    concepts=list(out["concepts"]),
                    primary_theme=out["primary_theme"],
                    essence=out["essence"],
                )
        except BrokenProcessPool:
            # A worker could not start or died. The usual cause: a script that calls this
            # without an `if __name__ == "__main__":` guard, which every spawned worker
            # runs again. The notes not yet analysed are analysed here instead.
            _log.warning(
                "essence workers stopped (a script calling selene-dag needs an "
                '`if __name__ == "__main__":` guard); analysing the remaining %d notes in '
                "this process",
                len(notes) - done,
            )
            for title, content in notes[done:]:
                yield self.analyze_note(title, content)
        finally:
            pool.shutdown(wait=True, cancel_futures=True)

    def detect_threads(
        self, context: str, notes: Sequence[Mapping[str, Any]]
    ) -> list[ThreadProposal]:
        """Cluster notes into threads (``context`` is not needed here and is ignored).

        Each note is a mapping with ``id`` and some of ``title``, ``essence``, ``concepts``
        (list or JSON list), ``primary_theme``, ``topic``, ``content``. Returns threads of at
        least ``min_thread_notes`` notes, largest first. Raises TypeError/ValueError on
        malformed notes.
        """
        ids = note_ids_of(notes)
        if len(set(ids)) != len(ids):
            raise ValueError("note ids must be unique")
        docs = {nid: threads.note_doc(note) for nid, note in zip(ids, notes, strict=True)}
        payload = {"docs": docs, "min": self.min_thread_notes, "dist": self.thread_distance}

        def compute() -> tuple[list[dict[str, Any]], None, None]:
            found = threads.cluster_threads(docs, self.min_thread_notes, self.thread_distance)
            return found, None, None

        out = self._cached("detect_threads", ALGORITHM_VERSIONS["detect_threads"], payload, compute)
        return [ThreadProposal(**t) for t in out]

    def digest_thread(self, name: str, why: str, essences: Sequence[str]) -> str:
        """A 3–5 sentence paragraph: an opening line naming the thread, then central essences.

        Raises ValueError when no essence has text.
        """
        require_text(name, "name", allow_empty=False)
        require_text(why, "why")
        cleaned = [require_text(e, "essence").strip() for e in essences]
        cleaned = [e for e in cleaned if e]
        if not cleaned:
            raise ValueError("digest_thread needs at least one non-empty essence")

        def compute() -> tuple[str, None, None]:
            return digest.digest_thread(name, why, cleaned), None, None

        payload = {"name": name, "why": why, "essences": cleaned}
        return self._cached("digest_thread", ALGORITHM_VERSIONS["digest_thread"], payload, compute)

    def reconsolidate_thread(
        self, name: str, summary: str, why: str, context: str
    ) -> ThreadRevision:
        """The thread as it stands: reading a thread's direction again takes a model, so
        offline the summary and motivation are kept, the direction is ``exploring`` and
        nothing shifted. (Threads are not reconsolidated with this engine.)"""
        require_text(name, "name", allow_empty=False)
        require_text(summary, "summary")
        require_text(why, "why")
        require_text(context, "context")
        return ThreadRevision(summary.strip(), why.strip(), "exploring", False)

    # -- text -----------------------------------------------------------------------------

    def summarize(
        self, text: str, max_tokens: int, model: str | None = None, *, kind: str = "text"
    ) -> str:
        """The most central sentences of ``text`` in document order, ≤ ``max_tokens`` tokens.

        ``model`` names the tokenizer (default: the engine's ``token_model``). ``kind``
        "conversation" renders bullet points (seed 004's compaction summary). Raises
        TypeError/ValueError on bad arguments.
        """
        require_text(text, "text")
        check_budget(max_tokens, "max_tokens")
        require_kind(kind)
        target = model or self.token_model

        def compute() -> tuple[str, None, int]:
            summary = summarize.summarize(text, max_tokens, target, kind)
            return summary, None, count_tokens(summary, model=target)

        payload = {"text": text, "max_tokens": max_tokens, "model": target, "kind": kind}
        return self._cached("summarize", ALGORITHM_VERSIONS["summarize"], payload, compute)

    def assess_chunk(self, text: str, context: str | None = None) -> Assessment:
        """Rate a chunk 1–10 with transparent heuristics (no model), described in
        :mod:`selene_dag.llm.extractive.assess`; ``reason`` lists the counts on one line.

        Raises TypeError for non-str input.
        """
        require_text(text, "text")
        if context is not None:
            require_text(context, "context")

        def compute() -> tuple[dict[str, Any], None, None]:
            return assess.assess_chunk(text, context), None, None

        payload = {"text": text, "context": context}
        out = self._cached("assess_chunk", ALGORITHM_VERSIONS["assess_chunk"], payload, compute)
        return Assessment(**out)

    def answer(self, question: str, context: str) -> str:
        """Always raises EngineUnavailable: answering needs a generative model."""
        raise EngineUnavailable("answering needs a model server: set SELENE_LLM=ollama")

    def rewrite_question(self, question: str) -> str:
        """Always raises EngineUnavailable: ask's offline path uses the question as is."""
        raise EngineUnavailable("rewriting a question needs a model server: set SELENE_LLM=ollama")

    def rerank_passages(self, question: str, passages: Sequence[str]) -> list[int]:
        """Always raises EngineUnavailable: ask's offline path keeps its fused order."""
        raise EngineUnavailable("reranking passages needs a model server: set SELENE_LLM=ollama")
