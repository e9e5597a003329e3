"""Prompt templates: versions, rendering, hashes."""

from __future__ import annotations

from pathlib import Path

import pytest

from selene_dag.llm import prompts
from selene_dag.llm.prompts import load_prompt, prompt_hash, prompt_names

EXPECTED = {
    "answer",
    "assess_chunk",
    "compaction_summary",
    "detect_threads",
    "note_analysis",
    "summarize",
    "thread_digest",
}


def test_every_task_has_a_versioned_template() -> None:
    assert set(prompt_names()) >= EXPECTED
    for name in EXPECTED:
        template = load_prompt(name)
        assert template.version >= 1
        assert template.placeholders, name
        assert len(template.sha256) == 64
        assert "version:" not in template.text.splitlines()[0]


def test_seed_wording_is_ported() -> None:
    assert "Focus on the core insight, decision, or question" in load_prompt("note_analysis").text
    digest = load_prompt("thread_digest").text
    assert "3-5 sentences" in digest and "present tense" in digest
    assess = load_prompt("assess_chunk").text
    for criterion in ("Relevance", "Signal density", "Reusability"):
        assert criterion in assess
    assert "What thread of thinking connects" in load_prompt("detect_threads").text or (
        "What threads of thinking connect" in load_prompt("detect_threads").text
    )


def test_render_fills_placeholders_once_and_keeps_braces_in_values() -> None:
    template = load_prompt("thread_digest")
    tricky = "uses {{why}} and {'json': 1}"
    text = template.render(name="N", why="W", essences=tricky)
    assert tricky in text
    assert "{{" not in text.replace(tricky, "")


def test_render_rejects_missing_and_unknown_values() -> None:
    template = load_prompt("thread_digest")
    with pytest.raises(ValueError, match="missing"):
        template.render(name="N", why="W")
    with pytest.raises(ValueError, match="unexpected"):
        template.render(name="N", why="W", essences="e", extra="x")


def test_bad_names() -> None:
    with pytest.raises(ValueError):
        load_prompt("../etc/passwd")
    with pytest.raises(FileNotFoundError, match="shipped"):
        load_prompt("no_such_prompt")
    with pytest.raises(ValueError):
        prompt_hash()


def test_prompt_hash_tracks_exactly_the_edited_template(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "prompts"
    folder.mkdir()
    (folder / "alpha.md").write_text("version: 1\n\nHello {{x}}\n", encoding="utf-8")
    (folder / "beta.md").write_text("version: 1\n\nBye {{y}}\n", encoding="utf-8")
    monkeypatch.setattr(prompts, "assets_dir", lambda: tmp_path)
    load_prompt.cache_clear()
    try:
        alpha, beta, both = prompt_hash("alpha"), prompt_hash("beta"), prompt_hash("alpha", "beta")
        assert prompt_hash("beta", "alpha") == both
        (folder / "alpha.md").write_text("version: 1\n\nHello there {{x}}\n", encoding="utf-8")
        load_prompt.cache_clear()
        assert prompt_hash("alpha") != alpha
        assert prompt_hash("beta") == beta
        assert prompt_hash("alpha", "beta") != both
        (folder / "bad.md").write_text("no version line\n", encoding="utf-8")
        with pytest.raises(ValueError, match="version"):
            load_prompt("bad")
    finally:
        load_prompt.cache_clear()
