"""Key phrases of a text (concepts, digest terms) and how to list them in a sentence.

Word and bigram counts of the prose with stop words removed, title words counted three
times, a title's leading "-ing" verb skipped, plural duplicates merged; lower-case, ties
broken alphabetically. Bigrams make better concepts than single TF-IDF words
(``selene_dag.context.keywords``): "apache bench", "github pages".
"""

from __future__ import annotations

import re
from collections import Counter
from functools import lru_cache
from itertools import pairwise

from selene_dag import text as _text

_HEXISH = re.compile(r"(?=[a-z]*\d)[0-9a-f]{4,}")
# Verbs that tell a note's story, not its subject ("I decided to…", "I figured out…"): an
# essence is often such a sentence, so across a thread's essences they outnumbered its
# topics ("24 notes about model, decided and python").
_NARRATIVE_VERBS = frozenset(
    [
        "decided",
        "figured",
        "realized",
        "realised",
        "noticed",
        "managed",
        "learned",
        "wrote",
        "happened",
        "hoped",
        "spent",
        "came",
        "started",
        "liked",
        "loved",
        "wanting",
    ]
)
_HIRAGANA = re.compile(r"[\u3040-\u309f]+")


@lru_cache(maxsize=65536)
def _keep_token(token: str) -> bool:
    if (
        token in _text.STOP_WORDS
        or token in _NARRATIVE_VERBS
        or sum(c.isalpha() for c in token) < 2
    ):
        return False
    if _HEXISH.fullmatch(token):
        return False
    return not (len(token) > 6 and token.endswith("ly"))


def _singular(term: str) -> str:
    return " ".join(w[:-1] if len(w) > 3 and w.endswith("s") else w for w in term.split())


def key_phrases(title: str, body: str, k: int) -> list[str]:
    """Up to ``k`` concept phrases of a text, best first (see the module docstring)."""
    counts: Counter[str] = Counter()
    for weight, text in ((3, title), (1, body)):
        for n, sentence in enumerate(_text.split_sentences(text) or [text]):
            tokens = [w.lower().strip(".'") for w in _text.words(sentence)]
            tokens = [t[:-2] if t.endswith("'s") else t for t in tokens]
            # A Chinese or Japanese character is a word of its own: alone it says little,
            # two together are the language's words ("税金"), joined without a space.
            # (Hiragana alone are mostly particles, の and は: never part of one.)
            kept = [
                t if _keep_token(t) or (_text.has_cjk(t) and not _HIRAGANA.fullmatch(t)) else ""
                for t in tokens
            ]
            if weight > 1 and n == 0 and kept and kept[0].endswith("ing"):
                kept[0] = ""  # a title's leading verb ("Using", "Avoiding") is not a concept
            for token in kept:
                if token and not _text.has_cjk(token):
                    counts[token] += weight
            for a, b in pairwise(kept):
                if a and b and a != b:
                    cjk = _text.has_cjk(a) and _text.has_cjk(b)
                    counts[f"{a}{b}" if cjk else f"{a} {b}"] += weight * 1.5
    ranked = sorted(
        ((term, score) for term, score in counts.items() if " " not in term or score >= 3),
        key=lambda item: (-item[1], item[0]),
    )
    chosen: list[str] = []
    for term, _score in ranked:
        parts = term.split()
        if any(_singular(term) == _singular(c) for c in chosen):
            continue
        if len(parts) == 1:
            if any(term in c.split() for c in chosen):
                continue
        else:
            if all(p in chosen for p in parts) or any(
                set(parts) & set(c.split()) for c in chosen if " " in c
            ):
                continue
            chosen = [c for c in chosen if c not in parts]
        chosen.append(term)
        if len(chosen) >= k:
            break
    return chosen[:k]


def join_words(items: list[str]) -> str:
    """``items`` as an English list: "a", "a and b", "a, b and c" ("" for none)."""
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]
