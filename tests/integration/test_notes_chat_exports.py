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

    # A question asked of sessions in a home that has none says how to add them; one that
    # matches nothing among the notes says just that.
    sessions = service.ask(settings, "S3 sensor", 200, sources="sessions")
    assert not sessions.items and "`selene-dag distill run --all`" in sessions.stats["note"]
    unmatched = service.ask(settings, "zanzibar quokka", 200)
    assert not unmatched.items and unmatched.stats["note"] == "nothing matched the question"

    # A conversation continued in the app: the export's note changes, the other stays.
    path = folder / "conversations.json"
    path.write_text(path.read_text().replace("How about `parquet_peek`?", "Try `pqmeta`."))
    edited = service.ingest(settings, folder)
    assert (edited.inserted, edited.changed, edited.deleted) == (0, 1, 0)
    assert "pqmeta" in service.ask(settings, "name for a DuckDB parquet extension", 200).text


def test_a_zip_export_broken_later_loses_no_note(tmp_path: Path, home: Path) -> None:
    import json
    import zipfile

    settings = load_settings(home=home, now_override="2026-07-15")
    archive = tmp_path / "downloads" / "claude-export.zip"
    archive.parent.mkdir()

    def write(conversations: list) -> None:
        with zipfile.ZipFile(archive, "w") as zipped:
            zipped.writestr("conversations.json", json.dumps(conversations))
            zipped.writestr("users.json", "[]")

    chats = json.loads((EXPORTS / "claude" / "conversations.json").read_text())
    second = {**chats[0], "uuid": "second-chat", "name": "Kafka lag"}
    second["chat_messages"] = [
        {**chats[0]["chat_messages"][0], "text": "Why does consumer lag grow at night?"}
    ]
    write([chats[0], second])
    first = service.ingest(settings, archive)
    assert (first.notes, first.inserted) == (2, 2)

    archive.write_bytes(b"PK\x03\x04 cut off while downloading")
    broken = service.ingest(settings, archive)
    assert broken.deleted == 0 and broken.home_notes == 2
    assert any("cannot read the archive" in reason for _, _, reason in broken.skipped)

    write([chats[0]])  # the second chat deleted in the app
    fixed = service.ingest(settings, archive)
    assert (fixed.notes, fixed.deleted, fixed.home_notes) == (1, 1, 1)

    # The folder the archive was downloaded to, ingested in turn: its own notes join, the
    # archive's stay (a folder's ingest reads no archive in it), even once the download is
    # cleared away.
    (archive.parent / "todo.md").write_text("# Todo\nRenew the TLS certificate.\n")
    folder = service.ingest(settings, archive.parent)
    assert (folder.inserted, folder.deleted, folder.home_notes) == (1, 0, 2)
    archive.unlink()
    (archive.parent / "todo.md").write_text("# Todo\nRenew the TLS certificate today.\n")
    gone = service.ingest(settings, archive.parent)
    assert (gone.changed, gone.deleted, gone.home_notes) == (1, 0, 2)
