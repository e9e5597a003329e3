"""Versions of the extractive engine's algorithms, one per task.

Bumping one changes the cache key of that task and the code_version of the assets that use
it, so exactly those are marked stale. Kept apart from ``extractive/`` so that loading the
Dagster definitions does not import scikit-learn.
"""

ALGORITHM_VERSIONS = {
    "analyze_note": "analyze_note@12",
    "detect_threads": "detect_threads@3",
    "digest_thread": "digest_thread@8",
    "summarize": "summarize@9",
    "assess_chunk": "assess_chunk@2",
}

# The extractive engine's model name, as recorded with what it computed ("engine:model").
EXTRACTIVE_MODEL = "extractive-v1"
