"""Chunk ratings by transparent heuristics (the ``assess_chunk`` task, no model).

Signals counted: code lines and fenced blocks, file paths, error words, decision words
("decided", "because", "the fix", "should", ...), shell commands, noise lines ("ok",
"thanks", rules), words and the share of distinct words.

* signal_density = 1 + 9 × min(1, 1.5 × signal lines / non-empty lines) scaled by
  (0.5 + 0.5 × distinct-word share) and reduced by the noise-line share.
* relevance: with ``context`` (a question or task), 1 + 9 × min(1, 1.5 × share of the
  context's keywords found in the chunk); without it, 3 + 2 (errors) + 2 (decisions)
  + 1 (files) + 1 (code) + 1 (commands), −2 under 15 words.
* reusability = 2 + 2 (decisions) + 2 (files) + 2 (code or commands) + 1 (an error
  together with a decision, i.e. a fix) + 1 (40–1500 words), −2 when noise lines are
  over half of the lines.

``reason`` lists the counts on one line.
"""

from __future__ import annotations

import re
from typing import Any

from selene_dag import text as _text

_CODE_LINE = re.compile(
    r"^\s*(\$ |>>> |[A-Za-z_][\w.]*\(.*\)\s*;?$|def |class |import |from \S+ import |"
    r"function |const |let |var |SELECT |INSERT |CREATE |UPDATE |[{}\[\]]\s*$)"
)
_FILE_PATH = re.compile(
    r"(?:[\w.-]+/)+[\w.-]+|\b[\w-]+\.(?:py|ts|tsx|js|jsx|md|json|jsonl|toml|ya?ml|sql|rs|go|sh|"
    r"txt|html|css|java|c|h|cpp|rb|lock|cfg|ini|env)\b"
)
_ERROR = re.compile(
    r"\b(error|errors|exception|traceback|failed|failure|fatal|panic|stack ?trace|errno|"
    r"segfault|warning|denied|not found|cannot|can't|undefined|refused)\b",
    re.IGNORECASE,
)
_DECISION = re.compile(
    r"\b(decided|decision|agreed|we will|we'll|let's|instead|because|root cause|the fix|fixed|"
    r"solution|resolved|should|must|plan|approach|chose|switch(ed)? to|todo|next step)\b",
    re.IGNORECASE,
)
_COMMAND = re.compile(
    r"^\s*(\$\s+)?(git|npm|npx|pnpm|yarn|pip|uv|python3?|pytest|docker|make|cargo|go|bun|"
    r"node|curl|ls|cd|grep|sed|brew|apt(-get)?|kubectl|ruff|sqlite3|duckdb)\s",
    re.MULTILINE,
)
_NOISE_LINE = re.compile(
    r"^\s*(ok(ay)?|thanks?( you)?|sure|great|got it|yes|no|done|hmm+|lgtm|cool|nice|"
    r"\.+|-+|=+|\*+)\s*[.!]?\s*$",
    re.IGNORECASE,
)


def _clamp_score(value: float) -> int:
    return int(max(1, min(10, round(value))))


def assess_chunk(text: str, context: str | None) -> dict[str, Any]:
    """``Assessment`` fields of a chunk as a dict (see the module docstring)."""
    lines = [line for line in text.splitlines() if line.strip()]
    n_lines = max(len(lines), 1)
    fences = len(_text.CODE_FENCE.findall(text)) // 2
    code_lines = sum(1 for line in lines if _CODE_LINE.match(line))
    files = len(set(_FILE_PATH.findall(text)))
    errors = len(_ERROR.findall(text))
    decisions = len(_DECISION.findall(text))
    commands = len(_COMMAND.findall(text))
    noise = sum(1 for line in lines if _NOISE_LINE.match(line))
    tokens = [w.lower() for w in _text.words(text)]
    n_words = len(tokens)
    distinct = len(set(tokens)) / n_words if n_words else 0.0
    signal_lines = sum(
        1
        for line in lines
        if _CODE_LINE.match(line)
        or _FILE_PATH.search(line)
        or _ERROR.search(line)
        or _DECISION.search(line)
        or _COMMAND.match(line)
    )
    noise_share = noise / n_lines
    density = min(1.0, 1.5 * signal_lines / n_lines) * (0.5 + 0.5 * distinct)
    signal_density = _clamp_score(1 + 9 * density * (1 - noise_share))

    has_code = fences > 0 or code_lines > 0
    overlap_note = ""
    if context is not None and context.strip():
        wanted = {
            w.lower()
            for w in _text.words(context)
            if w.lower() not in _text.STOP_WORDS and len(w) > 2
        }
        found = wanted & set(tokens)
        share = len(found) / len(wanted) if wanted else 0.0
        relevance = _clamp_score(1 + 9 * min(1.0, 1.5 * share))
        overlap_note = f"; context overlap {share:.0%}"
    else:
        relevance = 3 + 2 * (errors > 0) + 2 * (decisions > 0) + (files > 0) + has_code
        relevance += commands > 0
        relevance = _clamp_score(relevance - (2 if n_words < 15 else 0))

    reusability = 2 + 2 * (decisions > 0) + 2 * (files > 0) + 2 * (has_code or commands > 0)
    reusability += (errors > 0 and decisions > 0) + (40 <= n_words <= 1500)
    reusability = _clamp_score(reusability - (2 if noise_share > 0.5 else 0))

    reason = (
        f"heuristic: {fences} code blocks, {code_lines} code lines, {files} file paths, "
        f"{errors} error words, {decisions} decision words, {commands} commands, "
        f"{noise} noise lines, {n_words} words{overlap_note}"
    )
    return {
        "relevance": relevance,
        "signal_density": signal_density,
        "reusability": reusability,
        "reason": reason,
    }
