"""A thread's digest (the ``digest_thread`` task).

An opening sentence naming the thread and its main terms, then the most central essence
sentences, the newest note's best one among them (essences come oldest first): a thread
that grew says what it grew with. 3–5 sentences in all.
"""

from __future__ import annotations

from selene_dag import text as _text
from selene_dag.llm.extractive.phrases import join_words, key_phrases
from selene_dag.llm.extractive.scoring import centrality


def _capitalized(sentence: str) -> str:
    return sentence[:1].upper() + sentence[1:] if sentence[:1].islower() else sentence


def digest_thread(name: str, why: str, essences: list[str]) -> str:
    """A 3–5 sentence paragraph over ``essences`` (non-empty) of the thread ``name``."""
    sentences: list[str] = []
    origin: list[int] = []  # which essence each sentence comes from
    for number, essence in enumerate(essences):
        for s in _text.split_sentences(essence):
            if len(s) >= 20 and s not in sentences:
                sentences.append(s)
                origin.append(number)
    if not sentences:
        sentences = [e for e in essences if e]
        origin = list(range(len(sentences)))
    body_terms = key_phrases(name, " ".join(essences), 3)
    opening = f"The thread “{name}” brings together {len(essences)} notes"
    opening += f" about {join_words(body_terms)}." if body_terms else "."
    central, to_name = centrality(sentences, f"{name} {why}")
    order = sorted(range(len(sentences)), key=lambda i: (-(central[i] + 0.5 * to_name[i]), i))
    picked = order[: min(3, len(sentences))]
    newest = [i for i in order if origin[i] == max(origin)]
    if newest and newest[0] not in picked:  # the newest note's best sentence, in the third's place
        picked = [*picked[:2], newest[0]]
    picked = sorted(picked)
    # Each picked sentence opens with a capital: one written in lower case (a note in that
    # style, a line of code) ran into the sentence before, and the digest read as fewer
    # than three sentences and was rejected.
    lines = [opening] + [
        _capitalized(_text.ensure_period(_text.shorten(sentences[i], 300))) for i in picked
    ]
    if len(lines) < 3 and why.strip():
        lines.append(_text.ensure_period(f"What drives it: {why.strip()}"))
    if len(lines) < 3:
        lines.append(
            f"It now holds {len(essences)} distilled note{'s' if len(essences) != 1 else ''}."
        )
    return " ".join(lines[:5])
