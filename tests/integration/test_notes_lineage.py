"""Lineage-driven staleness, stale-only re-runs, the Ollama path, schedules and the sensor."""

import json
from datetime import UTC, datetime

import dagster as dg
import pytest
from dagster._core.definitions.data_version import StaleStatus
from dagster._core.definitions.observe import observe

from selene_dag.defs.notes import essences_sensor, notes_source
from selene_dag.defs.resources import SeleneResource, default_resources
from selene_dag.defs.runs import materialize, unpartitioned_selection
from selene_dag.store import open_store
from tests.conftest import DEMO_NOTES
from tests.support.fake_ollama import FakeOllama

NOW = "2026-07-15T00:00:00+00:00"
NOTES_GROUP = unpartitioned_selection() & dg.AssetSelection.groups("notes")
DOWNSTREAM = {
    "raw_notes",
    "processed_notes",
    "threads",
    "thread_digests",
    "fidelity_tiers",
    "compression_health",
}


def _slice(folder, count, topics=("python", "sqlite", "github-actions")):
    rows = [json.loads(line) for line in DEMO_NOTES.read_text().splitlines()]
    chosen = [r for r in rows if r["topic"] in topics][:count]
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "notes.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in chosen))
    return path, chosen


@pytest.fixture
def small_corpus(tmp_path, monkeypatch):
    path, rows = _slice(tmp_path / "notes", 40)
    monkeypatch.setenv("SELENE_NOTES_DIR", str(path.parent))
    monkeypatch.setenv("SELENE_NOW", NOW)
    return path, rows


def _meta(result, node):
    (mat,) = result.asset_materializations_for_node(node)
    return {k: getattr(v, "value", v) for k, v in mat.metadata.items()}


def _statuses(instance):
    """Stale status of every unpartitioned notes asset, as the UI computes it."""
    from dagster._core.asset_graph_view.asset_graph_view import AssetGraphView, TemporalContext
    from dagster._core.definitions.data_version import CachingStaleStatusResolver
    from dagster._time import get_current_datetime

    from selene_dag.definitions import defs

    graph = defs.resolve_asset_graph()
    view = AssetGraphView(
        temporal_context=TemporalContext(effective_dt=get_current_datetime(), last_event_id=None),
        instance=instance,
        asset_graph=graph,
    )
    resolver = CachingStaleStatusResolver(
        instance=instance, asset_graph=graph, loading_context=view
    )
    return {k.to_user_string(): resolver.get_status(k) for k in NOTES_GROUP.resolve(graph)}


def _observe(instance):
    observe([notes_source], instance=instance, resources={"selene": SeleneResource()})


def test_one_edited_note_makes_exactly_its_downstream_stale_and_rerun_calls_once(small_corpus):
    path, rows = small_corpus
    instance = dg.DagsterInstance.ephemeral()
    _observe(instance)
    first = materialize(NOTES_GROUP, instance)
    assert _meta(first, "processed_notes")["llm_calls_made"] == 40
    assert set(_statuses(instance).values()) == {StaleStatus.FRESH}

    # A cosmetic re-run with the same content changes no data version: nothing goes stale.
    _observe(instance)
    materialize(["raw_notes"], instance)
    assert set(_statuses(instance).values()) == {StaleStatus.FRESH}

    rows[5]["content"] += "\n\nA new paragraph about this note."
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    _observe(instance)
    stale = {k for k, v in _statuses(instance).items() if v == StaleStatus.STALE}
    assert stale == {"raw_notes"}  # the asset that reads the changed source

    # Re-run only what is stale until nothing is (a stale_assets_only schedule or the eager
    # automation conditions do exactly this): the edit flows down, one model call in total.
    rerun: set[str] = set()
    calls = 0
    for _ in range(len(DOWNSTREAM)):
        if not stale:
            break
        result = materialize(sorted(stale), instance)
        rerun |= stale
        if "processed_notes" in stale:
            processed = _meta(result, "processed_notes")
            assert processed["analysed"] == 1
            calls += processed["llm_calls_made"]
        stale = {k for k, v in _statuses(instance).items() if v == StaleStatus.STALE}
    assert not stale
    assert {"raw_notes", "processed_notes"} <= rerun <= DOWNSTREAM
    assert calls == 1


