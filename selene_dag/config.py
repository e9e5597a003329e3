"""Every ``SELENE_*`` setting in one typed object, each default written once.

``Settings()`` reads the process environment (pydantic-settings, prefix ``SELENE_``);
``load_settings(env)`` reads a given mapping the same way. Either validates every value and
raises :class:`SettingsError` whose message is one line naming the variable and what it
accepts. Settings are passed explicitly from the front doors to the code that needs them;
nothing in the package writes them back into ``os.environ``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from contextvars import ContextVar
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import urlsplit

from pydantic import Field, ValidationError, ValidationInfo, field_validator, model_validator
from pydantic.dataclasses import dataclass
from pydantic.fields import FieldInfo
from pydantic_settings import (
    BaseSettings,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from selene_dag.context.tokens import DEFAULT_MODEL
from selene_dag.errors import SeleneError
from selene_dag.store import DEFAULT_LOCK_WAIT

LLM_ENGINES = ("extractive", "ollama")
SESSION_PLATFORMS = ("claude", "codex", "gemini")
DEFAULT_SESSION_ROOTS = (
    ("claude", "~/.claude/projects"),
    ("codex", "~/.codex/sessions"),
    ("gemini", "~/.gemini/tmp"),
)
DEFAULT_HOME = "./.selene"
DEFAULT_OLLAMA_HOST = "http://127.0.0.1:11434"
# Seed 000: with a model server, essences are limited to 10 notes per run.
OLLAMA_ESSENCE_LIMIT = 10
# How a distilled session chooses its chunks when they do not all fit (seed 003):
# "hybrid" weighs consensus 0.7 and recency 0.3.
DISTILL_SORT_MODES = ("hybrid", "consensus", "chronological")


class SettingsError(SeleneError, ValueError):
    """An environment variable holds a value selene-dag cannot use (message: one line)."""


@dataclass(frozen=True)
class SessionRoot:
    """A directory scanned for session files; ``platform`` None means detect per file."""

    path: Path
    platform: str | None


def _fail(name: str, value: object, allowed: str) -> ValueError:
    return ValueError(f"{name}={str(value)!r} is invalid: expected {allowed}")


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
    """Parse SELENE_SESSION_ROOTS (``os.pathsep``-separated ``platform=DIR`` or ``DIR``).

    Raises ValueError naming the variable on an unknown platform or an empty directory.
    """
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


def _blank(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def _whole(name: str, value: Any, minimum: int) -> int:
    try:
        number = int(str(value).strip())
    except ValueError:
        raise _fail(name, value, f"a whole number >= {minimum}") from None
    if number < minimum:
        raise _fail(name, value, f"a whole number >= {minimum}")
    return number


_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})


def _flag(name: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in _TRUE or text in _FALSE:
        return text in _TRUE
    raise _fail(name, value, "1 or 0 (true or false)")


def _number(name: str, value: Any, low: float, high: float) -> float:
    try:
        number = float(str(value).strip())
    except ValueError:
        raise _fail(name, value, f"a number from {low} to {high}") from None
    if not low <= number <= high:
        raise _fail(name, value, f"a number from {low} to {high}")
    return number


def _shown(default: str) -> dict[str, str]:
    """The default as the README shows it, where it is derived rather than a literal."""
    return {"shown_default": default}


class Settings(BaseSettings):
    """Validated settings. Field ``X`` is read from ``SELENE_X`` unless its alias says
    otherwise; ``description`` is what the README's settings table says of it."""

    model_config = SettingsConfigDict(
        env_prefix="SELENE_", frozen=True, extra="ignore", populate_by_name=True
    )

    home: Path = Field(
        Path(DEFAULT_HOME),
        description="Working directory: database, distilled files, Dagster home.",
    )
    db_path: Path | None = Field(
        None,
        validation_alias="SELENE_DB",
        description="The DuckDB file.",
        json_schema_extra=_shown("$SELENE_HOME/selene.duckdb"),
    )
    notes_dir: Path | None = Field(
        None,
        description=(
            "Folder of notes to ingest (markdown, plain text, JSON or JSONL files, chat exports)."
        ),
        json_schema_extra=_shown("$SELENE_HOME/notes"),
    )
    llm: str = Field(
        "extractive",
        description="Engine: `extractive` (offline, default) or `ollama`. After a change, "
        "`ingest` analyses the notes again and `distill run --all` rates the sessions again.",
    )
    model: str = Field(
        DEFAULT_MODEL,
        description="Target model: its tokenizer counts budgets; Ollama runs it. After a "
        "change, `distill run --all` runs again the sessions counted in the model before.",
    )
    ollama_host: str = Field(DEFAULT_OLLAMA_HOST, description="Ollama server URL.")
    ollama_timeout: float = Field(120.0, description="Seconds before one Ollama request times out.")
    lock_wait: float = Field(
        DEFAULT_LOCK_WAIT,
        description=(
            "Seconds a command, request or run waits for another process to release the "
            "database before it gives up (0: at once)."
        ),
    )
    session_roots: Annotated[tuple[SessionRoot, ...], NoDecode] = Field(
        tuple(SessionRoot(Path(p).expanduser(), plat) for plat, p in DEFAULT_SESSION_ROOTS),
        description=(
            "Session folders, `os.pathsep`-separated, each `platform=DIR` or a bare `DIR` "
            "(platform detected)."
        ),
        json_schema_extra=_shown(":".join(f"{plat}={p}" for plat, p in DEFAULT_SESSION_ROOTS)),
    )
    now_override: datetime | None = Field(
        None,
        validation_alias="SELENE_NOW",
        description="Fixed ISO-8601 'now' for reproducible tiers, demos and tests; without "
        "it, a `now` file in the home (the demo writes one) pins it for that home.",
        json_schema_extra=_shown("(wall clock)"),
    )
    essence_limit: int | None = Field(
        None,
        description="Most essences computed per `processed_notes` run (0 = unlimited).",
        json_schema_extra=_shown(f"{OLLAMA_ESSENCE_LIMIT} with ollama, unlimited with extractive"),
    )
    thread_active_days: int = Field(
        90, description="A thread with no activity for longer is archived."
    )
    daily_start: datetime | None = Field(
        None,
        description="First day of the `daily_summaries` partitions (earlier notes get no daily summary).",
        json_schema_extra=_shown("2020-01-01"),
    )
    ask_min_recall: float = Field(0.6, description="Threshold of the `ask_quality` asset check.")
    cli_assessors: Annotated[tuple[str, ...], NoDecode] = Field(
        SESSION_PLATFORMS,
        description="CLI assessors tried when present on PATH (empty: none).",
        json_schema_extra=_shown(",".join(SESSION_PLATFORMS)),
    )
    assessor_timeout: float = Field(
        30.0,
        description=(
            "Seconds a CLI assessor (claude, codex, gemini) may take on one chunk before the "
            "attempt counts as failed (it is tried twice)."
        ),
    )
    assessor_concurrency: int = Field(
        3,
        description="How many CLI assessors may rate one chunk at the same time (1: one after another).",
    )
    distill_token_budget: int = Field(
        80_000,
        description=(
            "Target-model tokens of one distilled session, its preamble and wrappers included."
        ),
    )
    distill_min_consensus: float = Field(
        5.0, description="Consensus (0–10) a chunk needs to be kept in a distilled session."
    )
    distill_sort_mode: str = Field(
        "hybrid",
        description=(
            "Which chunks a distilled session keeps when not all fit: `hybrid` "
            "(0.7 consensus + 0.3 recency), `consensus` or `chronological`."
        ),
    )
    distill_question_weight: float = Field(
        0.6,
        description=(
            "`distill seed --question`: weight of a chunk's relevance to the question (0–10) "
            "in its score."
        ),
    )
    distill_static_weight: float = Field(
        0.4,
        description=(
            "`distill seed --question`: weight of a chunk's consensus (0–10) in its score."
        ),
    )
    distill_rerank: bool = Field(
        True,
        json_schema_extra=_shown("1"),
        description=(
            "`distill seed --question` with `SELENE_LLM=ollama`: whether the model reads the "
            "best candidates and lifts those it picks (`0` leaves the full-text order)."
        ),
    )

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Keyword arguments win over the environment; no .env or secrets files."""
        return (init_settings, _EnvironmentSource(settings_cls))

    @field_validator("home", "db_path", "notes_dir", mode="before")
    @classmethod
    def _path(cls, value: Any, info: ValidationInfo) -> Any:
        if _blank(value):
            # A blank SELENE_HOME (set but empty) is the default home, as when unset.
            return Path(DEFAULT_HOME).absolute() if info.field_name == "home" else None
        # Absolute: what is stored under the home (a distilled file's path) is the same
        # whether the home was named by a relative path or not, and from any folder.
        return Path(str(value).strip()).expanduser().absolute()

    @field_validator("llm", mode="before")
    @classmethod
    def _engine(cls, value: Any) -> str:
        name = "extractive" if _blank(value) else str(value).strip().lower()
        if name not in LLM_ENGINES:
            raise _fail("SELENE_LLM", name, "one of " + ", ".join(LLM_ENGINES))
        return name

    @field_validator("model", mode="before")
    @classmethod
    def _model(cls, value: Any) -> str:
        return DEFAULT_MODEL if _blank(value) else str(value).strip()

    @field_validator("ollama_host", mode="before")
    @classmethod
    def _host(cls, value: Any) -> str:
        host = DEFAULT_OLLAMA_HOST if _blank(value) else str(value).strip()
        if not host.startswith(("http://", "https://")):
            raise _fail("SELENE_OLLAMA_HOST", host, "a URL starting with http:// or https://")
        try:  # the client's own check came as a traceback at the first model call
            parsed = urlsplit(host)
            parsed.port  # noqa: B018 - raises ValueError for a port past 65535
        except ValueError:
            raise _fail("SELENE_OLLAMA_HOST", host, "a URL whose port is 0 to 65535") from None
        if not parsed.hostname:
            raise _fail("SELENE_OLLAMA_HOST", host, "a URL naming a host (http://127.0.0.1:11434)")
        return host.rstrip("/")

    @field_validator("ollama_timeout", mode="before")
    @classmethod
    def _timeout(cls, value: Any) -> float:
        return 120.0 if _blank(value) else _number("SELENE_OLLAMA_TIMEOUT", value, 0.1, 86400.0)

    @field_validator("lock_wait", mode="before")
    @classmethod
    def _lock_wait(cls, value: Any) -> float:
        if _blank(value):
            return DEFAULT_LOCK_WAIT
        return _number("SELENE_LOCK_WAIT", value, 0.0, 86400.0)

    @field_validator("session_roots", mode="before")
    @classmethod
    def _roots(cls, value: Any) -> Any:
        if _blank(value):
            return cls.model_fields["session_roots"].default
        return parse_session_roots(value) if isinstance(value, str) else value

    @field_validator("now_override", mode="before")
    @classmethod
    def _now(cls, value: Any) -> Any:
        if _blank(value):
            return None
        if isinstance(value, datetime):
            return value if value.tzinfo else value.replace(tzinfo=UTC)
        try:
            return parse_datetime(str(value))
        except ValueError:
            raise _fail(
                "SELENE_NOW", value, "an ISO-8601 date or datetime, e.g. 2026-07-01T00:00:00Z"
            ) from None

    @field_validator("daily_start", mode="before")
    @classmethod
    def _daily_start(cls, value: Any) -> Any:
        if _blank(value):
            return None
        if isinstance(value, datetime):
            return value
        try:
            return parse_datetime(str(value))
        except ValueError:
            raise _fail("SELENE_DAILY_START", value, "an ISO-8601 date, e.g. 2020-01-01") from None

    @field_validator("essence_limit", mode="before")
    @classmethod
    def _essence_limit(cls, value: Any) -> Any:
        # -1 stands for "not set": the default depends on the engine (resolved below).
        return -1 if _blank(value) else _whole("SELENE_ESSENCE_LIMIT", value, 0)

    @field_validator("thread_active_days", mode="before")
    @classmethod
    def _active_days(cls, value: Any) -> int:
        return 90 if _blank(value) else _whole("SELENE_THREAD_ACTIVE_DAYS", value, 1)

    @field_validator("ask_min_recall", mode="before")
    @classmethod
    def _min_recall(cls, value: Any) -> float:
        return 0.6 if _blank(value) else _number("SELENE_ASK_MIN_RECALL", value, 0.0, 1.0)

    @field_validator("cli_assessors", mode="before")
    @classmethod
    def _assessors(cls, value: Any) -> Any:
        if value is None:
            return SESSION_PLATFORMS
        if not isinstance(value, str):
            return tuple(value)
        names = tuple(a.strip().lower() for a in value.split(",") if a.strip())
        for name in names:
            if name not in SESSION_PLATFORMS:
                raise _fail("SELENE_CLI_ASSESSORS", value, "a comma list of claude, codex, gemini")
        return names

    @field_validator("assessor_timeout", mode="before")
    @classmethod
    def _assessor_timeout(cls, value: Any) -> float:
        return 30.0 if _blank(value) else _number("SELENE_ASSESSOR_TIMEOUT", value, 0.1, 3600.0)

    @field_validator("assessor_concurrency", mode="before")
    @classmethod
    def _assessor_concurrency(cls, value: Any) -> int:
        if _blank(value):
            return 3
        count = _whole("SELENE_ASSESSOR_CONCURRENCY", value, 1)
        if count > 16:
            raise _fail("SELENE_ASSESSOR_CONCURRENCY", value, "a whole number from 1 to 16")
        return count

    @field_validator("distill_question_weight", "distill_static_weight", mode="before")
    @classmethod
    def _seed_weight(cls, value: Any, info: ValidationInfo) -> float:
        name = f"SELENE_{str(info.field_name).upper()}"
        if _blank(value):
            return 0.6 if info.field_name == "distill_question_weight" else 0.4
        return _number(name, value, 0.0, 10.0)

    @field_validator("distill_rerank", mode="before")
    @classmethod
    def _distill_rerank(cls, value: Any) -> bool:
        return True if _blank(value) else _flag("SELENE_DISTILL_RERANK", value)

    @field_validator("distill_token_budget", mode="before")
    @classmethod
    def _distill_budget(cls, value: Any) -> int:
        return 80_000 if _blank(value) else _whole("SELENE_DISTILL_TOKEN_BUDGET", value, 1)

    @field_validator("distill_min_consensus", mode="before")
    @classmethod
    def _distill_consensus(cls, value: Any) -> float:
        if _blank(value):
            return 5.0
        return _number("SELENE_DISTILL_MIN_CONSENSUS", value, 0.0, 10.0)

    @field_validator("distill_sort_mode", mode="before")
    @classmethod
    def _distill_sort(cls, value: Any) -> str:
        mode = "hybrid" if _blank(value) else str(value).strip().lower()
        if mode not in DISTILL_SORT_MODES:
            raise _fail("SELENE_DISTILL_SORT_MODE", mode, "one of " + ", ".join(DISTILL_SORT_MODES))
        return mode

    @model_validator(mode="after")
    def _derived(self) -> Settings:
        # Frozen model: derived defaults are filled in once, right after validation.
        if self.db_path is None:
            object.__setattr__(self, "db_path", self.home / "selene.duckdb")
        if is_demo_home(self.home):
            # The demo's home reads the bundled corpus unless told otherwise: `dev` on it
            # watched the user's own session folders (and would have copied their
            # transcripts in) and a notes folder the home never had.
            from selene_dag.paths import bundled_notes, bundled_session_roots

            if self.notes_dir is None:
                object.__setattr__(self, "notes_dir", bundled_notes())
            roots = bundled_session_roots()
            if "session_roots" not in self.model_fields_set and roots:
                object.__setattr__(self, "session_roots", parse_session_roots(roots))
        if self.notes_dir is None:
            object.__setattr__(self, "notes_dir", self.home / "notes")
        if self.essence_limit == -1:
            default = OLLAMA_ESSENCE_LIMIT if self.llm == "ollama" else None
            object.__setattr__(self, "essence_limit", default)
        elif self.essence_limit == 0:
            object.__setattr__(self, "essence_limit", None)
        if self.now_override is None:
            # A home's pinned day holds for Settings() as for load_settings(): a library
            # caller's "now" moved with the calendar, and every call refreshed the tiers.
            pinned = pinned_now(self.home)
            if pinned is not None:
                object.__setattr__(self, "now_override", pinned)
        return self

    def now(self) -> datetime:
        """Return SELENE_NOW when set, else the current UTC time (always timezone-aware)."""
        return self.now_override or datetime.now(UTC)

    @property
    def distilled_dir(self) -> Path:
        """Directory where distilled session files are written."""
        return self.home / "distilled"

    @property
    def dagster_home(self) -> Path:
        """DAGSTER_HOME of this home's persistent Dagster instance (CLI runs and `dev`)."""
        return self.home / "dagster"

    def replace(self, **changes: Any) -> Settings:
        """A copy with ``changes`` (field names) validated again; derived defaults (the
        database and notes folder under ``home``) follow a changed ``home``. Raises
        TypeError for a name that is no setting."""
        _check_fields(changes)
        data = self.model_dump()
        if "home" in changes:
            for derived in ("db_path", "notes_dir"):
                if data[derived] == self.home / _DERIVED[derived]:
                    data[derived] = None
        if data["essence_limit"] is None and self.llm == "ollama":
            # With ollama, no limit is what SELENE_ESSENCE_LIMIT=0 asked for (its default is
            # a number): dumped as None it read as "not set" and came back as the default.
            data["essence_limit"] = 0
        data.update(changes)
        return _validated(data)


