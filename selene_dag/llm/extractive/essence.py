"""A note's essence, concepts and primary theme (the ``analyze_note`` task).

Markdown, code blocks, tables and link syntax are stripped (a bare URL reads as its
host); the prose is split into sentences. A sentence's score adds its centrality (mean
TF-IDF cosine similarity to the other sentences, fitted on the note's own sentences and its
title), its similarity to the title, an early-position bonus, a bonus for insight cues
("the trick is", "turns out", "the fix", "you can", "we agreed", ...), a larger one for a
line its author labelled as the outcome ("Decision:", "TL;DR:", "Conclusion:"), and a
length fit (40–260 characters preferred); it loses points
for ending in ':' (it introduces a code block) or pointing at one ("the following", "like
this"), or opening with a bare pronoun. The best sentence is the essence; a short best
sentence (< 90 chars) is joined by the next best one (in document order). A note without
a sentence of prose (a table, code blocks) is said by its structure: the title, then a
table's columns and first rows, or a code block's language and first lines
(``Subscriptions: Service, Monthly — Netflix 15.49; Spotify 10.99.``): the title alone
told a model nothing the title line does not. An essence is always > 10 characters for a
note with text (the title is the last fallback).

A note longer than 200,000 characters is analysed on its beginning.

The concepts are :func:`~selene_dag.llm.extractive.phrases.key_phrases`; the theme is the
first concept that occurs in the title (else the first concept).
"""

from __future__ import annotations

import re
from typing import Any

from selene_dag import text as _text
from selene_dag.llm.engine import MAX_CONCEPT_CHARS, MIN_ESSENCE_CHARS
from selene_dag.llm.extractive.phrases import key_phrases
from selene_dag.llm.extractive.scoring import centrality, length_fit

_INSIGHT_CUES = re.compile(
    r"\b(the trick|trick is|turns out|turned out|the fix|the solution|the answer|the key|"
    r"i learned|i figured|figured out|you can|lets you|allows you|it's possible|"
    r"the way to|the easiest way|the best way|the problem|the reason|the secret|"
    r"solved|solution|workaround|instead of|decided|realized|works by|we agreed|we chose)\b",
    re.IGNORECASE,
)
# A line its author labelled as what the note comes down to ("Decision: …", "TL;DR: …").
_LABELLED = re.compile(
    r"(?:(?:final |key )?decision|decided|outcome|conclusion|tl;?dr|(?:key )?takeaway"
    r"|bottom line)s?\s*:",
    re.IGNORECASE,
)
_POINTS_AT_CODE = re.compile(
    r"\b(the following|like this|as follows|this command|this code|this snippet|here's how|doing this|by running)\b",
    re.IGNORECASE,
)
_WEAK_START = re.compile(
    r"^(it|this|that|these|those|here|so|but|and|then|which|they|he|she)\b", re.IGNORECASE
)


# A note longer than this (characters) is analysed on its beginning, cut at a line break:
# the cost of an essence stays bounded (a 5 MB note took seconds) while a note's opening
# states what it is about.
ANALYSIS_MAX_CHARS = 200_000


def analyze_note(title: str, content: str, concepts_k: int) -> dict[str, Any]:
    """``{"concepts", "primary_theme", "essence"}`` of a note (see the module docstring);
    a note longer than ``ANALYSIS_MAX_CHARS`` is analysed on its first that many
    characters, up to the last line break among them (the last space when that break
    comes before their middle)."""
    if len(content) > ANALYSIS_MAX_CHARS:
        head = content[:ANALYSIS_MAX_CHARS]
        # At a line break, unless the last one is early on (a heading, then a paragraph with
        # no break: a pasted log): then at a space, else anywhere.
        cut = head.rfind("\n")
        if cut < ANALYSIS_MAX_CHARS // 2:
            cut = max(cut, head.rfind(" "))
        content = head[:cut] if cut > 0 else head
    body = _text.strip_markdown(content)
    # A run of text with no space (a hash, a pasted blob) is one "word": cut to a concept's
    # length, as a model's answer is.
    concepts = list(
        dict.fromkeys(
            _text.shorten(c, MAX_CONCEPT_CHARS) for c in key_phrases(title, body, concepts_k)
        )
    )
    lowered_title = title.lower()
    theme = next((c for c in concepts if c in lowered_title), concepts[0] if concepts else "")
    # The essence names a bare URL's host (a sentence read whole); concepts leave URLs out
    # (a host is seldom what a note is about).
    essence = pick_essence(title, content, _text.strip_markdown(content, hosts=True))
    return {"concepts": concepts, "primary_theme": theme, "essence": essence}


