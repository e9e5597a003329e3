"""Thread digests (seed 000's compile-thread-digests).

Eligible: active threads with ≥ 10 notes and ≥ 5 essences. A digest is regenerated only when
stale: the hash of the essences (and name, motivation) it was made from differs from the
stored one; a thread no longer eligible whose notes changed loses its digest. A digest must be 3–5 sentences and ≥ 30 characters; longer answers are cut to
five sentences, shorter or empty ones are rejected and counted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

import duckdb

from selene_dag.llm.engine import (
    MIN_DIGEST_CHARS,
    MIN_DIGEST_SENTENCES,
    Engine,
    EngineResponseError,
)
from selene_dag.text import content_hash, split_sentences

MIN_THREAD_NOTES = 10
MIN_THREAD_ESSENCES = 5
MIN_SENTENCES, MAX_SENTENCES = MIN_DIGEST_SENTENCES, 5


@dataclass
class DigestStats:
    """Outcome of one digest run."""

    eligible: int = 0
    written: int = 0
    fresh: int = 0
    rejected: int = 0
    rejected_threads: list[str] = field(default_factory=list)
    cleared: int = 0


def validate_digest(text: str | None) -> str | None:
    """Return the digest cut to at most 5 sentences, or None if it is not 3+ sentences / 30+ chars."""
    sentences = split_sentences(text or "", flatten=True)
    if len(sentences) < MIN_SENTENCES:
        return None
    digest = " ".join(sentences[:MAX_SENTENCES])
    return digest if len(digest) >= MIN_DIGEST_CHARS else None


def compile_digests(conn: duckdb.DuckDBPyConnection, engine: Engine, now: datetime) -> DigestStats:
    """Write a digest for every eligible thread whose essences changed since its digest."""
    threads = conn.execute(
        "SELECT t.id, t.name, t.why, t.digest_source, "
        "       list(p.essence ORDER BY n.created_at, n.id) FILTER (WHERE p.essence IS NOT NULL) "
        "FROM threads t JOIN thread_notes tn ON tn.thread_id = t.id "
        "JOIN notes n ON n.id = tn.note_id AND n.deleted_at IS NULL "
        "LEFT JOIN processed_notes p ON p.note_id = n.id "
        "WHERE t.status = 'active' GROUP BY t.id, t.name, t.why, t.digest_source "
        f"HAVING count(*) >= {MIN_THREAD_NOTES} "
        f"AND count(p.essence) >= {MIN_THREAD_ESSENCES} ORDER BY t.id"
    ).fetchall()
    stats = DigestStats(eligible=len(threads))
    for thread_id, name, why, stored_source, essences in threads:
        source = content_hash(name, why or "", *essences)
        if source == stored_source:
            stats.fresh += 1
            continue
        try:
            digest = validate_digest(engine.digest_thread(name, why or "", essences))
        except EngineResponseError:  # a model answering unusably: the thread keeps its digest
            digest = None
        if digest is None:
            stats.rejected += 1
            stats.rejected_threads.append(thread_id)
            continue
        conn.execute(
            "UPDATE threads SET thread_digest = ?, digest_at = ?, digest_source = ? WHERE id = ?",
            [digest, now, source, thread_id],
        )
        stats.written += 1
    stats.cleared = _clear_outdated(conn, {t[0] for t in threads})
    return stats


def _clear_outdated(conn: duckdb.DuckDBPyConnection, eligible: set[str]) -> int:
    """Clear the digest of each thread no longer eligible whose notes changed since it was
    written (a forgotten folder took some away): it would tell of notes the home no longer
    holds, and a thread under the minimum never gets a new one. Returns how many."""
    rows = conn.execute(
        "SELECT t.id, t.name, t.why, t.digest_source, "
        "       list(p.essence ORDER BY n.created_at, n.id) FILTER (WHERE p.essence IS NOT NULL) "
        "FROM threads t LEFT JOIN thread_notes tn ON tn.thread_id = t.id "
        "LEFT JOIN notes n ON n.id = tn.note_id AND n.deleted_at IS NULL "
        "LEFT JOIN processed_notes p ON p.note_id = n.id "
        "WHERE t.thread_digest IS NOT NULL GROUP BY t.id, t.name, t.why, t.digest_source"
    ).fetchall()
    outdated = [
        thread_id
        for thread_id, name, why, stored, essences in rows
        if thread_id not in eligible and content_hash(name, why or "", *(essences or [])) != stored
    ]
    if outdated:
        conn.execute(
            "UPDATE threads SET thread_digest = NULL, digest_at = NULL, digest_source = NULL "
            "WHERE list_contains(?, id)",
            [outdated],
        )
    return len(outdated)