def test_ollama_engine_runs_the_same_assets_with_the_seed_limit(small_corpus, monkeypatch):
    path, rows = small_corpus
    path.write_text("".join(json.dumps(r) + "\n" for r in rows[:12]))
    with FakeOllama() as server:
        monkeypatch.setenv("SELENE_LLM", "ollama")
        monkeypatch.setenv("SELENE_OLLAMA_HOST", server.url)
        instance = dg.DagsterInstance.ephemeral()
        first = materialize(NOTES_GROUP, instance)
        assert first.success
        assert (
            _meta(first, "processed_notes")["analysed"] == 10
        )  # seed's per-run limit with a model
        # The daemon's essences_sensor goes on with the notes left, once for that state.
        sensor = dg.build_sensor_context(instance=instance, resources=default_resources())
        asked = essences_sensor(sensor)
        last = instance.fetch_materializations(dg.AssetKey("processed_notes"), limit=1)
        assert [r.run_key for r in asked.run_requests] == [
            f"essences:{last.records[0].storage_id}:1"
        ]
        # A run that failed (the server down a while) is asked for again at the next tick;
        # while one it asked for has not finished, none.
        again = essences_sensor(
            dg.build_sensor_context(
                instance=instance, cursor=asked.cursor, resources=default_resources()
            )
        )
        assert [r.run_key for r in again.run_requests] == [
            f"essences:{last.records[0].storage_id}:2"
        ]
        running = instance.add_run(
            dg.DagsterRun(
                job_name="__ASSET_JOB",
                status=dg.DagsterRunStatus.STARTED,
                tags={"dagster/sensor_name": "essences_sensor"},
            )
        )
        waiting = essences_sensor(
            dg.build_sensor_context(instance=instance, resources=default_resources())
        )
        assert not waiting.run_requests and "has not finished" in (
            waiting.skip_reason.skip_message or ""
        )
        instance.delete_run(running.run_id)
        second = materialize(["processed_notes"], instance)
        assert _meta(second, "processed_notes")["analysed"] == 2
        # Nothing left, the same engine: nothing runs.
        idle = essences_sensor(
            dg.build_sensor_context(instance=instance, resources=default_resources())
        )
        assert not idle.run_requests and "no note left" in (idle.skip_reason.skip_message or "")
        # Another model now (a restarted `dev`): its notes are analysed again.
        monkeypatch.setenv("SELENE_MODEL", "llama3:8b")
        switched = essences_sensor(
            dg.build_sensor_context(instance=instance, resources=default_resources())
        )
        assert [":ollama:llama3:8b:" in r.run_key for r in switched.run_requests] == [True]
        monkeypatch.delenv("SELENE_MODEL")
        before = server.total_requests
        third = materialize(["processed_notes", "thread_digests"], instance)
        assert _meta(third, "processed_notes")["analysed"] == 0
        assert server.total_requests == before  # nothing new: no call reaches the server
    with open_store(
        __import__("selene_dag.config", fromlist=["x"]).load_settings().db_path
    ) as conn:
        engines = {
            r[0] for r in conn.execute("SELECT DISTINCT engine FROM processed_notes").fetchall()
        }
        cached = conn.execute("SELECT count(*) FROM llm_cache WHERE engine = 'ollama'").fetchone()[
            0
        ]
    assert engines == {"ollama:mistral:7b"}
    assert cached >= 12


def _materialized_once(defs, instance) -> None:
    """Record one materialization of every unpartitioned asset of ``defs`` in ``instance``."""
    for assets_def in defs.assets:
        if isinstance(assets_def, dg.AssetsDefinition) and assets_def.partitions_def is None:
            for key in assets_def.keys:
                instance.report_runless_asset_event(dg.AssetMaterialization(key))


def _requested(defs, instance, at, cursor):
    result = dg.evaluate_automation_conditions(
        defs=defs, instance=instance, evaluation_time=at, cursor=cursor
    )
    keys = {r.key.to_user_string() for r in result.results if r.true_subset.size}
    return keys, result.cursor


# Dagster's own condition tester passes a beta parameter to its selection.
@pytest.mark.filterwarnings("ignore:Parameter `include_sources`:dagster.BetaWarning")
def test_cadences_follow_seed_000_times():
    """Seed 000's launchd times as automation conditions: essences every 5 minutes, digests
    hourly, tiers daily at 03:00, each day's summary at 00:30; nothing between ticks."""
    from selene_dag.definitions import defs

    instance = dg.DagsterInstance.ephemeral()
    _materialized_once(defs, instance)
    start = datetime(2026, 7, 15, 2, 58, tzinfo=UTC)
    _, cursor = _requested(defs, instance, start, None)
    at_three, cursor = _requested(defs, instance, datetime(2026, 7, 15, 3, 1, tzinfo=UTC), cursor)
    assert {"fidelity_tiers", "thread_digests"} <= at_three
    between, cursor = _requested(defs, instance, datetime(2026, 7, 15, 3, 3, tzinfo=UTC), cursor)
    assert between == set()
    five_past, cursor = _requested(defs, instance, datetime(2026, 7, 15, 3, 6, tzinfo=UTC), cursor)
    # The essences' 5 minutes are essences_sensor's, and only while notes are left (a
    # clock ran them with nothing to do: 288 empty runs a day with the offline engine).
    assert five_past == set()
    conditions = {
        key.to_user_string(): repr(a.automation_conditions_by_key.get(key))
        for a in defs.assets
        if isinstance(a, dg.AssetsDefinition)
        for key in a.keys
    }
    assert "*/5" not in conditions["processed_notes"]
    assert "0 3 * * *" in conditions["fidelity_tiers"]
    assert "0 * * * *" in conditions["thread_digests"]
    assert "30 0 * * *" in conditions["daily_summaries"]
    assert not list(defs.schedules or [])  # one mechanism per cadence