def pick_essence(title: str, content: str, prose: str | None = None) -> str:
    """The 1–2 most central sentences of a note (see the module docstring); never ≤ 10 chars.

    ``prose`` is ``content`` already passed through ``strip_markdown`` (computed if None,
    bare URLs as their hosts).
    """
    prose = _text.strip_markdown(content, hosts=True) if prose is None else prose
    sentences = _text.split_sentences(prose)
    candidates = [s for s in sentences if len(_text.words(s)) >= 4 and 20 <= len(s) <= 600]
    if not candidates:
        candidates = [s for s in sentences if len(s) >= MIN_ESSENCE_CHARS]
    if not candidates:
        return _structure_essence(title, content) or _title_fallback(title, content)
    central, to_title = centrality(candidates, title or None)
    top_central = float(central.max()) or 1.0
    n = len(candidates)
    scores = []
    for i, sentence in enumerate(candidates):
        score = 0.45 * float(central[i]) / top_central + 0.35 * float(to_title[i])
        score += 0.2 * (1.0 - i / n) if n > 1 else 0.2
        score += 0.2 if _INSIGHT_CUES.search(sentence) else 0.0
        score += 0.6 if _LABELLED.match(sentence) else 0.0
        score += length_fit(sentence)
        if sentence.rstrip().endswith(":"):
            score -= 0.5
        if _POINTS_AT_CODE.search(sentence):
            score -= 0.3
        if _WEAK_START.match(sentence):
            score -= 0.1
        if "?" in sentence[-2:]:
            score -= 0.05
        scores.append(score)
    order = sorted(range(n), key=lambda i: (-scores[i], i))
    chosen = [order[0]]
    if len(candidates[order[0]]) < 90 and n > 1:
        second = order[1]
        if len(candidates[second]) <= 260 and not candidates[second].rstrip().endswith(":"):
            chosen.append(second)
    essence = " ".join(_text.ensure_period(candidates[i]) for i in sorted(chosen))
    essence = _text.shorten(essence, 360)
    if len(essence) < MIN_ESSENCE_CHARS:
        return _title_fallback(title, content)
    return essence


_TABLE_ROW = re.compile(r"^\s*\|(.+)\|\s*$")
_TABLE_RULE = re.compile(r"^[\s|:\-]+$")
_FENCED = re.compile(r"^(```|~~~)[ \t]*([\w+#.-]*)[^\n]*\n(.*?)^\1", re.MULTILINE | re.DOTALL)
# A comment's line; not a line that starts with "*" (CSS's "* {", a block comment's
# middle lines are rare in a note's snippets).
_COMMENT_LINE = re.compile(r"^\s*(#|//|--|/\*|;)")
# What the structure of a note without prose may take: a sentence's room.
_STRUCTURE_CHARS = 240


def _structure_essence(title: str, content: str) -> str:
    """The title and what a note of no prose holds: its first table's columns and first
    rows, else its first code block's language and first lines; "" when it has neither."""
    name = " ".join(title.split()).rstrip(".:")
    rows = [
        [" ".join(cell.split()).replace("\0", "|") for cell in m.group(1).split("|")]
        for line in content.replace("\\|", "\0").splitlines()  # an escaped \| is a cell's
        if (m := _TABLE_ROW.match(line)) and not _TABLE_RULE.match(line)
    ]
    if len(rows) >= 2:
        said = f"{', '.join(c for c in rows[0] if c)} —"
        for row in rows[1:]:
            cells = " ".join(c for c in row if c)
            if len(said) + len(cells) > _STRUCTURE_CHARS:
                break
            said += f" {cells};"
        said = f"{name}: {said.rstrip(';—').rstrip()}" if name else said
        return _text.ensure_period(_text.shorten(said, len(name) + _STRUCTURE_CHARS))
    block = _FENCED.search(content)
    if block is None:
        return ""
    lines = [
        " ".join(line.split())
        for line in block.group(3).splitlines()
        if line.strip() and not _COMMENT_LINE.match(line)
    ]
    code = _text.shorten(" ".join(lines), _STRUCTURE_CHARS)
    if not code:
        return ""
    language = f" ({block.group(2)})" if block.group(2) else ""
    return f"{name}{language}: {code}" if name else code


def _title_fallback(title: str, content: str) -> str:
    text = " ".join(title.split()) or " ".join(content.split())[:200]
    if len(text) < MIN_ESSENCE_CHARS:
        text = f"A short note: {text}" if text else ""
    return _text.ensure_period(text) if text else text
