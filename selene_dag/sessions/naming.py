"""How a user names a session: the one rule every command that takes a session id follows
(``distill run``, ``distill report``, ``distill seed``).

A session is named by its key, the tool's own session id, its file's path, name or stem,
the end of its stem after a separator (``…-<uuid>`` of a Codex rollout) from
``MIN_ID_PART`` characters, or, when nothing names it so, the first characters of its uuid
(``ae9d8e74``, as git's short hashes). An empty id names none: an unset shell variable ran
every session.
"""

from __future__ import annotations

import os
import re
from functools import lru_cache
from pathlib import Path

from selene_dag.errors import UsageError

_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.I)
# The shortest part of an id typed to name a session: one character matched every file
# ending in it.
MIN_ID_PART = 6


def check_id(ident: str) -> None:
    """Raise UsageError for an empty or blank session id."""
    if not ident.strip():
        raise UsageError("an empty session id names no session: give a key, id or path")


def names(ident: str, key: str, path: str, source_id: str | None) -> bool:
    """Whether ``ident`` is one of the names of the session ``key`` read from ``path``:
    its key, path (absolute, or relative to the working folder, or from ``~``), file name,
    stem or the tool's session id."""
    if ident in (key, path, Path(path).name, Path(path).stem, source_id):
        return True
    return "/" in ident and path in _absolute(ident, os.getcwd())


@lru_cache(maxsize=64)
def _absolute(ident: str, cwd: str) -> tuple[str, str]:
    """``ident`` as the absolute paths a stored session may name its file by, as given and
    with its links resolved (``distill run`` took a relative path, ``report`` and ``seed``
    found no session by it)."""
    path = Path(cwd, Path(ident).expanduser())
    try:
        resolved = str(path.resolve())
    except (OSError, RuntimeError):
        resolved = ""
    return str(path.absolute()), resolved


def ends(ident: str, path: str) -> bool:
    """Whether ``ident`` is the end of the session file's stem after a separator."""
    stem = Path(path).stem
    return len(ident) >= MIN_ID_PART and any(stem.endswith(sep + ident) for sep in ("-", "_", "."))


def begins(ident: str, path: str, source_id: str | None) -> bool:
    """Whether ``ident`` begins the session's uuid (in its file name, or the tool's id)."""
    if len(ident) < MIN_ID_PART:
        return False
    ids = [*_UUID.findall(Path(path).stem), *([source_id] if source_id else [])]
    return any(i.lower().startswith(ident.lower()) for i in ids)


def by_part(ident: str, keys: list[str], paths: list[str], sources: list[str | None]) -> list[int]:
    """The indexes of the sessions ``ident`` names by part of an id, when no whole name
    matched: the ends of file stems, else the beginnings of uuids. Raises UsageError when
    the part names several sessions."""
    for match in (
        lambda i: ends(ident, paths[i]),
        lambda i: begins(ident, paths[i], sources[i]),
    ):
        found = [i for i in range(len(paths)) if match(i)]
        if len(found) > 1:
            raise ambiguous(ident, [keys[i] for i in found], [paths[i] for i in found])
        if found:
            return found
    return []


def ambiguous(ident: str, keys: list[str], paths: list[str], part: bool = True) -> UsageError:
    """The error for an id that names several sessions (``part``: a part of their ids),
    each shown by its key, which names it alone, and its file's folder and name (two
    copies of one transcript share the name and the tool's id)."""
    pairs = sorted(zip(keys, paths, strict=True))
    shown = ", ".join(f"{key} ({Path(p).parent.name}/{Path(p).name})" for key, p in pairs[:3])
    more = ", …" if len(pairs) > 3 else ""
    said = "is part of the ids of" if part else "names"
    return UsageError(f"'{ident}' {said} {len(pairs)} sessions: {shown}{more}; name one by its key")
