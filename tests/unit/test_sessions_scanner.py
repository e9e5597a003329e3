"""Scanner: layouts of the three tools, roots only, stable keys, detection, speed-safe walk."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from selene_dag.config import SessionRoot, parse_session_roots
from selene_dag.sessions.scanner import is_under_roots, scan_report, scan_roots, session_key
from tests.support.sessions import FIXTURES, REAL_CLAUDE, REAL_CODEX, REAL_GEMINI

KEY = re.compile(r"^(claude|codex|gemini)-[0-9a-f]{12}$")


def _layout(tmp_path: Path) -> dict[str, Path]:
    claude = tmp_path / "claude" / "-Users-me-proj"
    (claude / "abc" / "subagents").mkdir(parents=True)
    shutil.copy(REAL_CLAUDE, claude / "abc.jsonl")
    shutil.copy(
        FIXTURES / "claude" / "claude-code-log_ef958aa1_subagents_agent-a4ca7529859c158c2.jsonl",
        claude / "abc" / "subagents" / "agent-1.jsonl",
    )
    shutil.copy(
        FIXTURES
        / "claude"
        / "claude-code-log_ef958aa1_subagents_agent-a4ca7529859c158c2.meta.json",
        claude / "abc" / "subagents" / "agent-1.meta.json",
    )
    codex = tmp_path / "codex" / "2025" / "11" / "17"
    codex.mkdir(parents=True)
    shutil.copy(REAL_CODEX, codex / REAL_CODEX.name)
    gemini = tmp_path / "gemini" / "9da8b3" / "chats"
    gemini.mkdir(parents=True)
    shutil.copy(REAL_GEMINI, gemini / "session-2026-04-23T12-52-0ab84937.jsonl")
    (gemini.parent / "logs.json").write_text("[]")
    return {
        "claude": tmp_path / "claude",
        "codex": tmp_path / "codex",
        "gemini": tmp_path / "gemini",
    }


def test_scan_finds_each_platform_layout(tmp_path: Path) -> None:
    roots = _layout(tmp_path)
    found = scan_roots([SessionRoot(path, platform) for platform, path in roots.items()])
    names = sorted((f.platform, Path(f.path).name) for f in found)
    assert names == [
        ("claude", "abc.jsonl"),
        ("claude", "agent-1.jsonl"),
        ("codex", REAL_CODEX.name),
        ("gemini", "session-2026-04-23T12-52-0ab84937.jsonl"),
    ]
    for f in found:
        assert KEY.match(f.session_key)
        assert f.size == os.path.getsize(f.path)
        assert f.session_key == session_key(f.platform, f.path)


def test_detect_roots_use_content(tmp_path: Path) -> None:
    roots = _layout(tmp_path)
    (tmp_path / "codex" / "notes.json").write_text('{"hello": "world"}')
    found = scan_roots([SessionRoot(path, None) for path in roots.values()])
    assert sorted(f.platform for f in found) == ["claude", "claude", "codex", "gemini"]


def test_keys_are_stable_and_newest_first(tmp_path: Path) -> None:
    roots = _layout(tmp_path)
    spec = [SessionRoot(path, platform) for platform, path in roots.items()]
    first = scan_roots(spec)
    target = Path(first[-1].path)
    os.utime(target, (2_000_000_000, 2_000_000_000))
    second = scan_roots(spec)
    assert {f.path: f.session_key for f in first} == {f.path: f.session_key for f in second}
    assert second[0].path == str(target)


def test_nothing_outside_roots_is_read(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    shutil.copy(REAL_CLAUDE, outside / "secret.jsonl")
    root = tmp_path / "root"
    root.mkdir()
    (root / "link.jsonl").symlink_to(outside / "secret.jsonl")
    (root / "dirlink").symlink_to(outside, target_is_directory=True)
    shutil.copy(REAL_CLAUDE, root / "own.jsonl")
    found = scan_roots([SessionRoot(root, "claude")])
    assert [Path(f.path).name for f in found] == ["own.jsonl"]
    assert not is_under_roots(outside / "secret.jsonl", [SessionRoot(root, "claude")])
    assert is_under_roots(root / "own.jsonl", [SessionRoot(root, "claude")])


def test_missing_root_is_skipped(tmp_path: Path) -> None:
    assert scan_roots([SessionRoot(tmp_path / "nope", "claude")]) == []


def test_session_roots_setting_format(tmp_path: Path) -> None:
    roots = parse_session_roots(f"claude={tmp_path}{os.pathsep}{tmp_path / 'x'}")
    assert [(r.platform, r.path) for r in roots] == [("claude", tmp_path), (None, tmp_path / "x")]


def test_thousand_files_scan_without_parsing(tmp_path: Path) -> None:
    root = tmp_path / "many"
    line = REAL_CLAUDE.read_text(encoding="utf-8").splitlines()[5] + "\n"
    for i in range(1000):
        d = root / f"p{i % 20}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"s{i}.jsonl").write_text(line)
    found = scan_roots([SessionRoot(root, None)])
    assert len(found) == 1000
    assert len({f.session_key for f in found}) == 1000


def test_a_bare_root_detects_a_file_whose_header_line_is_long(tmp_path: Path) -> None:
    # Recent Codex headers carry long base instructions: the first record alone is far
    # longer than a byte window, and the file was skipped silently (issue #18 item 1).
    import json

    lines = REAL_CODEX.read_text(encoding="utf-8").splitlines()
    header = json.loads(lines[0])
    header.setdefault("payload", {})["base_instructions"] = {"text": "Be careful. " * 4000}
    root = tmp_path / "sessions"
    root.mkdir()
    target = root / "rollout-long-header.jsonl"
    target.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n", encoding="utf-8")
    assert len(json.dumps(header)) > 40_000
    found = scan_roots([SessionRoot(root, None)])
    assert [(Path(f.path).name, f.platform) for f in found] == [(target.name, "codex")]


def test_explicit_root_takes_any_name_whose_content_is_that_platform(tmp_path: Path) -> None:
    # Issue #18 item 1: under gemini=DIR a file not named session-* and not in chats/ was
    # skipped silently; now its content decides, and what is left out says why.
    root = tmp_path / "gemini"
    sub = root / "9da8b3" / "chats" / "parent-session-id"
    sub.mkdir(parents=True)
    shutil.copy(REAL_GEMINI, sub / "sub-agent-7.jsonl")
    other = root / "exported"
    other.mkdir()
    shutil.copy(REAL_GEMINI, other / "my-chat.jsonl")
    shutil.copy(REAL_CODEX, other / "stray-codex.jsonl")
    (other / "empty.json").write_text("")
    # A transcript its agent has created but not written to yet is left for later.
    (sub.parent / "session-2026-04-20T08-00-abcd1234.json").write_text("")
    (root / "9da8b3" / "logs.json").write_text("[]")
    # /chat save's checkpoint: a copy of the conversation the session file records.
    (root / "9da8b3" / "checkpoint-mytag.json").write_text(
        '[{"role": "user", "parts": [{"text": "hello"}]}]'
    )
    result = scan_report([SessionRoot(root, "gemini")])
    assert sorted((Path(f.path).name, f.platform) for f in result.files) == [
        ("my-chat.jsonl", "gemini"),
        ("sub-agent-7.jsonl", "gemini"),
    ]
    reasons = {Path(s.path).name: s.reason for s in result.skipped}
    assert reasons == {
        "empty.json": "empty file",
        "session-2026-04-20T08-00-abcd1234.json": "empty file",
        "logs.json": "not a Claude Code, Codex CLI or Gemini CLI transcript",
        "checkpoint-mytag.json": "a Gemini CLI /chat save checkpoint (its session file holds "
        "the conversation)",
        "stray-codex.jsonl": "content is a Codex CLI transcript, under a gemini= root",
    }
    assert scan_roots([SessionRoot(root, "gemini")]) == result.files


def test_bare_root_lists_what_it_cannot_read_as_a_transcript(tmp_path: Path) -> None:
    root = tmp_path / "mixed"
    root.mkdir()
    shutil.copy(REAL_CLAUDE, root / "a.jsonl")
    (root / "config.json").write_text('{"theme": "dark"}')
    (root / "garbage.jsonl").write_bytes(b"\x00\x01 not json\n")
    result = scan_report([SessionRoot(root, None)])
    assert [(Path(f.path).name, f.platform) for f in result.files] == [("a.jsonl", "claude")]
    assert [(Path(s.path).name, s.root) for s in result.skipped] == [
        ("config.json", str(root)),
        ("garbage.jsonl", str(root)),
    ]


def test_a_path_that_is_not_utf8_is_skipped_with_its_reason(tmp_path: Path) -> None:
    # Claude names a project folder after the working directory, whose bytes may not be
    # UTF-8. The database stores a session by its path as UTF-8 text, and an escaped
    # path could not be opened again: the file is listed as skipped, saying why, and the
    # scan (the sensor's, distill's) goes on instead of stopping at it.
    root = tmp_path / "claude"
    odd = os.path.join(os.fsencode(root), b"-home-caf\xe9")
    os.makedirs(odd)
    shutil.copy(REAL_CLAUDE, os.path.join(odd, b"abc.jsonl"))
    shutil.copy(REAL_CLAUDE, root / "good.jsonl")
    result = scan_report([SessionRoot(root, "claude")])
    assert [Path(f.path).name for f in result.files] == ["good.jsonl"]
    assert [(s.path, s.reason) for s in result.skipped] == [
        (f"{root}/-home-caf\\xe9/abc.jsonl", "its path is not UTF-8: rename it to distill it")
    ]
    assert KEY.match(session_key("claude", os.fsdecode(odd)))


def test_a_file_taken_by_its_name_under_another_tools_root_is_not_read_as_its_own(
    tmp_path: Path,
) -> None:
    # A Codex rollout dropped under claude=: the scan takes *.jsonl there unread, and the
    # Claude parser made an empty session of it (118 events, no chunk, an empty file).
    from selene_dag.errors import UsageError
    from selene_dag.sessions.scanner import platform_mismatch
    from selene_dag.sessions.steps import normalize_events

    root = tmp_path / "claude"
    root.mkdir()
    shutil.copy(REAL_CODEX, root / "codexfile.jsonl")
    shutil.copy(REAL_CLAUDE, root / "mine.jsonl")
    taken = {Path(f.path).name: f for f in scan_report([SessionRoot(root, "claude")]).files}
    assert platform_mismatch(taken["mine.jsonl"].path, "claude") is None
    reason = "content is a Codex CLI transcript, under a claude= root"
    assert platform_mismatch(taken["codexfile.jsonl"].path, "claude") == reason
    with pytest.raises(UsageError, match=reason):
        normalize_events(taken["codexfile.jsonl"])
    assert normalize_events(taken["mine.jsonl"])[0]


def test_bytes_or_another_programs_json_under_a_root_are_no_session(tmp_path: Path) -> None:
    # Random bytes and {"hello": "world"} named *.jsonl under claude= became "successful"
    # sessions of 0 and 1 events, each with a resumable distilled file of nothing.
    from selene_dag.errors import UsageError
    from selene_dag.sessions.steps import normalize_events

    root = tmp_path / "claude"
    root.mkdir()
    (root / "noise.jsonl").write_bytes(bytes(range(256)) * 16)
    (root / "other.jsonl").write_text('{"hello": "world"}\n')
    (root / "quiet.jsonl").write_text(
        # The tool's own record with nothing said in it yet: a session, not a stranger.
        '{"type":"summary","summary":"x","leafUuid":"0"}\n'
        '{"type":"user","uuid":"1","sessionId":"s","timestamp":"2026-01-01T00:00:00Z",'
        '"message":{"role":"user","content":""}}\n'
    )
    taken = {Path(f.path).name: f for f in scan_report([SessionRoot(root, "claude")]).files}
    with pytest.raises(UsageError, match=r"not a Claude Code transcript: .*lines unreadable"):
        normalize_events(taken["noise.jsonl"])
    with pytest.raises(UsageError, match="no Claude Code record in it; it is not read"):
        normalize_events(taken["other.jsonl"])
    normalize_events(taken["quiet.jsonl"])


def test_a_session_is_named_by_its_files_relative_path_too(tmp_path, monkeypatch) -> None:
    # `distill run r/…/x.jsonl` worked; `distill report` and `seed` found no session by it.
    from selene_dag.sessions import naming

    folder = tmp_path / "r" / "proj"
    folder.mkdir(parents=True)
    path = folder / "abc.jsonl"
    path.write_text("{}\n")
    monkeypatch.chdir(tmp_path)
    assert naming.names("r/proj/abc.jsonl", "claude-1", str(path), None)
    assert naming.names("./r/proj/abc.jsonl", "claude-1", str(path), None)
    assert not naming.names("r/other/abc.jsonl", "claude-1", str(path), None)


def test_claude_codes_compaction_sub_agent_is_no_session(tmp_path: Path) -> None:
    # Its prompt is Claude Code's own and its answer the summary the session holds already:
    # it was distilled and cited as a session of its own.
    session = tmp_path / "claude" / "-home-dev-app" / "5b1f0d3e-0000-4000-8000-000000000001"
    (session / "subagents").mkdir(parents=True)
    shutil.copy(REAL_CLAUDE, session.parent / f"{session.name}.jsonl")
    shutil.copy(REAL_CLAUDE, session / "subagents" / "agent-acompact-7f3e2a.jsonl")
    shutil.copy(REAL_CLAUDE, session / "subagents" / "agent-a1b2c3.jsonl")
    found = scan_report([SessionRoot(tmp_path / "claude", "claude")])
    assert sorted(Path(f.path).name for f in found.files) == [
        f"{session.name}.jsonl",
        "agent-a1b2c3.jsonl",
    ]
    [skipped] = found.skipped
    assert skipped.path.endswith("agent-acompact-7f3e2a.jsonl")
    assert skipped.reason.startswith("Claude Code's compaction of a session")
