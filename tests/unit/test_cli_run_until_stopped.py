"""`selene-dag dev` runs `dagster dev` until stopped: a SIGTERM is passed on, and the
command ends as a server stopped by it does (exit 143; it exited 0)."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from pathlib import Path

from selene_dag.cli import run_until_stopped

# Says it is up, then exits 0 on SIGTERM, as `dagster dev` does once its processes stop.
CHILD = (
    "import signal, sys, time\n"
    "signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))\n"
    "open(sys.argv[1], 'w').close()\n"
    "time.sleep(60)\n"
)


def test_a_sigterm_is_passed_on_and_ends_as_the_signal_says(tmp_path: Path) -> None:
    ready = tmp_path / "ready"

    def stop_when_up() -> None:
        deadline = time.monotonic() + 30
        while not ready.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=stop_when_up, daemon=True).start()
    previous = signal.getsignal(signal.SIGTERM)
    command = [sys.executable, "-c", CHILD, str(ready)]
    assert run_until_stopped(command, os.environ, tmp_path) == 128 + signal.SIGTERM
    assert signal.getsignal(signal.SIGTERM) is previous  # the handlers are given back


def test_a_child_that_ends_alone_gives_its_own_code(tmp_path: Path) -> None:
    command = [sys.executable, "-c", "raise SystemExit(3)"]
    assert run_until_stopped(command, os.environ, tmp_path) == 3
