"""What a notes folder holds: which of its files are notes (by suffix), which are other
documents, and one walk of the folder shared by every reader of one ingest.

An ingest looks at its folder three times: for the folder's version (whether anything
changed), to read the notes, and to report what it passed over. Inside :func:`walk_once`
those share the first walk of the folder instead of listing a vault of 10,000 files three
times.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path

from selene_dag.notes.folders import walk_notes_folder

MARKDOWN_SUFFIXES = (".md", ".markdown", ".mdown", ".mkd", ".mdx")
# Plain text notes (Simplenote, Standard Notes and Bear export them) are read as markdown
# is: a front-matter or a heading when they have one, else the file's name is the title.
TEXT_SUFFIXES = (".txt",)
JSONL_SUFFIXES = (".jsonl", ".ndjson")
# A JSON file holds notes when it is a list of note objects (as JSONL lines are) or the
# conversations of a ChatGPT or Claude.ai export; any other JSON file in a folder is not a
# note file and is passed over without a word (an export's user.json, a package.json).
JSON_SUFFIXES = (".json",)
ENEX_SUFFIXES = (".enex",)  # Evernote's export
ORG_SUFFIXES = (".org",)  # Emacs Org and org-roam
# Note apps' HTML exports (Evernote, Joplin, Notion) and saved pages; a page named as a
# note file of another kind beside it is that note's second copy (Google Keep writes each
# note as .json and .html) and is not read.
HTML_SUFFIXES = (".html", ".htm")
# Archives read inside when named alone: a zip as downloaded, Bear's backups (zips of
# TextBundles: ``textbundle``); a tar (plain or compressed) and Joplin's JEX export (a tar
# of its items: ``joplin``).
ZIP_SUFFIXES = (".zip", ".bear2bk", ".bearbk")
TAR_SUFFIXES = (".jex", ".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz")
CANVAS_SUFFIXES = (".canvas",)  # JSON Canvas: Obsidian's canvases
NOTE_SUFFIXES = (
    MARKDOWN_SUFFIXES
    + TEXT_SUFFIXES
    + ORG_SUFFIXES
    + JSONL_SUFFIXES
    + JSON_SUFFIXES
    + ENEX_SUFFIXES
    + CANVAS_SUFFIXES
    + HTML_SUFFIXES
)


def unlisted_folders(path: Path) -> tuple[tuple[str, str], ...]:
    """The folders under the folder ``path`` that could not be listed, with the reason
    (the walk :func:`note_files` made); none for a file."""
    return _walk(path).unlisted if path.is_dir() else ()


def dangling_note_links(path: Path) -> tuple[str, ...]:
    """The links named as note files under the folder ``path`` whose target does not
    exist (a file on a drive not mounted, or moved away), sorted; none for a file."""
    if not path.is_dir():
        return ()
    dangling = _walk(path).dangling
    return tuple(sorted(full for full in dangling if _is_note_file(*os.path.split(full))))


def note_files(path: Path, skip: Sequence[Path] = ()) -> list[Path]:
    """Return the note files at ``path`` (``NOTE_SUFFIXES``: markdown, text, Org, HTML,
    JSON(L), ENEX, canvases; an HTML copy of a note read from another file left out, see
    :func:`html_twins`): ``path`` itself when it is a file, else the folder's files
    searched deeply.

    Hidden files and folders (name starting with '.') are skipped, and so is everything
    inside the folders of ``skip``, inside a selene-dag home below ``path`` (its
    distilled sessions and Dagster files are no notes) and in folders of tools (Logseq's
    ``logseq/``, ``node_modules``, a Python virtual environment). Sorted for determinism.
    """
    if path.is_file():
        return [path]
    found = _walk(path).notes
    if skip:
        skipped = {str(folder) for folder in skip}
        below = tuple(folder + os.sep for folder in skipped)
        found = tuple(
            f
            for f in found
            if (folder := os.path.dirname(f)) not in skipped and not folder.startswith(below)
        )
    return [Path(full) for full in found]


def _note_paths(folders: Iterable[tuple[str, Sequence[str]]]) -> tuple[str, ...]:
    """The note files of a walk's folders, sorted as paths sort (part by part)."""
    found = []
    for folder, files in folders:
        twins = html_twins(files) if any(_is_html(name) for name in files) else ()
        for name in files:
            if not _is_note_file(folder, name) or name in twins:
                continue
            # The walk lists regular files only (not a broken link, a pipe or a socket).
            found.append(os.path.join(folder, name))
    # Sorted on strings: comparing Path objects took a fifth of listing a vault of 10,000
    # files.
    found.sort(key=lambda full: full.split(os.sep))
    return tuple(found)


def _is_html(name: str) -> bool:
    return os.path.splitext(name)[1].lower() in HTML_SUFFIXES


def _is_note_file(folder: str, name: str) -> bool:
    return os.path.splitext(name)[1].lower() in NOTE_SUFFIXES and not _is_keep_labels(folder, name)


def html_twins(names: Iterable[str]) -> set[str]:
    """The HTML files among ``names`` (file names or paths) that copy notes read from
    another file: a page that shares its name, less the suffix, with a note file of
    another kind in the same folder (Google Keep exports each note as ``.json`` and
    ``.html``), and ChatGPT's ``chat.html`` beside the ``conversations.json`` it renders."""
    names = list(names)
    present = set(names)
    stems = {
        os.path.splitext(name)[0]
        for name in names
        if os.path.splitext(name)[1].lower() in NOTE_SUFFIXES and not _is_html(name)
    }
    twins = set()
    for name in names:
        stem, suffix = os.path.splitext(name)
        if suffix.lower() not in HTML_SUFFIXES:
            continue
        folder, base = os.path.split(name)
        renders_chats = base == "chat.html" and (
            os.path.join(folder, "conversations.json") in present
        )
        if stem in stems or renders_chats:
            twins.add(name)
    return twins


