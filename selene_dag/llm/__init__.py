"""The model layer: every model call of selene-dag goes through here.

``get_engine(settings, cache_conn)`` returns the engine named by ``SELENE_LLM``:
``extractive`` (default, offline, deterministic) or ``ollama`` (a local Ollama server).
Engines share one protocol (:class:`Engine`), typed results, errors and a DuckDB cache.
The engines themselves load only when :func:`get_engine` picks one, so
``import selene_dag.llm`` stays cheap.
"""

from __future__ import annotations

from selene_dag.llm.cache import CacheStatsRow, LLMCache, cache_clear, cache_stats
from selene_dag.llm.engine import (
    Assessment,
    BaseEngine,
    DeferredCall,
    Engine,
    EngineError,
    EngineResponseError,
    EngineUnavailable,
    ModelCalls,
    NoteAnalysis,
    ThreadProposal,
)
from selene_dag.llm.factory import get_engine
from selene_dag.llm.prompts import PromptTemplate, load_prompt, prompt_hash

__all__ = [
    "Assessment",
    "BaseEngine",
    "CacheStatsRow",
    "DeferredCall",
    "Engine",
    "EngineError",
    "EngineResponseError",
    "EngineUnavailable",
    "LLMCache",
    "ModelCalls",
    "NoteAnalysis",
    "PromptTemplate",
    "ThreadProposal",
    "cache_clear",
    "cache_stats",
    "get_engine",
    "load_prompt",
    "prompt_hash",
]
