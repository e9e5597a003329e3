"""A ChatGPT data export, unzipped, ingested as a user does it (the folder, then its
conversations.json alone): one note per conversation, found by ask, nothing redone when
nothing changed. Real files, real DuckDB, the real definitions through the service."""

from __future__ import annotations

import shutil
from pathlib import Path

from selene_dag import service
from selene_dag.config import load_settings

EXPORTS = Path(__file__).resolve().parents[1] / "fixtures" / "chat_exports"


def test_an_unzipped_chatgpt_export_is_ingested_and_asked(tmp_path: Path, home: Path) -> None:
    settings = load_settings(home=home, now_override="2026-07-15")
    folder = shutil.copytree(EXPORTS / "chatgpt", tmp_path / "chatgpt-export")
    first = service.ingest(settings, folder)
    assert (first.notes, first.inserted, first.id_prefix) == (2, 2, "chatgpt-export/")
    assert first.skipped_total == 1  # the export's one entry that is no conversation
    assert "search_index" in first.ran

    result = service.ask(settings, "what timeout for the S3 sensor in Airflow", 300)
    assert result.items[0].citation.startswith(
        "note chatgpt-export/6650a1b2-0000-4000-8000-00000000c0de"
    )
    assert "7200 seconds" in result.text

    again = service.ingest(settings, folder)
    assert (again.inserted, again.changed, again.deleted, again.ran) == (0, 0, 0, ())

    # A conversation continued in the app: the export's note changes, the other stays.
    path = folder / "conversations.json"
    path.write_text(path.read_text().replace("How about `parquet_peek`?", "Try `pqmeta`."))
    edited = service.ingest(settings, folder)
    assert (edited.inserted, edited.changed, edited.deleted) == (0, 1, 0)
    assert "pqmeta" in service.ask(settings, "name for a DuckDB parquet extension", 200).text
