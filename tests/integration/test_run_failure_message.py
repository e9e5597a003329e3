"""What a failed run says: one readable line naming the step and its error, whatever the
shape of the exception's message (a database error goes on with a dump of rows and ends
in a lone quote)."""

from __future__ import annotations

import dagster as dg
import pytest

from selene_dag.defs.runs import FAILURE_CHARS, failure_message


def _failed(message: str) -> dg.ExecuteInProcessResult:
    @dg.asset(name="broken")
    def broken() -> None:
        raise RuntimeError(message)

    return dg.materialize([broken], raise_on_error=False)


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        (
            "FATAL Error: Failed to delete all rows from index. Only deleted 0 out of 55 rows.\n"
            "Chunk: Chunk - [2 Columns]\n- FLAT VARCHAR: 55 = [ gemini-1, gemini-1]\n\n'",
            "RuntimeError: FATAL Error: Failed to delete all rows from index. Only deleted 0 "
            "out of 55 rows.",
        ),
        ("one line", "RuntimeError: one line"),
    ],
)
def test_the_first_line_that_says_something(message: str, expected: str) -> None:
    assert failure_message(_failed(message)) == f"step broken: {expected}"


def test_a_long_message_is_cut() -> None:
    text = failure_message(_failed("x" * 2000))
    assert len(text) == len("step broken: ") + FAILURE_CHARS and text.endswith("…")