@pytest.mark.filterwarnings("ignore:Parameter `include_sources`:dagster.BetaWarning")
def test_two_clocks_ticking_together_drag_nothing_along():
    """At an hour the digests' clock and the essences' tick together: compression_health,
    which follows both, ran with them though neither input had changed."""
    from selene_dag.definitions import defs

    instance = dg.DagsterInstance.ephemeral()
    _materialized_once(defs, instance)
    _, cursor = _requested(defs, instance, datetime(2026, 7, 15, 8, 58, tzinfo=UTC), None)
    at_nine, _ = _requested(defs, instance, datetime(2026, 7, 15, 9, 1, tzinfo=UTC), cursor)
    assert "thread_digests" in at_nine
    assert "compression_health" not in at_nine and "search_index" not in at_nine


@pytest.mark.filterwarnings("ignore:Parameter `include_sources`:dagster.BetaWarning")
def test_a_changed_folder_runs_the_whole_notes_chain_in_one_evaluation():
    """The essences' own clock drags nothing along (above), but a change to the notes
    folder still reaches every asset below it at once, not one evaluation per level."""
    from dagster._core.definitions.data_version import DATA_VERSION_TAG

    from selene_dag.definitions import defs

    instance = dg.DagsterInstance.ephemeral()

    def observe_folder(version):
        instance.report_runless_asset_event(
            dg.AssetObservation("notes_source", tags={DATA_VERSION_TAG: version})
        )

    observe_folder("v1")
    _materialized_once(defs, instance)
    _, cursor = _requested(defs, instance, datetime(2026, 7, 15, 3, 11, tzinfo=UTC), None)
    _, cursor = _requested(defs, instance, datetime(2026, 7, 15, 3, 12, tzinfo=UTC), cursor)
    observe_folder("v1")
    same, cursor = _requested(defs, instance, datetime(2026, 7, 15, 3, 13, tzinfo=UTC), cursor)
    assert same == set()
    observe_folder("v2")
    changed, _ = _requested(defs, instance, datetime(2026, 7, 15, 3, 14, tzinfo=UTC), cursor)
    assert DOWNSTREAM | {"search_index"} <= changed
    # With their checks, in the same evaluation: the blocking ones guard what follows (no
    # check ran in the runs the daemon started).
    checks = {
        "fidelity_tiers:tier_rules",
        "processed_notes:essence_coverage",
        "thread_digests:digest_shape",
        "search_index:ask_quality",
    }
    assert checks <= changed


def test_notes_folder_sensor_fires_on_change_only(small_corpus):
    from selene_dag.defs.notes import notes_folder_sensor

    path, _rows = small_corpus
    instance = dg.DagsterInstance.ephemeral()
    first = notes_folder_sensor(
        dg.build_sensor_context(instance=instance, resources={"selene": SeleneResource()})
    )
    assert len(first.run_requests) == 1
    idle = notes_folder_sensor(
        dg.build_sensor_context(
            instance=instance, cursor=first.cursor, resources={"selene": SeleneResource()}
        )
    )
    assert not idle.run_requests
    (path.parent / "new.md").write_text("# New note\nbody")
    changed = notes_folder_sensor(
        dg.build_sensor_context(
            instance=instance, cursor=first.cursor, resources={"selene": SeleneResource()}
        )
    )
    assert len(changed.run_requests) == 1 and changed.cursor != first.cursor


def _sensor_tick(instance, cursor=None):
    """One tick of the notes folder sensor, with its events recorded as the daemon does."""
    from selene_dag.defs.notes import notes_folder_sensor

    result = notes_folder_sensor(
        dg.build_sensor_context(
            instance=instance, cursor=cursor, resources={"selene": SeleneResource()}
        )
    )
    for event in result.asset_events:
        instance.report_runless_asset_event(event)
    return result


