"""Context budget check and the P1–P4 compaction chain with brute prune (seed 004).

Thresholds (fractions of the context window, seed numbers): warn above 60 %, prune above
80 %, compact above 85 %. ``compact_messages`` runs the chain when the messages are above
either the compaction or the prune threshold (the seed's prune sits below its
compaction: a chain that stopped between the two left the prune to cut what it had just
compacted), stopping as soon as they are at or under both:

* P1 strip chitchat: user messages of at most 50 characters whose trimmed text is
  shorter than 15 characters, has no ``?`` or ``!`` and holds only acknowledgement words
  ("ok", "thanks", "got it", "ya", "好的"; "use postgres" is an instruction and stays;
  the seed's rule has no word list) (the latest request stays when no
  assistant answered it yet, the task at hand, or when it asks more than an
  acknowledgement: "Step 1" stays, an answered "ok" goes);
* P2 drop the oldest completed stages (messages with ``stage`` and ``completed: true``),
  one stage at a time, and name them in the memory digest;
* P3 summarize the oldest conversation messages (staged: 30 %, at most 30; otherwise
  min(20, 40 %), the latest request left out of them; only when more than 2)
  through the summarizer into one system message, which first quotes the request the
  conversation opened with (a session's task);
  a summarizer that cannot answer (``SummaryUnavailable``: a model server that is down)
  or answers nothing leaves the step skipped, saying why, and the chain goes on;
* P4 staged conversations: tell the caller to shrink its per-stage detail
  (``report.shrink_stage_detail``).

Whenever a digest holds decisions (``{stage, decision, superseded?}`` entries), the result
carries them, superseded ones left out, in one system message after the system messages:
the memory anchor that keeps a model from contradicting what was decided, compacted or
not (a digest message already in the input is replaced, not repeated).

Then the seed's brute prune is the safety net: above the prune threshold only the system
messages and the last 50 others are kept, and if the result still exceeds the window it
keeps what matters most while it fits: the memory digest, the latest request (the last
user message that is not a tool's result), the instructions (the first system message), a
summary of earlier discussion, the last message (those that fit whole first, then the
others cut to the room left), then the rest newest first (a message too large for the
room left, such as a pasted document, is passed over for the turns before it, and the
room left at the end gets its start); a tool call and its result stay together or go together. The report names
the digest, the instructions or the latest request when one of them did not fit whole. P3
is skipped when its summary would not be shorter than what it replaces.
Tokens are counted in the target model's tokens, plus ``MESSAGE_OVERHEAD`` per message.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from selene_dag.context.levels import extractive_summary
from selene_dag.context.messages import (
    Message,
    call_text,
    content_text,
    counted_text,
    validate_digest,
    validate_messages,
)
from selene_dag.context.tokens import count_tokens_batch, cut_middle, truncate_to_tokens
from selene_dag.errors import check_budget

WARN_RATIO = 0.6
PRUNE_RATIO = 0.8
COMPACT_RATIO = 0.85
KEEP_LAST_N = 50
CHITCHAT_MAX_LENGTH = 50
CHITCHAT_SHORT_LENGTH = 15
P3_STAGED_RATIO = 0.3
P3_STAGED_MAX = 30
P3_GENERAL_RATIO = 0.4
P3_GENERAL_MAX = 20
P3_SUMMARY_TOKENS = 200
MESSAGE_OVERHEAD = 4  # role markers of a chat template, per message
MIN_CUT_TOKENS = 50  # the least room the prune fills with the start of a message cut to fit

Summarizer = Callable[[str, int], str]


class SummaryUnavailable(Exception):
    """Raised by a summarizer that cannot write a summary now (its model server is down,
    or answered unusably): P3 is skipped with this message and the chain goes on."""


@dataclass(frozen=True)
class BudgetCheck:
    """Where ``total_tokens`` stands against a window's thresholds."""

    total_tokens: int
    context_window: int
    warn_threshold: int
    prune_threshold: int
    compaction_threshold: int
    should_warn: bool
    should_prune: bool
    should_compact: bool


def check_context_budget(
    total_tokens: int,
    context_window: int,
    prune_ratio: float = PRUNE_RATIO,
    compact_ratio: float = COMPACT_RATIO,
    warn_ratio: float = WARN_RATIO,
) -> BudgetCheck:
    """Flags for ``total_tokens`` in ``context_window``: warn > 60 %, prune > 80 %,
    compact > 85 % (thresholds are ``floor(window × ratio)``, comparisons strict)."""
    check_budget(total_tokens, "total_tokens", minimum=0)
    check_budget(context_window, "context_window", minimum=1)
    for name, ratio in (
        ("prune_ratio", prune_ratio),
        ("compact_ratio", compact_ratio),
        ("warn_ratio", warn_ratio),
    ):
        _check_ratio(ratio, name)
    warn = math.floor(context_window * warn_ratio)
    prune = math.floor(context_window * prune_ratio)
    compact = math.floor(context_window * compact_ratio)
    return BudgetCheck(
        total_tokens,
        context_window,
        warn,
        prune,
        compact,
        total_tokens > warn,
        total_tokens > prune,
        total_tokens > compact,
    )


# ----------------------------------------------------------------------------- helpers


def _check_ratio(ratio: float, name: str) -> None:
    """A share of the window: a number above 0 and at most 1 (5 let a prune keep five
    windows' worth; NaN failed inside ``math.floor``)."""
    if isinstance(ratio, bool) or not isinstance(ratio, (int, float)):
        raise TypeError(f"{name} must be a number, got {type(ratio).__name__}")
    if not 0 < ratio <= 1:  # NaN fails this too
        raise ValueError(f"{name} must be above 0 and at most 1, got {ratio}")


