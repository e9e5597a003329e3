"""Pick the engine the settings name: :func:`get_engine`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from selene_dag.config import Settings, load_settings
from selene_dag.llm.cache import LLMCache
from selene_dag.llm.engine import BaseEngine, ModelCalls
from selene_dag.llm.versions import EXTRACTIVE_MODEL

if TYPE_CHECKING:
    import duckdb


def get_engine(
    settings: Settings | None = None,
    cache_conn: duckdb.DuckDBPyConnection | None = None,
    deferred: ModelCalls | None = None,
) -> BaseEngine:
    """The engine named by ``settings.llm`` (default: ``load_settings()``).

    ``cache_conn`` is a migrated DuckDB connection for the persistent cache of model calls;
    None keeps the cache in memory. The extractive engine always caches in memory only.
    ``extractive`` needs nothing; ``ollama`` uses ``settings.ollama_host``,
    ``settings.model`` and ``settings.ollama_timeout`` and contacts the server only when
    first called. ``deferred``: a model call the cache does not hold raises
    :class:`~selene_dag.llm.engine.DeferredCall` (the caller makes it with the store let
    go) unless ``deferred`` holds its answer. Raises ValueError for an unknown engine name.
    """
    if settings is None:
        settings = load_settings()
    # Each engine is imported only when chosen: the extractive one loads scikit-learn, the
    # Ollama one its HTTP client, and `import selene_dag.llm` must stay cheap for Dagster.
    if settings.llm == "extractive":
        from selene_dag.llm.extractive import ExtractiveEngine

        # Deterministic and cheaper to recompute than a committed cache row per call.
        return ExtractiveEngine(cache=LLMCache(None), token_model=settings.model)
    cache = LLMCache(cache_conn)
    if settings.llm == "ollama":
        from selene_dag.llm.ollama import OllamaEngine

        engine = OllamaEngine(
            host=settings.ollama_host,
            model=settings.model,
            timeout=settings.ollama_timeout,
            cache=cache,
        )
        engine.deferred = deferred
        return engine
    raise ValueError(f"unknown engine {settings.llm!r}: expected extractive or ollama")


def engine_label(settings: Settings) -> str:
    """``engine:model`` of the engine ``settings`` name, as ``get_engine`` would build it,
    without importing the engine (the extractive one loads scikit-learn). Raises
    ValueError for an unknown engine name."""
    if settings.llm == "extractive":
        return f"extractive:{EXTRACTIVE_MODEL}"
    if settings.llm == "ollama":
        return f"ollama:{settings.model.strip()}"
    raise ValueError(f"unknown engine {settings.llm!r}: expected extractive or ollama")
