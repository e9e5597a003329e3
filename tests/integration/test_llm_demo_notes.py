"""ExtractiveEngine over the whole bundled demo corpus."""

from __future__ import annotations

import json

from selene_dag.llm.extractive import ExtractiveEngine
from selene_dag.paths import assets_dir


def load_notes() -> list[dict]:
    path = assets_dir() / "demo" / "notes" / "til.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def test_every_demo_note_gets_a_clean_deterministic_essence() -> None:
    notes = load_notes()
    assert len(notes) >= 500
    first = [ExtractiveEngine().analyze_note(n["title"], n["content"]) for n in notes]
    # The batch form spreads the notes over worker processes: same analyses, same order.
    engine = ExtractiveEngine()
    second = list(
        engine.analyze_notes([(n["title"], n["content"]) for n in notes], workers=2, parallel_min=1)
    )
    assert first == second
    assert engine.calls_made == len(notes) and engine.calls_cached == 0
    for note, analysis in zip(notes, first, strict=True):
        assert len(analysis.essence) > 10, note["id"]
        assert len(analysis.essence) <= 360, note["id"]
        assert "```" not in analysis.essence and "](http" not in analysis.essence, note["id"]
        assert 1 <= len(analysis.concepts) <= 5, note["id"]
        assert analysis.primary_theme, note["id"]
    # essences are picked per note, not a constant: nearly all differ
    assert len({a.essence for a in first}) > 0.95 * len(notes)


def test_essences_made_in_worker_processes_equal_those_made_in_process(
    tmp_path, monkeypatch
) -> None:
    from datetime import UTC, datetime

    from selene_dag.llm.extractive import engine as extractive_engine
    from selene_dag.notes.processing import analyse_notes
    from selene_dag.store import connect

    now = datetime(2026, 7, 15, tzinfo=UTC)
    notes = load_notes()[:60]
    rows = {}
    for label, least in (("in process", 10**9), ("workers", 1)):
        monkeypatch.setattr(extractive_engine, "PARALLEL_MIN_NOTES", least)
        conn = connect(tmp_path / f"{label}.duckdb")
        for n in notes:
            conn.execute(
                "INSERT INTO notes (id, title, content, content_hash, created_at, updated_at, "
                "source) VALUES (?, ?, ?, md5(?), ?, ?, 'test')",
                [n["id"], n["title"], n["content"], n["content"], now, now],
            )
        stats = analyse_notes(conn, ExtractiveEngine(), now)
        assert stats.analysed == len(notes)
        rows[label] = conn.execute(
            "SELECT note_id, concepts, primary_theme, essence FROM processed_notes ORDER BY 1"
        ).fetchall()
        conn.close()
    assert len(rows["workers"]) == len(notes)
    assert rows["workers"] == rows["in process"]


def test_a_huge_note_is_analysed_on_its_beginning() -> None:
    from selene_dag.llm.extractive.essence import ANALYSIS_MAX_CHARS

    notes = load_notes()
    head = "\n\n".join(n["content"] for n in notes[:20])
    tail = "\n\n".join(n["content"] for n in notes[20:])
    while len(head) < ANALYSIS_MAX_CHARS - 20_000:
        head += "\n\n" + head[: ANALYSIS_MAX_CHARS // 4]
    filler = ("\n\n" + tail) * (1 + ANALYSIS_MAX_CHARS // max(1, len(tail)))
    huge = head + filler
    assert len(huge) > ANALYSIS_MAX_CHARS
    cut = huge[:ANALYSIS_MAX_CHARS]
    cut = cut[: cut.rfind("\n")]
    engine = ExtractiveEngine()
    assert engine.analyze_note("Big", huge) == engine.analyze_note("Big", cut)
    assert engine.analyze_note("Big", huge) != engine.analyze_note("Big", tail)


def test_a_script_without_a_main_guard_still_gets_every_essence(tmp_path) -> None:
    # Spawned workers re-run a script that has no `if __name__ == "__main__":` guard, and
    # die starting their own pool: the batch finishes in the calling process, warning once.
    import subprocess
    import sys

    script = tmp_path / "no_guard.py"
    script.write_text(
        "import json, logging\n"
        "from selene_dag.llm.extractive import ExtractiveEngine\n"
        "from selene_dag.paths import assets_dir\n"
        "logging.basicConfig()\n"
        "path = assets_dir() / 'demo' / 'notes' / 'til.jsonl'\n"
        "notes = [json.loads(l) for l in path.read_text(encoding='utf-8').splitlines()][:12]\n"
        "pairs = [(n['title'], n['content']) for n in notes]\n"
        "batch = list(ExtractiveEngine().analyze_notes(pairs, workers=2, parallel_min=1))\n"
        "alone = [ExtractiveEngine().analyze_note(t, c) for t, c in pairs]\n"
        "print('SAME' if batch == alone else 'DIFFERENT', len(batch))\n",
        encoding="utf-8",
    )
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=300, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "SAME 12"
    assert "needs an `if __name__" in done.stderr


def test_workers_end_when_the_process_that_started_them_is_killed(tmp_path) -> None:
    # `kill -9` of an ingest while its essences were being analysed left the pool's
    # workers waiting on their pipe for ever (about 100 MB each).
    import os
    import signal
    import subprocess
    import sys
    import time

    script = tmp_path / "slow_batch.py"
    script.write_text(
        "import sys\n"
        "from selene_dag.llm.extractive import ExtractiveEngine\n"
        "if __name__ == '__main__':\n"
        "    text = 'The boiler is serviced in May by the heating engineer. ' * 400\n"
        "    pairs = [(f'note {i}', text + str(i)) for i in range(20_000)]\n"
        "    for i, _ in enumerate(ExtractiveEngine().analyze_notes(pairs, workers=2, "
        "parallel_min=1)):\n"
        "        if i == 0:\n"
        "            print('started', flush=True)\n",
        encoding="utf-8",
    )
    proc = subprocess.Popen(
        [sys.executable, str(script)], stdout=subprocess.PIPE, text=True, cwd=tmp_path
    )

    def children() -> list[int]:
        listed = subprocess.run(
            ["pgrep", "-P", str(proc.pid)], capture_output=True, text=True
        ).stdout
        return [int(pid) for pid in listed.split()]

    def alive(pid: int) -> bool:
        try:
            with open(f"/proc/{pid}/status", encoding="utf-8") as status:
                return "\nState:\tZ" not in status.read()  # a zombie has ended
        except FileNotFoundError:
            return False

    workers: list[int] = []
    try:
        assert proc.stdout.readline().strip() == "started"
        workers = children()
        assert len(workers) >= 2  # the two workers (and the resource tracker)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        deadline = time.monotonic() + 30
        while any(alive(pid) for pid in workers) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not [pid for pid in workers if alive(pid)]
    finally:
        proc.kill()
        for pid in [*workers, *children()]:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