def _check_message_list(messages: object) -> None:
    """TypeError unless ``messages`` is a sequence of mappings (None counted 0 tokens; a
    string failed on its first character's ``.get``)."""
    if isinstance(messages, str | bytes) or not isinstance(messages, Sequence):
        raise TypeError(
            f"messages must be a list of {{role, content}} objects, got {type(messages).__name__}"
        )
    for i, message in enumerate(messages):
        if not isinstance(message, Mapping):
            raise TypeError(f"message {i}: expected an object, got {type(message).__name__}")


def message_tokens(messages: Sequence[Message], model: str | None = None) -> int:
    """Tokens of ``messages``: each one's content and tool calls (``counted_text``) in
    ``model``'s tokens, plus MESSAGE_OVERHEAD. Raises TypeError unless ``messages`` is a
    sequence of mappings."""
    _check_message_list(messages)
    if not messages:
        return 0
    counts = count_tokens_batch([counted_text(m) for m in messages], model)
    return sum(counts) + MESSAGE_OVERHEAD * len(messages)


# Words of an acknowledgement: a latest message of only these asks nothing.
_ACKNOWLEDGEMENT_WORDS = frozenset(
    [
        "ok",
        "okay",
        "k",
        "kk",
        "thanks",
        "thank",
        "you",
        "thx",
        "ty",
        "yes",
        "yep",
        "yeah",
        "yup",
        "sure",
        "cool",
        "great",
        "nice",
        "perfect",
        "got",
        "it",
        "alright",
        "fine",
        "good",
        "awesome",
        "done",
        "lgtm",
        "noted",
        "right",
        "agreed",
        "understood",
    ]
)
# A short user message made only of these is chitchat, in the languages users write most.
# The seed's shape alone (short, no "?" or "!") also took a short instruction for chitchat:
# "use postgres", "skip tests", "v2 then" were dropped while "thanks!" stayed.
_MORE_CHITCHAT = """
    okey oke okk ya yah y ye yea excellent tysm u much very so roger agree sounds looks np
    problem go ahead on continue proceed next yay ah oh wow lol haha hehe
    please pls plz and then that's thats works lanjut lanjutkan baik sip siap mantap makasih
    terima kasih betul benar bagus setuju iya si sí vale gracias bien claro ja jo danke gut
    genau super oui merci bon d'accord daccord sim obrigado obrigada certo beleza grazie
    bene va da spasibo 好 好的 嗯 谢谢 是 对 行 可以 はい ありがとう 了解 うん 네 감사합니다 알겠습니다
    """
# "done" says a step is over (an acknowledgement of the latest request, not chitchat).
_CHITCHAT_WORDS = (_ACKNOWLEDGEMENT_WORDS | frozenset(_MORE_CHITCHAT.split())) - {"done"}
# A message is chitchat only when its symbols are these too (a "👎" or "❌" says no); skin
# tones and the emoji variation selector go with them.
_CHITCHAT_SYMBOLS = frozenset(
    "👍👌🙏😊🙂😀😄✅✔️❤️🎉.…,~'’ \t\n\ufe0f" + "".join(map(chr, range(0x1F3FB, 0x1F400)))
)
_WORD = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)?|\d+|[^\W_]+", re.UNICODE)


def is_chitchat(message: Mapping[str, Any]) -> bool:
    """A short user acknowledgement ("ok", "ya", "thanks"): ≤ 50 chars, trimmed < 15, no ?
    or !, and every word of it an acknowledgement's (a short instruction stays)."""
    if message.get("role") != "user":
        return False
    content = message.get("content")
    if content.__class__ is not str:  # parts, or null, as chat APIs send them
        try:
            content = content_text(content)
        except ValueError:
            return False
    if len(content) > CHITCHAT_MAX_LENGTH:
        return False
    text = content.strip().lower()
    if len(text) >= CHITCHAT_SHORT_LENGTH or "?" in text or "!" in text:
        return False
    words = _WORD.findall(text)
    symbols = _WORD.sub("", text)
    return all(word in _CHITCHAT_WORDS for word in words) and all(
        c in _CHITCHAT_SYMBOLS for c in symbols
    )


def strip_chitchat(messages: Sequence[Message]) -> list[Message]:
    """``messages`` without chitchat (P1); system and assistant messages always stay, and
    so does a short answer to the assistant's question ("Should I delete the backups?"
    "yes": the consent the work after it rests on). Raises TypeError unless ``messages`` is
    a sequence of mappings."""
    _check_message_list(messages)
    dropped = _chitchat_to_drop(messages)
    return [m for i, m in enumerate(messages) if i not in dropped]


def _chitchat_to_drop(messages: Sequence[Message]) -> set[int]:
    """Indices of the chitchat messages that answer no question of the assistant's (the
    message before, instructions aside, is not an assistant's question). One pass."""
    dropped: set[int] = set()
    before: Message | None = None
    for i, message in enumerate(messages):
        if is_chitchat(message) and not (
            before is not None and before.get("role") == "assistant" and _asks(before)
        ):
            dropped.add(i)
        if message.get("role") not in INSTRUCTION_ROLES:
            before = message
    return dropped


def _asks(message: Mapping[str, Any]) -> bool:
    """Whether an assistant message ends by asking: its last sentence is a question."""
    try:
        text = content_text(message.get("content")).strip()
    except ValueError:
        return False
    return "?" in _SENTENCE_END.split(text)[-1]


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n")


TOOL_RESULT_PREFIX = "[tool_result"
# The roles that instruct the model: kept as the system prompt is (OpenAI's newer models
# take a "developer" message in the place of the system message).
INSTRUCTION_ROLES = frozenset({"system", "developer"})
# How a tool_use part of an assistant message reads as text (``content_text``).
TOOL_USE_MARK = "[tool_use "