_DERIVED = {"db_path": "selene.duckdb", "notes_dir": "notes"}


def env_name(field: str) -> str:
    """The environment variable of a Settings field (``db_path`` → ``SELENE_DB``)."""
    alias = Settings.model_fields[field].validation_alias
    return alias if isinstance(alias, str) else f"SELENE_{field.upper()}"


# The mapping that stands for the environment while load_settings(env) builds Settings.
_ENVIRONMENT: ContextVar[Mapping[str, str] | None] = ContextVar("selene_env", default=None)


class _EnvironmentSource(PydanticBaseSettingsSource):
    """SELENE_* variables of the process environment, or of the mapping given to
    :func:`load_settings`; an unset variable leaves its field to the default."""

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        source = _ENVIRONMENT.get()
        source = os.environ if source is None else source
        name = env_name(field_name)
        return source.get(name), name, False

    def __call__(self) -> dict[str, Any]:
        values: dict[str, Any] = {}
        for field_name, field in self.settings_cls.model_fields.items():
            value, _, _ = self.get_field_value(field, field_name)
            if value is not None:
                values[field_name] = value
        return values


def _validated(data: Mapping[str, Any], env: Mapping[str, str] | None = None) -> Settings:
    token = _ENVIRONMENT.set({} if env is None else env)
    try:
        return Settings(**data)
    except ValidationError as exc:
        raise _one_line(exc) from None
    finally:
        _ENVIRONMENT.reset(token)


