"""The error family of selene-dag.

Every problem a user can fix (a bad setting, a missing database, a model server that is
down, a budget that is not a positive number) is a :class:`SeleneError`; its ``str()`` is
one line saying what to do. The CLI and the HTTP API catch this family only: any other
exception is a bug and keeps its traceback. Subclasses also derive from the built-in
exception a library caller would expect (``ValueError`` for bad input), so code written
against the built-ins keeps working.
"""

from __future__ import annotations

import errno
import re
import shlex
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
    not an int here, nor NumPy's integers, whose arithmetic wraps around: the error says to
    convert them).

    Raises ``TypeError`` for a non-int and :class:`UsageError` (a ``ValueError``) for a
    number out of that range, naming ``name`` in one line. The one budget validator of the
    package: the context library calls it with ``minimum=0``, the front doors with 1.
    """
    if isinstance(value, bool) or not isinstance(value, int):
        # An integer of another type (NumPy's uint8 from a DataFrame) wraps around in the
        # arithmetic after this check: named, with the conversion that makes it an int.
        hint = ""
        if hasattr(type(value), "__index__") and not type(value).__name__.startswith("bool"):
            hint = f" (int({name.lstrip('-').replace('-', '_')}) makes it one)"
        raise TypeError(f"{name} must be an int, got {type(value).__name__}{hint}")
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


# What a file system that takes no more writes says, by errno and in the words of SQLite
# and DuckDB, with what to do about it.
_NO_SPACE = "free some space (or lift the limit) and run the command again"
_READ_ONLY = "make it writable and run the command again"
_ERRNO_HINTS = {
    errno.ENOSPC: _NO_SPACE,
    errno.EDQUOT: _NO_SPACE,
    errno.EFBIG: _NO_SPACE,
    errno.EROFS: _READ_ONLY,
}
_SQLITE_WRITE_FAILURES = {
    "database or disk is full": _NO_SPACE,
    "attempt to write a readonly database": _READ_ONLY,
    "disk I/O error": "check that its disk has space and is writable, then run the command again",
}
_DUCKDB_WRITE_FAILURE = re.compile(r'Could not write file "([^"]+)": ([^"\n]+)')
# An OSError as a Dagster step failure reports it: "[Errno 28] No space left on device: '/h/x'".
_ERRNO_TEXT = re.compile(r"\[Errno (\d+)\] ([^:\n]+)(?:: '([^'\n]*)')?")
_HINTS = "|".join(
    re.escape(" ".join(hint.split()[:3]))  # their opening words: a message may be cut short
    for hint in dict.fromkeys([*_ERRNO_HINTS.values(), *_SQLITE_WRITE_FAILURES.values()])
)
# The line this module writes for such a failure, inside another error's message (a failed
# run's: the step's error reached the caller as text).
_WRITE_FAILURE_LINE = re.compile(rf"cannot write [^\n]*?; (?:{_HINTS})")


def write_failure(exc: BaseException) -> str | None:
    """One line for an error that comes from a disk that takes no more writes (full, over
    a quota or a file-size limit, read-only), wherever it was raised (the database, the
    Dagster instance's SQLite storage, a file), with what to do; None for any other
    error. Looks through the exceptions chained to ``exc``."""
    seen: set[int] = set()
    pending: list[BaseException | None] = [exc]
    while pending:
        error = pending.pop()
        if error is None or id(error) in seen:
            continue
        seen.add(id(error))
        if isinstance(error, OSError) and error.errno in _ERRNO_HINTS:
            where = f" {error.filename}" if error.filename else " a file"
            return f"cannot write{where}: {error.strerror}; {_ERRNO_HINTS[error.errno]}"
        text = str(error)
        if isinstance(error, SeleneError) and (found := _WRITE_FAILURE_LINE.search(text)):
            return text[found.start() :]
        if type(error).__module__.lstrip("_").startswith("duckdb"):
            line = duckdb_write_failure(text)
            if line:
                return line
        if type(error).__name__ == "OperationalError":
            for words, hint in _SQLITE_WRITE_FAILURES.items():
                if words in text:
                    return f"cannot write the Dagster run history ($SELENE_HOME/dagster): {words}; {hint}"
        pending += [error.__cause__, error.__context__, getattr(error, "orig", None)]
        if isinstance(error, BaseExceptionGroup):
            pending += list(error.exceptions)
    return None


def step_write_failure(message: str) -> str | None:
    """``cannot write <file>: <reason>; <what to do>`` when ``message`` (a failed step's
    error as text) says a file could not be written: a DuckDB error's words, an OSError's
    ``[Errno 28] No space left on device: '<file>'`` (full, over a quota or a file-size
    limit, read-only), SQLite's; None otherwise."""
    line = duckdb_write_failure(message)
    if line:
        return line
    found = _ERRNO_TEXT.search(message)
    if found and int(found.group(1)) in _ERRNO_HINTS:
        where = found.group(3) or "a file"
        return (
            f"cannot write {where}: {found.group(2).strip()}; {_ERRNO_HINTS[int(found.group(1))]}"
        )
    for words, hint in _SQLITE_WRITE_FAILURES.items():
        if words in message:
            return f"cannot write the Dagster run history ($SELENE_HOME/dagster): {words}; {hint}"
    return None


def duckdb_write_failure(message: str) -> str | None:
    """``cannot write <file>: <reason>; <what to do>`` when ``message`` (a DuckDB error's)
    says a file could not be written for lack of space; None otherwise."""
    match = _DUCKDB_WRITE_FAILURE.search(message)
    if not match:
        return None
    reason = match.group(2).strip().rstrip(".")
    hint = _READ_ONLY if "read-only" in reason.lower() else _NO_SPACE
    return f"cannot write {match.group(1)}: {reason}; {hint}"


# A command a message suggests, quoted as `selene-dag …`, that names no home yet.
_SUGGESTED_COMMAND = re.compile(r"`selene-dag ((?:(?!--home)[^`])*)`")


def with_home(message: str, home: Path) -> str:
    """``message`` with ``--home HOME`` added to each `selene-dag …` command it suggests:
    the command suggested must read the same home as the one that said it."""
    flag = f" --home {shlex.quote(str(home))}"
    return _SUGGESTED_COMMAND.sub(lambda m: f"`selene-dag {m.group(1)}{flag}`", message)