def latest_request(messages: Sequence[Message]) -> int | None:
    """The index of the latest user message that asks something: not a tool's result
    handed back to the model (``[tool_result] …``, as a session file's results read);
    None when there is none."""
    for i in range(len(messages) - 1, -1, -1):
        message = messages[i]
        if message.get("role") == "user" and not is_tool_result(message):
            return i
    return None


def is_tool_result(message: Mapping[str, Any]) -> bool:
    """Whether ``message`` hands a tool's result back to the model: a session file's
    ``[tool_result] …`` text, or content parts of type ``tool_result`` (Anthropic's API)."""
    content = message.get("content")
    if isinstance(content, list):
        return any(isinstance(p, Mapping) and p.get("type") == "tool_result" for p in content)
    return str(content or "").startswith(TOOL_RESULT_PREFIX)


MEMORY_DIGEST_HEADER = "[MEMORY DIGEST: decisions kept per stage; do not contradict them]"


def format_memory_digest(digest: Sequence[Mapping[str, Any]], stages: Sequence[str] = ()) -> str:
    """The memory digest message: ``MEMORY_DIGEST_HEADER``, then one line per decision
    that is not superseded (``- stage: decision``, or ``- decision`` for an entry naming
    no stage), in the digest's order; when ``stages`` were compacted, a closing paragraph
    naming them. "" when no decision applies. Raises TypeError unless ``digest`` is a
    sequence of mappings."""
    if isinstance(digest, str | bytes) or not all(isinstance(d, Mapping) for d in digest):
        raise TypeError("digest must be a list of {stage, decision} objects")
    entries = [
        f"- {d['stage']}: {d.get('decision')}"
        if isinstance(d.get("stage"), str) and d["stage"].strip()
        else f"- {d.get('decision')}"  # "- None: …" named no stage
        for d in digest
        if not d.get("superseded") and d.get("decision")
    ]
    if not entries:
        return ""
    text = MEMORY_DIGEST_HEADER + "\n" + "\n".join(entries)
    if stages:
        text += (
            f"\n\n[CONTEXT COMPACTION: {len(stages)} earlier stage(s) compacted: "
            f"{', '.join(stages)}]\nTheir messages are left out of this context."
        )
    return text


def _is_digest(message: Mapping[str, Any]) -> bool:
    return message["role"] == "system" and str(message.get("content", "")).startswith(
        MEMORY_DIGEST_HEADER
    )


SUMMARY_HEADER = "[SUMMARY OF EARLIER DISCUSSION]"
# The summary's first line quotes the request the conversation opened with (a session's
# task), which a summary of its oldest messages must not lose; at most this many tokens.
OPENING_PREFIX = "The conversation opened with this request: "
OPENING_TOKENS = 120


def opening_request(
    summarized: Sequence[Message], earlier_summaries: Sequence[str], model: str | None = None
) -> str:
    """The line that carries the conversation's opening request into a P3 summary: an
    earlier summary's such line, or the first user message among ``summarized`` that is
    not a tool's result, on one line, cut to ``OPENING_TOKENS``; "" when there is none."""
    for text in earlier_summaries:
        for line in text.splitlines():
            if line.startswith(OPENING_PREFIX):
                return line
    first = next(
        (str(m["content"]) for m in summarized if m["role"] == "user" and not is_tool_result(m)),
        "",
    )
    request = truncate_to_tokens(" ".join(first.split()), OPENING_TOKENS, model)
    return OPENING_PREFIX + request if request else ""


# A summary line that opens with this many characters of the opening request (or is
# shorter and opens it) repeats it: both may be cut, each at its own length.
REPEAT_PREFIX_CHARS = 60


def repeats(line: str, opening: str) -> bool:
    """Whether the summary line ``line`` says again the request ``opening`` quotes (a
    bullet of it, whole or cut where the quote is cut elsewhere)."""

    def plain(text: str) -> str:
        return " ".join(text.lower().split()).strip(" .…")

    said = plain(line.lstrip("-*• "))
    request = plain(opening.removeprefix(OPENING_PREFIX))
    if not said:
        return False
    if said in request:
        return True
    shared = min(len(said), REPEAT_PREFIX_CHARS)
    return said[:shared] == request[:shared]


def _with_digest(messages: list[Message], text: str) -> list[Message]:
    """``messages`` carrying the digest ``text``: an earlier digest message replaced, or a
    new one after the system messages."""
    message: Message = {"role": "system", "content": text}
    for i, m in enumerate(messages):
        if _is_digest(m):
            return [*messages[:i], message, *messages[i + 1 :]]
    return _insert_after_system(messages, message)


def completed_stages(messages: Sequence[Message]) -> list[str]:
    """Stages whose messages are marked ``completed``, oldest first."""
    seen: list[str] = []
    for m in messages:
        stage = m.get("stage")
        if stage is not None and m.get("completed") and str(stage) not in seen:
            seen.append(str(stage))
    return seen


def _default_summarizer(model: str | None) -> Summarizer:
    def summarize(text: str, max_tokens: int) -> str:
        return extractive_summary(text, max_tokens, model)

    return summarize


def _insert_after_system(messages: list[Message], message: Message) -> list[Message]:
    n = 0
    while n < len(messages) and messages[n]["role"] in INSTRUCTION_ROLES:
        n += 1
    return [*messages[:n], message, *messages[n:]]


# ---------------------------------------------------------------------------- the chain


@dataclass(frozen=True)
class CompactionStep:
    """One step that ran: what it removed and the tokens before/after it."""

    name: str
    removed: int
    tokens_before: int
    tokens_after: int
    detail: str = ""


