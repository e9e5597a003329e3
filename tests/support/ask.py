"""Helpers for the ask tests: a small store seeded with notes, a session and its chunks."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb

from selene_dag.store import connect

NOW = datetime(2026, 7, 15, tzinfo=UTC)

NOTES = [
    (
        "sqlite/julianday.md",
        "Unix milliseconds in SQLite",
        "# Unix milliseconds in SQLite\n\nUse julianday arithmetic: subtract 2440587.5 and "
        "multiply by 86400000. Newer versions offer unixepoch('subsec').",
        "skeleton",
        800,
    ),
    (
        "docker/exec.md",
        "Attaching a bash shell to a running Docker container",
        "# Attaching a bash shell\n\nRun docker exec -it ID bash. Do not use docker attach: "
        "Ctrl+C would stop the container.",
        "high",
        30,
    ),
    (
        "zsh/prompt.md",
        "Customizing my zsh prompt",
        "# Customizing my zsh prompt\n\nPut PROMPT='%1~ %# ' at the top of ~/.zshrc.",
        "full",
        2,
    ),
    (
        "python/copy.md",
        "Efficiently copying a file",
        "# Copying\n\nUse shutil.copyfileobj(fsrc, fdst) for a SpooledTemporaryFile.",
        "summary",
        200,
    ),
    (
        "misc/long.md",
        "A long note about gardening tomatoes",
        "# Gardening\n\n" + "Tomatoes need sun and water every day. " * 400,
        "full",
        1,
    ),
    (
        "misc/duplicate.md",
        "Copy of the zsh prompt note",
        "# Customizing my zsh prompt\n\nPut PROMPT='%1~ %# ' at the top of ~/.zshrc.",
        "skeleton",
        900,
    ),
]

CHUNKS = [
    (
        "c1",
        0,
        12,
        "[user/user_prompt] configure LM Studio as the local provider in chatbot-ui",
        7.5,
    ),
    ("c2", 13, 30, "[assistant/text] ran pnpm generate:types after changing the block config", 5.0),
]
SESSION_PATH = "/sessions/codex/rollout-demo.jsonl"


def seed_store(db_path: Path, with_session: bool = True) -> None:
    """Create ``db_path`` with NOTES (plus essences and tiers) and, optionally, a codex
    session with CHUNKS and their consensus scores."""
    conn = connect(db_path)
    try:
        for note_id, title, content, tier, age_days in NOTES:
            stamp = NOW - timedelta(days=age_days)
            conn.execute(
                "INSERT INTO notes (id, title, content, content_hash, created_at, updated_at, "
                "source) VALUES (?, ?, ?, md5(?), ?, ?, 'test')",
                [note_id, title, content, content, stamp, stamp],
            )
            conn.execute(
                "INSERT INTO processed_notes (note_id, essence, fidelity_tier) VALUES (?, ?, ?)",
                [note_id, content.splitlines()[-1][:120], tier],
            )
        if with_session:
            add_session(conn)
    finally:
        conn.close()


def add_session(conn: duckdb.DuckDBPyConnection) -> None:
    """Insert the codex session, its chunks and consensus scores."""
    conn.execute(
        "INSERT INTO session_files (session_key, path, platform, project, size, mtime, sha256, "
        "events, parse_errors, scanned_at, parsed_at) VALUES ('codex-demo', ?, 'codex', "
        "'chatbot-ui', 1, 0, 'x', 31, 0, ?, ?)",
        [SESSION_PATH, NOW, NOW],
    )
    for cid, first, last, text, consensus in CHUNKS:
        conn.execute(
            "INSERT INTO chunks (id, session_key, chunk_index, first_seq, last_seq, text, "
            "token_count, importance_avg, event_count) VALUES (?, 'codex-demo', 0, ?, ?, ?, 20, "
            "60, 3)",
            [cid, first, last, text],
        )
        conn.execute(
            "INSERT INTO chunk_scores (chunk_id, session_key, consensus, n_assessments, "
            "sufficient) VALUES (?, 'codex-demo', ?, 2, true)",
            [cid, consensus],
        )


def ingested_folder(root: Path, notes: dict[str, str], exist_ok: bool = False):
    """A home under ``root`` holding the markdown ``notes`` (file name -> text) of a folder
    named ``notes``, ingested through the service with the offline engine; its settings.
    ``exist_ok``: the folder (and the subfolders the names need) is made already."""
    from selene_dag import service
    from selene_dag.config import load_settings

    folder = root / "notes"
    folder.mkdir(exist_ok=exist_ok)
    for name, text in notes.items():
        (folder / name).write_text(text, encoding="utf-8")
    settings = load_settings({"SELENE_LLM": "extractive"}, home=root / "home")
    service.ingest(settings, folder)
    return settings
