"""An agent session transcript as chat messages, for compaction.

The conversation is what the model saw: the user's prompts, the assistant's text, its
tool calls and their results, and the summary an agent wrote when it compacted its own
context. Hooks, system notices, reasoning records, side chains (a
sub-agent's work inside the parent file) and rewound branches are left out. Consecutive
events of one role make one message, as a chat API holds them, except that tool results
and a prompt after them stay apart (compaction joins what it keeps as the chat template
wants it); secrets are redacted, as
everywhere a transcript's text leaves its file.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from selene_dag.context.messages import Conversation, Message
from selene_dag.redact import redact_counts
from selene_dag.sessions.parsers import ParseStats, iter_events
from selene_dag.sessions.parsers.model import SessionEvent

# Event kind -> message role. Other kinds are not part of the conversation. A tool's result
# goes back to the model in a user message, as Anthropic's API takes it: a "tool" message
# needs the id of the call it answers (OpenAI's API refuses one without), and transcripts'
# calls are text here.
ROLE_OF_KIND = {
    "user_prompt": "user",
    "assistant_text": "assistant",
    "tool_use": "assistant",
    "tool_result": "user",
}
# The summary an agent wrote when it compacted its own context (Claude Code carries it in a
# user record, Codex CLI in a `compacted` record): what the model saw in place of the turns
# before it, so it stays, as a system message.
_SUMMARY_RECORDS = {("summary", "user"), ("compact_boundary", "compacted")}
# The prompt a Claude Code slash command expands to (`/init`): a user message the
# transcript marks as meta.
_EXPANDED_COMMANDS = {("system", "user/text")}


def message_role(event: SessionEvent) -> str | None:
    """The chat role an event takes in the conversation, or None when the model did not
    see it as part of the conversation (hooks, notices, titles, reasoning records)."""
    if (event.kind, event.raw_type) in _SUMMARY_RECORDS:
        return "system"
    if (event.kind, event.raw_type) in _EXPANDED_COMMANDS:
        return "user"
    return ROLE_OF_KIND.get(event.kind)


def event_message_text(event: SessionEvent) -> str:
    """The text an event adds to its message: prompts and replies as they are, a tool
    call as ``[tool_use NAME] input``, its result as ``[tool_result] text`` (``[tool_result
    ERROR] text`` when it failed)."""
    text = event.text.strip()
    if event.kind == "tool_use":
        return f"[tool_use {event.tool_name or 'tool'}] {text}"
    if event.kind == "tool_result":
        return f"[tool_result{' ERROR' if event.is_error else ''}] {text}"
    if message_role(event) == "system":
        return f"[SUMMARY OF EARLIER CONVERSATION]\n{text}"
    return text


def session_conversation(path: Path | str, platform: str | None = None) -> Conversation:
    """The messages of a Claude Code, Codex CLI or Gemini CLI session file.

    ``platform`` None detects it from the content. ``notices`` name the malformed records
    the parser skipped and count the secrets redacted. Raises ValueError when the file is not a
    session transcript or holds no conversation, FileNotFoundError when it is missing.
    """
    path = Path(path)
    stats = ParseStats()
    messages: list[Message] = []
    redacted: Counter[str] = Counter()
    form = platform
    said = []
    for event in iter_events(path, platform, stats):
        form = event.platform
        role = message_role(event)
        if role is not None and not event.abandoned and event.text.strip():
            said.append((role, event))
    # A sidechain (a subagent's turns) is left out, unless the file is a subagent's own
    # transcript, every record of it on the sidechain.
    main = [(role, event) for role, event in said if not event.is_sidechain]
    last_result = False
    for role, event in main or said:
        text, counts = redact_counts(event_message_text(event))
        redacted.update(counts)
        # A prompt typed after a tool's result is a request of its own, not part of the
        # result: joined to it, compaction did not see the latest question.
        result = event.kind == "tool_result"
        if messages and messages[-1]["role"] == role and result == last_result:
            messages[-1]["content"] += "\n\n" + text
        else:
            messages.append({"role": role, "content": text})
        last_result = result
    if not messages:
        raise ValueError(f"{path}: the session holds no prompt, reply or tool call")
    notices = [f"{sample} (record skipped)" for sample in stats.error_samples]
    if stats.errors > len(stats.error_samples):
        notices.append(f"{stats.errors - len(stats.error_samples)} more malformed records skipped")
    if redacted:
        kinds = ", ".join(f"{n} {kind}" for kind, n in sorted(redacted.items()))
        notices.append(f"secrets redacted: {kinds}")
    return Conversation(messages, notices=notices, form=form or "session")
