"""Folder identity: which registered notes folder an ingested path belongs to, and which
folders under it an ingest looks into (``walk_notes_folder``).

Every note id is ``<folder key>/<id inside the folder>``: the key is the folder's name
(``notes`` for ``~/notes``), with ``-2``, ``-3``… appended only when a different folder
of the same name was registered first; the id inside the folder is the file's path relative
to the folder, or the id a JSONL line or a front-matter ``id`` gives. Folders are recorded
in ``note_folders`` (key, absolute path), so a key never changes once given.

A path inside a registered folder (a sub-folder or one file) belongs to that folder (the
innermost, when registered folders nest): its
notes get the same ids as when the whole folder is ingested. A folder registered because a
file or an archive in it was ingested alone (``whole`` false) holds only the files right in
it: a folder below it is a folder of its own (``~/Downloads/vault`` after a download in
``~/Downloads``), until the folder itself is ingested, or while a folder ingested whole
holds it (that folder's ingest passes over all of it). Registered folders nested
inside a newly ingested folder keep their own notes: the new folder's ingest skips them.

A folder that moved (a registered folder that no longer exists, at least half of whose
note files the new folder holds under the same paths, and when it had another name at
least three of them: renamed as it moved) keeps its key: its notes keep their ids, their
sources follow the folder, and the home does not hold every note twice.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import shlex
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath

import duckdb

from selene_dag.errors import UsageError
from selene_dag.paths import transform_sql
from selene_dag.store import StoreError, execute_script, open_store
from selene_dag.text import decode_text, path_text, plural

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
    moved_from: Path | None = None  # the registered folder's former path, when it moved

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


def stored_note_files(conn: duckdb.DuckDBPyConnection, scope: IngestScope) -> dict[str, str]:
    """``{note id: its file}`` of the store's live notes in ``scope``'s folder."""
    rows = conn.execute(
        "SELECT id, source FROM notes WHERE deleted_at IS NULL AND starts_with(id, ?)",
        [scope.id_prefix],
    ).fetchall()
    return dict(rows)


def folder_name(folder: Path) -> str:
    """The key a folder asks for: its name (``root`` for the file system's root)."""
    return folder.name or ROOT_KEY


def registered_folders(conn: duckdb.DuckDBPyConnection) -> dict[Path, str]:
    """Every registered folder: ``{absolute path: key}``."""
    rows = conn.execute("SELECT path, key FROM note_folders").fetchall()
    return {Path(path): key for path, key in rows}


def folders_to_watch(db_path: Path, notes_dir: Path) -> dict[Path, str] | None:
    """The folders ingested whole into the home at ``db_path`` that exist, other than
    ``notes_dir`` (``{absolute path: key}``), for a watcher to ingest again when they
    change; empty without a database. A folder registered because a file in it was
    ingested alone is not one: its other files were never asked for. None when another
    process holds the database at this moment (a watcher looks again later)."""
    if not db_path.exists():
        return {}
    try:
        with open_store(db_path, read_only=True, wait=0) as conn:
            rows = conn.execute("SELECT path, key FROM note_folders WHERE whole").fetchall()
    except (StoreError, duckdb.Error):
        return None
    watched = notes_dir.resolve()
    found = {Path(path): key for path, key in rows}
    return {
        path: key
        for path, key in sorted(found.items())
        if path.resolve() != watched and path.is_dir()
    }


def _whole_folders(conn: duckdb.DuckDBPyConnection) -> set[Path]:
    """The registered folders that were ingested whole (they hold their sub-folders)."""
    rows = conn.execute("SELECT path FROM note_folders WHERE whole").fetchall()
    return {Path(path) for (path,) in rows}


def is_home_folder(conn: duckdb.DuckDBPyConnection, folder: Path) -> bool:
    """Whether ``folder`` (absolute) is a folder of the home: registered, inside a folder
    ingested whole, or around registered folders. (Inside a folder registered for the
    files right in it only, a file ingested alone, it is a new folder.)"""
    whole = _whole_folders(conn)
    return any(
        registered == folder
        or (registered in folder.parents and registered in whole)
        or folder in registered.parents
        for registered in registered_folders(conn)
    )


def _inside(child: Path, parent: Path) -> bool:
    return child == parent or parent in child.parents


def require_text_path(path: Path) -> None:
    """Raise UsageError when ``path`` is not UTF-8 text: a folder is stored by its path,
    which the database could not take (a file inside it can be: see ``path_text``)."""
    if path_text(path) != str(path):
        raise UsageError(f"{path_text(path)}: the path is not UTF-8; rename it to ingest it")


def ingest_scope(conn: duckdb.DuckDBPyConnection, path: Path | str) -> IngestScope:
    """The scope of ingesting ``path`` (a folder or a file); reads the database only.

    The folder is the innermost registered folder holding ``path`` (one registered for a
    file ingested alone holds only the files right in it); otherwise ``path``
    itself (a file: its parent folder), under the key of the registered folder it moved
    from (see the module's docstring), or the key it had when it was forgotten, else under
    a new key: its name, or its name with the first free ``-N`` suffix (N ≥ 2) when another
    folder, registered or forgotten, holds that name.
    """
    path = Path(path).expanduser().resolve()
    require_text_path(path)
    own = path.parent if path.is_file() else path
    folders = registered_folders(conn)
    whole = _whole_folders(conn)
    # A folder registered for a file in it holds its sub-folders still when a folder
    # ingested whole holds it: that one's ingest passes over all of it, as over any folder
    # registered inside it (a note there would otherwise be stored under both).
    holding = {f for f in folders if f in whole or any(_inside(f, w) for w in whole if w != f)}
    holders = sorted(
        (f for f in folders if own == f or (f in holding and _inside(own, f))),
        key=lambda f: -len(f.parts),
    )
    if holders:
        folder = holders[0]
        return IngestScope(folders[folder], folder, path, _nested(folders, path, folder))
    name = folder_name(own)
    moved = _moved_folder(conn, folders, own, name)
    if moved is not None:
        # Folders registered inside it moved with it: they keep their notes at the new place.
        carried = {
            f: own / f.relative_to(moved) for f in folders if f != moved and _inside(f, moved)
        }
        moved_folders = {carried.get(f, f): key for f, key in folders.items()}
        scope = IngestScope(folders[moved], own, path, _nested(moved_folders, path, own))
        return replace(scope, moved_from=moved)
    taken = set(folders.values())
    forgotten = _forgotten_key(conn, own, name, taken)
    if forgotten is not None:  # forgotten, ingested again: its notes come back as they were
        return IngestScope(forgotten, own, path, _nested(folders, path, own), new=True)
    taken |= _keys_of_notes(conn)
    key, n = name, 1
    while key in taken:
        n += 1
        key = f"{name}-{n}"
    return IngestScope(key, own, path, _nested(folders, path, own), new=True)


def _forgotten_key(
    conn: duckdb.DuckDBPyConnection, own: Path, name: str, registered: set[str]
) -> str | None:
    """The key of a forgotten folder at ``own`` (named ``name``): the key, ``name`` or
    ``name-N`` and registered no more, of most of the stored notes whose files are in
    ``own`` (a forgotten folder inside it has a key of its own name); None when there is
    none."""
    row = conn.execute(
        "SELECT split_part(id, '/', 1) AS key FROM notes WHERE starts_with(source, ?) "
        "AND NOT list_contains(?, split_part(id, '/', 1)) "
        "AND (split_part(id, '/', 1) = ? OR regexp_full_match(split_part(id, '/', 1), "
        "regexp_escape(?) || '-[0-9]+')) "
        "GROUP BY key ORDER BY count(*) DESC, key LIMIT 1",
        [str(own).rstrip("/") + "/", sorted(registered), name, name],
    ).fetchone()
    return None if row is None else str(row[0])


def _keys_of_notes(conn: duckdb.DuckDBPyConnection) -> set[str]:
    """Every key a stored note's id starts with, a forgotten folder's included: a new
    folder takes none of them, or it would bring another folder's forgotten notes back as
    its own."""
    rows = conn.execute("SELECT DISTINCT split_part(id, '/', 1) FROM notes").fetchall()
    return {str(key) for (key,) in rows}


def _nested(folders: dict[Path, str], path: Path, folder: Path) -> tuple[Path, ...]:
    if path.is_file():
        return ()
    return tuple(sorted(f for f in folders if f != folder and f != path and _inside(f, path)))


def _gone(folder: Path) -> bool:
    try:
        return not folder.exists()
    except OSError:  # unreadable is not gone (a drive that answers with an error)
        return False


# A folder renamed as it moved must share at least this many note files with the one it
# was, beside half of them: two small folders of a few files each often share a name or two.
RENAMED_MIN_FILES = 3


def _moved_folder(
    conn: duckdb.DuckDBPyConnection, folders: dict[Path, str], own: Path, name: str
) -> Path | None:
    """The registered folder ``own`` moved from: one that no longer exists, at least half
    of whose live notes' files ``own`` holds under the same paths (and, when it was named
    otherwise, at least ``RENAMED_MIN_FILES`` of them: a renamed vault, and it alone
    matches that well), one named ``name`` first; None when there is none."""
    gone = sorted((f for f in folders if _gone(f)), key=lambda f: (folder_name(f) != name, str(f)))
    if not gone:
        return None
    here = _files_inside(own)
    renamed_matches: list[tuple[int, Path]] = []
    for old in gone:
        prefix = str(old).rstrip("/") + "/"
        rows = conn.execute(
            "SELECT DISTINCT source FROM notes WHERE deleted_at IS NULL "
            "AND starts_with(id, ?) AND starts_with(source, ?)",
            [f"{folders[old]}/", prefix],
        ).fetchall()
        # A note of an archive or an export names its file before '!/'.
        files = {source[len(prefix) :].split("!/")[0] for (source,) in rows}
        shared = len(files & here)
        if not files or shared * 2 < len(files):
            continue
        if not _same_texts(conn, prefix, own, sorted(files & here)):
            continue  # another folder holding files of those names (a journal's todo.md)
        if folder_name(old) == name:
            return old
        if shared >= RENAMED_MIN_FILES:
            renamed_matches.append((shared, old))
    # Of folders of other names, only one that matches best: two gone folders holding the
    # same file names cannot tell which one this is (it took the wrong one's key).
    renamed_matches.sort(key=lambda m: (-m[0], str(m[1])))
    if renamed_matches and (
        len(renamed_matches) == 1 or renamed_matches[0][0] > renamed_matches[1][0]
    ):
        return renamed_matches[0][1]
    return None


# Files of a moved folder compared with the notes they were, at most; and the share of a
# stored note's words its file must still hold (a moved note may have been edited too).
_COMPARED_FILES = 12
_WORDS_KEPT = 0.5
_WORD = re.compile(r"\w{2,}")


def _same_texts(conn: duckdb.DuckDBPyConnection, prefix: str, own: Path, names: list[str]) -> bool:
    """Whether most of the files ``names`` (a spread of them, at most ``_COMPARED_FILES``)
    in ``own`` still hold most of the words of the notes stored from the same names under
    ``prefix``: the same notes, moved, not other notes under the same file names."""
    step = max(1, len(names) // _COMPARED_FILES)
    sample = names[::step][:_COMPARED_FILES]
    same = 0
    for rel in sample:
        row = conn.execute(
            "SELECT title || ' ' || content FROM notes WHERE source = ? "
            "ORDER BY deleted_at IS NOT NULL LIMIT 1",
            [prefix + rel],
        ).fetchone()
        try:
            with open(own / rel, "rb") as handle:
                text = handle.read(1 << 20).decode("utf-8", errors="replace")
        except OSError:
            continue
        stored = set(_WORD.findall((row[0] if row else "")[:20_000].lower()))
        if not stored or len(stored & set(_WORD.findall(text.lower()))) >= _WORDS_KEPT * len(
            stored
        ):
            same += 1
    return same * 2 >= len(sample)


def _files_inside(folder: Path) -> set[str]:
    """The paths, relative to ``folder``, of the files a notes ingest of it would look at."""
    return {
        path_text(os.path.relpath(os.path.join(parent, name), folder).replace(os.sep, "/"))
        for parent, files in walk_notes_folder(folder)
        for name in files
    }


def register_folder(conn: duckdb.DuckDBPyConnection, scope: IngestScope) -> None:
    """Record the scope's folder in ``note_folders`` when it is new (idempotent), and
    whether it was ingested whole; when it moved, record its new path (and that of folders
    registered inside it) and move its notes' and problems' sources with it."""
    if scope.moved_from is not None:
        execute_script(
            conn,
            transform_sql("notes_move_folder"),
            {
                "old": str(scope.moved_from).rstrip("/") + "/",
                "new": str(scope.folder).rstrip("/") + "/",
            },
        )
    # Ingested whole, or a note below it taken as its own (a folder ingested whole held it
    # then): it holds its sub-folders from now on, or that note would be stored again under
    # a folder of its own once the holder is forgotten.
    whole = scope.path.is_dir() or scope.path.parent != scope.folder
    if scope.new:
        conn.execute(
            "INSERT INTO note_folders (key, path, whole) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
            [scope.key, str(scope.folder), whole],
        )
    elif whole:  # registered for a file in it: it holds its sub-folders now
        conn.execute(
            "UPDATE note_folders SET whole = true WHERE key = ? AND NOT whole", [scope.key]
        )


def _folder_of(notes: Sequence[tuple[str, str]]) -> Path | None:
    """The folder notes ``(id, source file)`` of one folder were read from: a source that
    ends with the id's path after the folder's key (``vault/a/b.md`` read from
    ``/x/vault/a/b.md``: ``/x/vault``); None when no id says (ids from front matter)."""
    for note_id, source in notes:
        rest = note_id.partition("/")[2]
        if rest and source.endswith("/" + rest):
            return Path(source[: -len(rest) - 1])
    return None


def find_folder(conn: duckdb.DuckDBPyConnection, target: str) -> tuple[str, Path]:
    """The registered folder ``target`` names, by its key (``notes``) or its path, as
    ``(key, path)``. Raises UsageError naming the registered folders when it names none."""
    if not target.strip():
        raise UsageError(
            "give the key or path of an ingested folder (`selene-dag health` lists them)"
        )
    folders = registered_folders(conn)
    by_key = {key: path for path, key in folders.items()}
    if target in by_key:
        return target, by_key[target]
    path = Path(target).expanduser().absolute()
    for candidate in (path, path.resolve()):
        if candidate in folders:
            return folders[candidate], candidate
    holder = next(
        (f for f in sorted(folders, key=lambda f: -len(f.parts)) if f in path.parents), None
    )
    if holder is not None and path.is_file():
        key = folders[holder]
        raise UsageError(
            f"{target}: a file of the ingested folder {key} ({holder}); forget takes a folder: "
            f"`selene-dag forget {key}` forgets every note of {key}"
        )
    gone = conn.execute(
        "SELECT id, source FROM notes WHERE deleted_at IS NOT NULL "
        "AND (starts_with(id, ? || '/') OR starts_with(source, ? || '/'))",
        [target.strip("/"), str(path)],
    ).fetchall()
    if gone:  # its notes are here, deleted: the folder was forgotten already
        raise UsageError(
            f"{target}: forgotten already ({plural(len(gone), 'note')} marked deleted); "
            f"`selene-dag ingest {shlex.quote(str(_folder_of(gone) or path))}` brings "
            "them back"
        )
    known = ", ".join(
        f"{key} ({path})" for path, key in sorted(folders.items(), key=lambda kv: kv[1])
    )
    raise UsageError(
        f"{target}: no ingested folder has this key or path; "
        + (
            f"the home holds {known}"
            if known
            else "the home holds no ingested folder now (a forgotten one is not)"
        )
    )


def nested_folders(conn: duckdb.DuckDBPyConnection, folder: Path) -> list[Path]:
    """The registered folders inside ``folder`` (not itself)."""
    return sorted(f for f in registered_folders(conn) if f != folder and _inside(f, folder))


def folder_counts(conn: duckdb.DuckDBPyConnection) -> list[tuple[str, Path, int, bool]]:
    """Every registered folder as ``(key, path, live notes, whether the path is still
    there)``, by key (a path that cannot be looked at counts as there)."""
    rows = conn.execute(
        "SELECT f.key, f.path, count(n.id) FROM note_folders AS f "
        "LEFT JOIN notes AS n ON starts_with(n.id, f.key || '/') AND n.deleted_at IS NULL "
        "GROUP BY f.key, f.path ORDER BY f.key"
    ).fetchall()
    return [(key, Path(path), int(count), not _gone(Path(path))) for key, path, count in rows]


# What every selene-dag home holds (the database may live elsewhere; Dagster's files do not).
_HOME_MARKERS = ("selene.duckdb", os.path.join("dagster", "dagster.yaml"))


# Folders of installed packages, which hold READMEs and license texts by the thousand: a
# notes folder that is also a site or a project (a Quartz or Docusaurus repository) has them.
_PACKAGE_FOLDERS = {"node_modules", "site-packages", "__pycache__"}


# A file of this name in a notes folder lists what ingest passes over there and below.
IGNORE_FILE = ".seleneignore"


@dataclass(frozen=True)
class IgnoreRules:
    """The patterns of one ``.seleneignore`` file (one per line; ``#`` starts a comment).
    A pattern without ``/`` matches a file's or folder's name anywhere below the file's
    folder; one with a ``/`` inside or at its start matches the path relative to that
    folder; a trailing ``/`` matches folders only. ``*``, ``?`` and ``[...]`` are shell
    wildcards (``*`` matching ``/`` too); lines starting with ``!`` are not supported and
    are passed over."""

    base: str
    patterns: tuple[tuple[str, bool, bool], ...]  # (pattern, anchored, folders only)

    @classmethod
    def read(cls, folder: str) -> IgnoreRules | None:
        """The rules of ``folder``'s ignore file; None when it has none (or it cannot be
        read). Saved by any editor: a byte order mark (Notepad's, PowerShell's) is not part
        of the first pattern, UTF-16 is read as such (``text.decode_text``)."""
        try:
            with open(os.path.join(folder, IGNORE_FILE), "rb") as f:
                return cls.parse(folder, decode_text(f.read())[0])
        except OSError:
            return None

    @classmethod
    def parse(cls, folder: str, text: str) -> IgnoreRules:
        """The rules of an ignore file's ``text`` for files under ``folder``."""
        patterns = []
        for line in text.splitlines():
            text = line.strip()
            if not text or text.startswith(("#", "!")):
                continue
            folders_only = text.endswith("/")
            text = text.rstrip("/")
            anchored = "/" in text
            if text:
                patterns.append((text.lstrip("/"), anchored, folders_only))
        return cls(folder, tuple(patterns))

    def matches(self, path: str, is_folder: bool) -> bool:
        """Whether ``path`` (under :attr:`base`) is passed over."""
        relative = os.path.relpath(path, self.base).replace(os.sep, "/")
        name = os.path.basename(path)
        return any(
            fnmatch.fnmatchcase(relative if anchored else name, pattern)
            for pattern, anchored, folders_only in self.patterns
            if is_folder or not folders_only
        )


def ignored_members(paths: Sequence[str], ignore_files: dict[str, str]) -> set[str]:
    """Which of an archive's member ``paths`` (``a/b/note.md``) its ``.seleneignore``
    files pass over, as a folder's would: ``ignore_files`` maps each such file's folder
    inside the archive ("" at its top) to its text; a file's rules apply below its folder."""
    rules = [
        IgnoreRules.parse("/" + folder.strip("/"), text) for folder, text in ignore_files.items()
    ]
    out: set[str] = set()
    for path in paths:
        full = "/" + path.strip("/")
        parents = [str(parent) for parent in PurePosixPath(full).parents][:-1]
        for rule in rules:
            base = rule.base.rstrip("/") + "/"
            if not full.startswith(base):
                continue
            inside = [p for p in parents if (p + "/").startswith(base) and p + "/" != base]
            if rule.matches(full, False) or any(rule.matches(p, True) for p in inside):
                out.add(path)
                break
    return out


def walk_notes_folder(
    path: Path,
    skip: Sequence[Path] = (),
    passed_over: list[str] | None = None,
    unlisted: list[tuple[str, str]] | None = None,
    dangling: list[str] | None = None,
) -> Iterator[tuple[str, list[str]]]:
    """Each folder under ``path`` that may hold notes (top-down, sub-folders in name
    order), with the names of its files (regular files, or links to one) that are not
    hidden. Left out: hidden folders, those of ``skip``, a selene-dag home below ``path``
    (its distilled sessions and Dagster files are no notes), folders of tools (Logseq's
    ``logseq/``, ``node_modules``, a Python virtual environment), an Obsidian vault's
    template folder (:func:`obsidian_template_folders`), links to folders (not
    entered, as ``os.walk`` does) and what a ``.seleneignore`` file lists
    (:class:`IgnoreRules`) in its folder and below; the paths of those are added to
    ``passed_over`` when it is given. A folder that cannot be listed is passed over, and
    added to ``unlisted`` (with the reason) when it is given; a link whose target does not
    exist (a file on a drive not mounted, a moved file) is added to ``dangling`` when it
    is given (not hidden, not passed over)."""
    if not path.is_dir():
        return
    skipped = {str(folder) for folder in skip}
    # One listing per folder serves everything: whether it is a home or a tool's folder is
    # read from its own entries, not by looking for marker files from its parent (three
    # stats per folder, a third of walking a vault of 2,000 folders).
    stack: list[tuple[str, list[IgnoreRules], bool]] = [(str(path), [], True)]
    while stack:
        folder, inherited, top = stack.pop()
        try:
            with os.scandir(folder) as listing:
                entries = list(listing)
        except OSError as exc:
            if unlisted is not None:
                unlisted.append((folder, exc.strerror or str(exc)))
            continue
        folders: list[os.DirEntry[str]] = []
        files: list[os.DirEntry[str]] = []
        broken: list[os.DirEntry[str]] = []
        for entry in entries:
            if _is_folder(entry):
                folders.append(entry)
            elif _is_file(entry):
                files.append(entry)
            elif dangling is not None and _is_dangling(entry):
                broken.append(entry)
        names = {entry.name for entry in files}
        if not top and (_holds_home(folder, names, folders) or _holds_tools(folder, names)):
            continue
        if any(entry.name == ".obsidian" for entry in folders):
            skipped.update(obsidian_template_folders(folder))
        rules = inherited
        if IGNORE_FILE in names and (own := IgnoreRules.read(folder)) is not None:
            rules = [*inherited, own]
        kept_files = []
        for entry in files:
            if entry.name.startswith("."):
                continue
            if any(r.matches(entry.path, False) for r in rules):
                if passed_over is not None:
                    passed_over.append(entry.path)
                continue
            kept_files.append(entry.name)
        if dangling is not None:
            dangling.extend(
                entry.path
                for entry in broken
                if not entry.name.startswith(".")
                and not any(r.matches(entry.path, False) for r in rules)
            )
        kept_folders = []
        for entry in folders:
            name, full = entry.name, entry.path
            if name.startswith(".") or full in skipped or name in _PACKAGE_FOLDERS:
                continue
            if entry.is_symlink():
                continue
            if any(r.matches(full, True) for r in rules):
                if passed_over is not None:
                    passed_over.append(full)
                continue
            kept_folders.append(full)
        yield folder, kept_files
        stack.extend((full, rules, False) for full in sorted(kept_folders, reverse=True))


def _is_folder(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()
    except OSError:
        return False


def _is_dangling(entry: os.DirEntry[str]) -> bool:
    """Whether ``entry`` is a link whose target does not exist."""
    try:
        return entry.is_symlink() and not os.path.exists(entry.path)
    except OSError:
        return False


def _is_file(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_file()
    except OSError:
        return False


def _holds_home(folder: str, files: set[str], folders: Sequence[os.DirEntry[str]]) -> bool:
    """Whether ``folder`` (its file names and sub-folders given) is a selene-dag home."""
    if _HOME_MARKERS[0] in files:
        return True
    return any(f.name == "dagster" for f in folders) and os.path.isfile(
        os.path.join(folder, _HOME_MARKERS[1])
    )


# Where Obsidian's core Templates plugin and the Templater plugin keep their settings (in
# the vault's .obsidian/), and the key naming the vault's template folder.
TEMPLATE_SETTINGS = (
    (("templates.json",), "folder"),
    (("plugins", "templater-obsidian", "data.json"), "templates_folder"),
)


def named_template_folder(settings: object, key: str) -> str | None:
    """The template folder an Obsidian settings document (parsed JSON) names under
    ``key``, relative to its vault; None when it names none, or a path leaving the vault."""
    named = settings.get(key) if isinstance(settings, dict) else None
    if isinstance(named, str) and named.strip("/ ") and ".." not in named.split("/"):
        return named.strip("/ ")
    return None


def obsidian_template_folders(vault: str) -> list[str]:
    """The template folders an Obsidian ``vault``'s settings name (its core Templates
    plugin's and Templater's), as paths: their files (``{{title}}``, ``<% tp.date %>``)
    are templates, no notes. A setting that cannot be read names none."""
    out = []
    for parts, key in TEMPLATE_SETTINGS:
        try:
            with open(os.path.join(vault, ".obsidian", *parts), encoding="utf-8") as f:
                named = named_template_folder(json.load(f), key)
        except (OSError, ValueError):
            continue
        if named:
            out.append(os.path.normpath(os.path.join(vault, named)))
    return out


def _holds_tools(folder: str, files: set[str]) -> bool:
    """Whether ``folder`` (its file names given) is a tool's, not notes: a Python virtual
    environment, or Logseq's own folder (it keeps backups of every page in ``logseq/bak/``
    and old versions in ``logseq/version-files/``, second copies of the notes)."""
    return "pyvenv.cfg" in files or (os.path.basename(folder) == "logseq" and "config.edn" in files)
