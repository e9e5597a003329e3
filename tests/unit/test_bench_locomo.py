"""The LoCoMo converter of the recall bench: both shapes its data comes in (the repository's
zip of per-conversation files, the single list of later releases), one note per session,
and only the questions exact-string recall can count."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from bench import locomo

CONVERSATION = {
    "speaker_a": "Caroline",
    "speaker_b": "Melanie",
    "session_1_date_time": "1:56 pm on 8 May, 2023",
    "session_1": [
        {"speaker": "Caroline", "dia_id": "D1:1", "text": "I went to a support group yesterday."},
        {
            "speaker": "Melanie",
            "dia_id": "D1:2",
            "text": "Look at this!",
            "blip_caption": "a photo of a sunrise over a lake",
        },
    ],
    "session_2_date_time": "10:37 am on 27 June, 2023",
    "session_2": [
        {"speaker": "Caroline", "dia_id": "D2:1", "text": "I researched adoption agencies."}
    ],
    "session_3_date_time": "",
    "session_3": [],
    "qa": [
        {"question": "What did Caroline research?", "answer": "Adoption agencies", "category": 1},
        {"question": "When did she go?", "answer": "7 May 2023", "category": 2},
        {"question": "What did Melanie adopt?", "adversarial_answer": "a dog", "category": 5},
        {"question": "What did Melanie photograph?", "answer": "a sunrise", "category": 4},
        {"question": "What did she say about cats?", "answer": "support group", "category": 5},
    ],
}


def _zip(tmp_path: Path) -> Path:
    path = tmp_path / "locomo10.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("data/multimodal_dialog/locomo10_v2/26.json", json.dumps(CONVERSATION))
        archive.writestr("data/README.txt", "not a conversation")
    return path


def test_zip_of_files_gives_one_note_per_session_and_countable_questions(tmp_path: Path) -> None:
    convs = locomo.read_conversations(_zip(tmp_path))
    assert [c.conv_id for c in convs] == ["26"]
    notes = locomo.to_notes(convs)
    # The empty third session is no note.
    assert [n["id"] for n in notes] == ["locomo-26/session-1", "locomo-26/session-2"]
    first = notes[0]
    assert first["title"] == "Caroline and Melanie, session 1 (1:56 pm on 8 May, 2023)"
    assert first["created_at"] == "2023-05-08T13:56:00"
    assert first["content"].splitlines() == [
        "Caroline: I went to a support group yesterday.",
        "Melanie: Look at this! [shares a photo: a photo of a sunrise over a lake]",
    ]
    questions = locomo.to_questions(convs)
    # The computed date and both adversarial questions are left out.
    assert questions == [
        {
            "question": "What did Caroline research?",
            "must_contain": ["Adoption agencies"],
            "source": "note:locomo-26/session-1",
        },
        {
            "question": "What did Melanie photograph?",
            "must_contain": ["a sunrise"],
            "source": "note:locomo-26/session-1",
        },
    ]


def test_single_list_release_and_write(tmp_path: Path) -> None:
    conversation = {k: v for k, v in CONVERSATION.items() if k != "qa"}
    data = [{"sample_id": "conv-30", "conversation": conversation, "qa": CONVERSATION["qa"]}]
    path = tmp_path / "locomo10.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    notes_path, questions_path, notes, questions = locomo.write(path, tmp_path / "out")
    assert (notes, questions) == (2, 2)
    rows = [json.loads(line) for line in notes_path.read_text(encoding="utf-8").splitlines()]
    assert rows[1]["id"] == "locomo-30/session-2"
    assert rows[1]["updated_at"] == "2023-06-27T10:37:00"
    asked = [json.loads(line) for line in questions_path.read_text(encoding="utf-8").splitlines()]
    assert asked[0]["source"] == "note:locomo-30/session-1"


def test_missing_or_foreign_data_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no LoCoMo data"):
        locomo.read_conversations(tmp_path / "absent.zip")
    other = tmp_path / "other.json"
    other.write_text(json.dumps([{"title": "a note"}]), encoding="utf-8")
    with pytest.raises(ValueError, match="no LoCoMo conversation"):
        locomo.read_conversations(other)