@dataclass(frozen=True)
class CompactionReport:
    """Messages out, the steps that ran, and where compaction stopped.

    ``compaction_threshold``: what the chain aims at or under (the lower of the compaction
    and prune thresholds). ``resolved_at``: "none" (nothing to do), "P1"–"P3" (at or
    under it after that step), "P4" (staged: the caller must shrink stage detail), "prune"
    (the brute prune ran) or "unresolved".
    """

    messages: list[Message]
    steps: list[CompactionStep]
    tokens_before: int
    tokens_after: int
    window: int
    compaction_threshold: int
    resolved_at: str
    shrink_stage_detail: bool = False
    compacted_stages: list[str] = field(default_factory=list)

    @property
    def removed(self) -> int:
        """Messages removed or replaced in total."""
        return sum(s.removed for s in self.steps)


def _fitted(
    message: Message, room: int, model: str | None, ends: bool = False, given: Any = None
) -> Message | None:
    """``message`` cut to ``room`` tokens (its tool calls whole, its content cut), or None
    when nothing of its content fits. ``ends``: keep the content's start and its end
    (:func:`cut_middle`), not its start alone. ``given``: the content as it came; when it
    is a list of parts with an image or another part that is not text, those parts stay
    (counted as their placeholders) and only the text is cut, to within ``room`` as the
    parts join."""
    whole = room
    room -= MESSAGE_OVERHEAD
    calls = call_text(message)
    if calls:  # the calls stay whole; the content gets what they leave (+1: the line break)
        room -= count_tokens_batch([calls], model)[0] + 1
    media = _media_parts(given)
    if not media:
        content = _cut(str(message["content"]), room, model, ends)
        return {**message, "content": content} if content else None
    text = content_text([p for p in given if p not in media])
    room -= count_tokens_batch([content_text(media) + "\n\n"], model)[0]
    for _ in range(4):  # the parts joined can count a token or two more than apart
        fitted = {**message, "content": _with_text(given, media, _cut(text, room, model, ends))}
        over = message_tokens([fitted], model) - whole
        if over <= 0:
            return fitted
        room -= over
    return None


def _cut(text: str, room: int, model: str | None, ends: bool) -> str:
    """``text`` within ``room`` tokens: its two ends (:func:`cut_middle`) or its start."""
    if room <= 0:
        return ""
    return cut_middle(text, room, model) if ends else truncate_to_tokens(text, room, model)


# Parts a chat API reads that are not text (an image, a document, audio): a cut keeps them.
_TEXT_KINDS = frozenset({"text", "tool_use", "tool_result", "thinking", "redacted_thinking"})


def _media_parts(content: Any) -> list[Any]:
    """The parts of ``content`` that carry no text (none unless it is a list of parts
    without tool parts: a call or its result is paired, not cut apart)."""
    if not isinstance(content, list):
        return []
    kinds = [p.get("type") for p in content if isinstance(p, Mapping)]
    if "tool_use" in kinds or "tool_result" in kinds:
        return []
    return [
        p
        for p in content
        if isinstance(p, Mapping)
        and p.get("type") not in _TEXT_KINDS
        and not isinstance(p.get("text"), str)
    ]


def _with_text(parts: list[Any], media: list[Any], text: str) -> list[Any]:
    """``parts`` with their text parts replaced by one holding ``text`` (where the first
    was), the ``media`` parts in their places."""
    out: list[Any] = []
    for part in parts:
        if part in media:
            out.append(part)
        elif text:
            out.append({"type": "text", "text": text})
            text = ""
    if text:
        out.append({"type": "text", "text": text})
    return out


def _pending_request(messages: Sequence[Message]) -> int | None:
    """The index of the latest request (:func:`latest_request`) when no assistant answered
    it yet: what follows it is only tool calls and their results. None otherwise."""
    latest = latest_request(messages)
    if latest is None:
        return None
    for message in messages[latest + 1 :]:
        if message["role"] == "assistant" and not message.get("tool_calls"):
            text = str(message.get("content") or "")
            if text.strip() and not text.lstrip().startswith("[tool_use"):
                return None
    return latest


def _acknowledges(text: str) -> bool:
    """Whether ``text`` only acknowledges ("ok", "thanks!", "got it"): no ask in it."""
    words = "".join(c if c.isalnum() or c.isspace() else " " for c in text.lower()).split()
    return all(w in _ACKNOWLEDGEMENT_WORDS for w in words)


def _instructions(messages: Sequence[Message]) -> int | None:
    """The index of the first system message that is neither the memory digest nor a
    summary of earlier discussion: the instructions; None when there is none."""
    return next(
        (
            i
            for i, m in enumerate(messages)
            if m["role"] in INSTRUCTION_ROLES
            and not _is_digest(m)
            and not str(m["content"]).startswith(SUMMARY_HEADER)
        ),
        None,
    )


def _prune_priority(messages: Sequence[Message]) -> tuple[list[int], list[int]]:
    """Indices of the messages a pruned conversation keeps first, most precious first, in
    two groups: what must stay (the memory digest, the latest request, the instructions),
    then what stays in the room they leave (a summary of earlier discussion, the last
    message)."""
    order = [i for i, m in enumerate(messages) if _is_digest(m)]
    latest = latest_request(messages)
    order += [latest] if latest is not None else []
    instructions = _instructions(messages)
    order += [instructions] if instructions is not None else []
    then = [
        i
        for i, m in enumerate(messages)
        if m["role"] == "system" and str(m["content"]).startswith(SUMMARY_HEADER)
    ]
    then += [len(messages) - 1] if messages else []
    order = list(dict.fromkeys(order))
    return order, [i for i in dict.fromkeys(then) if i not in order]


