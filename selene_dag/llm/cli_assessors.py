"""The ``claude``, ``codex`` and ``gemini`` CLIs as optional chunk assessors (seed 003).

Each assessor runs its CLI in non-interactive mode with the assessment prompt
(``assets/prompts/assess_chunk.md``) on stdin, as an argument list (never a shell string):

* ``claude -p`` (print mode reads the prompt from stdin),
* ``codex exec --skip-git-repo-check --sandbox read-only -`` (``-`` reads stdin),
* ``gemini -p "<short instruction>"`` (the instruction is appended to stdin).

At most ``max_workers`` (3) run at once; each attempt times out after ``timeout`` seconds
(its whole process group is killed) and a failed attempt (timeout, non-zero exit, output
without the three 1–10 ratings) is retried once. A CLI that is not on PATH is *skipped* and
reported, never an error; one whose two attempts fail gives an ``error`` entry with the
reason, and the others still count.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from selene_dag.llm.engine import Assessment, EngineResponseError, require_text
from selene_dag.llm.prompts import load_prompt

# Headless modes that leave no transcript behind: otherwise every assessment would write a
# new session file under the very roots the scanner ingests (a loop feeding itself).
# Checked against the CLIs' docs (claude -p --no-session-persistence; codex exec
# --ephemeral, "-" reads the prompt from stdin). Gemini CLI has no such flag here.
ASSESSORS: dict[str, tuple[str, ...]] = {
    "claude": ("claude", "-p", "--no-session-persistence"),
    "codex": (
        "codex",
        "exec",
        "--ephemeral",
        "--skip-git-repo-check",
        "--sandbox",
        "read-only",
        "-",
    ),
    "gemini": ("gemini", "-p", "Follow the instructions above and reply with the JSON only."),
}
DEFAULT_TIMEOUT = 30.0
MAX_WORKERS = 3


@dataclass(frozen=True)
class AssessorResult:
    """One CLI's outcome: ``status`` is "ok", "skipped" (not installed) or "error"."""

    name: str
    status: str
    assessment: Assessment | None = None
    error: str | None = None
    attempts: int = 0
    duration_ms: float = 0.0

    @property
    def ok(self) -> bool:
        """True when the CLI gave a valid assessment."""
        return self.status == "ok"


def _validate_names(names: Sequence[str]) -> list[str]:
    if isinstance(names, str) or not isinstance(names, Sequence):
        raise TypeError("names must be a sequence of assessor names")
    out: list[str] = []
    for name in names:
        if name not in ASSESSORS:
            raise ValueError(f"unknown assessor {name!r}: expected one of {', '.join(ASSESSORS)}")
        if name not in out:
            out.append(name)
    return out


def available_assessors(names: Sequence[str]) -> list[str]:
    """The subset of ``names`` whose CLI is on PATH, in the given order.

    Raises ValueError for a name other than claude, codex, gemini.
    """
    return [name for name in _validate_names(names) if shutil.which(ASSESSORS[name][0])]


def build_prompt(text: str, context: str | None = None) -> str:
    """The assessment prompt sent to every CLI (the same template as the Ollama engine's)."""
    has_context = bool(context and context.strip())
    return load_prompt("assess_chunk").render(
        text=text,
        context=f"\n**What the reader wants to know:**\n{context.strip()}\n" if has_context else "",
        relevance_target=" and for the question above" if has_context else "",
    )


def _run_once(argv: list[str], prompt: str, timeout: float) -> str:
    """Run one attempt; return stdout or raise RuntimeError with a one-line reason."""
    process = subprocess.Popen(
        argv,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        stdout, stderr = process.communicate(prompt, timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(process)
        process.communicate()
        raise RuntimeError(f"timed out after {timeout:g} s") from None
    if process.returncode != 0:
        detail = " ".join((stderr or stdout or "").split())[:160]
        raise RuntimeError(f"exited with status {process.returncode}: {detail}")
    return stdout


def _kill_group(process: subprocess.Popen[str]) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        process.kill()


def _assess_one(name: str, prompt: str, timeout: float, retries: int) -> AssessorResult:
    binary = shutil.which(ASSESSORS[name][0])
    if binary is None:
        return AssessorResult(name, "skipped", error=f"{ASSESSORS[name][0]} not found on PATH")
    argv = [binary, *ASSESSORS[name][1:]]
    started = time.perf_counter()
    reason = ""
    attempts = 0
    for _ in range(retries + 1):
        attempts += 1
        try:
            output = _run_once(argv, prompt, timeout)
            # Imported here: the Ollama client is heavy, and loading the definitions
            # (which list the CLI assessors) must stay light.
            from selene_dag.llm.ollama import parse_assessment_answer

            assessment = parse_assessment_answer(output)
        except (RuntimeError, OSError, EngineResponseError) as exc:
            reason = str(exc)
            continue
        elapsed = (time.perf_counter() - started) * 1000
        return AssessorResult(name, "ok", assessment, None, attempts, round(elapsed, 1))
    elapsed = (time.perf_counter() - started) * 1000
    return AssessorResult(name, "error", None, f"{name}: {reason}", attempts, round(elapsed, 1))


def assess_with_clis(
    text: str,
    names: Sequence[str],
    timeout: float = DEFAULT_TIMEOUT,
    *,
    context: str | None = None,
    max_workers: int = MAX_WORKERS,
    retries: int = 1,
) -> list[AssessorResult]:
    """Ask each named CLI to rate ``text``; one result per name, in the order given.

    Never raises for a missing or failing CLI (see the module docstring); raises
    TypeError/ValueError for bad arguments.
    """
    require_text(text, "text", allow_empty=False)
    selected = _validate_names(names)
    if timeout <= 0:
        raise ValueError(f"timeout must be > 0 seconds, got {timeout}")
    if max_workers < 1:
        raise ValueError(f"max_workers must be >= 1, got {max_workers}")
    if not selected:
        return []
    prompt = build_prompt(text, context)
    with ThreadPoolExecutor(max_workers=min(max_workers, len(selected))) as pool:
        futures = [pool.submit(_assess_one, n, prompt, timeout, retries) for n in selected]
        return [f.result() for f in futures]
