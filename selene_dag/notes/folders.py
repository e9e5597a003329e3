"""Folder identity: which registered notes folder an ingested path belongs to.

Every note id is ``<folder key>/<id inside the folder>``: the key is the folder's name
(``notes`` for ``~/notes``), with ``-2``, ``-3``… appended only when a different folder
of the same name was registered first; the id inside the folder is the file's path relative
to the folder, or the id a JSONL line or a front-matter ``id`` gives. Folders are recorded
in ``note_folders`` (key, absolute path), so a key never changes once given.

A path inside a registered folder (a sub-folder or one file) belongs to that folder (the
innermost, when registered folders nest): its
notes get the same ids as when the whole folder is ingested. Registered folders nested
inside a newly ingested folder keep their own notes: the new folder's ingest skips them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import duckdb

from selene_dag.errors import UsageError
from selene_dag.text import path_text

ROOT_KEY = "root"


@dataclass(frozen=True)
class IngestScope:
    """Where one ingest reads and what it may touch.

    ``path`` is what is ingested (a folder, or a file inside ``folder``); ``folder`` is
    the registered (or about to be registered) folder that ``path`` belongs to, and ``key``
    its key; ``skip`` holds other registered folders inside ``path``, whose notes are theirs;
    ``new`` says the folder is not registered yet.
    """

    key: str
    folder: Path
    path: Path
    skip: tuple[Path, ...] = ()
    new: bool = False

    @property
    def id_prefix(self) -> str:
        """The prefix every note id of this folder starts with: ``<key>/``."""
        return f"{self.key}/"

    @property
    def source_prefix(self) -> str:
        """Sources (absolute file paths) this ingest covers start with this: the file
        itself for a file, ``<folder>/`` for a folder."""
        return str(self.path) if self.path.is_file() else str(self.path).rstrip("/") + "/"

    def note_id(self, local_id: str) -> str:
        """The home-wide id of the note whose id inside the folder is ``local_id``."""
        return f"{self.key}/{local_id}"


def folder_name(folder: Path) -> str:
    """The key a folder asks for: its name (``root`` for the file system's root)."""
    return folder.name or ROOT_KEY


def registered_folders(conn: duckdb.DuckDBPyConnection) -> dict[Path, str]:
    """Every registered folder: ``{absolute path: key}``."""
    rows = conn.execute("SELECT path, key FROM note_folders").fetchall()
    return {Path(path): key for path, key in rows}


def _inside(child: Path, parent: Path) -> bool:
    return child == parent or parent in child.parents


def require_text_path(path: Path) -> None:
    """Raise UsageError when ``path`` is not UTF-8 text: a folder is stored by its path,
    which the database could not take (a file inside it can be: see ``path_text``)."""
    if path_text(path) != str(path):
        raise UsageError(f"{path_text(path)}: the path is not UTF-8; rename it to ingest it")


def ingest_scope(conn: duckdb.DuckDBPyConnection, path: Path | str) -> IngestScope:
    """The scope of ingesting ``path`` (a folder or a file); reads ``note_folders`` only.

    The folder is the innermost registered folder holding ``path``; otherwise ``path``
    itself (a file: its parent folder), under a new key: its name, or its name with the
    first free ``-N`` suffix (N ≥ 2) when another folder holds that name.
    """
    path = Path(path).expanduser().resolve()
    require_text_path(path)
    own = path.parent if path.is_file() else path
    folders = registered_folders(conn)
    holders = sorted((f for f in folders if _inside(own, f)), key=lambda f: -len(f.parts))
    if holders:
        folder = holders[0]
        return IngestScope(folders[folder], folder, path, _nested(folders, path, folder))
    taken = set(folders.values())
    name = folder_name(own)
    key, n = name, 1
    while key in taken:
        n += 1
        key = f"{name}-{n}"
    return IngestScope(key, own, path, _nested(folders, path, own), new=True)


def _nested(folders: dict[Path, str], path: Path, folder: Path) -> tuple[Path, ...]:
    if path.is_file():
        return ()
    return tuple(sorted(f for f in folders if f != folder and f != path and _inside(f, path)))


def register_folder(conn: duckdb.DuckDBPyConnection, scope: IngestScope) -> None:
    """Record the scope's folder in ``note_folders`` when it is new (idempotent)."""
    if scope.new:
        conn.execute(
            "INSERT INTO note_folders (key, path) VALUES (?, ?) ON CONFLICT DO NOTHING",
            [scope.key, str(scope.folder)],
        )
