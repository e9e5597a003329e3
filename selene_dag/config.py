"""Every ``SELENE_*`` setting in one place, read from the environment with defaults.

``load_settings()`` validates each value and raises :class:`SettingsError` whose message is
one line naming the variable and what it accepts. Nothing else in the package reads
``os.environ`` for SELENE_* variables.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

LLM_ENGINES = ("extractive", "ollama")
SESSION_PLATFORMS = ("claude", "codex", "gemini")
DEFAULT_SESSION_ROOTS = (
    ("claude", "~/.claude/projects"),
    ("codex", "~/.codex/sessions"),
    ("gemini", "~/.gemini/tmp"),
)


class SettingsError(ValueError):
    """An environment variable holds a value selene-dag cannot use (message: one line)."""


@dataclass(frozen=True)
class SessionRoot:
    """A directory scanned for session files; ``platform`` None means detect per file."""

    path: Path
    platform: str | None


@dataclass(frozen=True)
class SettingSpec:
    """Documentation of one variable: its name, default as shown to users, and meaning."""

    name: str
    default: str
    meaning: str


SPECS: tuple[SettingSpec, ...] = (
    SettingSpec(
        "SELENE_HOME", "./.selene", "Working directory: database, distilled files, Dagster home."
    ),
    SettingSpec("SELENE_DB", "$SELENE_HOME/selene.duckdb", "The DuckDB file."),
    SettingSpec(
        "SELENE_NOTES_DIR", "$SELENE_HOME/notes", "Folder of markdown / JSONL notes to ingest."
    ),
    SettingSpec("SELENE_LLM", "extractive", "Engine: `extractive` (offline, default) or `ollama`."),
    SettingSpec(
        "SELENE_MODEL", "mistral:7b", "Target model: its tokenizer counts budgets; Ollama runs it."
    ),
    SettingSpec("SELENE_OLLAMA_HOST", "http://127.0.0.1:11434", "Ollama server URL."),
    SettingSpec("SELENE_OLLAMA_TIMEOUT", "120", "Seconds before one Ollama request times out."),
    SettingSpec(
        "SELENE_SESSION_ROOTS",
        "claude=~/.claude/projects:codex=~/.codex/sessions:gemini=~/.gemini/tmp",
        "Session folders, `os.pathsep`-separated, each `platform=DIR` or a bare `DIR` (platform detected).",
    ),
    SettingSpec(
        "SELENE_NOW",
        "(wall clock)",
        "Fixed ISO-8601 'now' for reproducible tiers, demos and tests.",
    ),
    SettingSpec(
        "SELENE_ESSENCE_LIMIT",
        "10 with ollama, unlimited with extractive",
        "Most essences computed per `processed_notes` run (0 = unlimited).",
    ),
    SettingSpec(
        "SELENE_THREAD_ACTIVE_DAYS", "90", "A thread with no activity for longer is archived."
    ),
    SettingSpec(
        "SELENE_DAILY_START",
        "(earliest note in SELENE_NOTES_DIR)",
        "First day of the `daily_summaries` partitions.",
    ),
    SettingSpec("SELENE_ASK_MIN_RECALL", "0.6", "Threshold of the `ask_quality` asset check."),
    SettingSpec(
        "SELENE_CLI_ASSESSORS",
        "claude,codex,gemini",
        "CLI assessors tried when present on PATH (empty: none).",
    ),
)


@dataclass(frozen=True)
class Settings:
    """Validated settings; build with :func:`load_settings`."""

    home: Path
    db_path: Path
    notes_dir: Path
    llm: str
    model: str
    ollama_host: str
    ollama_timeout: float
    session_roots: tuple[SessionRoot, ...]
    now_override: datetime | None
    essence_limit: int | None
    thread_active_days: int
    ask_min_recall: float
    daily_start: datetime | None
    cli_assessors: tuple[str, ...]

    def now(self) -> datetime:
        """Return SELENE_NOW when set, else the current UTC time (always timezone-aware)."""
        return self.now_override or datetime.now(UTC)

    @property
    def distilled_dir(self) -> Path:
        """Directory where distilled session files are written."""
        return self.home / "distilled"

    @property
    def dagster_home(self) -> Path:
        """DAGSTER_HOME used by `make dev` / `selene-dag dev` so runs persist."""
        return self.home / "dagster"


def _fail(name: str, value: str, allowed: str) -> SettingsError:
    return SettingsError(f"{name}={value!r} is invalid: expected {allowed}")


def parse_datetime(value: str) -> datetime:
    """Parse an ISO-8601 date or datetime; naive values are taken as UTC."""
    text = value.strip()
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    parsed = datetime.fromisoformat(text)
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed


def parse_session_roots(value: str) -> tuple[SessionRoot, ...]:
    """Parse SELENE_SESSION_ROOTS (``os.pathsep``-separated ``platform=DIR`` or ``DIR``)."""
    roots: list[SessionRoot] = []
    for entry in value.split(os.pathsep):
        entry = entry.strip()
        if not entry:
            continue
        platform: str | None = None
        path = entry
        head, sep, tail = entry.partition("=")
        if sep:
            if head not in SESSION_PLATFORMS:
                raise _fail(
                    "SELENE_SESSION_ROOTS",
                    entry,
                    f"'platform=DIR' with platform one of {', '.join(SESSION_PLATFORMS)}, or a bare DIR",
                )
            platform, path = head, tail
        if not path:
            raise _fail("SELENE_SESSION_ROOTS", entry, "a directory after '='")
        roots.append(SessionRoot(Path(path).expanduser(), platform))
    return tuple(roots)


def _int(env: Mapping[str, str], name: str, default: int | None, minimum: int = 0) -> int | None:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        number = int(raw)
    except ValueError:
        raise _fail(name, raw, f"a whole number >= {minimum}") from None
    if number < minimum:
        raise _fail(name, raw, f"a whole number >= {minimum}")
    return number


def _float(env: Mapping[str, str], name: str, default: float, low: float, high: float) -> float:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        number = float(raw)
    except ValueError:
        raise _fail(name, raw, f"a number from {low} to {high}") from None
    if not low <= number <= high:
        raise _fail(name, raw, f"a number from {low} to {high}")
    return number


def _choice(env: Mapping[str, str], name: str, default: str, allowed: tuple[str, ...]) -> str:
    raw = env.get(name, "").strip().lower() or default
    if raw not in allowed:
        raise _fail(name, raw, "one of " + ", ".join(allowed))
    return raw


def load_settings(env: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
    """Read and validate every SELENE_* variable from ``env`` (default ``os.environ``).

    Keyword ``overrides`` replace fields after validation (used by the CLI's ``--home``).
    Raises :class:`SettingsError` with a one-line message on an invalid value.
    """
    env = os.environ if env is None else env
    home = Path(overrides.pop("home", None) or env.get("SELENE_HOME") or "./.selene").expanduser()
    db_raw = env.get("SELENE_DB", "").strip()
    db_path = Path(db_raw).expanduser() if db_raw else home / "selene.duckdb"
    notes_raw = env.get("SELENE_NOTES_DIR", "").strip()
    notes_dir = Path(notes_raw).expanduser() if notes_raw else home / "notes"
    llm = _choice(env, "SELENE_LLM", "extractive", LLM_ENGINES)
    model = env.get("SELENE_MODEL", "").strip() or "mistral:7b"
    host = env.get("SELENE_OLLAMA_HOST", "").strip() or "http://127.0.0.1:11434"
    if not host.startswith(("http://", "https://")):
        raise _fail("SELENE_OLLAMA_HOST", host, "a URL starting with http:// or https://")
    timeout = _float(env, "SELENE_OLLAMA_TIMEOUT", 120.0, 0.1, 86400.0)

    roots_raw = env.get("SELENE_SESSION_ROOTS")
    if roots_raw is None or not roots_raw.strip():
        roots = tuple(SessionRoot(Path(p).expanduser(), plat) for plat, p in DEFAULT_SESSION_ROOTS)
    else:
        roots = parse_session_roots(roots_raw)

    now_raw = env.get("SELENE_NOW", "").strip()
    now_override = None
    if now_raw:
        try:
            now_override = parse_datetime(now_raw)
        except ValueError:
            raise _fail(
                "SELENE_NOW", now_raw, "an ISO-8601 date or datetime, e.g. 2026-07-01T00:00:00Z"
            ) from None

    daily_raw = env.get("SELENE_DAILY_START", "").strip()
    daily_start = None
    if daily_raw:
        try:
            daily_start = parse_datetime(daily_raw)
        except ValueError:
            raise _fail(
                "SELENE_DAILY_START", daily_raw, "an ISO-8601 date, e.g. 2020-01-01"
            ) from None

    default_limit = 10 if llm == "ollama" else None
    limit = _int(env, "SELENE_ESSENCE_LIMIT", default_limit)
    essence_limit = None if limit == 0 else limit
    active_days = _int(env, "SELENE_THREAD_ACTIVE_DAYS", 90, minimum=1)
    min_recall = _float(env, "SELENE_ASK_MIN_RECALL", 0.6, 0.0, 1.0)
    assessors_raw = env.get("SELENE_CLI_ASSESSORS")
    if assessors_raw is None:
        assessors: tuple[str, ...] = SESSION_PLATFORMS
    else:
        assessors = tuple(a.strip().lower() for a in assessors_raw.split(",") if a.strip())
        for name in assessors:
            if name not in SESSION_PLATFORMS:
                raise _fail(
                    "SELENE_CLI_ASSESSORS", assessors_raw, "a comma list of claude, codex, gemini"
                )

    settings = Settings(
        home=home,
        db_path=db_path,
        notes_dir=notes_dir,
        llm=llm,
        model=model,
        ollama_host=host.rstrip("/"),
        ollama_timeout=timeout,
        session_roots=roots,
        now_override=now_override,
        essence_limit=essence_limit,
        thread_active_days=active_days or 90,
        ask_min_recall=min_recall,
        daily_start=daily_start,
        cli_assessors=assessors,
    )
    if overrides:
        settings = replace(settings, **overrides)
    return settings


def settings_table_markdown() -> str:
    """Return the settings as a markdown table (used to keep the README honest)."""
    lines = ["| variable | default | meaning |", "|---|---|---|"]
    lines += [f"| `{s.name}` | `{s.default}` | {s.meaning} |" for s in SPECS]
    return "\n".join(lines)
