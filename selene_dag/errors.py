"""The error family of selene-dag.

Every problem a user can fix (a bad setting, a missing database, a model server that is
down, a budget that is not a positive number) is a :class:`SeleneError`; its ``str()`` is
one line saying what to do. The CLI and the HTTP API catch this family only: any other
exception is a bug and keeps its traceback. Subclasses also derive from the built-in
exception a library caller would expect (``ValueError`` for bad input), so code written
against the built-ins keeps working.
"""

from __future__ import annotations

import re
from pathlib import Path


class SeleneError(Exception):
    """Base of every user-fixable error; the message is one actionable line."""


class UsageError(SeleneError, ValueError):
    """A request the user must change: a bad option value, a missing input file."""


class NotFoundError(SeleneError, LookupError):
    """Something the request names does not exist (a session, a chunk, a database)."""


# No model reads more: a larger number is a typo (and past 2^63 DuckDB cannot take it).
MAX_BUDGET = 100_000_000


def check_budget(value: object, name: str = "budget", minimum: int = 1) -> int:
    """Return ``value`` when it is an int from ``minimum`` to :data:`MAX_BUDGET` (a bool is
    not an int here).

    Raises ``TypeError`` for a non-int and :class:`UsageError` (a ``ValueError``) for a
    number out of that range, naming ``name`` in one line. The one budget validator of the
    package: the context library calls it with ``minimum=0``, the front doors with 1.
    """
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < minimum:
        raise UsageError(f"{name} must be >= {minimum}, got {value}")
    if value > MAX_BUDGET:
        raise UsageError(f"{name} must be <= {MAX_BUDGET:,} tokens, got {value:,}")
    return value


def make_folder(folder: Path, what: str) -> Path:
    """Create ``folder`` and its parents when missing and return it. Raises UsageError
    naming the folder, ``what`` it holds and why, when it cannot be created (a home under
    a read-only or missing mount)."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(
            f"cannot create {folder} ({what}): {exc.strerror or exc}; point SELENE_HOME at "
            "a folder you can write to"
        ) from None
    return folder


# What a file system that cannot take more says (the disk full, a quota, a size limit, a
# read-only mount), by errno and in the words of SQLite and DuckDB.
_FULL_ERRNOS = frozenset({28, 122, 27, 30})  # ENOSPC, EDQUOT, EFBIG, EROFS
_SQLITE_WRITE_FAILURES = (
    "disk I/O error",
    "database or disk is full",
    "attempt to write a readonly database",
)
_DUCKDB_WRITE_FAILURE = re.compile(r'Could not write file "([^"]+)": ([^"\n]+)')


def write_failure(exc: BaseException) -> str | None:
    """One line for an error that comes from a disk that takes no more writes (full, over
    a quota or a file-size limit, read-only), wherever it was raised (the database, the
    Dagster instance's SQLite storage, a file); None for any other error. Looks through
    the exceptions chained to ``exc``."""
    seen: set[int] = set()
    pending: list[BaseException | None] = [exc]
    while pending:
        error = pending.pop()
        if error is None or id(error) in seen:
            continue
        seen.add(id(error))
        if isinstance(error, OSError) and error.errno in _FULL_ERRNOS:
            where = f"{error.filename}" if error.filename else "the home"
            return f"cannot write {where}: {error.strerror}"
        text = str(error)
        match = _DUCKDB_WRITE_FAILURE.search(text)
        if match and type(error).__module__.lstrip("_").startswith("duckdb"):
            return f"cannot write {match.group(1)}: {match.group(2).strip()}"
        if type(error).__name__ == "OperationalError" and any(
            words in text for words in _SQLITE_WRITE_FAILURES
        ):
            reason = next(words for words in _SQLITE_WRITE_FAILURES if words in text)
            return f"cannot write the Dagster run history ($SELENE_HOME/dagster): {reason}"
        pending += [error.__cause__, error.__context__, getattr(error, "orig", None)]
    return None
