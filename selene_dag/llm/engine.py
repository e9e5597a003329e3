"""The Engine protocol: every model operation the graph needs, typed results, errors.

Two engines implement it: :class:`~selene_dag.llm.extractive.ExtractiveEngine` (default,
offline, deterministic) and :class:`~selene_dag.llm.ollama.OllamaEngine` (a local Ollama
server). :func:`get_engine` picks one from the settings. Both route every operation through
the content-addressed cache (:mod:`selene_dag.llm.cache`) and count ``calls_made`` (computed
now) and ``calls_cached`` (served from the cache) so Dagster assets can report both.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

from selene_dag.llm.cache import CacheEntry, LLMCache, cache_key

if TYPE_CHECKING:
    import duckdb

    from selene_dag.config import Settings

T = TypeVar("T")

MIN_ESSENCE_CHARS = 11  # seed 000 rejects essences of 10 characters or fewer
MIN_DIGEST_CHARS = 30  # seed 000 rejects digests shorter than 30 characters


class EngineError(RuntimeError):
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
    def calls_made(self) -> int: ...

    @property
    def calls_cached(self) -> int: ...

    def analyze_note(self, title: str, content: str) -> NoteAnalysis: ...

    def detect_threads(
        self, context: str, notes: Sequence[Mapping[str, Any]]
    ) -> list[ThreadProposal]: ...

    def digest_thread(self, name: str, why: str, essences: Sequence[str]) -> str: ...

    def summarize(
        self, text: str, max_tokens: int, model: str | None = None, *, kind: str = "text"
    ) -> str: ...

    def assess_chunk(self, text: str, context: str | None = None) -> Assessment: ...

    def answer(self, question: str, context: str) -> str: ...


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


class BaseEngine:
    """Cache plumbing and statistics shared by the engines."""

    name: str = "base"
    model: str = ""

    def __init__(self, cache: LLMCache | None = None) -> None:
        self.cache = cache if cache is not None else LLMCache(None)
        self.stats = CallStats()

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
        started = time.perf_counter()
        output, prompt_tokens, output_tokens = compute()
        duration = (time.perf_counter() - started) * 1000
        self.stats.count(task, cached=False)
        self.cache.put(
            CacheEntry(
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
        )
        return output


def require_text(value: object, what: str, *, allow_empty: bool = True) -> str:
    """Return ``value`` if it is a str (non-empty unless allowed); else raise TypeError/ValueError."""
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a str, got {type(value).__name__}")
    if not allow_empty and not value.strip():
        raise ValueError(f"{what} must not be empty")
    return value


def require_max_tokens(value: object) -> int:
    """Validate a token budget: an int ≥ 1."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"max_tokens must be an int, got {type(value).__name__}")
    if value < 1:
        raise ValueError(f"max_tokens must be >= 1, got {value}")
    return value


def require_kind(kind: object) -> str:
    """Validate a summary kind."""
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


def analysis_to_json(value: NoteAnalysis | ThreadProposal | Assessment) -> dict[str, Any]:
    """A dataclass result as a plain dict (what the cache stores)."""
    return asdict(value)


def count_tokens(text: str, model: str | None = None) -> int:
    """Tokens of ``text`` in ``model``'s tokenizer (imported lazily from selene_dag.context)."""
    from selene_dag.context.tokens import count_tokens as _count

    return _count(text, model=model)


def truncate_to_tokens(text: str, max_tokens: int, model: str | None = None) -> str:
    """``text`` cut to at most ``max_tokens`` of ``model``'s tokens (lazy import)."""
    from selene_dag.context.tokens import truncate_to_tokens as _truncate

    return _truncate(text, max_tokens, model=model)


def get_engine(
    settings: Settings | None = None,
    cache_conn: duckdb.DuckDBPyConnection | None = None,
) -> BaseEngine:
    """The engine named by ``settings.llm`` (default: ``load_settings()``).

    ``cache_conn`` is a migrated DuckDB connection for the persistent cache of model calls;
    None keeps the cache in memory. The extractive engine always caches in memory only. ``extractive`` needs nothing; ``ollama`` uses ``settings.ollama_host``,
    ``settings.model`` and ``settings.ollama_timeout`` and contacts the server only when
    first called. Raises ValueError for an unknown engine name.
    """
    if settings is None:
        from selene_dag.config import load_settings

        settings = load_settings()
    if settings.llm == "extractive":
        from selene_dag.llm.extractive import ExtractiveEngine

        # Deterministic and cheaper to recompute than a committed cache row per call.
        return ExtractiveEngine(cache=LLMCache(None), token_model=settings.model)
    cache = LLMCache(cache_conn)
    if settings.llm == "ollama":
        from selene_dag.llm.ollama import OllamaEngine

        return OllamaEngine(
            host=settings.ollama_host,
            model=settings.model,
            timeout=settings.ollama_timeout,
            cache=cache,
        )
    raise ValueError(f"unknown engine {settings.llm!r}: expected extractive or ollama")
