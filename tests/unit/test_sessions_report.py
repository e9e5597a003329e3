"""The sessions use cases' user-facing errors: the SeleneError family, one line each, and
still ValueErrors for callers written against the older contract."""

from __future__ import annotations

import os

import pytest

from selene_dag.config import load_settings
from selene_dag.errors import NotFoundError, SeleneError, UsageError
from selene_dag.sessions.report import (
    distill_assess,
    distill_report,
    distill_seed,
    distill_status,
    resolve_sessions,
)
from selene_dag.sessions.steps import SessionNotFoundError, find_session_file


def test_errors_without_a_database(tmp_path) -> None:
    settings = load_settings()
    for call in (lambda: distill_assess(settings, "c"), lambda: distill_seed(settings, "codex")):
        with pytest.raises(SessionNotFoundError, match="no database yet") as caught:
            call()
        assert isinstance(caught.value, NotFoundError) and isinstance(caught.value, ValueError)
    with pytest.raises(UsageError, match="platform 'vim'"):
        distill_seed(settings, "vim")
    with pytest.raises(UsageError, match="no session file under SELENE_SESSION_ROOTS"):
        resolve_sessions(settings.replace(session_roots=str(tmp_path)), [])
    with pytest.raises(SeleneError, match="no session file matches 'x'"):
        resolve_sessions(settings, ["x"])
    # A transcript's path outside the roots: said so, with the setting that would read it.
    outside = tmp_path / "elsewhere" / "s.jsonl"
    outside.parent.mkdir()
    outside.write_text("{}\n")
    roots = settings.replace(session_roots=str(tmp_path / "roots"))
    with pytest.raises(SeleneError, match="a file outside SELENE_SESSION_ROOTS") as caught:
        resolve_sessions(roots, [str(outside)])
    assert str(outside.parent) in str(caught.value)
    # Inside a root but passed over by the scan: the scan's reason, not "outside".
    gemini = tmp_path / "roots" / "gemini"
    gemini.mkdir(parents=True)
    checkpoint = gemini / "checkpoint-tag.json"
    checkpoint.write_text('[{"role": "user", "parts": [{"text": "hi"}]}]')
    with pytest.raises(SeleneError, match="is not distilled: a Gemini CLI /chat save checkpoint"):
        resolve_sessions(settings.replace(session_roots=f"gemini={gemini}"), [str(checkpoint)])
    with pytest.raises(SessionNotFoundError, match="it was moved or deleted"):
        find_session_file(settings, "claude-000000000000")
    assert distill_report(settings) == []
    assert distill_status(settings) == {"files": 0, "new": 0, "grown": 0, "changed": 0, "done": 0}


def test_a_session_file_is_found_by_its_path_typed_from_anywhere(tmp_path, monkeypatch) -> None:
    import shutil

    from tests.support.sessions import REAL_CLAUDE

    root = tmp_path / "roots" / "claude"
    root.mkdir(parents=True)
    shutil.copy(REAL_CLAUDE, root / "a.jsonl")
    settings = load_settings().replace(session_roots=f"claude={root}")
    monkeypatch.chdir(tmp_path)
    (found,) = resolve_sessions(settings, ["roots/claude/a.jsonl"])  # "outside" before
    assert found.path.endswith("a.jsonl")


def test_a_session_is_named_by_its_whole_id_or_a_uuid_prefix_never_by_a_letter(
    tmp_path,
) -> None:
    # `distill run ""` (an unset shell variable) ran every session, and `distill run c` each
    # one whose file name ended in "c"; the 8-character uuid prefix named none.
    import shutil

    from tests.support.sessions import REAL_CLAUDE

    root = tmp_path / "claude"
    root.mkdir()
    names = [
        "ae9d8e74-1111-4c2c-9d9d-00000000000c.jsonl",
        "ae9d8e99-2222-4c2c-9d9d-00000000000c.jsonl",
        "notes-session-2.jsonl",
    ]
    for name in names:
        shutil.copy(REAL_CLAUDE, root / name)
    settings = load_settings().replace(session_roots=f"claude={root}")

    def found(ident: str) -> list[str]:
        return sorted(f.path.rsplit("/", 1)[1] for f in resolve_sessions(settings, [ident]))

    with pytest.raises(UsageError, match="empty session id"):
        resolve_sessions(settings, [""])
    for letter in ("c", "2", "-2"):
        with pytest.raises(SessionNotFoundError):
            resolve_sessions(settings, [letter])
    assert found("ae9d8e74") == [names[0]]  # a uuid's first characters
    assert found("AE9D8E74-1111") == [names[0]]
    with pytest.raises(UsageError, match="is part of the ids of 2 sessions"):
        resolve_sessions(settings, ["ae9d8e"])
    assert found("notes-session-2") == [names[2]]  # the stem
    assert found("2222-4c2c-9d9d-00000000000c") == [names[1]]  # the stem's end
    with pytest.raises(UsageError, match="is part of the ids of 2 sessions"):
        resolve_sessions(settings, ["00000000000c"])  # the end of two: it ran both
    assert found(names[1]) == [names[1]]


def test_a_folder_or_a_missing_path_typed_as_a_session_says_so(tmp_path) -> None:
    root = tmp_path / "claude"
    root.mkdir()
    settings = load_settings().replace(session_roots=f"claude={root}")
    with pytest.raises(SessionNotFoundError, match="is a folder: name a session file in it"):
        resolve_sessions(settings, [str(root)])
    with pytest.raises(SessionNotFoundError, match=r"gone\.jsonl does not exist"):
        resolve_sessions(settings, [str(root / "gone.jsonl")])


def test_a_root_that_is_a_file_is_not_called_missing(tmp_path) -> None:
    from selene_dag.service import describe_session_roots

    planted = tmp_path / "planted.json"
    planted.write_text("{}")
    settings = load_settings().replace(
        session_roots=f"claude={planted}{os.pathsep}codex={tmp_path / 'none'}"
    )
    assert describe_session_roots(settings) == (
        f"claude={planted} (a file, not a folder), codex={tmp_path / 'none'} (missing)"
    )
