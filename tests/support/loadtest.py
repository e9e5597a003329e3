"""A bounded load run against ``selene-dag serve``: concurrent ``POST /ask`` clients.

``run_load`` starts ``clients`` threads, each with its own HTTP connection, posting
questions round-robin until ``seconds`` have passed (every loop checks the deadline, so the
run stops by itself), and checks every response: HTTP 200, a JSON body of ask's schema and
``total_tokens <= budget``. ``start_server`` runs ``selene-dag serve`` as a child process on
a free loopback port. Test tooling, not part of the package: used by
``tests/integration/test_ops_load.py`` and ``bench/bench_serve.py``.
"""

from __future__ import annotations

import os
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx


@dataclass
class LoadReport:
    """Latencies (ms) of the successful requests, failures as text, and the wall time."""

    latencies_ms: list[float] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    seconds: float = 0.0
    clients: int = 0

    @property
    def requests(self) -> int:
        """Requests sent (successful or not)."""
        return len(self.latencies_ms) + len(self.failures)

    def percentile(self, q: float) -> float:
        """The ``q``-th percentile (0–100) of successful latencies; 0.0 when there are none."""
        if not self.latencies_ms:
            return 0.0
        if len(self.latencies_ms) == 1:
            return self.latencies_ms[0]
        cuts = statistics.quantiles(self.latencies_ms, n=100, method="inclusive")
        return cuts[min(98, max(0, round(q) - 1))]

    @property
    def per_second(self) -> float:
        """Requests per second over the run."""
        return self.requests / self.seconds if self.seconds > 0 else 0.0

    def summary(self) -> str:
        """One line: count, rate, p50/p95 latency and failures."""
        return (
            f"{self.requests} requests from {self.clients} clients in {self.seconds:.1f} s "
            f"({self.per_second:.1f}/s): p50 {self.percentile(50):.0f} ms, "
            f"p95 {self.percentile(95):.0f} ms, {len(self.failures)} failures"
        )


def check_ask_response(resp: httpx.Response, budget: int) -> str | None:
    """None when ``resp`` is a valid ask answer within ``budget``, else what is wrong."""
    if resp.status_code != 200:
        return f"HTTP {resp.status_code}: {resp.text[:200]}"
    try:
        doc = resp.json()
    except ValueError:
        return f"not JSON: {resp.text[:200]}"
    if (
        not isinstance(doc, dict)
        or doc.get("schema") != 1
        or not isinstance(doc.get("items"), list)
    ):
        return f"not an ask document: {str(doc)[:200]}"
    total = doc.get("total_tokens")
    if not isinstance(total, int) or total > budget:
        return f"total_tokens {total!r} over the budget {budget}"
    return None


def run_load(
    base_url: str,
    questions: Sequence[str],
    *,
    clients: int = 50,
    seconds: float = 30.0,
    budgets: Sequence[int] = (2000,),
    timeout: float = 60.0,
) -> LoadReport:
    """Post ``/ask`` from ``clients`` threads until ``seconds`` pass; check every reply.

    Raises ValueError on an empty question list, no budget, or non-positive counts.
    """
    if not questions or not budgets:
        raise ValueError("run_load needs at least one question and one budget")
    if clients < 1 or seconds <= 0:
        raise ValueError(f"clients must be >= 1 and seconds > 0, got {clients}, {seconds}")
    report = LoadReport(clients=clients)
    lock = threading.Lock()
    started = time.monotonic()
    deadline = started + seconds

    def client(index: int) -> None:
        latencies: list[float] = []
        failures: list[str] = []
        n = index
        with httpx.Client(base_url=base_url, timeout=timeout) as http:
            while time.monotonic() < deadline:
                question = questions[n % len(questions)]
                budget = budgets[n % len(budgets)]
                n += clients
                t = time.perf_counter()
                try:
                    resp = http.post("/ask", json={"question": question, "budget": budget})
                    problem = check_ask_response(resp, budget)
                except httpx.HTTPError as exc:
                    problem = f"{type(exc).__name__}: {exc}"
                if problem is None:
                    latencies.append((time.perf_counter() - t) * 1000)
                else:
                    failures.append(problem)
        with lock:
            report.latencies_ms.extend(latencies)
            report.failures.extend(failures)

    threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=seconds + timeout + 10)
    report.seconds = time.monotonic() - started
    return report


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def start_server(
    home: Path, env: Mapping[str, str] | None = None, startup_seconds: float = 60.0
) -> Iterator[str]:
    """Run ``selene-dag serve`` for SELENE_HOME=``home`` on a free loopback port; yields its
    base URL once ``/docs`` answers and stops the process afterwards."""
    port = free_port()
    child_env = dict(os.environ) | dict(env or {}) | {"SELENE_HOME": str(home)}
    cmd = [sys.executable, "-m", "selene_dag.cli", "serve", "--port", str(port)]
    proc = subprocess.Popen(
        cmd, env=child_env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + startup_seconds
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"selene-dag serve exited: {proc.stderr.read()[-2000:]}")
            try:
                if httpx.get(f"{base}/docs", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("selene-dag serve did not answer in time")
            time.sleep(0.2)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)
