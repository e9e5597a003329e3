"""The extractive engine: the default engine — deterministic, offline, no model server.

Every answer is built from sentences and words of the input; nothing is generated. One
module per algorithm:

* :mod:`.essence` (``analyze_note``): the 1–2 most central sentences of a note, its
  concepts (:mod:`.phrases`, word and bigram counts) and primary theme.
* :mod:`.threads` (``detect_threads``): agglomerative clustering of the notes' TF-IDF
  vectors; clusters of at least ``min_thread_notes`` notes become threads.
* :mod:`.digest` (``digest_thread``): an opening sentence naming the thread, then the most
  central essence sentences: 3–5 sentences in all.
* :mod:`.summarize`: the most central sentences that fit ``max_tokens`` of the target model.
* :mod:`.assess` (``assess_chunk``): transparent heuristics over code, paths, errors,
  decisions, commands and noise.
* ``answer()``: not possible without a model: raises EngineUnavailable.

:mod:`.scoring` holds what they share (TF-IDF centrality, length fit). All operations go
through the cache like the Ollama engine's, so "calls made vs cached" reads the same
whichever engine ran; the recipe of each task is its version in
:mod:`selene_dag.llm.versions`.
"""

from __future__ import annotations

from selene_dag.llm.extractive.engine import ExtractiveEngine
from selene_dag.llm.extractive.essence import pick_essence

__all__ = ["ExtractiveEngine", "pick_essence"]
