"""Daily summaries (seed 000's daily-summary, using essences instead of raw content).

Each note of the day becomes one line: ``- title: essence``, else its top-3 concepts, else
the first 100 characters of its content. With a model engine the lines are also condensed
into a short paragraph; the extractive engine keeps the lines as the summary.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta

import duckdb

from selene_dag.llm.engine import Engine
from selene_dag.store import transaction

SUMMARY_MAX_TOKENS = 200


@dataclass
class DaySummary:
    """One day's summary and the notes it covers."""

    day: date
    summary: str
    note_ids: list[str]


def note_line(title: str, essence: str | None, concepts: list[str] | None, content: str) -> str:
    """Render one note for a daily summary: essence → top-3 concepts → content[:100]…; an
    essence that opens with the title (a short note's essence is its title) is not
    preceded by it again."""
    if essence:
        said = " ".join(title.split()).rstrip(".").lower()
        if said and essence.lower().startswith(said):
            return f"- {essence}"
        return f"- {title}: {essence}"
    if concepts:
        return f"- {title}: {', '.join(concepts[:3])}"
    return f"- {title}: {' '.join(content.split())[:100]}..."


# A model writes the summary of a day of two notes or more within this many days of now;
# older days, and a day of one note (its essence says it), are listed offline: a first
# run over years of notes asked a model server once per day (473 calls for the demo).
MODEL_DAYS = 31


def summarize_days(
    conn: duckdb.DuckDBPyConnection,
    start: date,
    end: date,
    engine: Engine | None = None,
    model_since: date | None = None,
) -> list[DaySummary]:
    """Summaries for every day in [start, end) that has live, non-test notes: the notes'
    lines, after a summary the ``engine`` writes when it is a model's, for the days of two
    notes or more from ``model_since`` on (every day when None)."""
    rows = conn.execute(
        "SELECT (n.created_at AT TIME ZONE 'UTC')::DATE AS day, n.id, n.title, p.essence, "
        "p.concepts, n.content FROM notes n LEFT JOIN processed_notes p ON p.note_id = n.id "
        "WHERE n.deleted_at IS NULL AND NOT n.test_run "
        "AND (n.created_at AT TIME ZONE 'UTC')::DATE >= ? AND (n.created_at AT TIME ZONE 'UTC')::DATE < ? "
        "ORDER BY n.created_at, n.id",
        [start, end],
    ).fetchall()
    by_day: dict[date, list[tuple]] = {}
    for row in rows:
        by_day.setdefault(row[0], []).append(row[1:])
    summaries = []
    for day, notes in sorted(by_day.items()):
        lines = "\n".join(note_line(t, e, c, body) for _, t, e, c, body in notes)
        header = f"{day.isoformat()}: {len(notes)} note{'s' if len(notes) != 1 else ''}"
        text = f"{header}\n{lines}"
        recent = model_since is None or day >= model_since
        if engine is not None and engine.name != "extractive" and recent and len(notes) > 1:
            text = f"{header}\n{engine.summarize(lines, SUMMARY_MAX_TOKENS)}\n\n{lines}"
        summaries.append(DaySummary(day, text, [n[0] for n in notes]))
    return summaries


def write_day_summaries(
    conn: duckdb.DuckDBPyConnection,
    start: date,
    end: date,
    summaries: list[DaySummary],
    now: datetime,
) -> None:
    """Replace the summaries of [start, end) with ``summaries`` in one transaction."""
    with transaction(conn):
        conn.execute("DELETE FROM daily_summaries WHERE day >= ? AND day < ?", [start, end])
        if summaries:
            conn.executemany(
                "INSERT INTO daily_summaries (day, summary, note_count, note_ids, created_at) "
                "VALUES (?, ?, ?, ?, ?)",
                [[s.day, s.summary, len(s.note_ids), s.note_ids, now] for s in summaries],
            )


def first_day_to_refresh(
    conn: duckdb.DuckDBPyConnection, start: date, end: date, now: datetime
) -> date:
    """The first day a run of the month [start, end) summarizes: ``start``, or the day
    before it when ``now`` falls in that month and the day before's summary was written
    before the day ended (or never). The daily refresh runs the month in progress only, so
    at 00:30 on the 1st the last day of the month before, which ended half an hour ago, is
    finished by the new month's run."""
    if not start <= now.date() < end:
        return start
    before = start - timedelta(days=1)
    (written,) = conn.execute(
        "SELECT max(created_at) FROM daily_summaries WHERE day = ?", [before]
    ).fetchone()
    ended = datetime(start.year, start.month, start.day, tzinfo=now.tzinfo)
    return before if written is None or written < ended else start


def days(start: date, end: date) -> list[date]:
    """Every day in [start, end)."""
    return [start + timedelta(days=i) for i in range((end - start).days)]
