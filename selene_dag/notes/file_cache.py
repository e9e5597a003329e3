"""What was read from each note file, kept by the file's stat, so that a file that did not
change is neither read nor parsed again.

A notes folder is read whole at every ingest (which notes are gone is only known from the
whole list) and its data version hashes every file's bytes: in a vault of 10,000 markdown
files that is every file opened twice per ingest, and a folder of saved web pages is parsed
at a few MB/s. With a :class:`FileCache`, a file whose size, modification time, change time
and inode are those of the last read gives back its stored digest and parse result.

Safety: the change time (``st_ctime_ns``) moves on every write and cannot be set back by a
program short of setting the system clock (``touch -d`` sets the modification time, not
it). A file is kept only when its change time is at least ``RACY_SECONDS`` older than the
moment it was looked at, as git treats its index: a write in the same clock tick as the
read would leave the stat as it was. Any doubt (a cache file that does not load, another
version of the reading code, a stat that differs in one field) means the file is read
again; the cache never decides what a note holds, only whether a read may be skipped. The
cache is an SQLite file in the home's ``cache/`` folder, one per notes folder (SQLite, not
the DuckDB store: the folder is observed by processes that must not hold the store's
lock), and a walk writes only the files that changed.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import pickle
import sqlite3
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import yaml

CACHE_FOLDER = "cache"
# A file changed less than this long before it was looked at is read again next time.
RACY_SECONDS = 2.0
Stamp = tuple[int, int, int, int]


def stamp_of(st: os.stat_result) -> Stamp:
    """The stat fields that change when a file's bytes do: size, mtime, ctime, inode."""
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


@dataclass(frozen=True)
class Entry:
    """One file as last read: its stamp, the sha256 of its bytes (empty in a ``parsed``
    cache), the path it was parsed under (``rel``) and, as a 1-tuple, what parsing gave
    (``parsed``; None when the file was only hashed)."""

    stamp: Stamp
    digest: bytes
    rel: str = ""
    parsed: tuple[Any] | None = None


@cache
def _code_key() -> str:
    """A digest of the code that turns a note file into notes (this package, the text
    helpers, settings' date parsing), of Python's and PyYAML's versions and of whether
    libyaml is used: a cache written by other code is not used."""
    package = Path(__file__).resolve().parent
    digest = hashlib.sha256(f"{sys.version}|{yaml.__version__}|{yaml.__with_libyaml__}".encode())
    sources = [
        *sorted(package.glob("*.py")),
        package.parent / "text.py",
        package.parent / "config.py",
    ]
    for path in sources:
        digest.update(path.name.encode() + b"\0")
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def cache_path(home: Path, folder: Path) -> Path:
    """The cache file of the notes folder ``folder`` (a resolved path) in ``home``."""
    name = hashlib.sha256(str(folder).encode("utf-8", "surrogatepass")).hexdigest()[:24]
    return home / CACHE_FOLDER / f"notes-{name}.sqlite"


def forget(home: Path, folder: Path) -> None:
    """Delete what is kept of the notes folder ``folder`` (a forgotten folder's files)."""
    with contextlib.suppress(OSError):
        cache_path(home, folder).unlink()


class FileCache:
    """The entries of one notes folder, in ``home``'s cache folder (nothing is kept when
    ``home`` is None). ``kind`` names what the entries hold (``digests`` for the folder's
    data version, ``parsed`` for its notes), each in its own table, so that finding a
    digest does not load every note. Use :meth:`get` and :meth:`put` while walking the
    folder, then :meth:`save`, which writes only what changed and forgets the files not
    seen in this walk. Any failure of the cache's own file (locked, torn, unwritable)
    only turns it off for this walk."""

    def __init__(self, home: Path | None, folder: Path, kind: str) -> None:
        self._db: sqlite3.Connection | None = None
        self._kind = kind
        self._rows: dict[str, tuple[Stamp, bytes, str, bytes | None]] = {}
        self._seen: set[str] = set()
        self._changed: dict[str, Entry] = {}
        if home is None:
            return
        path = cache_path(home, folder)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(path, timeout=1.0, isolation_level=None)
            self._db.executescript(_SCHEMA)
            found = self._db.execute("SELECT code FROM code WHERE kind = ?", (kind,)).fetchone()
            if found is None or found[0] != _code_key():
                self._db.execute("BEGIN IMMEDIATE")
                self._db.execute("DELETE FROM files WHERE kind = ?", (kind,))
                self._db.execute(
                    "INSERT OR REPLACE INTO code (kind, code) VALUES (?, ?)", (kind, _code_key())
                )
                self._db.execute("COMMIT")
            rows = self._db.execute(
                "SELECT source, size, mtime_ns, ctime_ns, ino, digest, rel, parsed "
                "FROM files WHERE kind = ?",
                (kind,),
            )
            # Paths as bytes: a file name that is not UTF-8 is a str SQLite cannot store.
            self._rows = {
                os.fsdecode(r[0]): ((r[1], r[2], r[3], r[4]), r[5], r[6], r[7]) for r in rows
            }
        except (sqlite3.Error, OSError):
            self._close()

    def get(self, source: str, st: os.stat_result) -> Entry | None:
        """The entry of ``source`` when its stamp equals ``st``'s, else None."""
        row = self._rows.get(source)
        if row is None or row[0] != stamp_of(st):
            return None
        try:
            parsed = None if row[3] is None else (pickle.loads(row[3]),)
        except Exception:  # a torn value: read the file again
            return None
        self._seen.add(source)
        return Entry(row[0], row[1], row[2], parsed)

    def put(self, source: str, st: os.stat_result, looked_at_ns: int, entry: Entry) -> None:
        """Keep ``entry`` for ``source`` (stat ``st``, taken at ``looked_at_ns`` by
        ``time.time_ns()``, the clock change times are stamped with, before the bytes were
        read), unless the file changed too recently to be told apart from a write in the
        same clock tick."""
        if looked_at_ns - st.st_ctime_ns < RACY_SECONDS * 1e9:
            return
        self._seen.add(source)
        self._changed[source] = entry

    def save(self) -> None:
        """Write the entries put since loading and forget the files not seen; a failure
        costs only the next walk's speed."""
        db = self._db
        if db is None:
            return
        gone = [(self._kind, os.fsencode(s)) for s in self._rows.keys() - self._seen]
        rows = [
            (
                self._kind,
                os.fsencode(source),
                *e.stamp,
                e.digest,
                e.rel,
                None if e.parsed is None else pickle.dumps(e.parsed[0], protocol=5),
            )
            for source, e in self._changed.items()
        ]
        try:
            if gone or rows:
                db.execute("BEGIN IMMEDIATE")
                db.executemany("DELETE FROM files WHERE kind = ? AND source = ?", gone)
                db.executemany(
                    "INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", rows
                )
                db.execute("COMMIT")
        except (sqlite3.Error, ValueError):
            with contextlib.suppress(sqlite3.Error):
                db.execute("ROLLBACK")
        self._close()

    def _close(self) -> None:
        if self._db is not None:
            with contextlib.suppress(sqlite3.Error):
                self._db.close()
        self._db = None
        self._rows = {}


_SCHEMA = """
CREATE TABLE IF NOT EXISTS code (kind TEXT PRIMARY KEY, code TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files (
    kind TEXT NOT NULL, source BLOB NOT NULL,
    size INTEGER, mtime_ns INTEGER, ctime_ns INTEGER, ino INTEGER,
    digest BLOB, rel TEXT, parsed BLOB,
    PRIMARY KEY (kind, source)
);
"""
