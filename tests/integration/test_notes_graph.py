"""The notes group end to end on the 577-note demo corpus, through dagster.materialize with
the real definitions, checked against figures derived independently from the source JSON."""

import json
import shutil
from collections import defaultdict
from datetime import UTC, datetime

import dagster as dg
import pytest
from typer.testing import CliRunner

from selene_dag.context import count_tokens
from selene_dag.defs.runs import materialize, unpartitioned_selection
from selene_dag.notes.fidelity import compute_tier
from selene_dag.store import open_store
from selene_dag.text import split_sentences

NOW = datetime(2026, 7, 15, tzinfo=UTC)


@pytest.fixture(scope="module")
def graph(tmp_path_factory, demo_notes_path):
    base = tmp_path_factory.mktemp("graph")
    notes_dir = base / "notes"
    notes_dir.mkdir()
    shutil.copy(demo_notes_path, notes_dir / "til.jsonl")
    env = {
        "SELENE_HOME": str(base / "home"),
        "SELENE_NOTES_DIR": str(notes_dir),
        "SELENE_NOW": NOW.isoformat(),
    }
    with pytest.MonkeyPatch.context() as mp:
        for key, value in env.items():
            mp.setenv(key, value)
        result = materialize(
            unpartitioned_selection() & dg.AssetSelection.groups("notes"),
            dg.DagsterInstance.ephemeral(),
        )
    rows = [json.loads(line) for line in (notes_dir / "til.jsonl").read_text().splitlines()]
    return {"env": env, "result": result, "source": rows, "db": base / "home" / "selene.duckdb"}


@pytest.fixture(scope="module")
def demo_notes_path():
    from tests.conftest import DEMO_NOTES

    return DEMO_NOTES


@pytest.fixture
def graph_env(graph, monkeypatch):
    for key, value in graph["env"].items():
        monkeypatch.setenv(key, value)
    return graph


def _meta(result, node):
    (mat,) = result.asset_materializations_for_node(node)
    return {k: getattr(v, "value", v) for k, v in mat.metadata.items()}


def test_every_note_gets_an_essence_and_checks_pass(graph):
    result = graph["result"]
    assert result.success
    meta = _meta(result, "processed_notes")
    assert meta["analysed"] == 577 and meta["notes_with_essence"] == 577
    assert meta["llm_calls_made"] == 577
    evaluations = result.get_asset_check_evaluations()
    assert {e.check_name for e in evaluations} >= {
        "essence_coverage",
        "tier_rules",
        "digest_shape",
        "context_within_budget",
    }
    assert all(e.passed for e in evaluations), [e.check_name for e in evaluations if not e.passed]
    with open_store(graph["db"]) as conn:
        short = conn.execute(
            "SELECT count(*) FROM processed_notes WHERE length(essence) <= 10"
        ).fetchone()[0]
    assert short == 0


def test_threads_tiers_and_digests_match_rules_applied_to_the_source(graph):
    source = graph["source"]
    by_topic = defaultdict(list)
    for row in source:
        by_topic[row["topic"].lower()].append(row)
    last_activity = {
        t: max(datetime.fromisoformat(r["updated_at"]) for r in rows)
        for t, rows in by_topic.items()
    }
    active = {t for t, at in last_activity.items() if (NOW - at).total_seconds() <= 90 * 86400}
    with open_store(graph["db"]) as conn:
        threads = {
            r[0]: r[1:]
            for r in conn.execute(
                "SELECT name, status, note_count, thread_digest FROM threads"
            ).fetchall()
        }
        tiers = dict(conn.execute("SELECT note_id, fidelity_tier FROM processed_notes").fetchall())
    assert set(threads) == set(by_topic)
    assert {t for t, (status, _, _) in threads.items() if status == "active"} == active
    assert all(threads[t][1] == len(rows) for t, rows in by_topic.items())
    eligible = {t for t in active if len(by_topic[t]) >= 10}
    assert {t for t, (_, _, digest) in threads.items() if digest} == eligible
    for t in eligible:
        digest = threads[t][2]
        assert 3 <= len(split_sentences(digest, flatten=True)) <= 5 and len(digest) >= 30
    for row in source:
        age = (NOW - datetime.fromisoformat(row["created_at"])).total_seconds() / 86400
        status = "active" if row["topic"].lower() in active else "archived"
        assert tiers[f"notes/{row['id']}"] == compute_tier(age, True, status, age), row["id"]


