"""The `selene-dag` command as a user runs it: a real process, real files, exit codes."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from selene_dag.context import count_tokens

EXE = Path(sys.executable).parent / "selene-dag"
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "sessions"
ASSETS = Path(__file__).resolve().parents[2] / "assets"


def run(*args, env=None, cwd=None, timeout=300):
    full_env = {k: v for k, v in os.environ.items()}
    full_env.update(env or {})
    return subprocess.run(
        [str(EXE), *args], capture_output=True, text=True, env=full_env, cwd=cwd, timeout=timeout
    )


def assert_one_line_error(proc, *fragments):
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = [line for line in proc.stderr.strip().splitlines() if line.strip()]
    text = " ".join(lines)
    assert "Traceback" not in proc.stderr
    assert text.startswith("error:"), proc.stderr
    for fragment in fragments:
        assert fragment in text, proc.stderr


def test_help_on_every_command():
    for command in (
        [],
        ["demo"],
        ["ingest"],
        ["context"],
        ["compact"],
        ["health"],
        ["cache"],
        ["distill"],
        ["dev"],
    ):
        proc = run(*command, "--help")
        assert proc.returncode == 0, (command, proc.stderr)
        assert "Usage" in proc.stdout


@pytest.mark.parametrize(
    ("env", "args", "fragments"),
    [
        ({"SELENE_LLM": "gpt"}, ["health"], ["SELENE_LLM", "extractive, ollama"]),
        ({"SELENE_NOW": "soon"}, ["context"], ["SELENE_NOW"]),
        ({}, ["health"], ["no database", "selene-dag ingest"]),
        # Asked of sessions, the way to a database for them is named too.
        (
            {},
            ["ask", "what failed", "--budget", "200", "--sources", "sessions"],
            ["no database", "selene-dag distill run --all"],
        ),
        ({}, ["ingest", "/no/such/folder"], ["does not exist"]),
        # A path holding what rich reads as markup (it raised from inside rich).
        ({}, ["ingest", "/no/[/bold]x"], ["/no/[/bold]x does not exist"]),
        ({}, ["ingest", "/no/n:fire:"], ["/no/n:fire: does not exist"]),  # no emoji code
        # A path the system refuses to look at (a folder this user may not enter, a name
        # too long): a traceback before.
        ({}, ["ingest", "/tmp/" + "x" * 300 + "/n.md"], ["cannot be read (File name too long)"]),
        ({}, ["context", "--budget", "0"], ["--budget"]),
    ],
)
def test_user_errors_are_one_line_with_exit_1(env, args, fragments):
    assert_one_line_error(run(*args, env=env), *fragments)


def test_ingest_then_context_and_cache(tmp_path):
    notes = tmp_path / "notes"
    notes.mkdir()
    for i in range(12):
        (notes / f"n{i}.md").write_text(
            f"---\ntitle: Note {i}\ncreated: 2026-0{1 + i % 6}-0{1 + i % 9}\ntags: [demo]\n---\n"
            f"Idea number {i} is about caching query plans in DuckDB. It saves {i} milliseconds per call.\n"
        )
    (notes / "broken.md").write_bytes(b"caf\xe9 is not utf-8")
    env = {"SELENE_NOW": "2026-07-01"}
    proc = run("ingest", str(notes), env=env)
    assert proc.returncode == 0, proc.stderr
    # The file that is not UTF-8 keeps its note (read as Windows-1252); the problem is named.
    assert "13 notes (13 new" in proc.stderr and "1 problem)" in proc.stderr
    assert "note ids: notes/<path in the folder>" in proc.stderr  # the folder's name
    assert f"input {notes / 'broken.md'}: note kept, not UTF-8: read as Windows-1252" in proc.stderr
    health = json.loads(run("health", "--json", env=env).stdout)
    assert health["skippedInputs"]["count"] == 1
    assert health["skippedInputs"]["newest"][0]["file"] == str(notes / "broken.md")
    assert health["noteFolders"] == [
        {"key": "notes", "path": str(notes), "notes": 13, "exists": True}
    ]
    assert f"notes folder notes: {notes}, 13 notes" in run("health", env=env).stdout
    proc = run("context", "--budget", "300", "--model", "gpt-4", env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() and count_tokens(proc.stdout.rstrip("\n"), "gpt-4") <= 300
    assert "/ 300 gpt-4 tokens" in proc.stderr
    assert all(f"Note {i}" in proc.stdout for i in range(12))
    tiny = run("context", "--budget", "3", env=env)
    assert tiny.returncode == 0 and tiny.stdout == ""  # not even a line break
    assert "(excluded 13)" in tiny.stderr and "holds no note" in tiny.stderr
    again = run("ingest", str(notes), env=env)
    assert "(0 new, 0 changed" in again.stderr
    stats = run("cache", "stats", env=env)
    assert (
        stats.returncode == 0 and "llm_cache is empty" in stats.stdout
    )  # extractive calls are not cached
    assert run("cache", "clear", env=env).stdout.strip() == "deleted 0 cached calls"
    # A filter that matches nothing says what the cache holds (a typo said no more).
    typo = run("cache", "clear", "--engine", "olama", env=env)
    assert typo.returncode == 0 and "the cache holds no call" in typo.stderr


def test_every_reading_command_takes_the_home_as_ingest_does(tmp_path):
    # `context --home X` answered "No such option: --home": only ingest, demo, forget and
    # dev took it, and a home was named by SELENE_HOME alone for the rest.
    notes, home = tmp_path / "notes", tmp_path / "elsewhere"
    notes.mkdir()
    (notes / "plans.md").write_text("# Plans\n\nShip the retry budget on Friday.\n")
    env = {"SELENE_HOME": str(tmp_path / "not-this-one"), "SELENE_NOW": "2026-07-01"}
    assert run("ingest", str(notes), "--home", str(home), env=env).returncode == 0
    context = run("context", "--budget", "200", "--home", str(home), env=env)
    assert context.returncode == 0 and "Plans" in context.stdout, context.stderr
    health = json.loads(run("health", "--json", "--home", str(home), env=env).stdout)
    assert health["essences"]["total"] == 1
    asked = run("ask", "retry budget", "--budget", "200", "--home", str(home), env=env)
    assert "Ship the retry budget" in asked.stdout, asked.stderr
    shown = run("show", "note notes/plans.md lines 3", "--home", str(home), env=env)
    assert shown.stdout.strip().endswith("Ship the retry budget on Friday."), shown.stderr
    assert not (tmp_path / "not-this-one").exists()


def test_compact_reports_each_step_and_fits_the_window(tmp_path):
    messages = [{"role": "system", "content": "You are a careful assistant."}]
    for i in range(60):
        messages.append(
            {
                "role": "user",
                "content": "ok"
                if i % 3 == 0
                else f"Question {i}: how do I tune DuckDB memory for step {i}?",
            }
        )
        messages.append(
            {
                "role": "assistant",
                "content": f"Answer {i}: set memory_limit and threads; " + "details " * 40,
            }
        )
    path = tmp_path / "messages.json"
    path.write_text(json.dumps(messages))
    out = tmp_path / "out.json"
    proc = run("compact", str(path), "--window", "3000", "--model", "mistral:7b", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "strip chitchat" in proc.stderr and "resolved by: " in proc.stderr
    assert "P1" not in proc.stderr  # the chain's codes are for the JSON answer
    compacted = json.loads(out.read_text())["messages"]
    assert len(compacted) < len(messages)
    total = sum(count_tokens(m["content"], "mistral:7b") for m in compacted)
    assert total <= 3000
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    assert_one_line_error(run("compact", str(bad), "--window", "100"), "invalid JSON")
    short = tmp_path / "short.json"
    short.write_text(json.dumps(messages[:3]))
    quiet = run("compact", str(short), "--window", "100000")
    assert quiet.returncode == 0 and json.loads(quiet.stdout)["messages"] == messages[:3]
    assert "nothing to compact: " in quiet.stderr and "step" not in quiet.stderr
    assert_one_line_error(
        run("compact", str(path), "--window", "3"),
        "a window of 3 tokens holds no message of this conversation: give a larger window",
    )


def test_compact_takes_a_session_file_and_a_jsonl_file(tmp_path):
    session = FIXTURES / "claude" / "claude-code-log_7acd37a8-2745-4b58-a8a9-46164b22ad9e.jsonl"
    out = tmp_path / "new" / "folder" / "compacted.json"  # its folder is created
    proc = run("compact", str(session), "--window", "4000", "--model", "gpt-4", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    compacted = json.loads(out.read_text())["messages"]
    assert compacted and {m["role"] for m in compacted} <= {"system", "user", "assistant"}
    assert sum(count_tokens(m["content"], "gpt-4") + 4 for m in compacted) <= 4000
    assert "resolved by: pruning" in proc.stderr
    chat = tmp_path / "chat.jsonl"
    chat.write_text(
        '{"role": "user", "content": [{"type": "text", "text": "Why is the cache cold?"}]}\n'
        "oops\n"
        '{"role": "assistant", "content": "It was evicted at deploy."}\n'
    )
    proc = run("compact", str(chat), "--window", "1000")
    assert proc.returncode == 0, proc.stderr
    # Nothing to compact: the message goes out as it came, its content as parts.
    assert json.loads(proc.stdout)["messages"][0]["content"] == [
        {"type": "text", "text": "Why is the cache cold?"}
    ]
    assert f"note: {chat}: line 2 skipped: not JSON" in proc.stderr
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    assert_one_line_error(
        run("compact", str(chat), "--window", "1000", "-o", str(blocker / "x.json")),
        f"{blocker} is a file, not a folder",
    )


def test_a_session_that_kept_no_chunk_is_named_with_the_setting_that_decides(tmp_path):
    # Every chunk of this real Codex session scores under the default minimum consensus.
    root = tmp_path / "codex"
    root.mkdir()
    (root / "small.jsonl").write_bytes(
        (FIXTURES / "codex" / "agent-sessions_small.jsonl").read_bytes()
    )
    env = {"SELENE_SESSION_ROOTS": f"codex={root}"}
    assert_one_line_error(
        run("distill", "run", "--all", "nope", env=env),
        "--all runs every session file; name sessions (nope) or give --all",
    )
    ran = run("distill", "run", "--all", env=env)
    assert ran.returncode == 0 and "1 session kept no chunk" in ran.stderr
    # The search index follows the distillation, as it follows an ingest: the first ask
    # after a large one waited for it.
    assert "search index updated in" in ran.stdout, ran.stdout
    asked = run("ask", "agent sessions", "--budget", "300", env=env)
    assert asked.returncode == 0 and "refreshed first" not in asked.stderr, asked.stderr
    report = run("distill", "report", env={**env, "COLUMNS": "120"})
    assert report.returncode == 0
    assert "1 session kept no chunk: none reached consensus 5;" in report.stderr
    (row,) = json.loads(run("distill", "report", "--json", env=env).stdout)
    assert row["distilled_chunks"] == 0 and row["below_minimum_chunks"] == row["chunks"] > 0
    assert f"{row['chunks']}, 0 kept" in report.stdout
    # A row names its project's folder and the day it started (a key alone told a user
    # nothing of which session it was).
    assert row["project"] and row["started"][:4].isdigit()
    assert f" {Path(row['project']).name} " in report.stdout
    assert f" {row['started'][:10]} " in report.stdout
    assert "SELENE_DISTILL_MIN_CONSENSUS" in report.stderr
    # A seed of no chunk is no seed: said, and no file written.
    seeds = tmp_path / "seeds"
    assert_one_line_error(
        run("distill", "seed", "claude", "--out-dir", str(seeds), env=env),
        "no scored session kept a chunk: every chunk scores under 5 (SELENE_DISTILL_MIN_CONSENSUS)",
    )
    assert not seeds.exists() or not any(seeds.iterdir())

    lowered = {**env, "SELENE_DISTILL_MIN_CONSENSUS": "2.5"}
    ran = run("distill", "run", "--all", env=lowered)
    assert ran.returncode == 0 and "1 session file distilled" in ran.stdout, ran.stdout
    assert "kept no chunk" not in ran.stderr
    after = run("distill", "report", "--json", env=lowered)
    (row,) = json.loads(after.stdout)
    assert row["min_consensus"] == 2.5 and row["distilled_chunks"] > 0
    assert (
        row["distilled_chunks"] + row["dropped_chunks"] + row["below_minimum_chunks"]
        == row["chunks"]
    )
    assert "kept no chunk" not in run("distill", "report", env=lowered).stderr
    assert_one_line_error(
        run(
            "distill", "seed", "claude", "--out-dir", str(seeds), "--max-tokens", "60", env=lowered
        ),
        "fits in 60 tokens with the session's opening message: give a larger --max-tokens",
    )
    assert not seeds.exists() or not any(seeds.iterdir())  # nothing written, not even its folder
    seeded = run("distill", "seed", "claude", "--out-dir", str(seeds), env=lowered)
    assert seeded.returncode == 0, seeded.stderr
    (written,) = seeds.iterdir()
    # What to do with the file is said (it was only in the docs).
    assert f"`claude --resume {written.stem}`" in seeded.stderr


def test_sessions_stay_found_after_another_process_folds_the_log(tmp_path):
    # A process that opens the store after `distill run` (another command, or a user's
    # DuckDB shell reading the tables) folds the write-ahead log the run left into the
    # file; DuckDB wrote plain indexes corrupt then (duckdb#23788): `show` said a session
    # "holds no events", the report lost its means, and storing a grown session failed.
    root = tmp_path / "gemini" / "chats"
    root.mkdir(parents=True)
    name = "VibeCodingTracker_gemini.jsonl"
    (root / name).write_bytes(
        (ASSETS / "demo" / "sessions" / "gemini" / "chats" / name).read_bytes()
    )
    env = {"SELENE_SESSION_ROOTS": f"gemini={tmp_path / 'gemini'}"}
    # The library's distill_run (the CLI's command goes on to refresh the search index,
    # whose run ends by folding the log itself).
    distill = (
        "from selene_dag import service; from selene_dag.config import load_settings; "
        "service.distill_run(load_settings(), all_files=True)"
    )
    subprocess.run(
        [sys.executable, "-c", distill], check=True, timeout=300, env={**os.environ, **env}
    )
    db = Path(os.environ["SELENE_HOME"]) / "selene.duckdb"
    assert Path(f"{db}.wal").is_file()  # the run's rows wait in the log
    fold = "import duckdb, sys; duckdb.connect(sys.argv[1]).close()"  # DuckDB's own shutdown
    subprocess.run([sys.executable, "-c", fold, str(db)], check=True, timeout=120)
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# A note\n\nwritten after the sessions\n")
    assert run("ingest", str(notes), env=env).returncode == 0
    row = json.loads(run("distill", "report", "--json", env=env).stdout)[0]
    assert row["importance_avg"] is not None and row["consensus_avg"] is not None
    key = row["session_key"]
    shown = run("show", f"{key} events 3-4", env=env)
    assert shown.returncode == 0 and shown.stdout.startswith(f"[{key} events 3-4]"), shown.stderr
    with (root / name).open("a") as grown:  # a grown transcript is stored again
        grown.write((root / name).read_text().splitlines()[-1] + "\n")
    again = run("distill", "run", key, env=env)
    assert again.returncode == 0, again.stdout + again.stderr


def test_distill_scan_run_report_on_real_sessions(tmp_path):
    fixtures = Path(__file__).resolve().parents[1] / "fixtures" / "sessions"
    root = tmp_path / "codex"
    root.mkdir()
    name = "rollout-2025-11-17T15-30-28-019a93b9-f380-7600-98ff-940e6b99603c.jsonl"
    (root / name).write_bytes((fixtures / "codex" / name).read_bytes())
    (root / "settings.json").write_text('{"model": "x"}')
    env = {"SELENE_SESSION_ROOTS": f"codex={root}"}
    scan = run("distill", "scan", env=env)
    assert scan.returncode == 0 and "new" in scan.stdout
    assert "1 file skipped" in scan.stdout and "not a Claude Code" in scan.stdout
    ran = run("distill", "run", "--all", env=env)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "yes" in ran.stdout and "True" not in ran.stdout  # the ok column, in words
    report = run("distill", "report", env=env)
    assert report.returncode == 0 and "codex" in report.stdout
    assert "its best chunks" not in report.stdout  # listed for one session only
    key = json.loads(run("distill", "report", "--json", env=env).stdout)[0]["session_key"]
    one = run("distill", "report", key, env=env)
    assert "its best chunks" in one.stdout and f"{key} events" in one.stdout
    by_name = run("distill", "report", name, env=env)  # the file name, as `distill run` takes
    assert by_name.returncode == 0 and f"{key} events" in by_name.stdout
    status = run("distill", "status", env=env)
    assert "last file parsed at" in status.stdout
    seeded = run("distill", "seed", "claude", "--question", "which files changed", env=env)
    assert seeded.returncode == 0, seeded.stderr
    assert Path(json.loads(seeded.stdout)["path"]).is_file()
    assert "done" in run("distill", "scan", env=env).stdout
    again = run("distill", "run", "--all", env=env)
    assert "0 session files distilled" in again.stdout
    assert "1 file under SELENE_SESSION_ROOTS left out" in again.stdout
    assert_one_line_error(run("distill", "run", "nope", env=env), "no session file matches")
    # No session named and no --all: the most recent file runs (it is done: it runs again).
    latest = run("distill", "run", env=env)
    assert latest.returncode == 0 and "the most recent session file" in latest.stderr
    assert "1 session file distilled" in latest.stdout and "codex-" in latest.stdout
    missing = {"SELENE_SESSION_ROOTS": f"claude={tmp_path / 'none'}"}
    assert_one_line_error(run("distill", "run", env=missing), "no session file under")
    nothing = run("distill", "run", "--all", env=missing)
    assert f"no session file under SELENE_SESSION_ROOTS: claude={tmp_path / 'none'} (missing)" in (
        nothing.stdout
    )
    # With no file at all, none is "up to date" either.
    assert "0 session files distilled, 0 failed (" in nothing.stdout
    # Two folders joined with a comma, as many tools take them: scan says which separator.
    joined = {"SELENE_SESSION_ROOTS": f"{tmp_path / 'none'},{root}"}
    listing = run("distill", "scan", env=joined).stdout
    assert "no session files under SELENE_SESSION_ROOTS" in listing and "(missing)" in listing
    assert f"separate several folders with '{os.pathsep}'" in listing


@pytest.mark.slow
def test_daily_backfill_through_dagster_cli(tmp_path):
    """A partition range from `dagster asset materialize` runs as one run (single-run policy)."""
    notes = tmp_path / "notes"
    notes.mkdir()
    for day in ("2024-01-01", "2024-01-02", "2024-01-02", "2024-01-04"):
        index = len(list(notes.iterdir()))
        (notes / f"n{index}.md").write_text(
            f"---\ncreated: {day}\n---\n# Note {index}\nThe body of note {index} is here."
        )
    env = {
        "SELENE_NOW": "2024-01-05",
        "SELENE_NOTES_DIR": str(notes),
        "SELENE_DAILY_START": "2024-01-01",
    }
    assert run("ingest", str(notes), env=env).returncode == 0
    dagster = Path(sys.executable).parent / "dagster"
    full_env = {**os.environ, **env, "DAGSTER_HOME": str(tmp_path / "dagster")}
    (tmp_path / "dagster").mkdir()
    proc = subprocess.run(
        [
            str(dagster),
            "asset",
            "materialize",
            "-m",
            "selene_dag.definitions",
            "--select",
            "daily_summaries",
            "--partition-range",
            "2024-01-01...2024-01-01",
        ],
        capture_output=True,
        text=True,
        env=full_env,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    from selene_dag.config import load_settings
    from selene_dag.store import open_store

    with open_store(load_settings({**os.environ, **env}).db_path) as conn:
        rows = conn.execute(
            "SELECT day::VARCHAR, note_count FROM daily_summaries ORDER BY day"
        ).fetchall()
    assert rows == [("2024-01-01", 1), ("2024-01-02", 2), ("2024-01-04", 1)]


@pytest.mark.slow
def test_demo_materializes_everything_then_reruns_as_a_no_op(tmp_path):
    home = tmp_path / "demo"
    first = run("demo", "--home", str(home), cwd=tmp_path)
    assert first.returncode == 0, first.stderr[-2000:]
    assert "demo: 577 notes materialized" in first.stdout
    for table in (
        "processed_notes",
        "threads",
        "daily_summaries",
        "distilled_sessions",
        "search_docs",
    ):
        assert table in first.stderr
    # Dagster's verdict after the first run stands: the second run does not load Dagster.
    second = run("demo", "--home", str(home), env={"PYTHONPROFILEIMPORTTIME": "1"}, cwd=tmp_path)
    assert second.returncode == 0
    assert "nothing changed since the last run" in second.stderr
    assert "Dagster's verdict after the last run stands" in second.stderr
    assert "demo: 577 notes up to date" in second.stdout
    imported = {line.rsplit("|", 1)[-1].strip() for line in second.stderr.splitlines()}
    assert "selene_dag.service" in imported and "dagster" not in imported
    # Anything recorded in the instance since (here an observation from elsewhere) makes
    # the next run ask Dagster, which finds nothing stale and remembers that again.
    import dagster as dg

    from selene_dag.config import load_settings
    from selene_dag.defs.runs import instance_for

    instance_for(load_settings(home=home)).report_runless_asset_event(
        dg.AssetObservation(asset_key=dg.AssetKey("elsewhere"))
    )
    third = run("demo", "--home", str(home), cwd=tmp_path)
    assert third.returncode == 0 and "Dagster reports nothing stale" in third.stderr
    fourth = run("demo", "--home", str(home), cwd=tmp_path)
    assert "Dagster's verdict after the last run stands" in fourth.stderr
    ctx = run("context", "--budget", "4000", env={"SELENE_HOME": str(home)}, cwd=tmp_path)
    assert ctx.returncode == 0 and count_tokens(ctx.stdout.rstrip("\n"), "mistral:7b") <= 4000
    # Later commands on the home see the demo's day (its now file), not the calendar's:
    # the tiers the demo printed stay as they were (no run brought them up to today).
    assert (home / "now").read_text().startswith("2026-07-15")
    assert "3 threads; 577 notes (skeleton 189, excluded 388)" in ctx.stderr
    # Commands on the demo's home read the bundled corpus, not the user's session folders
    # (`dev` on it watched ~/.claude/projects) nor a notes folder the home never had.
    from selene_dag.paths import bundled_notes

    pinned = load_settings({}, home=home)
    assert pinned.notes_dir == bundled_notes()
    assert {root.platform for root in pinned.session_roots} == {"claude", "codex", "gemini"}
    assert all("demo" in str(root.path) for root in pinned.session_roots)
    assert load_settings({"SELENE_SESSION_ROOTS": str(tmp_path)}, home=home).session_roots[
        0
    ].path == Path(tmp_path)


def test_the_demo_refuses_a_home_of_real_notes_and_the_hint_gives_it_its_own(tmp_path):
    # "no database: … or `selene-dag demo` first" sent a newcomer's SELENE_HOME to the demo,
    # which mixed 577 notes into it and pinned its day.
    home = tmp_path / "home"
    hint = run("health", "--home", str(home))
    assert_one_line_error(hint, "selene-dag demo --home .selene-demo")
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# Boiler\n\nThe boiler is serviced every May.\n")
    assert run("ingest", str(notes), "--home", str(home)).returncode == 0
    refused = run("demo", "--home", str(home))
    assert_one_line_error(
        refused, "outside the demo's corpus", "selene-dag demo --home .selene-demo"
    )
    assert not (home / "now").exists() and not (home / "demo").exists()


def test_an_unchanged_ingest_decided_once_by_dagster_is_then_decided_without_it(tmp_path):
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# Boiler\n\nThe boiler is serviced every May.\n")
    home = tmp_path / "home"
    runs = [
        run("ingest", str(notes), "--home", str(home), env={"PYTHONPROFILEIMPORTTIME": "1"})
        for _ in range(3)
    ]
    assert all(r.returncode == 0 for r in runs), runs[-1].stderr[-2000:]
    imported = [{line.rsplit("|", 1)[-1].strip() for line in r.stderr.splitlines()} for r in runs]
    assert ["dagster" in names for names in imported] == [True, True, False]
    assert "1 note (1 new" in runs[0].stderr
    assert "no step ran" in runs[1].stderr and "no step ran" in runs[2].stderr
    (notes / "a.md").write_text("# Boiler\n\nThe boiler is serviced every June.\n")
    edited = run("ingest", str(notes), "--home", str(home))
    assert edited.returncode == 0 and "1 changed" in edited.stderr


def test_distill_run_all_with_nothing_new_is_decided_without_dagster_once_dagster_said_so(
    tmp_path,
):
    import shutil

    roots = tmp_path / "codex"
    shutil.copytree(FIXTURES / "codex", roots)
    env = {
        "SELENE_HOME": str(tmp_path / "home"),
        "SELENE_SESSION_ROOTS": f"codex={roots}",
        "PYTHONPROFILEIMPORTTIME": "1",
    }
    runs = [run("distill", "run", "--all", env=env) for _ in range(3)]
    assert all(r.returncode == 0 for r in runs), runs[-1].stderr[-2000:]
    imported = [{line.rsplit("|", 1)[-1].strip() for line in r.stderr.splitlines()} for r in runs]
    # The run asks Dagster once more after it ran: the next unchanged run needs no Dagster.
    assert ["dagster" in names for names in imported] == [True, False, False]
    # A fresh home's run took every file: no "every other file up to date".
    assert "3 session files distilled, 0 failed (" in runs[0].stdout
    assert all("0 session files distilled" in r.stdout for r in runs[1:])
    assert all("every other file up to date" in r.stdout for r in runs[1:])
    new = roots / "rollout-2025-11-17T15-30-28-019a93b9-f380-7600-98ff-940e6b99603c.jsonl"
    with new.open("a") as handle:
        handle.write("\n")  # the file grew: the verdict no longer stands
    grown = run("distill", "run", "--all", env=env)
    assert grown.returncode == 0 and "1 session file distilled" in grown.stdout
    assert "every other file up to date" in grown.stdout


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["context", "--budget", "abc"], "--budget"),
        (["ask", "docker"], "Missing option '--budget'"),
        (["no-such-command"], "No such command"),
    ],
)
def test_usage_errors_are_one_line_with_exit_2(args, fragment):
    proc = run(*args)
    assert proc.returncode == 2, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:") and fragment in lines[0]
    assert "Traceback" not in proc.stderr and "╭" not in proc.stderr


def test_version_and_unknown_model_warning_in_one_line(tmp_path):
    proc = run("--version")
    assert proc.returncode == 0 and proc.stdout.startswith("selene-dag ")
    messages = tmp_path / "m.json"
    messages.write_text(json.dumps([{"role": "user", "content": "hello there"}]))
    proc = run("compact", str(messages), "--window", "1000", "--model", "llama-foo")
    assert proc.returncode == 0, proc.stderr
    warnings = [line for line in proc.stderr.splitlines() if "llama-foo" in line]
    assert len(warnings) == 1 and warnings[0].startswith("warning: unknown model")
    assert "warnings.warn" not in proc.stderr


def test_ask_on_a_missing_home_fails_and_creates_nothing(tmp_path):
    home = tmp_path / "nowhere"
    proc = run("ask", "docker", "--budget", "100", env={"SELENE_HOME": str(home)})
    assert_one_line_error(proc, "no database", "selene-dag ingest")
    assert not home.exists()


def test_debug_prints_the_traceback_of_a_user_error(tmp_path):
    proc = run("--debug", "health", env={"SELENE_HOME": str(tmp_path / "none")})
    assert proc.returncode == 1
    assert "Traceback" in proc.stderr and "no database" in proc.stderr


def test_distill_report_and_status_fit_80_columns_and_speak_json(tmp_path):
    roots = os.pathsep.join(
        f"{p}={FIXTURES / p}" for p in ("claude", "codex") if (FIXTURES / p).is_dir()
    )
    env = {"SELENE_SESSION_ROOTS": roots, "SELENE_HOME": str(tmp_path / "home"), "COLUMNS": "80"}
    ran = run("distill", "run", "--all", env=env)
    assert ran.returncode == 0 and "1 session kept no chunk" in ran.stderr
    report = run("distill", "report", env=env)
    assert report.returncode == 0
    table = [line for line in report.stdout.splitlines() if line.startswith(("┃", "│"))]
    assert table and all(len(line) <= 80 for line in table)
    # The keys whole (the project and the day left out at 80 columns).
    assert "project" not in table[0] and "claude-" in report.stdout
    rows = json.loads(run("distill", "report", "--json", env=env).stdout)
    assert rows and {"session_key", "distilled_tokens", "budget"} <= set(rows[0])
    status = json.loads(run("distill", "status", "--json", env=env).stdout)
    assert status["session_files"] == len(rows) == status["done"]


def test_a_home_that_cannot_be_created_is_one_line(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# A\n\ntext")
    env = {"SELENE_HOME": str(blocker / "home")}
    for args in (["ingest", str(notes)], ["distill", "run", "--all"]):
        assert_one_line_error(
            run(*args, env=env), f"cannot create {blocker / 'home'}", "SELENE_HOME"
        )


def test_serve_on_a_port_in_use_is_one_line(tmp_path):
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = run("serve", "--port", str(port), timeout=60)
    assert_one_line_error(proc, f"port {port} on 127.0.0.1 is in use", "--port")
    assert "selene-dag API on" not in proc.stderr  # it never claimed to be serving
    assert_one_line_error(run("serve", "--host", "no-such-host.invalid"), "--host")
    # dev too: Dagster's UI failed to bind while its daemon ran on, with no UI.
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = run("dev", "--port", str(port), "--home", str(tmp_path / "h"), timeout=60)
    assert_one_line_error(proc, f"port {port} on 127.0.0.1 is in use", "--port")
    assert "Dagster UI on" not in proc.stderr
    for bad in ("0", "65536"):  # 0 took a free port no line named
        assert_one_line_error(run("dev", "--port", bad), "--port must be within 1..65535")


def test_a_second_dev_on_one_home_is_one_line(tmp_path):
    # It started a second daemon on the first one's instance (Dagster supports one).
    import fcntl
    import socket

    dagster_home = tmp_path / "h" / "dagster"
    dagster_home.mkdir(parents=True)
    with (dagster_home / ".selene-dev.lock").open("a+") as held:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        held.write("4242")
        held.flush()
        with socket.socket() as free:
            free.bind(("127.0.0.1", 0))
            port = free.getsockname()[1]
        proc = run("dev", "--port", str(port), "--home", str(tmp_path / "h"), timeout=60)
    assert_one_line_error(proc, "another selene-dag dev runs on this home (process 4242", "--home")
    assert "Dagster UI on" not in proc.stderr


@pytest.mark.parametrize("limit_kb", [20, 100, 1500])
def test_a_disk_that_takes_no_more_is_one_line_and_a_rerun_finishes(tmp_path, limit_kb):
    # A full disk gave two chained tracebacks when Dagster's SQLite storage hit it (20 KB
    # here), or DuckDB's outside a step (100 KB), and DuckDB's error class inside one (1.5
    # MB); a file-size limit fails writes the same way.
    import resource

    home = tmp_path / "home"
    notes = ASSETS / "demo" / "notes" / "til.jsonl"

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit_kb * 1024, limit_kb * 1024))

    proc = subprocess.run(
        [str(EXE), "ingest", str(notes), "--home", str(home)],
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=limited,
    )
    assert_one_line_error(proc, "cannot write", "run the command again")
    assert "Exception" not in proc.stderr

    again = run("ingest", str(notes), "--home", str(home))
    assert again.returncode == 0, again.stderr
    health = json.loads(run("health", "--home", str(home), "--format", "json").stdout)
    assert health["essences"]["total"] == 577


def test_the_api_answers_a_disk_that_takes_no_more_with_507(tmp_path):
    # The CLI said what to do; the API answered a 500 "Internal Server Error" in plain text.
    import resource
    import socket
    import time

    import httpx

    home, folder = tmp_path / "home", tmp_path / "notes"
    folder.mkdir()
    for i in range(3):
        (folder / f"n{i}.md").write_text(f"# Note {i}\n\nA note about the harbour crane {i}.\n")
    assert run("ingest", str(folder), "--home", str(home)).returncode == 0

    def serve(limit: int | None) -> tuple[httpx.Response, str]:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]

        def limited() -> None:
            if limit is not None:  # nothing written past this many bytes of any file
                resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

        proc = subprocess.Popen(
            [str(EXE), "serve", "--port", str(port), "--home", str(home)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=limited,
        )
        try:
            deadline = time.monotonic() + 60
            while True:
                try:
                    httpx.get(f"http://127.0.0.1:{port}/openapi.json", timeout=5)
                    break
                except httpx.TransportError:
                    assert time.monotonic() < deadline and proc.poll() is None
                    time.sleep(0.1)
            body = {"question": "harbour crane", "budget": 300}
            answer = httpx.post(f"http://127.0.0.1:{port}/ask", json=body, timeout=60)
        finally:
            proc.terminate()
            _, stderr = proc.communicate(timeout=30)
        return answer, stderr

    answer, _ = serve(1)  # the access stamps cannot be written
    assert answer.status_code == 507, answer.text
    detail = answer.json()["detail"]
    assert detail.startswith("cannot write ") and "send the request again" in detail
    answer, _ = serve(None)
    assert answer.status_code == 200 and "harbour crane" in answer.json()["text"]


@pytest.mark.parametrize(
    ("signal_name", "to_group"), [("SIGINT", False), ("SIGINT", True), ("SIGTERM", False)]
)
def test_a_command_stopped_mid_run_says_so_and_a_rerun_finishes(tmp_path, signal_name, to_group):
    # Ctrl-C (or a SIGTERM from a service manager) was reported as a failure naming
    # Dagster's internal interrupt error, every session file "failed", exit code 1. A
    # terminal's Ctrl-C reaches the whole process group: Dagster's watcher of its output
    # mirror printed a traceback each, and the run went on to its end.
    import os
    import signal
    import time

    home = tmp_path / "home"
    notes = ASSETS / "demo" / "notes" / "til.jsonl"
    proc = subprocess.Popen(
        [str(EXE), "ingest", str(notes), "--home", str(home)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # As from a terminal: a test runner's worker may ignore SIGINT, and its child with it.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        start_new_session=to_group,  # a process group of its own, as a terminal's job
    )
    runs = home / "dagster" / "history" / "runs"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not any(runs.glob("*-*.db")):
        time.sleep(0.02)  # until a run has started
    if to_group:
        time.sleep(1.5)  # into a step, its output mirrored (when Dagster mirrors it)
        os.killpg(proc.pid, getattr(signal, signal_name))
    else:
        proc.send_signal(getattr(signal, signal_name))
    _, stderr = proc.communicate(timeout=300)

    assert proc.returncode == 130, stderr
    assert stderr.strip() == (
        "interrupted: what was finished is kept; run the command again to finish"
    )
    again = run("ingest", str(notes), "--home", str(home))
    assert again.returncode == 0, again.stderr
    health = json.loads(run("health", "--home", str(home), "--format", "json").stdout)
    assert health["essences"]["total"] == 577


def test_a_server_stopped_by_sigterm_ends_as_the_signal_says(tmp_path):
    # `serve` runs until stopped: a service manager's SIGTERM is its normal end, not an
    # interrupted job to run again.
    import signal
    import time
    import urllib.request

    from tests.support.fake_ollama import free_port

    port = free_port()
    proc = subprocess.Popen(
        [str(EXE), "serve", "--port", str(port), "--home", str(tmp_path / "home")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/openapi.json", timeout=1)
            break
        except OSError:
            time.sleep(0.1)
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=60)

    assert proc.returncode == -signal.SIGTERM, stderr
    assert "interrupted" not in stderr


def test_home_may_come_before_the_command(tmp_path):
    # "Every command takes --home": `selene-dag --home DIR ingest …` was "No such option".
    from selene_dag.cli import home_after_command, home_after_subcommand

    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# Kayak\nRenew the permit in May.\n")
    home = tmp_path / "home"
    proc = run("--home", str(home), "ingest", str(notes))
    assert proc.returncode == 0, proc.stderr
    proc = run(f"--home={home}", "ask", "kayak permit", "--budget", "200")
    assert proc.returncode == 0 and "Renew the permit" in proc.stdout, proc.stderr
    assert home_after_command(["--debug", "--home", "H", "distill", "run", "--", "-x"]) == [
        "--debug",
        "distill",
        "run",
        "--home",
        "H",
        "--",
        "-x",
    ]
    assert home_after_command(["--home", "H"]) == []
    # Between a group and its command (`distill --home H status`: "No such option").
    assert home_after_subcommand(["distill", "--home", "H", "status", "--json"]) == [
        "distill",
        "status",
        "--home",
        "H",
        "--json",
    ]
    assert home_after_subcommand(["distill", "--home", "H"]) == ["distill"]
    # A group's command after `--` ran on the default home, --home dropped.
    assert home_after_command(["--home", "H", "distill", "--", "run"]) == [
        "distill",
        "--home",
        "H",
        "--",
        "run",
    ]
    assert home_after_command(["--home", "H", "--help"]) == ["--help"]
    assert home_after_command(["--home", "H1", "health", "--home", "H2"]) == [
        "health",
        "--home",
        "H2",
    ]
    assert run("--home", str(home), "--help").returncode == 0


@pytest.mark.parametrize("args", [("health", "--json"), ("health",)], ids=["json", "table"])
def test_a_reader_that_left_gives_the_pipe_code_and_no_line(tmp_path, args):
    # `selene-dag health --json | (exec 0<&-; ...)`: exit 1, a user error's code, with
    # nothing on stderr; a script could not tell it from a failure.
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# Kayak\nRenew the permit in May.\n")
    assert run("ingest", str(notes), "--home", str(tmp_path / "h")).returncode == 0
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        proc = subprocess.run(
            [str(EXE), *args, "--home", str(tmp_path / "h")],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
        )
    finally:
        os.close(write_end)
    assert proc.returncode == 141, proc.stderr
    assert proc.stderr == ""


@pytest.mark.parametrize("args", [("--help",), ("--version",), ("distill", "--help")])
def test_help_and_version_to_a_reader_that_left_give_the_pipe_code(args):
    # The help (rich) and the version (click) answered a closed pipe with exit code 1, a
    # user error's, as a library's own exit; a command's output gave 141.
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        proc = subprocess.run(
            [str(EXE), *args], stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=120
        )
    finally:
        os.close(write_end)
    assert proc.returncode == 141, proc.stderr
    assert proc.stderr == ""


def test_a_closed_stdout_is_no_traceback() -> None:
    # `selene-dag --help >&-`: an AttributeError at import ('NoneType' has no 'isatty').
    proc = subprocess.run(
        [str(EXE), "--help"],
        stderr=subprocess.PIPE,
        text=True,
        timeout=120,
        preexec_fn=lambda: os.close(1),
    )
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr


@pytest.mark.parametrize("args", [(), ("distill",), ("--home", "H", "cache")])
def test_a_command_group_alone_prints_its_help_once(args):
    # The help was printed twice (Typer printed it, then the entry point again), and
    # `--home H distill` was "No such option: --home".
    proc = run(*args)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("Usage:") == 1, proc.stdout
    assert proc.stderr == ""


def test_an_output_that_is_not_utf8_gets_the_pack_not_a_traceback(tmp_path):
    # PYTHONIOENCODING=latin-1 (or a Latin-1 locale): '“' ended `ask` in a traceback.
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# Kayak\nThe “permit” is renewed in May → call the 日本 office.\n")
    home = str(tmp_path / "h")
    assert run("ingest", str(notes), "--home", home).returncode == 0
    proc = run(
        "ask",
        "kayak permit",
        "--budget",
        "200",
        "--home",
        home,
        env={"PYTHONIOENCODING": "latin-1"},
    )
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr and "?permit? is renewed in May" in proc.stdout


def test_eval_of_a_shipped_set_outside_the_checkout_says_where_it_is(tmp_path):
    # The README's `eval assets/eval/questions.jsonl`, run by a pip-installed user in a
    # folder of their own: "does not exist", with no word of where the package keeps it.
    proc = run("eval", "assets/eval/questions.jsonl", "--home", str(tmp_path / "h"), cwd=tmp_path)
    assert_one_line_error(proc, "assets/eval/questions.jsonl does not exist", "shipped with")
    assert str(ASSETS / "eval" / "questions.jsonl") in proc.stderr


def test_compact_and_eval_read_stdin_and_pipes(tmp_path):
    # An editor plugin or a pipeline: `compact -` was "- does not exist", `/dev/stdin` and
    # `<(…)` "not a file".
    conversation = '[{"role": "user", "content": "hi there, please help"}, ' + (
        '{"role": "assistant", "content": "sure"}]'
    )
    home = str(tmp_path / "h")
    piped = subprocess.run(
        [str(EXE), "compact", "-", "--window", "1000", "--home", home],
        input=conversation,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert piped.returncode == 0, piped.stderr
    assert [m["content"] for m in json.loads(piped.stdout)["messages"]] == [
        "hi there, please help",
        "sure",
    ]
    transcript = ASSETS.parent / "tests" / "fixtures" / "sessions" / "claude"
    session = sorted(transcript.glob("*.jsonl"))[0]
    with session.open("rb") as source:
        fed = subprocess.run(
            [str(EXE), "compact", "/dev/stdin", "--window", "2000", "--home", home],
            stdin=source,
            capture_output=True,
            timeout=120,
        )
    assert fed.returncode == 0, fed.stderr
    assert json.loads(fed.stdout)["messages"]
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# Kayak\nRenew the permit in May.\n")
    assert run("ingest", str(notes), "--home", home).returncode == 0
    asked = subprocess.run(
        [str(EXE), "eval", "-", "--budget", "200", "--format", "json", "--home", home],
        input='{"question": "when is the kayak permit renewed", "must_contain": ["May"]}\n',
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert asked.returncode == 0, asked.stderr
    assert json.loads(asked.stdout)["overall"]["ask"] == 1.0


def test_ingest_of_a_pipe_is_one_line_and_makes_no_home(tmp_path):
    # `ingest <(cat notes.jsonl)`: "notes folder /proc/…/fd/pipe:[…] does not exist",
    # from inside a run, and an empty home left behind.
    read_end, write_end = os.pipe()
    os.close(write_end)
    try:
        proc = subprocess.run(
            [str(EXE), "ingest", f"/dev/fd/{read_end}", "--home", str(tmp_path / "h")],
            capture_output=True,
            text=True,
            timeout=120,
            pass_fds=(read_end,),
        )
    finally:
        os.close(read_end)
    assert_one_line_error(proc, "is a pipe or a device, not a file or a folder")
    assert not (tmp_path / "h").exists()
