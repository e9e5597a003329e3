"""The SQL transform and compute_tier() agree on random rows (hypothesis)."""

from datetime import UTC, datetime, timedelta

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from selene_dag.notes.fidelity import compute_tier
from selene_dag.notes.fidelity_sql import apply_fidelity_tiers, fidelity_inputs
from selene_dag.store import connect

NOW = datetime(2026, 7, 15, tzinfo=UTC)

note_rows = st.lists(
    st.tuples(
        st.floats(min_value=0, max_value=800),  # age in days
        st.booleans(),  # has essence
        st.sampled_from([None, "active", "archived", "both"]),  # thread membership
        st.one_of(st.none(), st.floats(min_value=0, max_value=800)),  # days since access
    ),
    min_size=1,
    max_size=40,
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(rows=note_rows)
def test_sql_matches_python(tmp_path_factory, rows):
    conn = connect(tmp_path_factory.mktemp("fid") / "f.duckdb")
    conn.execute(
        "INSERT INTO threads (id, name, status) VALUES ('a', 'a', 'active'), ('z', 'z', 'archived')"
    )
    for i, (age, essence, membership, access) in enumerate(rows):
        created = NOW - timedelta(days=age)
        conn.execute(
            "INSERT INTO notes (id, title, content, content_hash, created_at, updated_at, source) "
            "VALUES (?, 't', 'c', 'h', ?, ?, 's')",
            [f"n{i}", created, created],
        )
        accessed = None if access is None else NOW - timedelta(days=access)
        conn.execute(
            "INSERT INTO processed_notes (note_id, essence, last_accessed_at) VALUES (?, ?, ?)",
            [f"n{i}", "An essence here." if essence else None, accessed],
        )
        threads = {"active": ["a"], "archived": ["z"], "both": ["a", "z"]}.get(membership, [])
        for thread in threads:
            conn.execute("INSERT INTO thread_notes VALUES (?, ?)", [thread, f"n{i}"])
    apply_fidelity_tiers(conn, NOW)
    stored = dict(conn.execute("SELECT note_id, fidelity_tier FROM processed_notes").fetchall())
    inputs = fidelity_inputs(conn, NOW)
    assert len(inputs) == len(rows)
    for note_id, age, has_essence, status, access_days in inputs:
        assert stored[note_id] == compute_tier(age, has_essence, status, access_days), note_id
    # Independently from the SQL inputs: the rules on the generated values.
    for i, (age, essence, membership, access) in enumerate(rows):
        status = {"active": "active", "both": "active", "archived": "archived"}.get(membership)
        expected = compute_tier(age, essence, status, age if access is None else access)
        boundary = any(abs(age - b) < 1e-3 for b in (7, 90)) or (
            access is not None and abs(access - 180) < 1e-3
        )
        if not boundary:
            assert stored[f"n{i}"] == expected
    conn.close()


def test_rerun_at_the_same_now_changes_nothing_and_keeps_the_stamps(tmp_path):
    conn = connect(tmp_path / "r.duckdb")
    conn.execute("INSERT INTO threads (id, name, status) VALUES ('z', 'z', 'archived')")
    for i, age in enumerate((1, 30, 120, 400)):
        created = NOW - timedelta(days=age)
        conn.execute(
            "INSERT INTO notes (id, title, content, content_hash, created_at, updated_at, source) "
            "VALUES (?, 't', 'c', 'h', ?, ?, 's')",
            [f"n{i}", created, created],
        )
        conn.execute(
            "INSERT INTO processed_notes (note_id, essence) VALUES (?, 'An essence here.')",
            [f"n{i}"],
        )
        conn.execute("INSERT INTO thread_notes VALUES ('z', ?)", [f"n{i}"])
    assert apply_fidelity_tiers(conn, NOW) == 3  # n0 stays at the default 'full'
    stamps = conn.execute(
        "SELECT note_id, fidelity_evaluated_at FROM processed_notes ORDER BY 1"
    ).fetchall()
    assert apply_fidelity_tiers(conn, NOW) == 0
    assert (
        conn.execute(
            "SELECT note_id, fidelity_evaluated_at FROM processed_notes ORDER BY 1"
        ).fetchall()
        == stamps
    )
    tiers = dict(conn.execute("SELECT note_id, fidelity_tier FROM processed_notes").fetchall())
    assert tiers == {"n0": "full", "n1": "high", "n2": "summary", "n3": "skeleton"}
    assert apply_fidelity_tiers(conn, NOW + timedelta(days=7)) == 1  # n0 leaves its first week
    conn.close()
