"""Platform parsers for AI coding-agent transcripts, normalized to :class:`SessionEvent`.

``iter_events(path)`` yields events (Codex rollouts stream in constant memory; Claude
transcripts are read whole to resolve rewound branches, Gemini chats to replay their
records); ``parse_file(path)`` returns a :class:`ParseResult`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

from selene_dag.errors import UsageError
from selene_dag.sessions.parsers.claude import iter_claude
from selene_dag.sessions.parsers.codex import iter_codex
from selene_dag.sessions.parsers.detect import detect_platform, detect_platform_bytes
from selene_dag.sessions.parsers.gemini import iter_gemini
from selene_dag.sessions.parsers.model import (
    KINDS,
    PLATFORMS,
    ParseResult,
    ParseStats,
    SessionEvent,
)

_PARSERS: dict[str, Callable[[Path, ParseStats], Iterator[SessionEvent]]] = {
    "claude": iter_claude,
    "codex": iter_codex,
    "gemini": iter_gemini,
}


def iter_events(
    path: Path | str, platform: str | None = None, stats: ParseStats | None = None
) -> Iterator[SessionEvent]:
    """Yield the normalized events of one session file.

    ``platform`` None means detect from the content. Malformed records are skipped and
    counted in ``stats`` (pass one to read the counts). Raises UsageError (a ValueError)
    for an unknown platform, ValueError for an undetectable file, FileNotFoundError for a missing file.
    """
    path = Path(path)
    if platform is None:
        platform = detect_platform(path)
    if platform not in _PARSERS:
        raise UsageError(f"unknown platform {platform!r}: expected one of {', '.join(PLATFORMS)}")
    return _PARSERS[platform](path, stats if stats is not None else ParseStats())


def parse_file(path: Path | str, platform: str | None = None) -> ParseResult:
    """Parse a whole session file into a :class:`ParseResult` (events in file order)."""
    path = Path(path)
    if platform is None:
        platform = detect_platform(path)
    stats = ParseStats()
    events = list(iter_events(path, platform, stats))
    return ParseResult(path=str(path), platform=platform, events=events, stats=stats)


__all__ = [
    "KINDS",
    "PLATFORMS",
    "ParseResult",
    "ParseStats",
    "SessionEvent",
    "detect_platform",
    "detect_platform_bytes",
    "iter_events",
    "parse_file",
]