def test_health_and_context_pack_represent_all_notes_within_16000_mistral_tokens(graph_env):
    meta = _meta(graph_env["result"], "compression_health")
    assert meta["notes_in_pack"] == 577
    assert meta["tokens_packed"] <= 16_000 < meta["tokens_all_notes_full"]
    assert meta["health"]["essences"] == {
        "total": 577,
        "computed": 577,
        "remaining": 0,
        "percent": 100,
    }

    from selene_dag.cli import app

    outcome = CliRunner().invoke(app, ["context", "--budget", "16000"])
    assert outcome.exit_code == 0, outcome.output
    pack = outcome.stdout
    assert count_tokens(pack.rstrip("\n"), "mistral:7b") <= 16_000
    titles = [row["title"] for row in graph_env["source"]]
    assert all(title in pack for title in titles)
    newest = max(graph_env["source"], key=lambda r: r["updated_at"])
    oldest = min(graph_env["source"], key=lambda r: r["updated_at"])
    assert f"- {oldest['title']} [" in pack  # the oldest note is a skeleton line
    assert f"--- {newest['title']}" in pack  # the newest keeps a block (summary or better)
    assert pack.index(newest["title"]) < pack.index(oldest["title"])

    health = CliRunner().invoke(app, ["health", "--json"])
    assert health.exit_code == 0
    document = json.loads(health.stdout)
    # --format json, as ask, show, eval and context take it, prints the same document.
    formatted = CliRunner().invoke(app, ["health", "--format", "json"])
    assert formatted.exit_code == 0 and json.loads(formatted.stdout) == document
    clash = CliRunner().invoke(app, ["health", "--json", "--format", "table"])
    assert clash.exit_code == 1 and "--json and --format table disagree" in clash.output
    assert set(document) == {
        "status",
        "timestamp",
        "tiers",
        "essences",
        "threadDigests",
        "skippedInputs",
        "noteFolders",
        "sessions",
    }
    assert document["skippedInputs"] == {"count": 0, "newest": []}
    assert document["sessions"]["files"] == document["sessions"]["unreadableLines"] == 0
    (folder,) = document["noteFolders"]
    assert (folder["notes"], folder["exists"]) == (577, True)
    assert sum(document["tiers"].values()) == 577
    # Every thread large enough for a digest has one: "3 / 4" is no backlog.
    digests = document["threadDigests"]
    assert digests["eligible"] == digests["withDigest"] < digests["activeThreads"]
    assert digests["eligibleWithoutDigest"] == 0


def test_health_says_why_a_large_thread_has_no_digest(graph_env, tmp_path):
    # A digest the engine wrote in under three sentences is rejected: health showed "with
    # a digest 0 / 13" beside "large enough 6" and said nothing of why.
    from selene_dag.cli import app

    home = tmp_path / "home"
    shutil.copytree(graph_env["db"].parent, home, ignore=shutil.ignore_patterns("dagster"))
    with open_store(home / "selene.duckdb") as conn:
        (eligible_id,) = conn.execute(
            "SELECT id FROM threads WHERE thread_digest IS NOT NULL ORDER BY id LIMIT 1"
        ).fetchone()
        conn.execute("UPDATE threads SET thread_digest = NULL WHERE id = ?", [eligible_id])
    shown = CliRunner().invoke(app, ["health", "--home", str(home)])
    assert shown.exit_code == 0, shown.output
    assert "1 thread large enough without a digest" in shown.stdout
    document = json.loads(CliRunner().invoke(app, ["health", "--home", str(home), "--json"]).stdout)
    assert document["threadDigests"]["eligibleWithoutDigest"] == 1


