"""The Engine protocol: every model operation the graph needs, typed results, errors.

Two engines implement it: :class:`~selene_dag.llm.extractive.ExtractiveEngine` (default,
offline, deterministic) and :class:`~selene_dag.llm.ollama.OllamaEngine` (a local Ollama
server); :func:`selene_dag.llm.get_engine` picks one from the settings. This module imports
neither engine, so both can import it. Both route every operation through
the content-addressed cache (:mod:`selene_dag.llm.cache`) and count ``calls_made`` (computed
now) and ``calls_cached`` (served from the cache) so Dagster assets can report both.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from selene_dag.errors import SeleneError
from selene_dag.llm.cache import CacheEntry, LLMCache, cache_key

MIN_ESSENCE_CHARS = 11  # seed 000 rejects essences of 10 characters or fewer
MIN_DIGEST_CHARS = 30  # seed 000 rejects digests shorter than 30 characters
MIN_DIGEST_SENTENCES = 3  # and digests of fewer than three sentences
# A concept or a theme is a few words, whichever engine names it.
MAX_CONCEPT_CHARS = 60


class EngineError(SeleneError, RuntimeError):
    """Base of every model-layer error; ``str(error)`` is one line a person can act on."""


class EngineUnavailable(EngineError):
    """The engine cannot serve the call: server down, model missing, timeout, unsupported task."""


class EngineResponseError(EngineError):
    """The model answered, but not with a usable result (malformed twice, empty, out of range)."""


@dataclass(frozen=True)
class NoteAnalysis:
    """Concepts (≈5, lower-case), primary theme and 1–2 sentence essence of one note."""

    concepts: list[str]
    primary_theme: str
    essence: str


@dataclass(frozen=True)
class ThreadProposal:
    """A thread of thinking over some notes: short name, motivation, member note ids."""

    name: str
    why: str
    note_ids: list[str]
    summary: str = ""
    direction: str = "exploring"


@dataclass(frozen=True)
class ThreadRevision:
    """A thread seen again with its newest notes: its summary and motivation as they read
    now, its direction (exploring, emerging or clear) and whether that direction shifted."""

    summary: str
    why: str
    direction: str
    shifted: bool


@dataclass(frozen=True)
class Assessment:
    """Seed 003's three 1–10 ratings of a chunk and a one-line reason."""

    relevance: int
    signal_density: int
    reusability: int
    reason: str

    @property
    def overall(self) -> float:
        """Mean of the three ratings (1.0–10.0)."""
        return round((self.relevance + self.signal_density + self.reusability) / 3, 2)


@runtime_checkable
class Engine(Protocol):
    """What the graph calls; see the module docstring. All methods may raise EngineError."""

    name: str
    model: str

    @property
    def calls_made(self) -> int:
        """Operations computed (not served from the cache) since the engine was made."""
        ...

    @property
    def calls_cached(self) -> int:
        """Operations served from the cache since the engine was made."""
        ...

    def analyze_note(self, title: str, content: str) -> NoteAnalysis:
        """Concepts, primary theme and an essence of more than 10 characters of one note."""
        ...

    def detect_threads(
        self, context: str, notes: Sequence[Mapping[str, Any]]
    ) -> list[ThreadProposal]:
        """Threads over ``notes`` (mappings with an ``id``); ``context`` renders them."""
        ...

    def digest_thread(self, name: str, why: str, essences: Sequence[str]) -> str:
        """A 3–5 sentence digest of a thread from its notes' essences."""
        ...

    def reconsolidate_thread(
        self, name: str, summary: str, why: str, context: str
    ) -> ThreadRevision:
        """The thread ``name`` read again: ``context`` renders its newest notes; ``summary``
        and ``why`` are what it said before."""
        ...

    def summarize(
        self, text: str, max_tokens: int, model: str | None = None, *, kind: str = "text"
    ) -> str:
        """A summary of ``text`` counting ≤ ``max_tokens`` of ``model``'s tokens."""
        ...

    def assess_chunk(self, text: str, context: str | None = None) -> Assessment:
        """Three 1–10 ratings of a chunk, relative to ``context`` (a question) when given."""
        ...

    def answer(self, question: str, context: str) -> str:
        """An answer to ``question`` from ``context`` only."""
        ...

    def rewrite_question(self, question: str) -> str:
        """Search words for ``question`` (key terms, synonyms, likely answer words), one
        line; raises EngineUnavailable when the engine cannot (the extractive one)."""
        ...

    def rerank_passages(self, question: str, passages: Sequence[str]) -> list[int]:
        """Indexes of ``passages`` (0-based) that help answer ``question``, most useful
        first (possibly none); raises EngineUnavailable when the engine cannot (the
        extractive one)."""
        ...


SUMMARY_KINDS = ("text", "conversation")


@dataclass
class CallStats:
    """Counters of one engine instance."""

    made: int = 0
    cached: int = 0
    by_task: dict[str, dict[str, int]] = field(default_factory=dict)

    def count(self, task: str, cached: bool) -> None:
        """Record one call of ``task``."""
        bucket = self.by_task.setdefault(task, {"made": 0, "cached": 0})
        if cached:
            self.cached += 1
            bucket["cached"] += 1
        else:
            self.made += 1
            bucket["made"] += 1


@dataclass
class ModelCalls:
    """The model calls of one request made with the store let go (see :class:`DeferredCall`):
    by cache key, the entry each gave, or the engine error it raised."""

    done: dict[str, CacheEntry | EngineError] = field(default_factory=dict)
    fresh: list[CacheEntry] = field(default_factory=list)  # not yet written to the store
    ms: float = 0.0  # time spent in them


