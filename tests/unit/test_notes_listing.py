"""Inside ``walk_once`` a notes folder is walked once: every later listing of it in the
block (its note files, with or without registered folders left out, and its other files)
comes from that walk; outside the block each call walks the folder as it is now."""

from __future__ import annotations

from pathlib import Path

from selene_dag.notes.listing import note_files, other_files, walk_once


def _names(files: list[Path], root: Path) -> list[str]:
    return [f.relative_to(root).as_posix() for f in files]


def test_a_block_lists_the_folder_as_its_first_walk_found_it(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("# A\n", encoding="utf-8")
    with walk_once():
        assert _names(note_files(tmp_path), tmp_path) == ["a.md"]
        (tmp_path / "b.md").write_text("# B\n", encoding="utf-8")
        (tmp_path / "paper.pdf").write_bytes(b"%PDF-1.4")
        assert _names(note_files(tmp_path), tmp_path) == ["a.md"]
        assert other_files(tmp_path) == {}
    assert _names(note_files(tmp_path), tmp_path) == ["a.md", "b.md"]
    assert other_files(tmp_path) == {".pdf": 1}


def test_blocks_do_not_share_walks(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("# A\n", encoding="utf-8")
    with walk_once():
        note_files(tmp_path)
    (tmp_path / "b.md").write_text("# B\n", encoding="utf-8")
    with walk_once():
        assert _names(note_files(tmp_path), tmp_path) == ["a.md", "b.md"]


def test_registered_folders_are_left_out_of_a_shared_walk(tmp_path: Path) -> None:
    for name in ("top.md", "inner/deep/x.md", "inner/y.md", "inner2/z.md"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("# note\n", encoding="utf-8")
    skip = [tmp_path / "inner"]
    expected = ["inner2/z.md", "top.md"]
    assert _names(note_files(tmp_path, skip), tmp_path) == expected
    with walk_once():
        assert len(note_files(tmp_path)) == 4  # the walk enters every folder once
        assert _names(note_files(tmp_path, skip), tmp_path) == expected


def test_what_seleneignore_passes_over_is_reported_from_a_shared_walk(tmp_path: Path) -> None:
    (tmp_path / ".seleneignore").write_text("drafts/\n", encoding="utf-8")
    (tmp_path / "drafts").mkdir()
    (tmp_path / "drafts" / "d.md").write_text("# draft\n", encoding="utf-8")
    (tmp_path / "kept.md").write_text("# kept\n", encoding="utf-8")
    with walk_once():
        assert _names(note_files(tmp_path), tmp_path) == ["kept.md"]
        passed_over: list[str] = []
        assert other_files(tmp_path, passed_over) == {}
        assert passed_over == [str(tmp_path / "drafts")]


def test_an_obsidian_vaults_template_folders_are_no_notes(tmp_path: Path) -> None:
    # A template ("{{title}}", "<% tp.date.now() %>") was read as a note and shown in
    # context; the vault's settings name the folders of the core Templates plugin and of
    # Templater.
    vault = tmp_path / "vault"
    for rel in ("a.md", "templates/daily.md", "Meta/Tpl/weekly.md", "Meta/notes.md"):
        (vault / rel).parent.mkdir(parents=True, exist_ok=True)
        (vault / rel).write_text("# x\n", encoding="utf-8")
    (vault / ".obsidian/plugins/templater-obsidian").mkdir(parents=True)
    (vault / ".obsidian/templates.json").write_text('{"folder": "templates"}', encoding="utf-8")
    (vault / ".obsidian/plugins/templater-obsidian/data.json").write_text(
        '{"templates_folder": "Meta/Tpl"}', encoding="utf-8"
    )
    assert _names(note_files(tmp_path), tmp_path) == ["vault/Meta/notes.md", "vault/a.md"]
    # Settings that cannot be read name no folder.
    (vault / ".obsidian/templates.json").write_text("{not json", encoding="utf-8")
    assert "vault/templates/daily.md" in _names(note_files(vault.parent), tmp_path)
