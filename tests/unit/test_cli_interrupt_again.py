"""Ctrl-C that lands while a finalizer runs: Python prints the KeyboardInterrupt and drops
it, and a CI run saw `ingest` go on to its end with exit 0 (a garbage collector's callback
of SQLAlchemy took the signal)."""

from __future__ import annotations

import signal
import sys
import time

import pytest

from selene_dag.cli import interrupt_again


class _StoppedInAFinalizer:
    def __del__(self) -> None:
        raise KeyboardInterrupt


def test_an_interrupt_dropped_in_a_finalizer_is_raised_again() -> None:
    others: list[object] = []
    previous_handler = signal.signal(signal.SIGINT, signal.default_int_handler)
    previous_hook = sys.unraisablehook
    sys.unraisablehook = interrupt_again(others.append)
    try:
        with pytest.raises(KeyboardInterrupt):
            dropped = _StoppedInAFinalizer()
            del dropped
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                pass
    finally:
        sys.unraisablehook = previous_hook
        signal.signal(signal.SIGINT, previous_handler)
    assert others == []


def test_other_unraisable_exceptions_go_to_the_previous_hook() -> None:
    others: list[object] = []
    hook = interrupt_again(others.append)

    class Unraisable:
        exc_value = ValueError("x")

    hook(Unraisable())
    assert len(others) == 1