class DeferredCall(Exception):
    """Raised by an engine built with ``deferred`` for a call its cache does not hold: the
    caller lets go of the store (a model takes seconds to minutes, and while the store is
    held no other process can write), makes the call with :meth:`run`, and does its work
    again, which then finds the answer (or the error) in ``deferred``."""

    def __init__(self, calls: ModelCalls, key: str, compute: Callable[[], CacheEntry]) -> None:
        super().__init__(f"model call {key[:12]} deferred until the store is let go")
        self.calls = calls
        self.key = key
        self._compute = compute

    def run(self) -> None:
        """Make the call; its entry (kept in ``calls.fresh`` to be written to the cache) or
        its EngineError goes to ``calls.done``. Other exceptions propagate."""
        started = time.perf_counter()
        try:
            entry = self._compute()
        except EngineError as exc:
            self.calls.done[self.key] = exc
        else:
            self.calls.done[self.key] = entry
            self.calls.fresh.append(entry)
        finally:
            self.calls.ms += (time.perf_counter() - started) * 1000


class BaseEngine:
    """Cache plumbing and statistics shared by the engines.

    ``deferred``: when set, a call the cache does not hold raises :class:`DeferredCall`
    instead of being made (unless ``deferred`` holds its answer already)."""

    name: str = "base"
    model: str = ""
    # True when a computed call costs milliseconds (no model server): a caller need not
    # commit after each one.
    calls_are_cheap: bool = False

    def __init__(self, cache: LLMCache | None = None) -> None:
        self.cache = cache if cache is not None else LLMCache(None)
        self.stats = CallStats()
        self.deferred: ModelCalls | None = None

    @property
    def calls_made(self) -> int:
        """Operations computed by this engine (model requests for Ollama) since creation."""
        return self.stats.made

    @property
    def calls_cached(self) -> int:
        """Operations served from the cache since creation."""
        return self.stats.cached

    def stats_metadata(self) -> dict[str, Any]:
        """A flat dict for Dagster metadata: engine, model, calls made/cached."""
        return {
            "llm_engine": self.name,
            "llm_model": self.model,
            "llm_calls_made": self.stats.made,
            "llm_calls_cached": self.stats.cached,
        }

    def _cached(
        self,
        task: str,
        recipe: str,
        payload: Any,
        compute: Callable[[], tuple[Any, int | None, int | None]],
    ) -> Any:
        """Return the cached JSON output for this call, or compute, store and return it.

        ``compute`` returns (json output, prompt tokens, output tokens).
        """
        key = cache_key(self.name, self.model, task, recipe, payload)
        hit = self.cache.get(key)
        if hit is not None:
            self.stats.count(task, cached=True)
            return hit.output
        if self.deferred is not None:
            done = self.deferred.done.get(key)
            if isinstance(done, EngineError):
                raise done
            if done is not None:
                self.stats.count(task, cached=True)
                return done.output
            raise DeferredCall(
                self.deferred, key, lambda: self._compute(key, task, recipe, compute)
            )
        entry = self._compute(key, task, recipe, compute)
        self.cache.put(entry)
        return entry.output

    def _compute(
        self,
        key: str,
        task: str,
        recipe: str,
        compute: Callable[[], tuple[Any, int | None, int | None]],
    ) -> CacheEntry:
        started = time.perf_counter()
        output, prompt_tokens, output_tokens = compute()
        duration = (time.perf_counter() - started) * 1000
        self.stats.count(task, cached=False)
        return CacheEntry(
            key=key,
            engine=self.name,
            model=self.model,
            task=task,
            recipe=recipe,
            output=output,
            duration_ms=round(duration, 3),
            prompt_tokens=prompt_tokens,
            output_tokens=output_tokens,
        )


@contextmanager
def deferred_cache(engine: Engine) -> Iterator[LLMCache | None]:
    """``engine``'s cache in deferred mode (``LLMCache.deferred``) for the block, yielded so
    the caller can ``flush()`` it where it commits; None for an engine without one."""
    cache = getattr(engine, "cache", None)
    if not isinstance(cache, LLMCache):
        yield None
        return
    with cache.deferred():
        yield cache


def require_text(value: object, what: str, *, allow_empty: bool = True) -> str:
    """Return ``value`` if it is a str (non-empty unless allowed); else raise TypeError/ValueError."""
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a str, got {type(value).__name__}")
    if not allow_empty and not value.strip():
        raise ValueError(f"{what} must not be empty")
    return value


def require_kind(kind: object) -> str:
    """Return ``kind`` when it is one of ``SUMMARY_KINDS``; else raise ValueError."""
    if kind not in SUMMARY_KINDS:
        raise ValueError(f"kind must be one of {', '.join(SUMMARY_KINDS)}, got {kind!r}")
    return str(kind)


def note_ids_of(notes: Sequence[Mapping[str, Any]]) -> list[str]:
    """The ``id`` of every note as a str, validating that each note is a mapping with an id."""
    if isinstance(notes, (str, bytes)) or not isinstance(notes, Sequence):
        raise TypeError("notes must be a sequence of mappings with an 'id'")
    ids = []
    for i, note in enumerate(notes):
        if not isinstance(note, Mapping) or note.get("id") is None:
            raise ValueError(f"notes[{i}] must be a mapping with an 'id'")
        ids.append(str(note["id"]))
    return ids
