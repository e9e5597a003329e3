"""Ask over an outline (Logseq, Workflowy, nested markdown lists): a cut excerpt keeps each
bullet's level, so a child reads as its parent's child. Real files, a real ingest through
Dagster, the real index."""

from __future__ import annotations

from selene_dag import service
from tests.support.ask import ingested_folder


def test_a_cut_outline_keeps_its_levels(tmp_path) -> None:
    page = "# Kafka Migration\n\n" + "".join(
        f"- Phase {p}\n\t- Move topic group {p} to the new cluster\n"
        f"\t\t- owner: team {p}, window Sunday 0{p % 10}:00\n\t- Verify consumer lag\n"
        for p in range(1, 30)
    )
    settings = ingested_folder(tmp_path, {"kafka.md": page})
    result = service.ask(settings, "who owns moving topic group 17 to the new cluster", 150)
    assert "\n\t- Move topic group" in result.text, result.text
    assert "\n\t\t- owner: team" in result.text, result.text