def test_the_sensors_ingest_and_the_clis_ingest_see_one_folder_version(small_corpus):
    """The sensor records the folder version its raw_notes run reads, so an `ingest` after
    it has nothing to run; and after an `ingest`, the sensor requests no second run."""
    from selene_dag.config import load_settings
    from selene_dag.defs.runs import materialize_stale

    path, _rows = small_corpus
    settings = load_settings()
    instance = dg.DagsterInstance.ephemeral()
    tick = _sensor_tick(instance)
    assert len(tick.run_requests) == 1 and len(tick.asset_events) == 1
    materialize(["raw_notes"], instance)  # the run the sensor requested
    assert "raw_notes" not in materialize_stale(instance, settings, NOTES_GROUP).selected

    path.write_text(path.read_text() + json.dumps({"id": "n-new", "text": "A new note."}) + "\n")
    assert "raw_notes" in materialize_stale(instance, settings, NOTES_GROUP).selected
    after_cli = _sensor_tick(instance, tick.cursor)
    assert not after_cli.run_requests and not after_cli.asset_events
    assert "already ingested" in after_cli.skip_reason.skip_message


def test_the_first_daily_refresh_of_a_month_finishes_the_last_day_of_the_one_before(
    tmp_path, monkeypatch
):
    # The daily refresh (00:30) runs the month in progress only: on the 1st, the day that
    # had just ended lived in the month before, whose partition no refresh ran again.
    notes = tmp_path / "notes"
    notes.mkdir()
    path = notes / "days.jsonl"

    def write(*rows):
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))

    morning = {
        "id": "a",
        "title": "Backup drill",
        "text": "Restored the NAS backup in 14 min.",
        "created_at": "2026-07-31T09:00:00+00:00",
    }
    evening = {
        "id": "b",
        "title": "Router swap",
        "text": "Replaced the router with OpenWrt.",
        "created_at": "2026-07-31T22:00:00+00:00",
    }
    write(morning)
    monkeypatch.setenv("SELENE_NOTES_DIR", str(notes))
    monkeypatch.setenv("SELENE_HOME", str(tmp_path / "home"))
    instance = dg.DagsterInstance.ephemeral()

    def day_run(now, partition):
        monkeypatch.setenv("SELENE_NOW", now)
        assert materialize(["raw_notes", "processed_notes"], instance).success
        assert materialize(["daily_summaries"], instance, partition_key=partition).success

    day_run("2026-07-31T12:00:00+00:00", "2026-07-01")
    write(morning, evening)
    day_run("2026-08-01T00:31:00+00:00", "2026-08-01")
    day_run("2026-08-02T00:31:00+00:00", "2026-08-01")
    from selene_dag.config import load_settings

    with open_store(load_settings().db_path) as conn:
        rows = conn.execute("SELECT day, note_count FROM daily_summaries").fetchall()
    assert [(str(day), count) for day, count in rows] == [("2026-07-31", 2)]


def test_a_newer_offline_analysis_analyses_again_what_an_older_one_did(small_corpus):
    # Bumping analyze_note's version re-ran processed_notes, which picked only new or
    # changed notes: every stored note kept the older analysis's essence.
    from selene_dag.config import load_settings
    from selene_dag.llm.versions import ALGORITHM_VERSIONS

    instance = dg.DagsterInstance.ephemeral()
    assert materialize(["raw_notes", "processed_notes"], instance).success
    db = load_settings().db_path
    with open_store(db) as conn:
        current = dict(conn.execute("SELECT note_id, essence FROM processed_notes").fetchall())
        old, older = sorted(current)[:2]
        conn.execute(
            "UPDATE processed_notes SET essence = 'What an older analysis said.', analysis = ? "
            "WHERE note_id = ?",
            ["analyze_note@0", old],
        )
        # A row stored before the version was recorded.
        conn.execute("UPDATE processed_notes SET analysis = NULL WHERE note_id = ?", [older])
    again = materialize(["processed_notes"], instance)
    assert _meta(again, "processed_notes")["analysed"] == 2
    with open_store(db) as conn:
        rows = dict(conn.execute("SELECT note_id, essence FROM processed_notes").fetchall())
        versions = {
            r[0] for r in conn.execute("SELECT DISTINCT analysis FROM processed_notes").fetchall()
        }
    assert rows == current
    assert versions == {ALGORITHM_VERSIONS["analyze_note"]}
    unchanged = materialize(["processed_notes"], instance)
    assert _meta(unchanged, "processed_notes")["analysed"] == 0