def _alternating(messages: list[Message]) -> list[Message]:
    """``messages`` with each user or assistant message that follows one of the same role
    joined to it (a blank line between), when neither carries more than its role and
    content: the prune left runs of user turns, which chat templates that require the
    turns to alternate (Mistral's) refuse."""
    out: list[Message] = []
    for message in messages:
        last = out[-1] if out else None
        if (
            last is not None
            and message["role"] == last["role"] in ("user", "assistant")
            and set(message) == set(last) == {"role", "content"}
            # A tool's result stays apart: the request after it is found as the latest.
            and not (is_tool_result(last) or is_tool_result(message))
        ):
            a, b = last["content"], message["content"]
            # Content given as parts (an image) stays parts: the text joins them as one.
            joined = (
                f"{a}\n\n{b}"
                if isinstance(a, str) and isinstance(b, str)
                else [*_as_parts(a), *_as_parts(b)]
            )
            out[-1] = {"role": last["role"], "content": joined}
        else:
            out.append(message)
    return out


def _opening_with_the_user(messages: list[Message]) -> list[Message]:
    """``messages`` without the assistant turns between the instructions and the first
    user message, nor the tool results that answer the calls of those turns (a ``tool``
    message, or a user message of ``tool_result`` parts: an API refuses a result without
    its call); as they are when no user message would be left."""
    first = next((i for i, m in enumerate(messages) if m["role"] not in INSTRUCTION_ROLES), None)
    if first is None or messages[first]["role"] == "user":
        return messages
    start = first
    while start < len(messages) and (
        messages[start]["role"] in ("assistant", "tool")
        or (
            messages[start]["role"] == "user"
            and isinstance(messages[start].get("content"), list)
            and is_tool_result(messages[start])
        )
    ):
        start += 1
    if start == len(messages):
        return messages
    return messages[:first] + messages[start:]


def _as_parts(content: Any) -> list[Any]:
    if isinstance(content, list):
        return content
    return [{"type": "text", "text": content}] if content else []


def brute_prune(
    messages: Sequence[Message],
    window: int,
    model: str | None = None,
    keep_last_n: int = KEEP_LAST_N,
    prune_ratio: float = PRUNE_RATIO,
) -> list[Message]:
    """Safety net: above the prune threshold keep the system messages, the last
    ``keep_last_n`` others and the latest request. If they still exceed ``window``, keep
    what matters most while it fits: the memory digest, the latest request (:func:`latest_request`), the instructions
    (the first other system message), a summary of earlier discussion, the last message,
    then the other messages newest first (one too large for the room left is passed over
    for older ones that fit), in their order. Of the first five, those that fit whole are
    taken first, then the others cut to the room left (tool calls kept whole), or left out
    when nothing of them fits; room left at the end (``MIN_CUT_TOKENS``
    or more) goes to the newest message passed over, cut to fit. The result never exceeds
    ``window``. Raises TypeError/ValueError for a ``prune_ratio`` outside (0, 1] or a
    negative ``keep_last_n``."""
    check_budget(window, "window", minimum=1)
    check_budget(keep_last_n, "keep_last_n", minimum=0)
    _check_ratio(prune_ratio, "prune_ratio")
    return _prune(validate_messages(messages), window, model, keep_last_n, prune_ratio)


def _prune(
    given: list[Message],
    window: int,
    model: str | None,
    keep_last_n: int,
    prune_ratio: float,
    as_given: Mapping[int, tuple[Message, Any]] | None = None,
) -> list[Message]:
    """``brute_prune`` of checked messages: a message kept whole is the same object.
    ``as_given``: id of a checked message → it and its content as it came (a cut keeps
    its images)."""

    def given_content(message: Message) -> Any:
        entry = (as_given or {}).get(id(message))
        return entry[1] if entry is not None and entry[0] is message else None

    total = message_tokens(given, model)
    if not check_context_budget(total, window, prune_ratio=prune_ratio).should_prune:
        return given
    system = [i for i, m in enumerate(given) if m["role"] in INSTRUCTION_ROLES]
    others = [i for i, m in enumerate(given) if m["role"] not in INSTRUCTION_ROLES]
    keep = set(system) | set(others[-keep_last_n:] if keep_last_n > 0 else [])
    # The latest request too, however many messages came after it: an agent session is
    # one prompt and a hundred tool calls, and its prompt fell outside the last 50.
    asked = latest_request(given)
    if asked is not None:
        keep.add(asked)
    kept = sorted(keep)  # msgs[j] is given[kept[j]]
    msgs = [given[i] for i in kept]
    costs = [
        c + MESSAGE_OVERHEAD for c in count_tokens_batch([counted_text(m) for m in msgs], model)
    ]
    if sum(costs) <= window:
        # The last 50 can begin with a tool's result whose call is older.
        return paired_tool_messages(given, dict(zip(kept, msgs, strict=True)))
    chosen: dict[int, Message] = {}
    room = window
    must, then = _prune_priority(msgs)
    first = [*must, *then]
    asked_here = latest_request(msgs)
    # In each group, those that fit whole first (a short instruction is not pushed out by
    # a long question), then the others cut to the room left, in the same order: a
    # summary of chitchat gets only the room the instructions leave.
    for group in (must, then):
        for i in group:
            if costs[i] <= room:
                chosen[i] = msgs[i]
                room -= costs[i]
        for i in group:
            if i in chosen:
                continue
            # A cut of anything but the request needs room to say something (a digest
            # cut to "[" told the model nothing).
            if i != asked_here and room < min(MIN_CUT_TOKENS, costs[i]):
                continue
            fitted = _fitted(
                msgs[i], room, model, ends=i == asked_here, given=given_content(msgs[i])
            )
            if fitted is None:
                continue
            cost = message_tokens([fitted], model)
            if cost <= room:
                chosen[i] = fitted
                room -= cost
    passed_over = []
    for i in reversed(range(len(msgs))):
        if i in chosen or i in first:
            continue
        if costs[i] <= room:
            chosen[i] = msgs[i]
            room -= costs[i]
        else:
            passed_over.append(i)
    # The room left goes to the newest message passed over, cut to fit.
    if passed_over and room >= MIN_CUT_TOKENS:
        newest = msgs[passed_over[0]]
        fitted = _fitted(newest, room, model, given=given_content(newest))
        if fitted is not None and message_tokens([fitted], model) <= room:
            chosen[passed_over[0]] = fitted
    return paired_tool_messages(given, {kept[i]: chosen[i] for i in chosen})


