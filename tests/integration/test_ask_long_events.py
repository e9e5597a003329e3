"""A session event longer than a chunk (a whole log a tool printed): its chunk keeps its
start and its end, so what came of the run is found; a word only in its middle, which no
chunk holds, is not said to be in no session: the pack's note names the event and the
`show` command that prints it. A real transcript with a long prompt added, real runs."""

from __future__ import annotations

import json
import shlex

import dagster as dg
import pytest

from selene_dag import service
from selene_dag.retrieval.citations import show
from selene_dag.store import connect
from tests.support.sessions import REAL_CLAUDE, offline_settings

LOG = "\n".join(f"batch {i} processed by worker-{i % 7} in {i * 13 % 997} ms" for i in range(9000))
MIDDLE = "pelicanqueue stalled at batch 4500 for 3 s"
END = "run finished: root cause of the stall was the ostrichlock"


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("long") / "claude"
    root.mkdir()
    lines = REAL_CLAUDE.read_text(encoding="utf-8").splitlines()
    template = next(json.loads(line) for line in lines if json.loads(line).get("type") == "user")
    record = {**template, "uuid": "00000000-0000-4000-8000-00000000beef"}
    record.pop("isMeta", None)
    half = len(LOG) // 2
    text = f"$ cat logs/worker.log\n{LOG[:half]}\n{MIDDLE}\n{LOG[half:]}\n{END}"
    record["message"] = {"role": "user", "content": text}
    (root / REAL_CLAUDE.name).write_text("\n".join([*lines, json.dumps(record)]) + "\n")
    settings = offline_settings(tmp_path_factory.mktemp("home"), root)
    assert service.distill_run(settings, all_files=True, instance=dg.DagsterInstance.ephemeral())
    return settings


def test_the_end_of_a_long_event_is_found(home) -> None:
    result = service.ask(home, "what was the root cause of the stall ostrichlock", 600)
    assert END in result.text
    assert "ostrichlock" not in result.stats["note"]


def test_a_word_only_in_the_middle_of_a_long_event_is_located(home) -> None:
    result = service.ask(home, "pelicanqueue", 600)
    note = result.stats["note"]
    assert "no note or session holds" not in note
    assert "'pelicanqueue' is in a part of a session ask does not search" in note
    citation = note.rsplit('selene-dag show "', 1)[1].rstrip('"`')
    with connect(home.db_path) as conn:
        assert MIDDLE in show(conn, citation).text
    # Beside words that matched: located the same; a word no stored text holds is still
    # said to be in none.
    note = service.ask(home, "flamingoqueue pelicanqueue worker", 600).stats["note"]
    assert note.startswith("no note or session holds 'flamingoqueue': the pack holds")
    assert "; 'pelicanqueue' is in a part of a session ask does not search" in note


def test_the_show_command_named_reads_the_same_home(home, tmp_path) -> None:
    # Asked with --home from another folder, the note's `selene-dag show` read ./.selene.
    import subprocess

    from tests.support.ops import SELENE_CLI

    asked = subprocess.run(
        [SELENE_CLI, "ask", "pelicanqueue", "--budget", "300", "--home", str(home.home)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert asked.returncode == 0, asked.stderr
    command = asked.stderr.split("`selene-dag ", 1)[1].split("`", 1)[0]
    assert command.endswith(f"--home {home.home}")
    shown = subprocess.run(
        [SELENE_CLI, *shlex.split(command)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert shown.returncode == 0 and MIDDLE in shown.stdout, shown.stderr
