"""Which ids the notes of an archive named alone to ``ingest`` get.

An archive's notes are named by their path inside it, ``<key>/<path inside>``, so that a
newer download of an export (another file name, the same pages) updates the notes of the
one before, as a folder that moved keeps its notes. Two archives side by side holding the
same paths (two vaults zipped) overwrote each other's notes, so an archive whose ids
another file of the folder holds (a plain file, or another archive that is still there, or
of which this one holds less than half the notes) gets ids of its own,
``<key>/<archive's path in the folder>/<path inside>``. An archive that took the place of
one gone from the folder (renamed, or downloaded again), holding at least half of its
notes' paths, takes its ids, and so does a newer export beside an older one still there
(most of the notes they share say the same: a Takeout download is named by its time).
Decided when the archive is first stored, then kept: the prefix its stored notes carry
says which.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path, PurePosixPath

import duckdb

from selene_dag.notes.folders import IngestScope
from selene_dag.notes.ingest import IngestResult, is_archive
from selene_dag.notes.notion import is_notion_page


def own_prefix(scope: IngestScope) -> str:
    """``<key>/<archive's path in the folder>/``: the ids of an archive's own notes."""
    return scope.note_id(f"{scope.path.relative_to(scope.folder).as_posix()}/")


def stored_prefix(conn: duckdb.DuckDBPyConnection, archive: str, scope: IngestScope) -> str | None:
    """What the live or deleted stored notes of ``archive`` (a file's path) start with, read
    off a note whose id ends with its path inside; None when none of its notes is stored."""
    source = f"{archive}!/"
    row = conn.execute(
        "SELECT id, string_split(source, '!/')[-1] AS inside FROM notes "
        "WHERE starts_with(source, ?) AND starts_with(id, ?) "
        "ORDER BY ends_with(id, '/' || inside) DESC, id LIMIT 1",
        [source, scope.id_prefix],
    ).fetchone()
    if row is None:
        return None
    note_id, inside = str(row[0]), str(row[1])
    if note_id.endswith("/" + inside):
        return note_id[: len(note_id) - len(inside)]
    own = own_prefix(scope)  # its notes are named by ids of their own (JSON): by the start
    return own if note_id.startswith(own) else scope.id_prefix


def archive_id_prefix(conn: duckdb.DuckDBPyConnection, scope: IngestScope) -> str:
    """What the ids of the notes ingesting ``scope.path`` stored start with: an archive's
    own prefix or the one it took over (see the module docstring), else ``<key>/``."""
    if not is_archive(scope.path):
        return scope.id_prefix
    return stored_prefix(conn, str(scope.path), scope) or scope.id_prefix


def archive_prefix(
    conn: duckdb.DuckDBPyConnection, scope: IngestScope, result: IngestResult
) -> str:
    """The prefix the notes of the archive ``scope.path``, read into ``result`` (with ids
    ``<key>/…``), are stored under (see the module docstring)."""
    archive = str(scope.path)
    stored = stored_prefix(conn, archive, scope)
    if stored is not None:
        return stored
    here = {_inside(n.source) for n in result.notes}
    matches: list[tuple[int, str]] = []
    for gone in _gone_archives(conn, scope, archive):
        paths = {
            str(p)
            for (p,) in conn.execute(
                "SELECT string_split(source, '!/')[-1] FROM notes WHERE deleted_at IS NULL "
                "AND starts_with(source, ?) AND starts_with(id, ?)",
                [f"{gone}!/", scope.id_prefix],
            ).fetchall()
        }
        shared = len(paths & here)
        if paths and shared * 2 >= len(paths):  # renamed, or downloaded again
            matches.append((shared, gone))
    # Only one that matches best: two gone archives of the same paths cannot tell which
    # one this is (two renamed at once swapped their ids).
    matches.sort(key=lambda m: (-m[0], m[1]))
    if matches and (len(matches) == 1 or matches[0][0] > matches[1][0]):
        return stored_prefix(conn, matches[0][1], scope) or scope.id_prefix
    if _clashes(conn, scope, {n.id: n.content_hash for n in result.notes}):
        return own_prefix(scope)
    return scope.id_prefix


def newer_export(
    conn: duckdb.DuckDBPyConnection, scope: IngestScope, result: IngestResult
) -> str | None:
    """The archive still there, written after ``scope.path``, whose stored notes hold every
    page of this archive (by id), most of them with the same text: this is an older export
    of the same pages, ingested again after the newer one took their notes. Stored, it
    would put back the old text, or (given ids of its own) hold every page twice. None when
    there is none (another vault zipped shares a page or two, not every one)."""
    if not is_archive(scope.path) or not result.notes:
        return None
    hashes = {n.id: n.content_hash for n in result.notes}
    rows = conn.execute(
        "SELECT split_part(source, '!/', 1) AS file, id, content_hash FROM notes "
        "WHERE deleted_at IS NULL AND contains(source, '!/') AND list_contains(?, id) "
        "AND split_part(source, '!/', 1) <> ?",
        [list(hashes), str(scope.path)],
    ).fetchall()
    files: dict[str, list[int]] = {}
    for file, note_id, digest in rows:
        counts = files.setdefault(str(file), [0, 0])
        counts[0] += 1
        counts[1] += digest == hashes[note_id] or _names_its_page(note_id)
    for file, (shared, same) in sorted(files.items(), key=lambda f: (-f[1][0], f[0])):
        if shared == len(hashes) and same * 2 > shared and _newer(Path(file), scope.path):
            return file
    return None


def with_prefix(result: IngestResult, scope: IngestScope, prefix: str) -> IngestResult:
    """``result`` with its notes' ids moved from ``<key>/`` to ``prefix``."""
    cut = len(scope.id_prefix)
    return replace(result, notes=[replace(n, id=prefix + n.id[cut:]) for n in result.notes])


def _inside(source: str) -> str:
    return source.rsplit("!/", 1)[-1]


def _gone_archives(conn: duckdb.DuckDBPyConnection, scope: IngestScope, archive: str) -> list[str]:
    """Archives of the folder with live notes that are no longer there, by path."""
    rows = conn.execute(
        "SELECT DISTINCT split_part(source, '!/', 1) FROM notes WHERE deleted_at IS NULL "
        "AND starts_with(id, ?) AND starts_with(source, ?) AND contains(source, '!/')",
        [scope.id_prefix, str(scope.folder).rstrip("/") + "/"],
    ).fetchall()
    return sorted(str(a) for (a,) in rows if str(a) != archive and not Path(str(a)).exists())


def _clashes(conn: duckdb.DuckDBPyConnection, scope: IngestScope, hashes: dict[str, str]) -> bool:
    """Whether another file of the folder holds one of these notes' ids (``{id: content
    hash}``): a plain file, or an archive of which these notes hold less than half, or one
    still there that is not an older export of the same notes (most of the notes they share
    said the same, and it is older: Takeout names each download by its time, and a newer
    one beside the older stored every note twice)."""
    stored = conn.execute(
        "SELECT split_part(source, '!/', 1), contains(source, '!/'), id, content_hash "
        "FROM notes WHERE deleted_at IS NULL AND list_contains(?, id)",
        [list(hashes)],
    ).fetchall()
    files: dict[tuple[str, bool], list[int]] = {}
    for file, archived, note_id, digest in stored:
        counts = files.setdefault((str(file), bool(archived)), [0, 0])
        counts[0] += 1
        counts[1] += digest == hashes[note_id] or _names_its_page(note_id)
    for (file, archived), (shared, same) in sorted(files.items()):
        if not archived:
            return True  # a plain file's note: never an older copy of this archive's
        (held,) = conn.execute(
            "SELECT count(*) FROM notes WHERE deleted_at IS NULL AND starts_with(id, ?) "
            "AND starts_with(source, ?)",
            [scope.id_prefix, f"{file}!/"],
        ).fetchone()
        if shared * 2 < held:
            return True
        if Path(file).exists() and (same * 2 <= shared or _newer(Path(file), scope.path)):
            return True
    return False


def _names_its_page(note_id: str) -> bool:
    """Whether a note's id names its page for certain (a Notion page's id in its file's
    name): two exports holding it hold the same page, however edited (a newer export with
    most pages edited was stored beside the older one, every page twice)."""
    return is_notion_page(PurePosixPath(note_id).stem)


def _newer(other: Path, archive: Path) -> bool:
    """Whether the archive ``other`` was written after ``archive``: an older export ingested
    again after the newer one took their notes must not take them back (its text would
    overwrite the newer edits)."""
    try:
        return other.stat().st_mtime > archive.stat().st_mtime
    except OSError:
        return False