def _call_ids(message: Mapping[str, Any]) -> set[Any]:
    calls = message.get("tool_calls") if message.get("role") == "assistant" else None
    return {c.get("id") for c in calls or [] if isinstance(c, Mapping)}


def tool_call_places(messages: Sequence[Message]) -> list[int | None]:
    """For each message, the index of the assistant message holding the call a ``tool``
    result answers (None for other messages, and for a result whose call is not there):
    by id, the latest assistant message before it that made a call of that id; a result
    without an id (Ollama's format) by place, the assistant message with calls that its
    run of results follows. Anthropic's format by place too: a user message of
    ``tool_result`` parts answers the assistant message of ``tool_use`` parts right
    before it (read as text, ``[tool_result] …`` after ``[tool_use name] …``)."""
    places: list[int | None] = [None] * len(messages)
    latest_calls: int | None = None  # the assistant message whose results may follow
    by_id: dict[Any, int] = {}
    for i, message in enumerate(messages):
        role = message["role"]
        if role == "assistant" and (
            message.get("tool_calls") or TOOL_USE_MARK in str(message.get("content") or "")
        ):
            latest_calls = i
            by_id.update((cid, i) for cid in _call_ids(message) if cid is not None)
        elif role == "tool":
            cid = message.get("tool_call_id")
            places[i] = by_id.get(cid) if cid is not None else latest_calls
        elif role == "user" and latest_calls is not None and is_tool_result(message):
            places[i] = latest_calls
            latest_calls = None
        else:
            latest_calls = None
    return places


def paired_tool_messages(before: Sequence[Message], kept: Mapping[int, Message]) -> list[Message]:
    """The messages ``kept`` (index in ``before`` → the message kept there, maybe cut) in
    order, with no tool call or result parted from its pair, as chat APIs require: a
    ``tool`` result whose call was left out goes too, and an assistant message some of
    whose results were left out keeps its text without its calls (goes when it has none).
    Pairs already incomplete in ``before`` (calls still awaiting their results, a result
    without its call) stay as they were."""
    places = tool_call_places(before)
    results: dict[int, list[int]] = {}
    for i, place in enumerate(places):
        if place is not None:
            results.setdefault(place, []).append(i)
    parted = {
        call for call, found in results.items() if call in kept and not set(found) <= set(kept)
    }
    out: list[Message] = []
    for i in sorted(kept):
        message = kept[i]
        if i in parted:
            if not str(message.get("content") or "").strip():
                continue
            message = {k: v for k, v in message.items() if k != "tool_calls"}
        elif places[i] is not None and (places[i] not in kept or places[i] in parted):
            continue
        out.append(message)
    return out


# A message given without a content (tool calls only) goes out without one.
_LEFT_OUT = object()


def _as_given(
    messages: list[Message], as_given: Mapping[int, tuple[Message, Any]]
) -> list[Message]:
    """``messages`` with each one kept whole given its content as it came (``as_given``:
    id of the checked message → it and its content). A call and its result go out alike:
    when the prune cut one of them to text, the other stays text too (Anthropic's
    ``tool_result`` parts need the ``tool_use`` parts right before them)."""
    whole = {i for i, m in enumerate(messages) if as_given.get(id(m), (None,))[0] is m}
    places = tool_call_places(messages)
    changed = True
    while changed:
        changed = False
        for result, call in enumerate(places):
            if call is not None and (call in whole) != (result in whole):
                whole -= {call, result}
                changed = True
    out = []
    for i, m in enumerate(messages):
        if i in whole:
            content = as_given[id(m)][1]
            m = (
                {k: v for k, v in m.items() if k != "content"}
                if content is _LEFT_OUT
                else {**m, "content": content}
            )
        out.append(m)
    return out


def compact_messages(
    messages: Sequence[Message],
    window: int,
    model: str | None = None,
    summarizer: Summarizer | None = None,
    digest: Sequence[Mapping[str, Any]] = (),
    redactor: Callable[[str], str] | None = None,
) -> CompactionReport:
    """Run P1–P4 then the brute prune on ``messages`` for a ``window``-token context.

    The chain runs when the total is over the compaction threshold (85 %) or the prune's
    (80 %); each step re-counts and the chain stops once the total is at or under both, so
    the prune cuts only what the chain could not. ``summarizer(text, max_tokens) -> str``
    (default: extractive leading sentences) writes the P3 summary; a summarizer raising ``SummaryUnavailable`` skips it.
    ``digest`` entries ``{stage, decision, superseded?}``: their decisions are always
    carried in the memory digest message, which also names the stages P2 compacted.
    ``redactor(text) -> text``, when given, is applied to what is summarized and to the
    quoted opening request (a summary never repeats a secret; the messages kept whole are
    as given). The returned messages always fit ``window``. Raises TypeError/ValueError on
    bad input.

    A user message of a tool's results followed by text typed beside them (Anthropic's API
    sends a question so) is compacted as two: the results, then the question, the latest
    request (read as one, it opened with ``[tool_result]``, and a cut left the question
    out); when nothing is removed, the messages come back as given.
    """
    validate_messages(messages)  # its errors name the messages as given
    split = _typed_apart(messages)
    if len(split) == len(messages):
        return _compact(messages, window, model, summarizer, digest, redactor)
    report = _compact(split, window, model, summarizer, digest, redactor)
    if any(step.removed for step in report.steps):
        return report
    return _compact(messages, window, model, summarizer, digest, redactor)