def _is_keep_labels(folder: str, name: str) -> bool:
    """Google Takeout's list of Keep's label names (``Keep/Labels.txt``): no note."""
    return name == "Labels.txt" and os.path.basename(folder) == "Keep"


# Documents a notes folder often holds that ingest does not read: named after an ingest so
# that no one takes them for part of the notes.
DOCUMENT_SUFFIXES = frozenset({
    ".pdf", ".doc", ".docx", ".odt", ".rtf", ".pages", ".epub", ".rst",
    ".adoc", ".asciidoc", ".tex", ".textile", ".opml",
})  # fmt: skip


def other_files(path: Path, passed_over: list[str] | None = None) -> dict[str, int]:
    """The files under ``path`` that :func:`note_files` leaves out for their type (hidden
    ones and the folders it passes over aside), counted by suffix (``""`` for none): what
    to tell someone whose folder gave no note, or held documents beside its notes. A file
    named as a note file beside it is that note's second copy (a Keep note's ``.html``
    beside its ``.json``) and is not counted. The files and folders a ``.seleneignore``
    lists are added to ``passed_over`` when it is given."""
    walk = _walk(path)
    if passed_over is not None:
        passed_over.extend(walk.passed_over)
    counts: dict[str, int] = {}
    for folder, files in walk.folders:
        notes = {os.path.splitext(name)[0] for name in files if _is_note_file(folder, name)}
        for name in files:
            stem, suffix = os.path.splitext(name)
            if _is_note_file(folder, name) or stem in notes or _is_keep_labels(folder, name):
                continue
            counts[suffix.lower()] = counts.get(suffix.lower(), 0) + 1
    return counts


def renderings_passed_over(path: Path) -> list[tuple[str, str]]:
    """The HTML pages under the folder ``path`` passed over as the copy of a note file of
    the same name beside them (:func:`html_twins`), with that file's name, when the file
    is not JSON (a Keep note's ``.json`` and ``.html`` are one note by design, said of
    none): ``a.html`` beside ``a.md`` may be its rendering, or a page of its own, which
    the user is told of rather than losing it without a word."""
    if not path.is_dir():
        return []
    found = []
    for folder, files in _walk(path).folders:
        if not any(_is_html(name) for name in files):
            continue
        for name in sorted(html_twins(files)):
            stem = os.path.splitext(name)[0]
            beside = sorted(
                other
                for other in files
                if other != name
                and os.path.splitext(other)[0] == stem
                and os.path.splitext(other)[1].lower() in NOTE_SUFFIXES
                and not _is_html(other)
            )
            if beside and not any(other.lower().endswith(".json") for other in beside):
                found.append((os.path.join(folder, name), beside[0]))
    return found


@dataclass(frozen=True)
class FolderWalk:
    """One walk of a notes folder (:func:`~selene_dag.notes.folders.walk_notes_folder`):
    each folder that may hold notes, top-down, with the names of its files; the paths its
    ``.seleneignore`` files passed over; its note files."""

    folders: tuple[tuple[str, tuple[str, ...]], ...]
    passed_over: tuple[str, ...]
    notes: tuple[str, ...]  # the note files' paths, sorted (see :func:`note_files`)
    # The folders that could not be listed, with the reason ("Permission denied").
    unlisted: tuple[tuple[str, str], ...] = ()
    # The links whose target does not exist, any name.
    dangling: tuple[str, ...] = ()


# The walks of the current :func:`walk_once` block, by the folder's path as given; None
# outside one. A context variable: Dagster runs an in-process run's steps in the caller's
# thread, so an asset of that run sees the walks of the ingest that started it.
_WALKS: ContextVar[dict[str, FolderWalk] | None] = ContextVar("selene_folder_walks", default=None)


@contextmanager
def walk_once() -> Iterator[None]:
    """Within the block each folder is walked once: :func:`note_files` and
    :func:`other_files` of a folder walked already in the block use that walk again (in
    this thread and the code it calls). For one ingest: its folder version, the notes it
    reads and its report then rest on one listing, and a file added or removed in the
    meantime is seen by the next ingest, as one added just after it would be. A block
    inside another uses the outer block's walks."""
    if _WALKS.get() is not None:  # inside a block already: its walks serve this one too
        yield
        return
    token = _WALKS.set({})
    try:
        yield
    finally:
        _WALKS.reset(token)


def _walk(path: Path) -> FolderWalk:
    """The walk of the folder ``path``: the block's when :func:`walk_once` walked it
    already, else a new one (kept for the block, inside one)."""
    walks = _WALKS.get()
    key = str(path)
    if walks is not None and (found := walks.get(key)) is not None:
        return found
    passed_over: list[str] = []
    unlisted: list[tuple[str, str]] = []
    dangling: list[str] = []
    folders = tuple(
        (folder, tuple(files))
        for folder, files in walk_notes_folder(
            path, passed_over=passed_over, unlisted=unlisted, dangling=dangling
        )
    )
    walk = FolderWalk(
        folders, tuple(passed_over), _note_paths(folders), tuple(unlisted), tuple(dangling)
    )
    if walks is not None:
        walks[key] = walk
    return walk
