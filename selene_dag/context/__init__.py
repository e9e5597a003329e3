"""Pure context library: token counting and budgeted packing (no Dagster, no database, no
settings).

Everything here counts in the target model's own tokens (``model=None`` means
``tokens.DEFAULT_MODEL``; callers pass the configured model) and never returns a pack over
its budget. Tokenizers load on first use.
"""

from selene_dag.context.builder import (
    TIERS,
    ContextBuilder,
    NotesPack,
    PreparedNotes,
    default_priority,
    pack_notes,
    parse_concepts,
    prepare_notes,
    render_note,
    render_thread,
)
from selene_dag.context.compaction import (
    BudgetCheck,
    CompactionReport,
    CompactionStep,
    brute_prune,
    check_context_budget,
    compact_messages,
    format_memory_digest,
    message_tokens,
    strip_chitchat,
)
from selene_dag.context.keywords import extract_keywords
from selene_dag.context.levels import (
    Level,
    LevelConfig,
    LeveledItem,
    LevelItem,
    LevelsResult,
    LevelStats,
    compress_context,
    estimate_compressed_size,
    extractive_summary,
)
from selene_dag.context.messages import (
    Conversation,
    content_text,
    load_conversation,
    load_messages,
    parse_messages,
    validate_messages,
)
from selene_dag.context.packing import (
    PRIORITY_COMPRESSED_HISTORY,
    PRIORITY_LONG_TERM,
    PRIORITY_OUTLINE,
    PRIORITY_RECENT,
    PRIORITY_SYSTEM,
    ContextTier,
    PackResult,
    compress_to_fit,
    create_context_tier,
    pack_context,
)
from selene_dag.context.tokens import (
    TokenizerInfo,
    count_tokens,
    count_tokens_batch,
    tokenizer_info,
    truncate_to_tokens,
)

__all__ = [
    "PRIORITY_COMPRESSED_HISTORY",
    "PRIORITY_LONG_TERM",
    "PRIORITY_OUTLINE",
    "PRIORITY_RECENT",
    "PRIORITY_SYSTEM",
    "TIERS",
    "BudgetCheck",
    "CompactionReport",
    "CompactionStep",
    "ContextBuilder",
    "ContextTier",
    "Conversation",
    "Level",
    "LevelConfig",
    "LevelItem",
    "LevelStats",
    "LeveledItem",
    "LevelsResult",
    "NotesPack",
    "PackResult",
    "PreparedNotes",
    "TokenizerInfo",
    "brute_prune",
    "check_context_budget",
    "compact_messages",
    "compress_context",
    "compress_to_fit",
    "content_text",
    "count_tokens",
    "count_tokens_batch",
    "create_context_tier",
    "default_priority",
    "estimate_compressed_size",
    "extract_keywords",
    "extractive_summary",
    "format_memory_digest",
    "load_conversation",
    "load_messages",
    "message_tokens",
    "pack_context",
    "pack_notes",
    "parse_concepts",
    "parse_messages",
    "prepare_notes",
    "render_note",
    "render_thread",
    "strip_chitchat",
    "tokenizer_info",
    "truncate_to_tokens",
    "validate_messages",
]