def _typed_apart(messages: Sequence[Message]) -> list[Message]:
    """``messages`` with each user message of ``tool_result`` parts followed by other parts
    (text typed beside the results, an image) split in two: the results, then the rest."""
    out: list[Message] = []
    for message in messages:
        content = message.get("content") if isinstance(message, Mapping) else None
        if message.get("role") != "user" or not isinstance(content, list):
            out.append(message)
            continue
        kinds = [p.get("type") if isinstance(p, Mapping) else "text" for p in content]
        results = [i for i, kind in enumerate(kinds) if kind == "tool_result"]
        if not results or results != list(range(len(results))) or len(results) == len(kinds):
            out.append(message)  # no result, text before a result, or results alone
            continue
        apart = len(results)
        out += [
            {**message, "content": content[:apart]},
            {**message, "content": content[apart:]},
        ]
    return out


def _compact(
    messages: Sequence[Message],
    window: int,
    model: str | None,
    summarizer: Summarizer | None,
    digest: Sequence[Mapping[str, Any]],
    redactor: Callable[[str], str] | None,
) -> CompactionReport:
    """:func:`compact_messages` of ``messages`` as they are."""
    msgs = validate_messages(messages)
    # Checked as /compact checks it: an entry without a decision was dropped in silence.
    digest = validate_digest(list(digest) if isinstance(digest, list | tuple) else digest)
    # A message kept whole goes out as it came: content as a list of parts (an image, a
    # document) or null stays so; only the text of it is counted and compacted.
    as_given = {
        id(m): (m, g.get("content", _LEFT_OUT)) for m, g in zip(msgs, messages, strict=True)
    }
    check_context_budget(0, window)  # validates window
    if summarizer is not None and not callable(summarizer):
        raise TypeError("summarizer must be a callable (text, max_tokens) -> str")
    summarize = summarizer or _default_summarizer(model)
    before = message_tokens(msgs, model)
    anchor = format_memory_digest(digest)
    steps: list[CompactionStep] = []
    carried = before
    if anchor:
        msgs = _with_digest(msgs, anchor)
        carried = message_tokens(msgs, model)
        steps.append(
            CompactionStep("memory digest", 0, before, carried, "decisions in one system message")
        )
    budget = check_context_budget(carried, window)
    threshold = min(budget.compaction_threshold, budget.prune_threshold)
    compacted: list[str] = []
    staged = any(m.get("stage") is not None for m in msgs)
    resolved = "none"
    shrink = False

    # The chain runs whenever the prune would (the prune's 80 % sits below the chain's
    # 85 %) and goes on until neither would: stopping between the two left the prune to
    # cut what the chain had just compacted down to the last 50 messages.
    def under(tokens: int) -> bool:
        return tokens <= threshold

    tokens = budget.total_tokens
    if budget.should_compact or budget.should_prune:
        resolved = "unresolved"
        # P1. The latest request not answered yet is the task at hand however short ("fix
        # 4471", then tool calls working on it): it stays.
        pending = _pending_request(msgs)
        # The latest request stays too unless it only acknowledges ("ok", "thanks"): a
        # short instruction ("Step 1", "Run a command") was the conversation's last ask.
        latest = latest_request(msgs)
        if latest is not None and _acknowledges(str(msgs[latest].get("content") or "")):
            latest = None
        dropped = _chitchat_to_drop(msgs)
        kept = [m for i, m in enumerate(msgs) if i in (pending, latest) or i not in dropped]
        after = message_tokens(kept, model)
        steps.append(CompactionStep("P1 strip chitchat", len(msgs) - len(kept), tokens, after))
        msgs, tokens = kept, after
        if under(tokens):
            resolved = "P1"
        # P2
        if resolved == "unresolved":
            stages = completed_stages(msgs)
            removed = 0
            start = tokens
            for stage in stages:
                n = len(msgs)
                # A tool's result seldom carries its call's stage: it goes with its call.
                msgs = paired_tool_messages(
                    msgs,
                    {
                        i: m
                        for i, m in enumerate(msgs)
                        if m["role"] in INSTRUCTION_ROLES or str(m.get("stage")) != stage
                    },
                )
                removed += n - len(msgs)
                compacted.append(stage)
                tokens = message_tokens(msgs, model)
                if under(tokens):
                    break
            text = format_memory_digest(digest, compacted) if compacted else ""
            if text:
                msgs = _with_digest(msgs, text)
                tokens = message_tokens(msgs, model)
            if stages:
                steps.append(
                    CompactionStep(
                        "P2 compact stages",
                        removed,
                        start,
                        tokens,
                        f"stages {', '.join(compacted)}; "
                        + ("their decisions in the memory digest" if text else "no digest"),
                    )
                )
            if under(tokens):
                resolved = "P2"
        # P3
        if resolved == "unresolved":
            # A summary from an earlier compaction is summarized again with the messages
            # after it, and the new summary takes its place (summaries do not stack).
            earlier = [
                m
                for m in msgs
                if m["role"] == "system" and str(m["content"]).startswith(SUMMARY_HEADER)
            ]
            system = [m for m in msgs if m["role"] in INSTRUCTION_ROLES and m not in earlier]
            conversation = [m for m in msgs if m["role"] not in INSTRUCTION_ROLES]
            if staged:
                n = min(math.floor(len(conversation) * P3_STAGED_RATIO), P3_STAGED_MAX)
            else:
                n = min(P3_GENERAL_MAX, math.floor(len(conversation) * P3_GENERAL_RATIO))
            # Never the latest request: a conversation compacted again (few messages left)
            # had its last ask summarized into a cut bullet. The oldest messages but it
            # are summarized (an agent session is one prompt, then its tool calls).
            asked = latest_request(conversation)
            oldest = [i for i in range(len(conversation)) if i != asked][:n]
            # A tool call summarized takes its results with it: a result kept without its
            # call is refused by chat APIs.
            summarized = set(oldest)
            places = tool_call_places(conversation)
            oldest = sorted(
                summarized
                | {i for i, place in enumerate(places) if place in summarized and i != asked}
            )
            n = len(oldest)
            taken = set(oldest)
            kept_after = [m for i, m in enumerate(conversation) if i not in taken]
            if n > 2:
                earlier_texts = [
                    str(m["content"]).removeprefix(SUMMARY_HEADER).strip() for m in earlier
                ]
                opening = opening_request([conversation[i] for i in oldest], earlier_texts, model)
                transcript = "\n".join(
                    [
                        "[summary]: "
                        + "\n".join(
                            line
                            for line in text.splitlines()
                            if not line.startswith(OPENING_PREFIX)
                        )
                        for text in earlier_texts
                    ]
                    + [f"[{conversation[i]['role']}]: {conversation[i]['content']}" for i in oldest]
                )
                if redactor is not None:
                    opening, transcript = redactor(opening), redactor(transcript)
                try:
                    summary = summarize(transcript, P3_SUMMARY_TOKENS)
                    skipped = "the summarizer answered nothing"
                except SummaryUnavailable as exc:
                    summary, skipped = "", str(exc) or "the summarizer is unavailable"
                if not isinstance(summary, str):
                    raise TypeError("summarizer must return a str")
                summary = truncate_to_tokens(summary.strip(), P3_SUMMARY_TOKENS, model)
                if opening:  # what the quoted opening request says, said once
                    summary = "\n".join(
                        line for line in summary.splitlines() if not repeats(line, opening)
                    ).strip()
                if not summary:
                    steps.append(
                        CompactionStep("P3 summarize", 0, tokens, tokens, f"skipped: {skipped}")
                    )
                else:
                    note = {
                        "role": "system",
                        "content": f"{SUMMARY_HEADER}\n"
                        + (f"{opening}\n" if opening else "")
                        + f"{summary}\n\nThe conversation continues from here.",
                    }
                    summarized = [*system, note, *kept_after]
                    after = message_tokens(summarized, model)
                    if after >= tokens:
                        steps.append(
                            CompactionStep(
                                "P3 summarize",
                                0,
                                tokens,
                                tokens,
                                f"skipped: the summary would not be shorter than the "
                                f"{n} oldest messages",
                            )
                        )
                    else:
                        steps.append(
                            CompactionStep("P3 summarize", n, tokens, after, f"{n} oldest messages")
                        )
                        msgs, tokens = summarized, after
                        if under(tokens):
                            resolved = "P3"
        # P4
        if resolved == "unresolved" and staged:
            resolved = "P4"
            shrink = True
            steps.append(
                CompactionStep("P4 signal caller", 0, tokens, tokens, "shrink stage detail")
            )
    if check_context_budget(tokens, window).should_prune:
        start = tokens
        pruned = _prune(msgs, window, model, KEEP_LAST_N, PRUNE_RATIO, as_given)
        tokens = message_tokens(pruned, model)
        cut = [m for m in pruned if m not in msgs]
        notes = [f"{len(cut)} cut to fit"] if cut else []
        if any(_is_digest(m) for m in cut) or (
            any(_is_digest(m) for m in msgs) and not any(_is_digest(m) for m in pruned)
        ):
            notes.append("the memory digest does not fit whole")
        request = latest_request(msgs)
        instructions = _instructions(msgs)
        for index, what in ((request, "the latest request"), (instructions, "the instructions")):
            if index is not None and msgs[index] not in pruned:
                notes.append(f"{what} cut or left out")
        removed = len(msgs) - len(pruned) + len(cut)
        steps.append(CompactionStep("brute prune", removed, start, tokens, "; ".join(notes)))
        msgs = pruned
        # The report names the last step that actually changed the messages.
        if steps[-1].removed:
            resolved = "prune"
    msgs = _as_given(msgs, as_given)
    if any(step.removed for step in steps):
        # The oldest turns kept can open with the assistant's (and its tools'): Anthropic's
        # API refuses a conversation that does not open with the user, and templates that
        # want turns to alternate (Mistral's) refuse one too.
        opened = _opening_with_the_user(msgs)
        if len(opened) < len(msgs):
            removed = len(msgs) - len(opened)
            msgs, tokens = opened, message_tokens(opened, model)
            steps[-1] = replace(steps[-1], removed=steps[-1].removed + removed, tokens_after=tokens)
        # What was taken out can leave turns of one role in a row (the prune's kept turns,
        # assistant turns once the "ok" between them went).
        alternating = _alternating(msgs)
        if len(alternating) < len(msgs):
            joined = message_tokens(alternating, model)
            if joined <= window:  # one message overhead less per join: never more
                msgs, tokens = alternating, joined
                # The last step's count is the report's: the join is part of its result.
                steps[-1] = replace(steps[-1], tokens_after=joined)
    return CompactionReport(
        msgs, steps, before, tokens, window, threshold, resolved, shrink, compacted
    )
