"""User-facing counts agree with their noun."""

from selene_dag.text import plural


def test_one_is_singular_and_every_other_count_plural() -> None:
    assert plural(1, "note") == "1 note"
    assert plural(0, "note") == "0 notes"
    assert plural(2, "session file") == "2 session files"
    assert plural(12_000, "input") == "12,000 inputs"
    assert plural(3, "analysis", "analyses") == "3 analyses"
    assert plural(1, "analysis", "analyses") == "1 analysis"
