"""Resumable session files for Claude Code, Codex CLI and Gemini CLI from a distillation.

``render_session(platform, distilled, meta)`` returns ``(file_name, text)``;
``write_session`` writes it atomically under a directory. ``overhead_tokens`` says how many
tokens the wrapper texts add, so the distiller can keep the whole file within budget.
"""

from __future__ import annotations

import re
from pathlib import Path

from selene_dag.context.tokens import count_tokens
from selene_dag.errors import UsageError
from selene_dag.files import write_whole
from selene_dag.sessions.distiller import DistilledSession
from selene_dag.sessions.generators import claude, codex, gemini
from selene_dag.sessions.generators._base import ACK_TEXT, SeedMeta, message_texts, preamble

GENERATOR_PLATFORMS: tuple[str, ...] = ("claude", "codex", "gemini")


def check_platform(platform: str) -> None:
    """Raise UsageError (a ValueError) unless ``platform`` has a generator."""
    if platform not in GENERATOR_PLATFORMS:
        raise UsageError(f"platform {platform!r}: expected one of {', '.join(GENERATOR_PLATFORMS)}")


def overhead_tokens(
    platform: str, meta: SeedMeta, n_chunks: int, model: str | None = None
) -> tuple[int, int]:
    """``(reserve, per_chunk)`` tokens the file adds around chunk texts (preamble, wrappers).

    The preamble is counted for ``n_chunks`` and for a 6-digit count, so the reserve holds
    whatever number of chunks ends up selected.
    """
    check_platform(platform)
    # The model's acknowledgement after the preamble is one of the file's texts too.
    reserve = count_tokens(ACK_TEXT, model=model) + max(
        count_tokens(preamble(meta, n_chunks), model=model),
        count_tokens(preamble(meta, 999_999), model=model),
    )
    per_chunk = 1
    if platform == "claude":
        per_chunk += count_tokens(claude.REMINDER_OPEN + claude.REMINDER_CLOSE, model=model) + 2
    return reserve, per_chunk


def render_session(platform: str, distilled: DistilledSession, meta: SeedMeta) -> tuple[str, str]:
    """``(file_name, text)`` of the resumable session for ``platform``."""
    check_platform(platform)
    texts = message_texts(distilled, meta)
    if platform == "claude":
        return claude.file_name(meta), claude.render(texts, meta, pre_tokens=distilled.total_tokens)
    if platform == "codex":
        return codex.file_name(meta), codex.render(texts, meta)
    return gemini.file_name(meta), gemini.render(texts, meta)


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def safe_file_name(name: str) -> str:
    """``name`` with every run of characters other than letters, digits, ``.``, ``_`` and
    ``-`` replaced by one ``-`` (a timestamp such as ``2025/10/31 17:00:00`` from a session
    file must not become folders or spaces in the output path)."""
    cleaned = _UNSAFE.sub("-", name).strip("-.")
    return cleaned or "session"


def write_session(
    platform: str, distilled: DistilledSession, meta: SeedMeta, directory: Path
) -> Path:
    """Write the session file under ``directory`` (atomically: temp file then rename),
    under a name of safe characters only (``safe_file_name``)."""
    name, text = render_session(platform, distilled, meta)
    name = safe_file_name(name)
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / name
    write_whole(target, text)
    return target


__all__ = [
    "ACK_TEXT",
    "GENERATOR_PLATFORMS",
    "SeedMeta",
    "check_platform",
    "message_texts",
    "overhead_tokens",
    "render_session",
    "safe_file_name",
    "write_session",
]
