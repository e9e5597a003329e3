"""CLI assessors through real executables written to a temporary PATH."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import pytest

from selene_dag.llm.cli_assessors import assess_with_clis, available_assessors

GOOD = """
import sys
prompt = sys.stdin.read()
assert "Signal density" in prompt, "the assessment prompt arrives on stdin"
print("Sure! Here it is:")
print('```json\\n{"relevance": 8, "signal_density": 6, "reusability": 7, '
      '"reason": "argv=%s"}\\n```' % " ".join(sys.argv[1:]))
"""
SLOW = """
import sys, time
sys.stdin.read()
time.sleep(30)
"""
GARBAGE = """
import sys
sys.stdin.read()
print("I would rate this chunk quite highly, maybe an eight.")
"""
COUNTING = """
import sys, pathlib
sys.stdin.read()
marker = pathlib.Path(__file__).with_suffix(".count")
n = int(marker.read_text()) if marker.exists() else 0
marker.write_text(str(n + 1))
if n == 0:
    print("temporary garbage")
else:
    print('{"relevance": 3, "signal_density": 4, "reusability": 5, "reason": "second try"}')
"""


def install(folder: Path, name: str, body: str) -> Path:
    path = folder / name
    path.write_text(f"#!{sys.executable}\n{body}", encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


@pytest.fixture
def bin_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "bin"
    folder.mkdir()
    monkeypatch.setenv("PATH", str(folder))  # only our fakes: real CLIs are never called
    return folder


def test_success_absent_and_order(bin_dir: Path) -> None:
    install(bin_dir, "claude", GOOD)
    install(bin_dir, "gemini", GOOD)
    assert available_assessors(["claude", "codex", "gemini"]) == ["claude", "gemini"]
    results = assess_with_clis(
        "Traceback in store.py; fixed by retrying", ["gemini", "codex", "claude"]
    )
    assert [r.name for r in results] == ["gemini", "codex", "claude"]
    gemini, codex, claude = results
    assert codex.status == "skipped" and "not found" in codex.error and not codex.ok
    for result in (gemini, claude):
        assert result.ok and result.attempts == 1
        assert (result.assessment.relevance, result.assessment.signal_density) == (8, 6)
    assert claude.assessment.reason == "argv=-p --no-session-persistence"
    assert gemini.assessment.reason.startswith("argv=-p Follow the instructions")


def test_timeout_is_an_error_entry_after_one_retry(bin_dir: Path) -> None:
    install(bin_dir, "codex", SLOW)
    [result] = assess_with_clis("chunk", ["codex"], timeout=0.5)
    assert result.status == "error" and result.attempts == 2
    assert "timed out after 0.5 s" in result.error


def test_garbage_output_is_reported_not_raised(bin_dir: Path) -> None:
    install(bin_dir, "claude", GARBAGE)
    install(bin_dir, "gemini", COUNTING)
    claude, gemini = assess_with_clis("chunk", ["claude", "gemini"])
    assert claude.status == "error" and "unusable assessment" in claude.error
    assert gemini.ok and gemini.attempts == 2 and gemini.assessment.reason == "second try"


def test_bad_arguments(bin_dir: Path) -> None:
    with pytest.raises(ValueError, match="unknown assessor"):
        available_assessors(["gpt"])
    with pytest.raises(TypeError):
        assess_with_clis("chunk", "claude")
    with pytest.raises(ValueError):
        assess_with_clis("", ["claude"])
    assert assess_with_clis("chunk", []) == []
    assert os.environ["PATH"] == str(bin_dir)
