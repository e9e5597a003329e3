"""Offline threads group a vault as its owner filed it: by a note's topic, else its first
tag, else the folder it sits in (unless that folder holds most of the vault), else its
analysed theme. A vault's project folder made one thread per note (each note's own theme),
so no project thread ever got a digest and its notes aged apart. Real files, a real ingest
through Dagster."""

from __future__ import annotations

from pathlib import Path

from selene_dag.store import open_store
from tests.support.ask import ingested_folder

PROJECT = {
    "larkspur-overview.md": "# Overview\n\nThe checkout service runs on PostgreSQL 14.\n",
    "larkspur-pg16.md": "# Upgrade\n\nWe moved the database from PostgreSQL 14 to 16.\n",
    "larkspur-valkey.md": "# Cache\n\nRedis 7.0 was replaced with Valkey 8.0 in April.\n",
}
TAGGED = {
    f"lab-{i}.md": f"---\ntags: [homelab, note{i}]\n---\n# Lab {i}\n\nThe {word} is in rack {i}.\n"
    for i, word in enumerate(["switch", "router", "nas"], start=1)
}
FILED = {
    "topic.md": "---\ntopic: Cooking\ntags: [homelab]\n---\n# Brine\n\nSalt at 5 percent.\n",
    # PARA: the folder a note sits in, not the one above it.
    "1 Projects/Alpha/plan.md": "# Plan\n\nShip the alpha on Monday.\n",
    "1 Projects/Alpha/risks.md": "# Risks\n\nThe vendor may be late.\n",
    "1 Projects/Beta/plan.md": "# Beta plan\n\nBeta waits for the design review.\n",
}


def test_a_vaults_folders_and_tags_are_its_threads(tmp_path: Path) -> None:
    notes = {**TAGGED, **FILED, **{f"larkspur/{n}": text for n, text in PROJECT.items()}}
    for folder in ("larkspur", "1 Projects/Alpha", "1 Projects/Beta"):
        (tmp_path / "notes" / folder).mkdir(parents=True)
    settings = ingested_folder(tmp_path, notes, exist_ok=True)
    with open_store(settings.db_path) as conn:
        members = conn.execute(
            "SELECT t.name, list(tn.note_id ORDER BY tn.note_id) FROM threads t "
            "JOIN thread_notes tn ON tn.thread_id = t.id WHERE t.origin = 'topic' "
            "GROUP BY t.name ORDER BY t.name"
        ).fetchall()
    threads = {name: [i.split("/")[-1] for i in ids] for name, ids in members}
    assert threads["larkspur"] == sorted(PROJECT)  # the folder, whatever each note's theme
    assert threads["homelab"] == sorted(TAGGED)  # the first tag
    assert threads["cooking"] == ["topic.md"]  # the topic, before its tag
    assert threads["alpha"] == ["plan.md", "risks.md"] and threads["beta"] == ["plan.md"]


def test_a_folder_holding_most_of_the_vault_is_no_topic(tmp_path: Path) -> None:
    # Logseq keeps every page in pages/: one thread of the whole graph.
    notes = {
        f"pages/{name}.md": f"# {name}\n\n{text}\n"
        for name, text in {
            "carbonara": "Guanciale, pecorino and eggs, no cream.",
            "ragu": "Simmer the ragu for three hours.",
            "borrow-checker": "The borrow checker rejects two mutable references.",
            "lifetimes": "Lifetimes name how long a reference lives.",
        }.items()
    }
    notes["journals/2026_05_01.md"] = "# May 1\n\nCooked carbonara.\n"
    notes["journals/2026_05_02.md"] = "# May 2\n\nRead about lifetimes.\n"
    notes["recipes/2026-05-04 pesto.md"] = "# Pesto\n\nBasil and pine nuts.\n"
    notes["recipes/bread.md"] = "# Bread\n\nA long cold proof.\n"
    notes |= {f"pages/p{i}.md": f"# P{i}\n\nPage {i} of the graph.\n" for i in range(4)}
    for folder in ("pages", "journals", "recipes"):
        (tmp_path / "notes" / folder).mkdir(parents=True)
    settings = ingested_folder(tmp_path, notes, exist_ok=True)
    with open_store(settings.db_path) as conn:
        names = {r[0] for r in conn.execute("SELECT name FROM threads").fetchall()}
    assert "pages" not in names
    # Nor is a folder of daily notes mostly named by their day (Logseq's journals/): today's
    # note kept years of days in one active thread, every one of them at a high tier.
    assert "journals" not in names
    assert "recipes" in names  # half its notes dated: a topic still