def _one_line(exc: ValidationError) -> SettingsError:
    error = exc.errors()[0]
    original = (error.get("ctx") or {}).get("error")
    if original is not None:
        return SettingsError(str(original))
    field = str(error["loc"][0]) if error.get("loc") else "setting"
    name = env_name(field) if field in Settings.model_fields else field
    return SettingsError(f"{name}={error.get('input')!r} is invalid: {error['msg']}")


def load_settings(env: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
    """Read and validate every SELENE_* variable of ``env`` (default: the process
    environment). Keyword ``overrides`` (field names, e.g. ``home=``) win over ``env``.

    Raises :class:`SettingsError` with a one-line message on an invalid value, TypeError
    for a keyword that names no setting (``homee=`` went unseen, and the default home was
    used).
    """
    _check_fields(overrides)
    data = {k: v for k, v in overrides.items() if v is not None}
    return _validated(data, os.environ if env is None else env)


def _check_fields(given: Mapping[str, Any]) -> None:
    unknown = sorted(set(given) - set(Settings.model_fields))
    if unknown:
        raise TypeError(
            f"no setting named {', '.join(map(repr, unknown))}: the settings are "
            f"{', '.join(sorted(Settings.model_fields))}"
        )


# A home whose "now" is pinned (the demo's) holds it in this file: every command on the
# home then sees the same day, so what it prints does not move with the calendar.
PINNED_NOW_FILE = "now"
# The demo's home holds this file: its notes folder and session roots are then the bundled
# corpus's (unless SELENE_NOTES_DIR / SELENE_SESSION_ROOTS say otherwise).
DEMO_MARKER_FILE = "demo"
DEMO_MARKER_TEXT = (
    "This home holds selene-dag's demo: commands on it read the bundled notes and sessions.\n"
)


def is_demo_home(home: Path) -> bool:
    """Whether ``home`` holds the demo's marker: a ``demo`` file the demo wrote (a file of
    that name with other text, or a folder, is no marker)."""
    try:
        with (home / DEMO_MARKER_FILE).open("rb") as handle:
            text = handle.read(len(DEMO_MARKER_TEXT) + 2).replace(b"\r\n", b"\n")
            return text == DEMO_MARKER_TEXT.encode()
    except OSError:  # none, a folder, unreadable
        return False


def pinned_now(home: Path) -> datetime | None:
    """The 'now' pinned for ``home`` (its ``now`` file, ISO-8601), None when none is.
    Raises SettingsError naming the file when it holds no date."""
    path = home / PINNED_NOW_FILE
    try:
        text = path.read_text(encoding="utf-8").strip()
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None
    try:
        return parse_datetime(text)
    except ValueError:
        raise SettingsError(
            f"{path} holds {text!r}, not an ISO-8601 date: fix it, or delete it to use the "
            "wall clock"
        ) from None


def settings_table_markdown() -> str:
    """Return the settings as a markdown table (the README's table is kept equal to it)."""
    lines = ["| variable | default | meaning |", "|---|---|---|"]
    for field, info in Settings.model_fields.items():
        extra = info.json_schema_extra if isinstance(info.json_schema_extra, dict) else {}
        shown = extra.get("shown_default")
        if shown is None:
            default = info.default
            shown = str(default) if not isinstance(default, Path) else f"./{default}"
        lines.append(f"| `{env_name(field)}` | `{shown}` | {info.description} |")
    return "\n".join(lines)
