"""The normalized session event model shared by every platform parser.

One :class:`SessionEvent` per meaningful unit of a transcript (a prompt, a text block, a
tool call, a tool result, a hook, ...). Parsers are generators: they yield events and
record malformed lines in a :class:`ParseStats` they are handed (the Codex parser streams
a 200 MB rollout in constant memory; Claude and Gemini files are read whole first).
:class:`ParseResult` is the materialized form.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from selene_dag.sessions.parsers.timestamps import normalize_timestamp

PLATFORMS: tuple[str, ...] = ("claude", "codex", "gemini")
ROLES: tuple[str, ...] = ("user", "assistant", "system", "tool")
KINDS: tuple[str, ...] = (
    "user_prompt",
    "assistant_text",
    "tool_use",
    "tool_result",
    "error",
    "system",
    "hook",
    "summary",
    "compact_boundary",
    "other",
)
MAX_ERROR_SAMPLES = 5


@dataclass(slots=True)
class SessionEvent:
    """One normalized transcript event.

    ``seq`` is the 0-based position among the events of one file, ``line`` the 1-based
    line of the source record (for single-JSON Gemini files: the message index + 1).
    ``timestamp`` is ISO-8601 UTC (see :mod:`.timestamps`) or None. ``abandoned`` marks an
    event of a branch the user rewound away from: it is stored, but not chunked or scored
    as part of the conversation. ``tokens``, ``line_tokens`` and ``importance`` are filled
    after parsing (chunker / scorer).
    """

    session_id: str
    platform: str
    seq: int
    timestamp: str | None
    role: str
    kind: str
    text: str
    tool_name: str | None = None
    file_paths: tuple[str, ...] = ()
    is_error: bool = False
    is_sidechain: bool = False
    tokens: int | None = None
    raw_type: str = ""
    line: int = 0
    importance: int | None = None
    abandoned: bool = False
    # The tokens of the event's line in a chunk's text (``chunker.render_event``), counted
    # with ``tokens`` when the event is likely to be chunked.
    line_tokens: int | None = None

    def as_row(self) -> dict[str, Any]:
        """Return the event as a plain dict (column name -> value), file paths as a list."""
        return {
            "session_id": self.session_id,
            "platform": self.platform,
            "seq": self.seq,
            "timestamp": self.timestamp,
            "role": self.role,
            "kind": self.kind,
            "text": self.text,
            "tool_name": self.tool_name,
            "file_paths": list(self.file_paths),
            "is_error": self.is_error,
            "is_sidechain": self.is_sidechain,
            "tokens": self.tokens,
            "raw_type": self.raw_type,
            "line": self.line,
            "importance": self.importance,
            "abandoned": self.abandoned,
            "line_tokens": self.line_tokens,
        }


@dataclass
class ParseStats:
    """Counters a parser updates while it streams: lines seen, malformed lines, metadata.

    ``session_id`` and ``project`` (the working directory, or Gemini's project hash) are
    taken from the transcript when it names them. ``duplicates`` counts records skipped
    because another record already carried the same content (the Codex parser) or the same
    record id or summary (a Claude record repeated across a resume). ``parent_session_id`` is set for a
    sub-agent transcript: the session that started it. ``abandoned`` counts events of
    rewound branches (marked on the events, see :class:`SessionEvent`). ``unfinished_line``
    is the number of a last line still being written (not JSON yet, no line break), if any.
    """

    lines: int = 0
    errors: int = 0
    error_samples: list[str] = field(default_factory=list)
    duplicates: int = 0
    session_id: str | None = None
    project: str | None = None
    parent_session_id: str | None = None
    abandoned: int = 0
    unfinished_line: int | None = None

    def record_error(self, line: int, message: str) -> None:
        """Count one malformed record and keep the first few messages as samples."""
        self.errors += 1
        if len(self.error_samples) < MAX_ERROR_SAMPLES:
            self.error_samples.append(f"line {line}: {message}"[:300])


@dataclass
class ParseResult:
    """All events of one file plus its parse statistics."""

    path: str
    platform: str
    events: list[SessionEvent]
    stats: ParseStats

    @property
    def errors(self) -> int:
        """Number of malformed records that were skipped."""
        return self.stats.errors

    @property
    def error_samples(self) -> list[str]:
        """Up to five 'line N: message' descriptions of skipped records."""
        return self.stats.error_samples


class EventBuilder:
    """Assigns consecutive ``seq`` numbers while a parser creates events."""

    __slots__ = ("_last_raw_time", "_last_time", "platform", "seq", "session_id")

    def __init__(self, platform: str, session_id: str) -> None:
        self.platform = platform
        self.session_id = session_id
        self.seq = 0
        self._last_raw_time: object = None
        self._last_time: str | None = None

    def timestamp(self, raw: object) -> str | None:
        """``raw`` normalized by :func:`normalize_timestamp` (the last value is cached:
        consecutive events of one record share it)."""
        if raw is None:
            return None
        if raw != self._last_raw_time:
            self._last_raw_time, self._last_time = raw, normalize_timestamp(raw)
        return self._last_time

    def make(
        self,
        *,
        role: str,
        kind: str,
        text: str,
        line: int,
        timestamp: object,
        raw_type: str,
        tool_name: str | None = None,
        file_paths: tuple[str, ...] = (),
        is_error: bool = False,
        is_sidechain: bool = False,
        session_id: str | None = None,
    ) -> SessionEvent:
        """Create the next event (seq increases by one per call). ``timestamp`` is the
        record's raw time value (string or number); it is normalized here."""
        event = SessionEvent(
            session_id=session_id or self.session_id,
            platform=self.platform,
            seq=self.seq,
            timestamp=self.timestamp(timestamp),
            role=role,
            kind=kind,
            text=text,
            tool_name=tool_name,
            file_paths=file_paths,
            is_error=is_error,
            is_sidechain=is_sidechain,
            raw_type=raw_type,
            line=line,
        )
        self.seq += 1
        return event
