"""Summaries within a token budget (the ``summarize`` task).

The most central sentences, in document order, added while the result counts
≤ ``max_tokens`` in the target model's tokens (then cut by ``truncate_to_tokens`` as a
guard). ``kind="conversation"`` (a ``[role]: text`` transcript) renders up to seven bullet
points in the conversation's order, the user's most central sentence among them; a tool's
output (a ``[tool]`` message, or a message opening with ``[tool_use …]`` or
``[tool_result]``, as a session file's calls and results do) is summarized only when the
transcript holds nothing else.
"""

from __future__ import annotations

import re

from selene_dag import text as _text
from selene_dag.context.tokens import count_tokens, truncate_to_tokens
from selene_dag.llm.extractive.scoring import centrality, length_fit

# A conversation transcript is "[role]: text" lines; a line without the prefix continues
# the message above it.
_ROLE_PREFIX = re.compile(r"^\[(\w+)\]: ?")
# A session file's tool calls and results ride in assistant and user messages.
_TOOL_PART = re.compile(r"^\[(?:tool_result|tool_use)\b")
_BULLET = re.compile(r"^\s*[-*•]\s+")


def conversation_sentences(text: str) -> list[tuple[str, str]]:
    """``(role, sentence)`` of a ``[role]: text`` transcript, each line's sentences, a line
    repeated across the conversation (a traceback header, a retried command) once, and
    sentences of fewer than three words left out."""
    role = ""
    seen: set[str] = set()
    out: list[tuple[str, str]] = []
    for line in text.splitlines():
        match = _ROLE_PREFIX.match(line)
        if match:
            role, line = match.group(1), line[match.end() :]
        if _TOOL_PART.match(line):  # the message's text ends where its tool calls start
            role = "tool"
        line = _BULLET.sub("", line)  # an earlier summary's bullets are not bulleted again
        for sentence in _text.split_sentences(line):
            key = " ".join(sentence.lower().split())
            if len(_text.words(sentence)) >= 3 and key not in seen:
                seen.add(key)
                out.append((role, sentence))
    return out


def summarize(text: str, max_tokens: int, model: str | None, kind: str) -> str:
    """The summary of ``text`` (see the module docstring); counts ≤ ``max_tokens`` of ``model``."""
    prose = _text.strip_markdown(text, hosts=True) if kind == "text" else text
    sentences = [s for s in _text.split_sentences(prose) if s.strip()]
    users: list[int] = []
    if kind == "conversation":
        said = conversation_sentences(text)
        # What was asked and decided is in the people's lines; a tool's output (a file
        # listing, a log) is the evidence they discussed, summarized only when nothing
        # else was said.
        spoken = [(r, s) for r, s in said if r != "tool"] or said
        sentences = [s for _, s in spoken]
        users = [i for i, (r, _) in enumerate(spoken) if r == "user"]
    if not sentences:
        return truncate_to_tokens(" ".join(text.split()), max_tokens, model=model)
    central, _ = centrality(sentences)
    scores = [central[i] + length_fit(s) * 0.2 for i, s in enumerate(sentences)]
    order = sorted(range(len(sentences)), key=lambda i: (-scores[i], i))
    if users:
        # The user's request heads the choice: a summary must say what was asked.
        asked = max(users, key=lambda i: (scores[i], -i))
        order = [asked, *(i for i in order if i != asked)]
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
