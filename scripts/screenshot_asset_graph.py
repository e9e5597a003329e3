"""Screenshot the Dagster asset graph into docs/images/asset-graph.png.

Starts ``dagster dev -m selene_dag.definitions`` on a free 127.0.0.1 port (DAGSTER_HOME in
a temporary folder), waits for the server, takes a headless Chromium screenshot of the
asset graph page and stops the server's process group. Needs ``/usr/bin/chromium``.

Usage: ``.venv/bin/python scripts/screenshot_asset_graph.py [OUT.png]``
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for(url: str, timeout: float = 120) -> None:
    """Return when ``url`` answers 200; raise TimeoutError after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        time.sleep(1)
    raise TimeoutError(f"{url} did not answer within {timeout:.0f} s")


def screenshot(url: str, out: Path, tmp: Path) -> None:
    """Save a 1600×1000 headless Chromium screenshot of ``url`` to ``out``."""
    subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={tmp / 'chromium'}",
            f"--screenshot={out}",
            "--window-size=1600,1000",
            "--virtual-time-budget=15000",
            url,
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )


def main(out: Path) -> Path:
    """Start dagster dev, screenshot the asset graph to ``out``, stop the server."""
    bin_dir = Path(sys.executable).parent
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        home = tmp / "dagster"
        home.mkdir()
        (home / "dagster.yaml").write_text(
            "telemetry:\n  enabled: false\nnux:\n  enabled: false\n", encoding="utf-8"
        )
        env = {
            **os.environ,
            "DAGSTER_HOME": str(home),
            "SELENE_HOME": str(tmp / "selene"),
            "SELENE_NOTES_DIR": str(ROOT / "assets" / "demo" / "notes"),
        }
        port = free_port()
        proc = subprocess.Popen(
            [
                str(bin_dir / "dagster"),
                "dev",
                "-m",
                "selene_dag.definitions",
                "-h",
                "127.0.0.1",
                "-p",
                str(port),
            ],
            env=env,
            cwd=str(tmp),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            base = f"http://127.0.0.1:{port}"
            wait_for(f"{base}/server_info")
            time.sleep(5)  # the code location loads after the webserver answers
            # The notes group, expanded (the global lineage page shows groups collapsed).
            location = "__repository__@selene_dag.definitions"
            screenshot(f"{base}/locations/{location}/asset-groups/notes", out, tmp)
        finally:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
    return out


if __name__ == "__main__":
    target = (
        Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs" / "images" / "asset-graph.png"
    )
    print(main(target))