def test_context_opens_with_the_active_threads_digests_and_json_names_what_it_shows(graph_env):
    from selene_dag.cli import app

    source = graph_env["source"]
    last_activity: dict[str, datetime] = {}
    sizes: dict[str, int] = defaultdict(int)
    for row in source:
        topic = row["topic"].lower()
        sizes[topic] += 1
        at = datetime.fromisoformat(row["updated_at"])
        last_activity[topic] = max(at, last_activity.get(topic, at))
    # The threads with a digest (active, 10 notes or more), latest activity first.
    expected = sorted(
        (t for t, at in last_activity.items() if (NOW - at).days <= 90 and sizes[t] >= 10),
        key=lambda t: last_activity[t],
        reverse=True,
    )
    assert len(expected) >= 2
    with open_store(graph_env["db"]) as conn:
        digests = dict(conn.execute("SELECT name, thread_digest FROM threads").fetchall())
        titles = dict(conn.execute("SELECT id, title FROM notes").fetchall())

    md = CliRunner().invoke(app, ["context", "--budget", "4000"])
    as_json = CliRunner().invoke(app, ["context", "--budget", "4000", "--format", "json"])
    assert md.exit_code == as_json.exit_code == 0, md.output
    document = json.loads(as_json.stdout)
    assert document["text"] == md.stdout.rstrip("\n")
    text = document["text"]
    assert count_tokens(text, "mistral:7b") == document["total_tokens"] <= 4000
    # What is printed, its line break included, is within the budget (it was one token
    # over: the break was not counted).
    for budget in (20, 50, 500):
        small = CliRunner().invoke(app, ["context", "--budget", str(budget)])
        assert small.stdout and count_tokens(small.stdout, "mistral:7b") <= budget, budget
    assert [t["name"] for t in document["threads"]] == expected[: len(document["threads"])]
    assert len(document["threads"]) >= 2
    blocks = [
        f"=== Thread: {t} ({sizes[t]} notes) ===\n{digests[t]}"
        for t in expected[: len(document["threads"])]
    ]
    head = "\n\n".join(blocks)
    assert text.startswith(head + "\n\n- ")
    assert count_tokens(head, "mistral:7b") <= 1000  # a quarter of the budget at most
    # Every note shown is named by its id and tier, in the order the pack shows them.
    shown = document["notes"]
    assert len(shown) == document["counts"]["skeleton"] > 100
    assert {n["tier"] for n in shown} == {"skeleton"}
    places = [text.index(f"- {titles[n['id']]} [") for n in shown]
    assert places == sorted(places)
    assert f"; {len(document['threads'])} threads; 577 notes (skeleton " in md.stderr

    # A budget whose quarter holds no digest gets notes alone.
    small = json.loads(
        CliRunner().invoke(app, ["context", "--budget", "200", "--format", "json"]).stdout
    )
    assert small["threads"] == [] and small["text"].startswith("- ")


def test_daily_summaries_backfill_a_range_in_one_run(graph_env):
    from selene_dag.defs.runs import materialize_daily_range

    instance = dg.DagsterInstance.ephemeral()
    result = materialize_daily_range(instance, "2024-01-01", "2024-03-01")
    assert result.success
    assert len(instance.get_run_records()) == 1
    expected = defaultdict(list)
    for row in graph_env["source"]:
        day = datetime.fromisoformat(row["created_at"]).astimezone(UTC).date().isoformat()
        if "2024-01-01" <= day <= "2024-03-31":
            expected[day].append(row["title"])
    with open_store(graph_env["db"]) as conn:
        rows = {
            str(d): (n, s)
            for d, n, s in conn.execute(
                "SELECT day, note_count, summary FROM daily_summaries"
            ).fetchall()
        }
    assert set(rows) == set(expected)
    for day, titles in expected.items():
        count, summary = rows[day]
        assert count == len(titles)
        assert all(f"- {title}: " in summary for title in titles)
