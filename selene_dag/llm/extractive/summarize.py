"""Summaries within a token budget (the ``summarize`` task).

The most central sentences, in document order, added while the result counts
≤ ``max_tokens`` in the target model's tokens (then cut by ``truncate_to_tokens`` as a
guard). ``kind="conversation"`` renders up to seven bullet points.
"""

from __future__ import annotations

from selene_dag import text as _text
from selene_dag.context.tokens import count_tokens, truncate_to_tokens
from selene_dag.llm.extractive.scoring import centrality, length_fit


def summarize(text: str, max_tokens: int, model: str | None, kind: str) -> str:
    """The summary of ``text`` (see the module docstring); counts ≤ ``max_tokens`` of ``model``."""
    prose = _text.strip_markdown(text) if kind == "text" else text
    sentences = [s for s in _text.split_sentences(prose) if s.strip()]
    if kind == "conversation":
        sentences = [s for line in text.splitlines() for s in _text.split_sentences(line)]
        # A line repeated across the conversation (a traceback header, a retried command)
        # is said once: the summary keeps room for the lines that say something new.
        seen: set[str] = set()
        unique = []
        for sentence in sentences:
            key = " ".join(sentence.lower().split())
            if len(_text.words(sentence)) >= 3 and key not in seen:
                seen.add(key)
                unique.append(sentence)
        sentences = unique
    if not sentences:
        return truncate_to_tokens(" ".join(text.split()), max_tokens, model=model)
    central, _ = centrality(sentences)
    scores = [central[i] + length_fit(s) * 0.2 for i, s in enumerate(sentences)]
    order = sorted(range(len(sentences)), key=lambda i: (-scores[i], i))
    limit = 7 if kind == "conversation" else len(sentences)

    def render(indices: list[int]) -> str:
        parts = [sentences[i] for i in sorted(indices)]
        if kind == "conversation":
            return "\n".join(f"- {_text.shorten(p, 240)}" for p in parts)
        return " ".join(parts)

    chosen: list[int] = []
    for i in order:
        if len(chosen) >= limit:
            break
        if count_tokens(render([*chosen, i]), model=model) <= max_tokens:
            chosen.append(i)
    if not chosen:
        return truncate_to_tokens(render([order[0]]), max_tokens, model=model)
    return truncate_to_tokens(render(chosen), max_tokens, model=model)
