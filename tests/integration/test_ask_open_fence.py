"""A note whose last code block was never closed: in ask's and context's packs the block is
closed at the note's end (it turned every later item into code). Real files, a real ingest
through Dagster, the real index."""

from __future__ import annotations

import pytest

from selene_dag import service
from tests.support.ask import ingested_folder

NOTES = {
    "code.md": "# Code note\n\nTo compile the dangling build:\n\n```bash\nmake dangling\n",
    "other.md": "# Compile flags\n\nAnother note about the compile flags of the build.\n",
}


@pytest.fixture(scope="module")
def settings(tmp_path_factory: pytest.TempPathFactory):
    return ingested_folder(tmp_path_factory.mktemp("fence"), NOTES)


def _fences_close(text: str) -> bool:
    return sum(line.startswith("```") for line in text.splitlines()) % 2 == 0


@pytest.mark.parametrize("budget", [60, 400])
def test_ask_closes_a_notes_open_fence(settings, budget: int) -> None:
    pack = service.ask(settings, "compile the dangling build", budget)
    assert "make dangling" in pack.text and _fences_close(pack.text), pack.text
    assert pack.total_tokens <= budget


def test_context_closes_a_notes_open_fence(settings) -> None:
    pack = service.context(settings, 2000)
    assert "make dangling" in pack.text and _fences_close(pack.text), pack.text
    assert pack.total_tokens <= 2000
