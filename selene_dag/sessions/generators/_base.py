"""What every generator shares: the seed metadata, the message texts and deterministic ids."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from selene_dag.sessions.distiller import DistilledSession

_NAMESPACE = uuid.UUID("6f1d3a52-3c1e-4b8e-9a51-5e1e9ed0a9c3")
ACK_TEXT = "Understood. I have read the distilled context above and will continue from it."


@dataclass(frozen=True)
class SeedMeta:
    """Identity of a generated session: its key (drives every uuid), source and time.

    ``created_at`` is an ISO-8601 UTC timestamp ending in ``Z``; ``cwd`` is the project
    directory the resumed session should run in.
    """

    key: str
    source_platform: str
    source_sessions: tuple[str, ...]
    cwd: str
    created_at: str
    title: str = "Distilled session"
    question: str = ""
    # Every platform the source sessions come from, when several (the preamble names them).
    source_platforms: tuple[str, ...] = ()

    @property
    def session_id(self) -> str:
        """Deterministic uuid of the generated session."""
        return str(uuid.uuid5(_NAMESPACE, f"session:{self.key}"))

    def uuid(self, index: int) -> str:
        """Deterministic uuid of the ``index``-th record of the generated file."""
        return str(uuid.uuid5(_NAMESPACE, f"record:{self.key}:{index}"))


def preamble(meta: SeedMeta, n_chunks: int) -> str:
    """First message: what the session is, the question it was assembled for (when it
    was), and where its content comes from."""
    sources = ", ".join(meta.source_sessions) or "(none)"
    question = " ".join(meta.question.split())
    relevant = f" relevant to: {question}\n\nThey come from" if question else " of"
    return (
        f"This session was assembled from {n_chunks} distilled conversation chunks"
        f"{relevant} {' and '.join(meta.source_platforms) or meta.source_platform} "
        f"session(s) {sources}, selected by selene-dag. "
        "Treat them as prior context."
    )


def message_texts(distilled: DistilledSession, meta: SeedMeta) -> list[str]:
    """The user-side texts of a generated session: the preamble, then one per chunk."""
    return [preamble(meta, len(distilled.chunks))] + [s.chunk.text for s in distilled.chunks]
