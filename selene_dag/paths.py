"""Where the shipped static files (``assets/`` and ``sql/``) live.

In a built wheel they are copied into ``selene_dag/_data/``; in a source checkout or an
editable install they stay at the repository root. Both layouts resolve here.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent


@cache
def _root(name: str) -> Path:
    packaged = _PACKAGE_DIR / "_data" / name
    if packaged.is_dir():
        return packaged
    source = _PACKAGE_DIR.parent / name
    if source.is_dir():
        return source
    raise FileNotFoundError(f"selene-dag installation is missing its '{name}/' directory")


def assets_dir() -> Path:
    """Return the directory of shipped static files (prompts, demo corpus, tokenizer data)."""
    return _root("assets")


def sql_dir() -> Path:
    """Return the directory holding ``migrations/`` and ``transforms/``."""
    return _root("sql")


def transform_sql(name: str) -> str:
    """Return the text of ``sql/transforms/<name>.sql``; raise FileNotFoundError if absent."""
    path = sql_dir() / "transforms" / f"{name}.sql"
    return path.read_text(encoding="utf-8")


def transforms_hash(*names: str) -> str:
    """The first 8 hex digits of sha256 over the named transforms' texts, in order: part
    of the code version of every asset that runs them, so editing one marks exactly those
    assets stale."""
    import hashlib

    digest = hashlib.sha256()
    for name in names:
        digest.update(name.encode())
        digest.update(b"\x00")
        digest.update(transform_sql(name).encode())
    return digest.hexdigest()[:8]


def bundled_notes() -> Path:
    """The demo's notes file shipped with the package."""
    return assets_dir() / "demo" / "notes" / "til.jsonl"


def bundled_session_roots() -> str:
    """The demo's session folders, as a SELENE_SESSION_ROOTS value ("" when absent)."""
    import os

    base = assets_dir() / "demo" / "sessions"
    roots = [f"{p.name}={p}" for p in sorted(base.iterdir()) if p.is_dir()] if base.is_dir() else []
    return os.pathsep.join(roots)
