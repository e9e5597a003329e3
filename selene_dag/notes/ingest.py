"""Read notes from a folder (or a single file, or an export's ``.zip``): markdown, plain
text, Org, JSON, JSONL and Evernote files.

Pure: reads files, returns records and errors; writes nothing; never raises for what a
file holds, so one broken file never stops the others. A problem is an
:class:`IngestError`: one that costs a note (a binary file, a JSONL line without text)
skips it; one that costs a value only (a byte that is not UTF-8, a broken front-matter,
an unreadable date) keeps the note and says so (``IngestError.kept``). A byte order mark
is honoured (UTF-8 or UTF-16).

Markdown and plain text: optional YAML front-matter, or Logseq's leading ``key:: value``
properties (``title``, ``created``/``date``, ``updated``/``modified``/``lastmod``,
``tags``, ``theme``/``topic``, ``id``, ``test_run``); the title falls back to the first
``# `` heading, then to the file name; the creation date to the day the file's name gives
(daily notes). A missing date is None here and the file's mtime is ``modified_at``: the
writer dates an update with it when the text changed, and the creation when it first
stores the note. The note's id inside its folder is the path relative to the folder unless
the front-matter gives one; given an :class:`~selene_dag.notes.folders.IngestScope`, ids
are home-wide: ``<folder key>/<that id>``. A file name that is not UTF-8 is written with
``\\xNN`` escapes. An Org file's settings are read as a front-matter's fields and its text
made markdown (``org``); an Obsidian Excalidraw drawing is its words (``excalidraw``); a
Notion page's property lines give its dates and tags (``notion``); a JSON Canvas is its
cards' text (``canvas``).

JSONL: one note per line in the format of ``til.jsonl``: ``content`` (or ``text``,
``body``), optional ``id`` (else ``<file>:<line number>``), ``title``, ``created_at``,
``updated_at`` (or the markdown names), ``topic``, ``tags``, ``test_run``. A line without
dates gives a record without them (``None``): the writer dates it when first seen. A JSON
file holds notes as a list of such objects, or is a chat export (``chat_exports``), a Keep
note, a Day One journal, a Roam graph or a Standard Notes backup (``app_exports``; a
``.txt`` file that is JSON is read as JSON); an ``.enex`` file is an
Evernote export (``enex``).
"""

from __future__ import annotations

import codecs
import contextlib
import errno
import hashlib
import io
import os
import re
import tarfile
import time
import zipfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, fields, replace
from datetime import UTC, date, datetime, timedelta
from pathlib import Path, PurePosixPath
from typing import Any, TypeVar
from urllib.parse import unquote

import orjson
import yaml

from selene_dag import text as _text
from selene_dag.config import parse_datetime
from selene_dag.notes.app_exports import (
    day_one_entries,
    is_keep_note,
    keep_note,
    roam_pages,
    standard_notes_items,
)
from selene_dag.notes.canvas import canvas_text, is_canvas
from selene_dag.notes.chat_exports import export_kind, exported_chats
from selene_dag.notes.comments import strip_comments
from selene_dag.notes.copied_dates import dated_by_creation
from selene_dag.notes.enex import enex_notes
from selene_dag.notes.excalidraw import drawing_text, is_drawing
from selene_dag.notes.file_cache import Entry, FileCache, stamp_of
from selene_dag.notes.folders import (
    IGNORE_FILE,
    TEMPLATE_SETTINGS,
    IngestScope,
    ignored_members,
    named_template_folder,
)
from selene_dag.notes.html import html_note
from selene_dag.notes.joplin import JoplinItem, is_item_name, joplin_notes, parse_item
from selene_dag.notes.listing import (
    CANVAS_SUFFIXES,
    ENEX_SUFFIXES,
    HTML_SUFFIXES,
    JSON_SUFFIXES,
    JSONL_SUFFIXES,
    NOTE_SUFFIXES,
    ORG_SUFFIXES,
    TAR_SUFFIXES,
    TEXT_SUFFIXES,
    ZIP_SUFFIXES,
    dangling_note_links,
    html_twins,
    note_files,
    renderings_passed_over,
    unlisted_folders,
    walk_once,
)
from selene_dag.notes.logseq import strip_block_properties
from selene_dag.notes.notion import is_notion_page, page_properties, page_title
from selene_dag.notes.org import org_note
from selene_dag.notes.textbundle import bear_tags, bundle_info, bundle_of


def is_archive(path: Path) -> bool:
    """Whether ``path`` is a file ingest reads as an archive (zip or tar, by its suffix)."""
    return _archive_reader(path.name) is not None and path.is_file()


def _archive_reader(name: str) -> Callable[..., Any] | None:
    """How to list an archive named ``name`` (zip or tar, by its suffix); None for a file
    that is no archive."""
    lowered = name.lower()
    if lowered.endswith(ZIP_SUFFIXES):
        return _zip_members
    if lowered.endswith(TAR_SUFFIXES):
        return _tar_members
    return None


_HEADING = re.compile(r"^#\s+(.+?)\s*#*\s*$", re.MULTILINE)
# An empty one (``---`` twice) too: it was "no closing '---' line", kept in the text.
_FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(?:|(.*?)\r?\n)---[ \t]*(?:\r?\n|\Z)", re.DOTALL)
_BINARY_SNIFF = 8192  # bytes of a markdown file looked at for NUL
_NAME_DATE = re.compile(r"(?<!\d)(\d{4})[-_.](\d{2})[-_.](\d{2})(?!\d)")
# A note named by the minute or second it was made (Zettelkasten ids: org-roam's
# 20240305101500-slug.org, Obsidian's unique note prefix 202403051015).
_NAME_STAMP = re.compile(r"^(\d{4})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})?(?!\d)")
_T = TypeVar("_T")
# libyaml's loader when PyYAML was built with it (its wheels are): front matter is read for
# every markdown note, and the pure-Python loader took two thirds of reading a vault.
_BASE_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _YamlLoader(_BASE_LOADER):  # type: ignore[misc,valid-type]
    """The safe loader, except that a date that is no date (``2024-13-45``, ``2024-02-30``,
    an hour 25) stays the text it is: the note is kept and the date reported as unreadable,
    not the whole folder's ingest failed on one value."""


def _timestamp_or_text(loader: Any, node: Any) -> Any:
    try:
        return loader.construct_yaml_timestamp(node)
    except (ValueError, OverflowError):
        return loader.construct_scalar(node)


_YamlLoader.add_constructor("tag:yaml.org,2002:timestamp", _timestamp_or_text)
_YAML_LOADER: Any = _YamlLoader


@dataclass(frozen=True)
class NoteRecord:
    """One note as read from its source file."""

    id: str
    title: str
    content: str
    # None: the source gives no such date; the writer finds it once (notes_upsert.sql).
    created_at: datetime | None
    updated_at: datetime | None
    source: str
    topic: str | None = None
    tags: tuple[str, ...] = ()
    test_run: bool = False
    # A markdown file's mtime: when its content changed last, as far as the file tells. The
    # writer takes it for a missing date only when it stores new content: an mtime that
    # moved without a change in the text (a checkout, a sync) is no update.
    modified_at: datetime | None = None

    def __post_init__(self) -> None:
        # Every source's line ends as "\n" (a JSON note's "\r\n" was stored as is: a lone
        # CR garbled a terminal, and a note counted other tokens than its twin in markdown).
        if "\r" in self.content:
            object.__setattr__(self, "content", _text.line_ends(self.content))
        if "\r" in self.title or "\n" in self.title:  # a title is one line
            object.__setattr__(self, "title", " ".join(_text.line_ends(self.title).split("\n")))

    @property
    def content_hash(self) -> str:
        """sha256 of title and content: what makes a note 'changed'."""
        return content_hash(self.title, self.content)


@dataclass(frozen=True)
class IngestError:
    """A file or line that could not be read; ``line`` is None for a whole-file error.
    ``kept``: the problem cost no note (a value ignored, a byte replaced: ``error`` starts
    with ``KEPT`` to say so; or a file read whole that holds none, an emptied page)."""

    source: str
    line: int | None
    error: str
    kept: bool = False

    @classmethod
    def note_kept(cls, source: str, line: int | None, reason: str) -> IngestError:
        """A problem that cost no note: ``"note kept, <reason>"``."""
        return cls(source, line, f"{KEPT}{reason}", kept=True)


@dataclass
class IngestResult:
    """Notes read, errors met, and which files were read completely (``files_ok``) or not
    (``files_failed``: notes missing from those are never marked deleted)."""

    notes: list[NoteRecord] = field(default_factory=list)
    errors: list[IngestError] = field(default_factory=list)
    files_ok: list[str] = field(default_factory=list)
    files_failed: list[str] = field(default_factory=list)

    def data_version(self) -> str:
        """Hash of every note's id and content hash (order-independent)."""
        return notes_data_version((n.id, n.content_hash) for n in self.notes)


def content_hash(title: str, content: str) -> str:
    """Return the sha256 hex digest (64 digits) identifying a note's title and content."""
    return _text.content_hash(title, content, length=64)


def notes_data_version(pairs: Iterable[tuple[str, str]]) -> str:
    """Hash ``(id, content_hash)`` pairs in id order into one short data version."""
    return _text.hash_rows(sorted(pairs))


def source_version(path: Path, home: Path | None = None) -> str:
    """Data version of the notes at ``path`` as seen without the database: a hash of the
    absolute path and of every note file's relative path and bytes (so the same files in
    two folders differ, and a file touched without a change does not). Reading bytes costs
    a fraction of parsing the notes; a change that leaves every note's content as it was
    re-runs ``raw_notes``, whose own data version then stays the same. With ``home``, a
    file whose stat is unchanged since the last look is not read again (its digest is
    kept in the home's :class:`~selene_dag.notes.file_cache.FileCache`)."""
    base = path.expanduser().resolve()
    digest = hashlib.sha256(str(base).encode("utf-8", "surrogatepass"))
    files = FileCache(home, base, "digests")
    inside = len(str(base).rstrip(os.sep) + os.sep)
    with walk_once():
        files_found, dangling = note_files(base), dangling_note_links(base)
    for file in files_found:
        name = file.name if base.is_file() else str(file)[inside:].replace(os.sep, "/")
        digest.update(b"\0" + name.encode("utf-8", "surrogatepass") + b"\0")
        try:
            digest.update(_file_digest(files, file))
        except OSError as exc:  # unreadable now: its error text is part of the version
            digest.update(str(exc).encode("utf-8", "surrogatepass"))
    for link in dangling:  # kept notes: removing the link deletes them
        name = str(link)[inside:].replace(os.sep, "/")
        digest.update(b"\0dangling\0" + name.encode("utf-8", "surrogatepass"))
    files.save()
    return digest.hexdigest()[:32]


def _file_digest(files: FileCache, file: Path) -> bytes:
    """The sha256 of ``file``'s bytes, from ``files`` when its stat is unchanged."""
    source = str(file)
    looked_at = time.time_ns()
    st = file.stat()
    entry = files.get(source, st)
    if entry is not None:
        return entry.digest
    found = hashlib.sha256(file.read_bytes()).digest()
    files.put(source, st, looked_at, Entry(stamp_of(st), found))
    return found


def notes_folder_version(notes_dir: Path, home: Path | None = None) -> str:
    """The data version the notes folder's observation records for ``notes_dir``: its
    :func:`source_version` (``home``: whose file cache to use), or that of no notes when
    the folder is missing."""
    return source_version(notes_dir, home) if notes_dir.exists() else notes_data_version([])


def read_notes(
    path: Path | str,
    scope: IngestScope | None = None,
    home: Path | None = None,
    stored_ids: Callable[[], Mapping[str, str]] | None = None,
) -> IngestResult:
    """Read every note under ``path`` (folder or single file); never raises for bad content.

    Without ``scope`` a note's id is its id inside ``path`` (for a file: inside its folder).
    With ``scope`` (whose ``path`` is ``path``) ids are home-wide, ``<key>/<id inside the
    scope's folder>``, and the registered folders of ``scope.skip`` are left out. With
    ``home``, a file whose stat is unchanged since it was last parsed is not read again:
    its notes and problems come from the home's file cache (:mod:`.file_cache`).
    ``stored_ids() -> {note id: its file}``, the store's live notes of the scope: when
    two notes claim one id, the one stored under it keeps it (asked only then).
    Raises FileNotFoundError only when ``path`` itself does not exist.
    """
    root = Path(path).expanduser()
    if not root.exists():
        raise FileNotFoundError(f"notes path {root} does not exist")
    if scope is not None:
        root = root.resolve()
    base = scope.folder if scope else root.parent if root.is_file() else root
    result = IngestResult()
    ids = _Ids(scope, stored_ids)
    skip = scope.skip if scope else ()
    with walk_once():  # the files and the folders that could not be listed: one walk
        files = note_files(root, skip)
        inside_skip = tuple(str(folder).rstrip("/") + "/" for folder in skip)
        unlisted = [u for u in unlisted_folders(root) if not (u[0] + "/").startswith(inside_skip)]
        renderings = [r for r in renderings_passed_over(root) if not (r[0]).startswith(inside_skip)]
        dangling = [d for d in dangling_note_links(root) if not d.startswith(inside_skip)]
    for page, beside in renderings:
        reason = (
            f"passed over as the copy of {beside} beside it (a page named as a note file "
            "is taken for its rendering); rename it to read it as a note of its own"
        )
        result.errors.append(IngestError(_text.path_text(page), None, reason, kept=True))
    # os.walk enters no linked folder, so below a root that is its own real path a file's
    # path is its source (resolving each file cost a tenth of a vault's read). A file that
    # is a link keeps its path in the folder as its source too: resolved to its target
    # elsewhere, the note was neither counted with the folder nor deleted with the link.
    real_root = root.is_dir() and str(root) == os.path.realpath(root)
    # A file named alone is parsed again when it changes; only a folder's unchanged files
    # are worth keeping parsed.
    parsed_files = FileCache(home if root.is_dir() else None, root.resolve(), "parsed")
    joplin = _joplin_folder_items([f for f in files if is_item_name(f.name)], base)
    for file in files:
        if str(file) in joplin:  # an item of a Joplin export folder, read with the others
            _take(result, ids, *joplin[str(file)])
            continue
        resolved = str(file) if real_root else str(file.resolve())
        source = _text.path_text(resolved)
        rel, about_export = _unzipped_page(_text.path_text(file.relative_to(base).as_posix()))
        if about_export:  # read whole, holds no note of the user's
            result.files_ok.append(source)
            continue
        read_members = _archive_reader(file.name) if file == root else None
        try:
            looked_at = time.time_ns()
            st = file.stat()
            known = parsed_files.get(str(file), st) if read_members is None else None
            if known is not None and known.parsed is not None and known.rel == rel:
                parsed = _unfrozen(known.parsed[0])
                raw = b""
            else:
                known = None
                raw = file.read_bytes()
            mtime = datetime.fromtimestamp(st.st_mtime, tz=UTC)
        except OSError as exc:  # unreadable, or gone since the folder was listed
            result.errors.append(IngestError(source, None, f"cannot read: {exc.strerror or exc}"))
            result.files_failed.append(source)
            continue
        if read_members is not None:  # an archive named alone, as downloaded
            members, errors = read_members(file, source, mtime)
            passed = ignored_members([m[1] for m in members], _archive_ignore_files(file))
            members = [m for m in members if m[1] not in passed]
            if not members and not errors:
                errors = [IngestError(source, None, "the archive holds no note file")]
            result.errors.extend(errors)
            if errors:
                result.files_failed.append(source)
            inside = {member_rel: member_raw for _, member_rel, member_raw, _ in members}
            items = _joplin_items([m for m in members if is_item_name(PurePosixPath(m[1]).name)])
            for member_source, member_rel, member_raw, member_mtime in members:
                if member_source in items:
                    _take(result, ids, *items[member_source])
                    continue
                parsed = _parse_file(member_raw, member_source, member_rel, member_mtime)
                bundle = bundle_of(member_rel)
                if parsed is not None and bundle is not None:
                    parsed = _with_bundle_info(parsed, inside.get(f"{bundle}/info.json"))
                if parsed is not None:
                    _take(result, ids, member_source, *parsed, member_rel)
            continue
        if known is None:
            parsed = _parse_file(raw, source, rel, mtime)
            entry = Entry(stamp_of(st), b"", rel, (_frozen(parsed),))
            parsed_files.put(str(file), st, looked_at, entry)
        if parsed is not None and bundle_of(rel) is not None:
            parsed = _with_bundle_info(parsed, _read_if_there(file.parent / "info.json"))
        if parsed is None:  # valid JSON, but no notes in it
            if file == root:  # named on its own: say why nothing came of it
                reason = (
                    "not a note file: a JSON file is read when it is a list of notes "
                    "({content, ...} objects) or an export of ChatGPT, Claude.ai, Google Keep, "
                    "Day One, Roam or Standard Notes"
                )
                result.errors.append(IngestError(source, None, reason))
            continue
        notes, errors = parsed
        if source != resolved:
            reason = "its file name is not UTF-8 (stored with those bytes written \\xNN)"
            errors.append(IngestError.note_kept(source, None, reason))
        _take(result, ids, source, notes, errors, rel)
    parsed_files.save()
    for folder, reason in unlisted:
        # Its notes are not seen: they stay as they were (marked failed, not deleted).
        where = _text.path_text(folder)
        why = f"cannot list this folder ({reason}): its notes are kept as they were"
        result.errors.append(IngestError(where, None, why))
        result.files_failed.append(where.rstrip("/") + "/")
    for link in dangling:
        # A drive not mounted, or a target moved away: what the link gave is kept as it was
        # until the link is removed (then its note is deleted, as a removed file's).
        source = _text.path_text(link)
        try:
            target = os.path.normpath(os.path.join(os.path.dirname(link), os.readlink(link)))
        except OSError:  # removed since the walk
            continue
        what = "a link that loops" if _loops(link) else "a link that leads to no file"
        why = (
            f"{what} (to {_text.path_text(target)}): not read (what it gave before is kept; "
            "remove the link to delete it)"
        )
        result.errors.append(IngestError(source, None, why))
        result.files_failed.append(source)
    result.notes = dated_by_creation(result.notes)
    result.errors.extend(_future_dates(result.notes))
    return result


def _loops(link: str) -> bool:
    """Whether the link ``link`` leads back to itself (through other links)."""
    try:
        os.stat(link)
    except OSError as exc:
        return exc.errno == errno.ELOOP
    return False


# A date this far past the real clock is a typo (2052 for 2025), not a time zone's.
_FUTURE_SLACK = timedelta(days=1)


def _future_dates(notes: Iterable[NoteRecord]) -> list[IngestError]:
    """A problem that cost no note for each note dated after the real clock's now (not
    ``SELENE_NOW``, which may be pinned in the past): such a note stays fresh, at full, and
    keeps its thread active until that day comes."""
    limit = datetime.now(UTC) + _FUTURE_SLACK
    found = []
    for note in notes:
        dates = (
            ("created", note.created_at),
            ("updated", note.updated_at),
            ("its file's modification time", None if note.created_at else note.modified_at),
        )
        for field_name, when in dates:
            if when is not None and when > limit:
                reason = (
                    f"dated in the future (note {note.id}, {field_name} {when:%Y-%m-%d}): it "
                    "stays fresh (at full, its thread active) until then; correct the date if "
                    "it is a typo"
                )
                found.append(IngestError.note_kept(note.source, None, reason))
                break
    return found


_Parsed = tuple[list[NoteRecord], list[IngestError]]
_NOTE_FIELDS = tuple(f.name for f in fields(NoteRecord))
_ERROR_FIELDS = tuple(f.name for f in fields(IngestError))


def _frozen(parsed: _Parsed | None) -> Any:
    """A parse result as the file cache keeps it: plain tuples of the records' fields
    (loaded about twice as fast as pickled dataclasses)."""
    if parsed is None:
        return None
    notes, errors = parsed
    return (
        [tuple(getattr(n, f) for f in _NOTE_FIELDS) for n in notes],
        [tuple(getattr(e, f) for f in _ERROR_FIELDS) for e in errors],
    )


def _unfrozen(kept: Any) -> _Parsed | None:
    """A kept parse result as :func:`_parse_file` returns it."""
    if kept is None:
        return None
    notes, errors = kept
    return [NoteRecord(*n) for n in notes], [IngestError(*e) for e in errors]


def _read_if_there(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None


def _with_bundle_info(
    parsed: tuple[list[NoteRecord], list[IngestError]], info: bytes | None
) -> tuple[list[NoteRecord], list[IngestError]]:
    """A TextBundle's note with what its ``info.json`` says (Bear's dates, where the text
    gives none; a Bear note's tags, from its text); none when Bear put it in the trash."""
    notes, errors = parsed
    fields = bundle_info(info)
    if fields.trashed:
        return [], []
    dated = [
        replace(
            note,
            created_at=note.created_at or fields.created_at,
            updated_at=note.updated_at or fields.updated_at,
            tags=tuple(dict.fromkeys((*note.tags, *bear_tags(note.content))))
            if fields.bear
            else note.tags,
        )
        for note in notes
    ]
    return dated, errors


def _parse_file(
    raw: bytes, source: str, rel: str, mtime: datetime
) -> tuple[list[NoteRecord], list[IngestError]] | None:
    """The notes and problems of one note file's bytes, by its suffix; None for a JSON file
    that holds no notes."""
    # Windows editors and PowerShell put a byte order mark first, and "Unicode" there
    # is UTF-16: read as the UTF-8 it stands for.
    if raw.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        raw = raw.decode("utf-16", errors="replace").encode("utf-8")
    raw = raw.removeprefix(codecs.BOM_UTF8)
    suffix = PurePosixPath(rel).suffix.lower()
    if suffix in JSONL_SUFFIXES:
        # Decoded line by line: one bad byte costs its line, not the whole file.
        return _parse_jsonl(raw, source, rel)
    if suffix in JSON_SUFFIXES:
        return _parse_json(raw, source, rel)
    if suffix in CANVAS_SUFFIXES:
        return _parse_canvas(raw, source, rel, mtime)
    if suffix in ENEX_SUFFIXES:
        objects, problems, notices = enex_notes(raw, rel)
        notes, errors = _notes_of_objects(enumerate(objects, 1), source, rel, "note", "notes")
        errors += [IngestError(source, None, problem) for problem in problems]
        return notes, errors + [IngestError.note_kept(source, None, n) for n in notices]
    if suffix in HTML_SUFFIXES:
        return _parse_html(raw, source, rel, mtime)
    if suffix in TEXT_SUFFIXES and raw.lstrip()[:1] in (b"{", b"["):
        # A .txt file that is JSON (Standard Notes names its backup so) is data, not a
        # note: read as a JSON file is, and passed over when it holds no notes.
        try:
            data = orjson.loads(raw)
        except orjson.JSONDecodeError:
            pass
        else:
            return _notes_of_json(data, source, rel)
    if b"\0" in raw[:_BINARY_SNIFF]:
        # Text never holds NUL (git's test for a binary file): an image or an archive
        # named .md would be stored as pages of replacement characters.
        return [], [IngestError(source, None, "not a text file (it holds NUL bytes)")]
    # One bad byte is no reason to lose a note: replace it, say so.
    text, errors = _decoded(raw, source)
    if suffix in ORG_SUFFIXES:
        meta, body = org_note(text.lstrip("\ufeff"))
        note, error = _note_of_page(meta, body, rel, source, mtime, header="Org settings")
    else:
        note, error = _parse_markdown(text, rel, source, mtime)
    return ([note] if note else []), errors + ([error] if error else [])


def _parse_html(
    raw: bytes, source: str, rel: str, mtime: datetime
) -> tuple[list[NoteRecord], list[IngestError]]:
    """The note of an HTML page: its text as markdown, its head's title, dates and tags
    (a Notion page's property rows give its dates and tags too)."""
    text, errors = _decoded(raw, source)
    page = html_note(text)
    meta: dict[str, Any] = {
        key: value
        for key, value in (
            ("title", page.title),
            ("created", page.created),
            ("updated", page.updated),
            ("tags", page.tags or None),
        )
        if value
    }
    if is_notion_page(PurePosixPath(rel).stem):
        for key, value in page_properties(page.text).items():
            meta.setdefault(key, value)
    note, error = _note_of_page(meta, page.text, rel, source, mtime, header="HTML head")
    return ([note] if note else []), errors + ([error] if error else [])


def _decoded(raw: bytes, source: str) -> tuple[str, list[IngestError]]:
    """``raw`` as text (:func:`~selene_dag.text.decode_text`: a bad byte replaced, a
    one-byte Latin encoding read as such, line ends as ``\\n``) and what had to be guessed,
    as a problem that cost no note."""
    text, reason = _text.decode_text(raw)
    return text, ([IngestError.note_kept(source, None, reason)] if reason else [])


@dataclass
class _Ids:
    """The note ids of one read: which file's note holds each so far (``seen``: its file,
    its place in the result, its path in the folder when the file holds one note), and,
    asked once when needed, which file's note the store holds under each (``stored``)."""

    scope: IngestScope | None
    stored: Callable[[], Mapping[str, str]] | None = None
    seen: dict[str, tuple[str, int, str | None]] = field(default_factory=dict)
    _owners: Mapping[str, str] | None = None

    def path_id(self, rel: str) -> str:
        """The id of the note of the file at ``rel``, named by its path."""
        return self.scope.note_id(rel) if self.scope is not None else rel

    def owner(self, note_id: str) -> str | None:
        """The file whose note the store holds, live, under ``note_id``."""
        if self.stored is None:
            return None
        if self._owners is None:
            self._owners = self.stored()
        return self._owners.get(note_id)

    def outside(self, source: str) -> bool:
        """Whether ``source`` is a file this read does not cover that is still there (a
        note outside the sub-folder ingested)."""
        if self.scope is None:
            return False
        within = self.scope.source_prefix
        return source != within and not source.startswith(within) and Path(source).exists()


def _claim(result: IngestResult, ids: _Ids, source: str, note: NoteRecord, rel: str) -> NoteRecord:
    """``note``, the one note of the file ``source`` at ``rel``, with the id it may hold.
    Its own id (a front-matter ``id``) held by another note, of another title, is that
    one's (a template's ``id: {{date}}`` gave two notes of one minute one id, and one was
    lost): this note keeps its path as its id, and says so. Of two files read now, the
    one whose note the store held under the id keeps it, else the first read; a note of
    a file this read does not cover (a sub-folder ingested) keeps its id."""
    by_path = ids.path_id(rel)
    if note.id == by_path:
        return note
    if note.id in ids.seen:
        first, place, first_rel = ids.seen[note.id]
        kept = result.notes[place]
        if kept.title == note.title:  # a copy of one note: kept once (below)
            return note
        if ids.owner(note.id) == source and first_rel is not None:
            moved = ids.path_id(first_rel)
            if moved not in ids.seen:
                result.notes[place] = replace(kept, id=moved)
                ids.seen[moved] = (first, place, first_rel)
                del ids.seen[note.id]
                result.errors.append(_id_taken(first, note.id, source, moved))
                return note
        holder = first
    else:
        holder = ids.owner(note.id)
        if holder is None or holder == source or not ids.outside(holder):
            return note
    if by_path in ids.seen:
        return note
    result.errors.append(_id_taken(source, note.id, holder, by_path))
    return replace(note, id=by_path)


def _id_taken(source: str, note_id: str, holder: str, by_path: str) -> IngestError:
    reason = (
        f"its id {note_id!r} is {holder}'s, another note: its path {by_path!r} is its id; "
        "give it an id of its own"
    )
    return IngestError.note_kept(source, None, reason)


def _take(
    result: IngestResult,
    ids: _Ids,
    source: str,
    notes: list[NoteRecord],
    errors: list[IngestError],
    rel: str | None = None,
) -> None:
    """Add one file's notes and problems to ``result``: ids made home-wide, an id another
    note holds settled (``_claim``, for a file of one note at ``rel``), a repeated id kept
    once: the copy updated last when both say when (two exports of one app side by side,
    the newer read second: its pages were dropped), else within one file the later (a JSONL
    log appends a note's new version: its correction was dropped), else the first."""
    result.errors.extend(errors)
    # A file with any unreadable part is "failed" for deletion tracking: a note whose line
    # broke must not be marked deleted. Its readable notes are still ingested. A problem
    # that cost no note (a value ignored, a byte replaced) does not count.
    lost = any(not e.kept for e in errors)
    (result.files_failed if lost else result.files_ok).append(source)
    single = rel if len(notes) == 1 else None
    for note in notes:
        if ids.scope is not None:
            note = replace(note, id=ids.scope.note_id(note.id))
        if single is not None:
            note = _claim(result, ids, source, note, single)
        if note.id in ids.seen:
            first, place, _ = ids.seen[note.id]
            kept = result.notes[place]
            dated = note.updated_at is not None and kept.updated_at is not None
            if dated and note.updated_at > kept.updated_at:
                result.notes[place] = note
                ids.seen[note.id] = (source, place, single)
                reason = (
                    f"duplicate note id {note.id!r} (also in {first}); kept this, updated later"
                )
            elif first == source and not (dated and note.updated_at < kept.updated_at):
                result.notes[place] = note
                reason = f"duplicate note id {note.id!r} in one file; kept the later"
            else:
                reason = f"duplicate note id {note.id!r} (first in {first}); kept the first"
            result.errors.append(IngestError(source, None, reason))
            continue
        ids.seen[note.id] = (source, len(result.notes), single)
        result.notes.append(note)


# A member of an archive larger than this is not read (an archive can claim any size).
ZIP_MEMBER_LIMIT = 1 << 30


# The folder an app puts around every page of an export under a name of that export
# alone: Notion's ``Export-<uuid>`` and a Bear backup's ``Bear Notes 2023-10-11 at
# 10.12.bear2bk``. Left out of a page's path (its id): in it, a newer export of the same
# pages gave every note a new id (all new, all deleted).
_EXPORT_FOLDER = re.compile(
    r"^(?:Export-[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}"
    r"|Bear Notes \d{4}-\d{2}-\d{2} at \d{2}\.\d{2}\.bear2bk)/"
)
# Pages an export adds about itself, no note of the user's: Notion's index of the export
# (its workspace's details), Google Takeout's archive browser (the account's address) and
# Keep's list of labels.
_EXPORT_PAGES = re.compile(
    r"^(?:index\.html|(?:Takeout/)?archive_browser\.html|(?:Takeout/)?Keep/Labels\.txt)$"
)
# A Standard Notes backup holds its notes in this file; the plain-text copies beside it
# (``Items/Note/<title>-<id>.txt``) are the same notes again.
_STANDARD_NOTES_BACKUP = re.compile(r"^Standard Notes Backup and Import File[^/]*\.txt$")


def _member_name(info: zipfile.ZipInfo) -> str:
    """A zip member's name: UTF-8 when its bytes are (macOS and others write UTF-8 names
    without the flag that says so, which Python reads as code page 437: "Search ΓÇô and
    Find" for "Search – and Find"), else as the zip file says; its folders parted by "/"
    (some Windows tools write "\\", which the zip format does not know: the same export
    zipped by another tool gave other note ids)."""
    name = info.filename
    if not (info.flag_bits & 0x800 or name.isascii()):
        with contextlib.suppress(UnicodeError):
            name = name.encode("cp437").decode("utf-8")
    return name.replace("\\", "/")


def _page_path(name: str) -> str:
    """A member's path inside an export, the folder of that export alone left out."""
    return _EXPORT_FOLDER.sub("", name, count=1)


# The same folder in a folder of notes: an export unzipped where the user keeps notes.
_EXPORT_FOLDER_IN_PATH = re.compile(r"(^|/)" + _EXPORT_FOLDER.pattern.removeprefix("^"))


def _unzipped_page(rel: str) -> tuple[str, bool]:
    """A file's path in a notes folder with an unzipped export's own folder left out, as
    inside the archive (a newer export of the same pages keeps their ids), and whether it
    is a page the export adds about itself (Notion's ``index.html``)."""
    found = _EXPORT_FOLDER_IN_PATH.search(rel)
    if found is None:
        return rel, False
    page = rel[found.end() :]
    return rel[: found.start()] + found.group(1) + page, bool(_EXPORT_PAGES.match(page))


def _zip_members(
    archive: Path | io.BytesIO, source: str, mtime: datetime, nested: bool = True
) -> tuple[list[tuple[str, str, bytes, datetime]], list[IngestError]]:
    """The note files inside a zip archive as ``(source, path inside, bytes, mtime)`` —
    source ``<archive>!/<path inside>`` — hidden ones and macOS resource forks left out;
    and the problems met (an archive that cannot be read, a member too large). With
    ``nested``, an archive inside it is read too (one level: Notion splits a large export
    into ``Part-N.zip`` files inside the one downloaded): its notes' sources are
    ``<archive>!/<inner archive>!/<path inside>``, their paths the path inside the inner
    archive."""
    members: list[tuple[str, str, bytes, datetime]] = []
    errors: list[IngestError] = []
    try:
        with zipfile.ZipFile(archive) as zipped:
            named = sorted(
                ((_member_name(info), info) for info in zipped.infolist()), key=lambda m: m[0]
            )
            twins = html_twins([name for name, _ in named])
            standard_notes = any(_STANDARD_NOTES_BACKUP.match(name) for name, _ in named)
            for name, info in named:
                parts = PurePosixPath(name).parts
                if info.is_dir() or any(part.startswith((".", "__MACOSX")) for part in parts):
                    continue
                if name in twins or (standard_notes and name.startswith("Items/")):
                    continue
                page = _page_path(name)
                if _EXPORT_PAGES.match(page) and (page != name or not name.startswith("index")):
                    continue
                suffix = PurePosixPath(name).suffix.lower()
                inner = nested and suffix == ".zip"
                if suffix not in NOTE_SUFFIXES and not inner:
                    continue
                where = f"{source}!/{name}"
                if info.file_size > ZIP_MEMBER_LIMIT:
                    errors.append(IngestError(where, None, "too large to read from the archive"))
                    continue
                stamp = datetime(*info.date_time, tzinfo=UTC) if info.date_time else mtime
                if inner:
                    found, problems = _zip_members(
                        io.BytesIO(zipped.read(info)), where, stamp, nested=False
                    )
                    # Named by their path inside the part, not the part's name: a page
                    # keeps its id when a later export splits the parts otherwise.
                    members += found
                    errors += problems
                else:
                    members.append((where, page, zipped.read(info), stamp))
    except (zipfile.BadZipFile, RuntimeError, OSError, ValueError, EOFError) as exc:
        # RuntimeError: an encrypted member; OSError, ValueError, EOFError: a damaged archive.
        errors.append(IngestError(source, None, f"cannot read the archive: {exc}"))
    return members, errors


def _json_problem(exc: orjson.JSONDecodeError, one_line: bool = False) -> str:
    """A one-line reason for text that is not JSON: where it breaks (its column, for
    ``one_line`` text), or that it is no JSON at all (orjson said "invalid literal,
    expected 'null'" of a line of words)."""
    if exc.pos == 0 and exc.msg.startswith("invalid literal"):
        return "not JSON (it opens with no object, list or value)"
    where = f"column {exc.colno}" if one_line else f"line {exc.lineno}, column {exc.colno}"
    return f"bad JSON: {exc.msg} ({where})"


def _archive_ignore_files(archive: Path) -> dict[str, str]:
    """The ``.seleneignore`` files of an archive: ``{folder inside it: text}`` ("" for
    its top), an Obsidian vault's template folders among their rules (as a folder's
    ingest passes them over); none when it cannot be read (its members' reading says
    why)."""
    found: dict[str, str] = {}

    def add(name: str, data: bytes) -> None:
        path = PurePosixPath(name)
        if path.name == IGNORE_FILE:
            folder = str(path.parent).removeprefix(".")
            found[folder] = _text.decode_text(data)[0] + "\n" + found.get(folder, "")
        elif (vault := _template_setting_vault(path)) is not None:
            folder = _template_folder(path, data)
            if folder:
                found[vault] = found.get(vault, "") + f"\n/{folder}/\n"

    try:
        if zipfile.is_zipfile(archive):
            with zipfile.ZipFile(archive) as zipped:
                for info in zipped.infolist():
                    name = _page_path(_member_name(info))  # as the members' paths are
                    if _wanted_setting(name):
                        add(name, zipped.read(info))
        elif tarfile.is_tarfile(archive):
            with tarfile.open(archive) as tarred:
                for info in tarred.getmembers():
                    name = info.name.removeprefix("./")
                    if info.isfile() and _wanted_setting(name):
                        handle = tarred.extractfile(info)
                        if handle is not None:
                            add(name, handle.read())
    except (zipfile.BadZipFile, tarfile.TarError, RuntimeError, OSError, ValueError, EOFError):
        return {}
    return found


def _wanted_setting(name: str) -> bool:
    path = PurePosixPath(name)
    return path.name == IGNORE_FILE or _template_setting_vault(path) is not None


def _template_setting_vault(path: PurePosixPath) -> str | None:
    """The vault (its folder inside the archive, "" at the top) whose template settings
    file (``TEMPLATE_SETTINGS``) ``path`` is, or None."""
    for parts, _ in TEMPLATE_SETTINGS:
        tail = (".obsidian", *parts)
        if path.parts[-len(tail) :] == tail:
            return "/".join(path.parts[: -len(tail)])
    return None


def _template_folder(path: PurePosixPath, data: bytes) -> str | None:
    """The template folder a settings file names, relative to its vault; None when it
    names none (or cannot be read)."""
    key = next(k for parts, k in TEMPLATE_SETTINGS if path.parts[-len(parts) :] == parts)
    try:
        return named_template_folder(orjson.loads(data), key)
    except ValueError:
        return None


def _tar_members(
    archive: Path, source: str, mtime: datetime
) -> tuple[list[tuple[str, str, bytes, datetime]], list[IngestError]]:
    """The note files inside a tar archive (Joplin's JEX), as :func:`_zip_members` gives
    a zip's."""
    members: list[tuple[str, str, bytes, datetime]] = []
    errors: list[IngestError] = []
    try:
        with tarfile.open(archive) as tarred:
            for info in sorted(tarred.getmembers(), key=lambda i: i.name):
                name = info.name.removeprefix("./")
                parts = PurePosixPath(name).parts
                if not info.isfile() or any(part.startswith(".") for part in parts):
                    continue
                if PurePosixPath(name).suffix.lower() not in NOTE_SUFFIXES:
                    continue
                where = f"{source}!/{name}"
                if info.size > ZIP_MEMBER_LIMIT:
                    errors.append(IngestError(where, None, "too large to read from the archive"))
                    continue
                handle = tarred.extractfile(info)
                if handle is None:
                    continue
                stamp = datetime.fromtimestamp(info.mtime, tz=UTC) if info.mtime else mtime
                members.append((where, name, handle.read(), stamp))
    except (tarfile.TarError, OSError, ValueError, EOFError) as exc:
        errors.append(IngestError(source, None, f"cannot read the archive: {exc}"))
    return members, errors


_ParsedFile = tuple[str, list[NoteRecord], list[IngestError]]


def _joplin_folder_items(files: list[Path], base: Path) -> dict[str, _ParsedFile]:
    """:func:`_joplin_items` of the item-named files of a folder (Joplin's RAW export),
    keyed by the file's path; a file that cannot be read is left to the usual reading,
    which says so."""
    found: list[tuple[str, str, bytes, datetime]] = []
    paths: dict[str, str] = {}
    for file in files:
        try:
            raw = file.read_bytes()
            mtime = datetime.fromtimestamp(file.stat().st_mtime, tz=UTC)
        except OSError:
            continue
        source = _text.path_text(str(file.resolve()))
        paths[source] = str(file)
        found.append((source, _text.path_text(file.relative_to(base).as_posix()), raw, mtime))
    return {paths[source]: parsed for source, parsed in _joplin_items(found).items()}


def _joplin_items(
    files: list[tuple[str, str, bytes, datetime]],
) -> dict[str, _ParsedFile]:
    """The files among ``files`` (``(source, path, bytes, mtime)``) that are Joplin items,
    keyed by source, each with its notes (one for a note, none for a notebook, a tag or a
    link) and problems, ready for :func:`_take`. Notebooks and tags are looked up among the
    items of the same folder."""
    by_folder: dict[str, dict[str, tuple[str, str, datetime]]] = {}
    items: dict[str, JoplinItem] = {}
    for source, rel, raw, mtime in files:
        item = parse_item(raw.decode("utf-8", errors="replace").lstrip("\ufeff"))
        if item is None:
            continue
        folder = str(PurePosixPath(rel).parent)
        by_folder.setdefault(folder, {})[source] = (rel, source, mtime)
        items[source] = item
    parsed: dict[str, _ParsedFile] = {}
    for members in by_folder.values():
        notes = joplin_notes({source: items[source] for source in members})
        for source, (rel, _, mtime) in members.items():
            note = notes.get(source)
            if note is None:  # a notebook, a tag, a link, a note in the trash
                parsed[source] = (source, [], [])
            elif note.encrypted:
                reason = "encrypted by Joplin: export it from a Joplin that can decrypt it"
                parsed[source] = (source, [], [IngestError(source, None, reason)])
            else:
                meta = {
                    "title": note.title or None,
                    "created": note.created,
                    "updated": note.updated,
                    "tags": list(note.tags),
                    "theme": note.notebook,
                }
                # A to-do is often a title alone: its title is its text.
                text = note.body if note.body.strip() else note.title
                record, problem = _note_of_page(
                    meta, text, rel, source, mtime, header="Joplin properties"
                )
                parsed[source] = (source, [record] if record else [], [problem] if problem else [])
    return parsed


# Reasons recorded for a note that was ingested despite a problem start with this.
KEPT = "note kept, "


# Logseq writes a page's properties as its first lines, ``title:: …``, ``tags:: a, b``.
_PROPERTY = re.compile(r"^([A-Za-z][\w-]*):: ?(.*?)\s*$")
_PAGE_LINK = re.compile(r"\[\[(.*?)\]\]")  # tags:: [[work]] names the page "work"


def _page_properties(body: str) -> tuple[dict[str, str], str]:
    """The ``key:: value`` lines a page starts with (Logseq's page properties: lower-cased
    keys, ``[[page]]`` links as their names), and the text after them. They are the page's
    metadata, as front matter is: left in, they opened every essence and excerpt."""
    found: dict[str, str] = {}
    lines = body.splitlines(keepends=True)
    taken = 0
    for line in lines:
        match = _PROPERTY.match(line.rstrip("\r\n"))
        if match is None:
            break
        found[match.group(1).lower()] = _PAGE_LINK.sub(r"\1", match.group(2))
        taken += 1
    found.pop("id", None)  # Logseq's reference id of a block, not the note's name
    if not taken:
        return found, body
    return found, "".join(lines[taken:]).lstrip("\r\n")


def _yaml_problem(exc: BaseException) -> str:
    """A YAML error as one line naming the file line it is on (the front matter starts
    on line 2): ``line 3: mapping values are not allowed here``."""
    text = str(getattr(exc, "problem", "") or "") or (str(exc).splitlines() or [""])[0]
    mark = getattr(exc, "problem_mark", None)
    text = text or type(exc).__name__
    return f"line {mark.line + 2}: {text}" if mark is not None else text


_SIMPLE_KEY = re.compile(r"([A-Za-z_][\w-]*):(?:\s+(.*))?$")


def _line_by_line(front: str) -> tuple[dict[str, Any] | None, list[str]]:
    """The front matter YAML refused, read line by line (a value holding ': ' unquoted,
    ``title: Decision: which offer``, is the commonest hand-written slip; an unclosed
    ``[a, b`` list another): each ``key: value`` line's value read as YAML alone (a date, a
    ``[a, b]`` list), else as its text (quotes around it removed); ``- item`` lines under an
    empty key a list; a ``|`` or ``>`` value its indented lines. Returns the fields and the
    keys whose value could not be read (left out), or None when a line is none of these."""
    out: dict[str, Any] = {}
    unread: list[str] = []
    last: str | None = None
    block: list[str] | None = None  # the lines of a | or > value being read
    for line in front.splitlines():
        if block is not None:
            if not line.strip() or line[:1].isspace():
                block.append(line.strip())
                continue
            out[last or ""] = "\n".join(block).strip()
            block = None
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        item = line.strip()
        if item.startswith("- "):
            if last is not None and out[last] is None:
                out[last] = []
            if last is None or not isinstance(out[last], list):
                return None, []
            out[last].append(_lone_value(item[2:]))
            continue
        if line[:1].isspace():
            return None, []
        found = _SIMPLE_KEY.match(line)
        if found is None:
            return None, []
        last = found[1]
        value = (found[2] or "").strip()
        if value in ("|", ">", "|-", ">-", "|+", ">+"):
            block = []
            continue
        out[last] = _lone_value(value) if value else None
        if value and out[last] is None:
            unread.append(last)
    if block is not None:
        out[last or ""] = "\n".join(block).strip()
    return (out, unread) if out else (None, [])


def _lone_value(text: str) -> Any:
    """A front-matter value read as YAML on its own (a date, a number, ``[a, b]``), else
    its text with the quotes around it removed; None for a list or mapping YAML cannot read
    (``[unclosed, list`` became the tags ``[unclosed`` and ``list``)."""
    try:
        value = yaml.load(text, Loader=_YAML_LOADER)
    except (yaml.YAMLError, ValueError, TypeError, OverflowError, RecursionError):
        if text.lstrip().startswith(("[", "{")):
            return None
        return text.strip().strip("'\"")
    return value if not isinstance(value, dict) else text.strip().strip("'\"")


_NOT_PAIRS = "expected key: value pairs"


def _parse_markdown(
    text: str, rel: str, source: str, mtime: datetime
) -> tuple[NoteRecord | None, IngestError | None]:
    meta: dict[str, Any] = {}
    header = "front-matter"
    body = text.lstrip("\ufeff")
    problem: IngestError | None = None
    match = _FRONT_MATTER.match(body)
    if match:
        broken = None
        try:
            loaded = yaml.load(match.group(1) or "", Loader=_YAML_LOADER)
        except (yaml.YAMLError, ValueError, TypeError, OverflowError, RecursionError) as exc:
            broken = _yaml_problem(exc)
            loaded, unread = _line_by_line(match.group(1) or "")
            if loaded is not None:
                meta = loaded
                how = "its lines read as 'key: value'"
                if "mapping values are not allowed" in broken:
                    how += " up to the first ': ' (quote a value that holds ': ')"
                if unread:
                    how += f"; {', '.join(unread)} left out (unreadable)"
                problem = IngestError.note_kept(source, None, f"front-matter {broken}: {how}")
                broken = None
        else:
            if loaded is not None and not isinstance(loaded, dict):
                broken = _NOT_PAIRS
            elif loaded is None and (match.group(1) or "").strip():
                # Only comments to YAML: a heading between two rules ("---\n# Part 1\n---"),
                # no front matter. Cut, the heading went without a word.
                match = None
            else:
                meta = loaded or {}
        prose = broken == _NOT_PAIRS
        if broken:
            # Prose or a list between two rules is the note's text, kept (a note opening
            # with a rule lost the lines up to the next); a mapping YAML cannot read is a
            # front matter with a typo: left out, and said.
            kept = " (kept in the text)" if prose else ""
            problem = IngestError.note_kept(source, None, f"front-matter ignored: {broken}{kept}")
        if match is not None and not prose:
            body = body[match.end() :]
    elif body.startswith("---\n") or body.startswith("---\r\n"):
        problem = IngestError.note_kept(source, None, "front-matter ignored: no closing '---' line")
    elif is_notion_page(PurePosixPath(rel).stem):
        meta, header = page_properties(body), "Notion property"
    else:
        meta, body = _page_properties(body)
        header = "page property" if meta else header
    if is_drawing(meta):
        body = drawing_text(body)
        if not body:  # a drawing without words: nothing to read, nothing wrong
            return None, problem
    elif PurePosixPath(rel).suffix.lower() != ".txt":
        body = strip_comments(body)  # Obsidian's %%comments%%: the author's, never shown
        body = strip_block_properties(body)  # Logseq's block ids and folding
    note, ignored = _note_of_page(meta, body, rel, source, mtime, header)
    return note, ignored or problem


def _note_of_page(
    meta: dict[str, Any],
    body: str,
    rel: str,
    source: str,
    mtime: datetime,
    header: str = "front-matter",
) -> tuple[NoteRecord | None, IngestError | None]:
    """The note of one page file (markdown, text, Org) from its settings ``meta`` (the
    fields of its ``header``) and its text ``body``; the problem met (a setting ignored,
    or no text at all)."""
    if not body.strip():
        # Read whole and found empty: no note is lost to it, so the note the page held
        # before is marked deleted (kept, a page emptied to remove a secret served it on).
        where = f"no text after the {header}" if meta else "the file holds no text"
        return None, IngestError(source, None, f"empty note: {where}", kept=True)
    fields = _Fields(meta)
    title = fields.read(_clean_str, "title") or _first_heading(body) or _file_title(rel)
    created = fields.read(_as_datetime, *_CREATED) or _date_in_name(Path(rel).stem)
    note = NoteRecord(
        id=fields.read(_clean_str, "id") or rel,
        title=title,
        content=body,
        created_at=created,
        updated_at=fields.read(_as_datetime, *_UPDATED),
        source=source,
        topic=fields.read(_clean_str, "theme", "topic"),
        tags=fields.read(_as_tags, "tags") or (),
        test_run=bool(meta.get("test_run", False)),
        modified_at=max(created or mtime, mtime),
    )
    if fields.ignored:  # a broken front-matter leaves no field to ignore
        return note, IngestError.note_kept(source, None, f"{header} {fields.summary()}")
    return note, None


def _parse_canvas(
    raw: bytes, source: str, rel: str, mtime: datetime
) -> tuple[list[NoteRecord], list[IngestError]]:
    """The note of a JSON Canvas file: its cards' text in reading order (``canvas``),
    titled by its name; none for a canvas without words."""
    if not raw.strip():  # a canvas just made, never drawn on: no words, no problem
        return [], []
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        return [], [IngestError(source, None, _json_problem(exc))]
    if isinstance(data, dict) and not data.get("nodes") and set(data) <= {"nodes", "edges"}:
        return [], []  # an empty canvas ({} as Obsidian writes it)
    if not is_canvas(data):
        return [], [IngestError(source, None, "not a canvas: no 'nodes' list")]
    text = canvas_text(data)
    if not text:
        return [], []
    # Titled by its name: a card's heading names the card, not the canvas.
    note, error = _note_of_page({"title": _file_title(rel)}, text, rel, source, mtime)
    return ([note] if note else []), ([error] if error else [])


def _parse_jsonl(raw: bytes, source: str, rel: str) -> tuple[list[NoteRecord], list[IngestError]]:
    """The notes of a JSONL file whose path in its folder is ``rel``: a line without an
    id is named by its place, ``<rel>:<line number>``, and the file says so once."""

    def decoded() -> Iterator[tuple[int, Any]]:
        for number, line in enumerate(raw.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                line.decode("utf-8")
            except UnicodeDecodeError as exc:
                reason = f"not valid UTF-8 ({exc.reason} at byte {exc.start})"
                yield number, IngestError(source, number, reason)
                continue
            try:
                yield number, orjson.loads(line)
            except orjson.JSONDecodeError as exc:
                yield number, IngestError(source, number, _json_problem(exc, one_line=True))

    return _notes_of_objects(decoded(), source, rel, "line", "lines")


def _notes_of_objects(
    objects: Iterable[tuple[int, Any]],
    source: str,
    rel: str,
    unit: str,
    units: str,
    place: str | None = None,
) -> tuple[list[NoteRecord], list[IngestError]]:
    """The notes of numbered JSON objects (JSONL lines, or the entries of a JSON list:
    ``unit``), an object already found unreadable given as its IngestError. A problem
    names its line, or its entry in its text; an object without id is named by its place,
    ``<rel>:<number>``, and the file says so once. With ``place`` (a file that is one note)
    a note without id is named ``place`` and nothing is said of it."""
    notes: list[NoteRecord] = []
    errors: list[IngestError] = []
    unnamed = 0
    for number, obj in objects:
        if isinstance(obj, IngestError):
            errors.append(obj)
            continue
        line, label = (number, "") if unit == "line" else (None, f"{unit} {number}: ")
        if place is not None:
            label = ""
        own_place = place or f"{rel}:{number}"
        try:
            note, fields = _record_from_json(obj, source, own_place)
        except _EmptyNote as exc:
            errors.append(IngestError(source, line, f"{label}{exc}", kept=True))
            continue
        except (TypeError, ValueError, KeyError) as exc:
            errors.append(IngestError(source, line, f"{label}{exc}"))
            continue
        notes.append(note)
        unnamed += place is None and note.id == own_place
        if fields.ignored:
            errors.append(IngestError.note_kept(source, line, f"{label}{fields.summary()}"))
    return notes, errors + _unnamed_notice(source, rel, unnamed, unit, units)


def _parse_json(
    raw: bytes, source: str, rel: str
) -> tuple[list[NoteRecord], list[IngestError]] | None:
    """The notes of a JSON file whose path in its folder is ``rel`` (see
    :func:`_notes_of_json`); None for valid JSON that holds none."""
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        return [], [IngestError(source, None, _json_problem(exc))]
    return _notes_of_json(data, source, rel)


def _notes_of_json(
    data: Any, source: str, rel: str
) -> tuple[list[NoteRecord], list[IngestError]] | None:
    """The notes of decoded JSON: a chat export's conversations (each note's id the
    conversation's, ``<rel>:<position>`` when the export gives none), a note app's export,
    or a list of note objects read as JSONL lines are. None when it holds none of these."""
    kind = export_kind(data)
    if kind is not None:
        chats, problems = exported_chats(data, kind)
        notes = [
            NoteRecord(
                id=chat.id or f"{rel}:{chat.position}",
                title=chat.title,
                content=chat.text(),
                created_at=chat.created_at,
                updated_at=chat.updated_at or chat.created_at,
                source=source,
            )
            for chat in chats
        ]
        errors = [IngestError(source, None, f"conversation {n}: {why}") for n, why in problems]
        unnamed = sum(chat.id is None for chat in chats)
        return notes, errors + _unnamed_notice(
            source, rel, unnamed, "conversation", "conversations"
        )
    if is_keep_note(data):  # Google Keep: one note a file, named by the file
        note = keep_note(data)
        if note is None:  # in the trash, or without text
            return None
        return _notes_of_objects([(0, note)], source, rel, "note", "notes", place=rel)
    entries = day_one_entries(data)
    if entries is None:
        entries = roam_pages(data)
    if entries is None:
        entries = standard_notes_items(data)
    if entries is not None:
        data = entries
    if not isinstance(data, list) or not any(
        isinstance(item, dict) and any(k in item for k in ("content", *_CONTENT_ALIASES))
        for item in data
    ):
        return None
    return _notes_of_objects(enumerate(data, 1), source, rel, "entry", "entries")


def _unnamed_notice(
    source: str, rel: str, unnamed: int, unit: str, units: str
) -> list[IngestError]:
    """Once per file, not per note (an export without ids would drown every other line):
    the notes named by their place, whose id moves when a note is inserted above."""
    if not unnamed:
        return []
    reason = (
        f"{_text.plural(unnamed, unit, units)} without an 'id' named by place "
        f"('{rel}:<{unit}>'): {'an' if unit[0] in 'aeiou' else 'a'} {unit} inserted above "
        "one changes its id"
    )
    return [IngestError.note_kept(source, None, reason)]


# Other names exports give a note's text, read when it has no "content".
_CONTENT_ALIASES = ("text", "body")
# A note's dates under the names it may give them (Jekyll and Hugo write date / lastmod),
# the first present read.
_CREATED = ("created_at", "created", "date")
_UPDATED = ("updated_at", "updated", "modified", "lastmod")


class _EmptyNote(ValueError):
    """An entry read whole that holds no text: no note, and none lost (the note it held
    before is marked deleted)."""


def _record_from_json(obj: Any, source: str, place: str) -> tuple[NoteRecord, _Fields]:
    """The note of one JSONL object; ``place`` is its id when it gives none. Raises
    TypeError or ValueError when it is no note (not an object, no text, an unreadable id)."""
    if not isinstance(obj, dict):
        raise TypeError(f"expected a JSON object, got {type(obj).__name__}")
    note_id = _clean_str(obj.get("id")) or place
    keys = [k for k in ("content", *_CONTENT_ALIASES) if k in obj]
    if not keys:
        raise ValueError("missing 'content' (the note's text; 'text' or 'body' are read too)")
    # The first that holds text (an export may give an empty "content" beside its "text").
    key = next((k for k in keys if isinstance(obj[k], str) and obj[k].strip()), keys[0])
    content = obj[key]
    if not isinstance(content, str):
        raise TypeError(f"'{key}' must be a string")
    if not content.strip():  # as an empty file is: no text, no note
        raise _EmptyNote(f"empty note: '{key}' holds no text")
    fields = _Fields(obj)
    title = fields.read(_clean_str, "title") or _first_heading(content) or note_id
    created = fields.read(_as_datetime, *_CREATED)
    updated = fields.read(_as_datetime, *_UPDATED) or created
    note = NoteRecord(
        id=note_id,
        title=title,
        content=content,
        created_at=created,
        updated_at=updated,
        source=source,
        topic=fields.read(_clean_str, "topic", "theme"),
        tags=fields.read(_as_tags, "tags") or (),
        test_run=bool(obj.get("test_run", False)),
    )
    return note, fields


class _Fields:
    """The optional fields of one note's source (front-matter or JSONL object), read
    leniently: a value that cannot be read is ignored and remembered, so the note is kept
    without it and the reason reported."""

    def __init__(self, values: dict[str, Any]) -> None:
        self.values = values
        self.ignored: list[str] = []

    def read(self, parse: Callable[[Any], _T], *names: str) -> _T | None:
        """``parse`` of the first of ``names`` that has a value; None when none has one
        or when ``parse`` raises TypeError or ValueError (then remembered)."""
        name = next((n for n in names if self.values.get(n) not in (None, "")), names[0])
        try:
            return parse(self.values.get(name))
        except (TypeError, ValueError) as exc:
            self.ignored.append(f"{name} ({exc})")
            return None

    def summary(self) -> str:
        """What was ignored, for a reason line: ``created (unreadable date …) ignored``."""
        return ", ".join(self.ignored) + " ignored"


def _date_in_name(stem: str) -> datetime | None:
    """The day a file's name gives (``2024-03-05``, ``2024_03_05 standup``: daily notes of
    Obsidian and Logseq), midnight UTC, or the minute a name starting with a Zettelkasten
    id gives (``202403051015``, ``20240305101500-slug``), UTC; None when it names no valid
    day."""
    match = _NAME_STAMP.match(stem) or _NAME_DATE.search(stem)
    if match is None:
        return None
    try:
        return datetime(*(int(part) for part in match.groups() if part), tzinfo=UTC)
    except ValueError:  # 2024-13-45
        return None


def _file_title(rel: str) -> str:
    """The title a file's name gives: its stem, without the ``.excalidraw`` that Obsidian
    drawings' names carry (``Plan.excalidraw.md``) or the page id of a Notion page's; the
    bundle's name for the text of a TextBundle (``Trip.textbundle/text.md``: Bear and
    Ulysses export so)."""
    path = PurePosixPath(rel)
    if bundle_of(rel) is not None:
        return path.parent.stem
    if path.parent.name in ("journals", "pages"):  # a Logseq graph's page files
        return _logseq_title(path.stem, path.parent.name)
    return page_title(path.stem.removesuffix(".excalidraw")) or path.stem


_LOGSEQ_DAY = re.compile(r"^(\d{4})_(\d{2})_(\d{2})$")


def _logseq_title(stem: str, folder: str) -> str:
    """A Logseq page's title from its file's name: a journal's day as ``2024-03-05``
    (its file ``2024_03_05.md``), a namespace page's ``a/b`` (its file ``a___b.md``)."""
    if folder == "journals" and (day := _LOGSEQ_DAY.match(stem)):
        return "-".join(day.groups())
    if folder != "pages":
        return stem
    # Logseq writes a name's characters a file name cannot hold as %XX (What%3F: What?).
    return unquote(stem.replace("___", "/")) if "%" in stem else stem.replace("___", "/")


def _first_heading(text: str) -> str | None:
    """The first ``# `` heading outside fenced code (a shell comment in a code block is no
    title) and HTML comments. One pass over the text."""
    opened = ""  # the open fence's run of backticks or tildes
    in_comment = False
    position = 0
    while (match := _HEADING.search(text, position)) is not None:
        before = text[position : match.start()]
        for line in before.split("\n"):
            fence = _FENCE_RUN.match(line)
            if fence is None:
                continue
            run, rest = fence.groups()
            if not opened:
                opened = run
            elif run[0] == opened[0] and len(run) >= len(opened) and not rest.strip():
                opened = ""  # CommonMark: a closing fence is as long as the opening, bare
        in_comment = _in_comment_after(before, in_comment)
        if not opened and not in_comment:
            return match.group(1).strip()
        in_comment = _in_comment_after(match.group(0), in_comment)
        position = match.end()
    return None


def _in_comment_after(text: str, in_comment: bool) -> bool:
    """Whether an HTML comment is open after ``text``, given whether one was before it."""
    opening, closing = text.rfind("<!--"), text.rfind("-->")
    if opening == closing:  # neither
        return in_comment
    return opening > closing


_FENCE_RUN = re.compile(r"^\s{0,3}(`{3,}|~{3,})(.*)$")


def _clean_str(value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str | int | float):
        raise TypeError(f"expected text, got {type(value).__name__}")
    text = str(value).strip()
    return text or None


def _as_datetime(value: Any) -> datetime | None:
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day, tzinfo=UTC)
    if isinstance(value, str):
        try:
            return parse_datetime(value)
        except ValueError:
            raise ValueError(f"unreadable date {value!r}") from None
    if isinstance(value, int | float) and not isinstance(value, bool):
        return _number_date(value)
    raise TypeError(f"unreadable date {value!r}")


# Seconds since the epoch of the years 2001 to 2099, and their milliseconds: what apps'
# JSON exports write (``"updated_at": 1709629200``).
_EPOCH_SECONDS = (1e9, 4.1e9)


def _number_date(value: float) -> datetime:
    """A date written as a number: ``20240315`` (a compact day, YAML reads it as one), or
    seconds or milliseconds since the epoch. Raises ValueError for any other number."""
    if isinstance(value, int) and 19000101 <= value <= 29991231:
        try:
            return datetime.strptime(str(value), "%Y%m%d").replace(tzinfo=UTC)
        except ValueError:
            raise ValueError(f"unreadable date {value!r}") from None
    low, high = _EPOCH_SECONDS
    for scale in (1, 1000):
        if low <= value / scale < high:
            return datetime.fromtimestamp(value / scale, tz=UTC)
    raise ValueError(
        f"unreadable date {value!r} (a number is a day as 20240315, or seconds since 1970)"
    )


def _tag_names(values: Iterable[str]) -> tuple[str, ...]:
    """Tag names without their ``#``, each once whatever its case (Obsidian's tags are),
    as first written."""
    names: dict[str, str] = {}
    for value in values:
        name = value.strip().lstrip("#").strip()
        if name:
            names.setdefault(name.casefold(), name)
    return tuple(names.values())


def _as_tags(value: Any) -> tuple[str, ...]:
    """Tags as written: a list, a comma-separated string or hashtags (``#aws #til``), each
    without its ``#`` (Obsidian reads ``#idea`` and ``idea`` as one tag), each once; a list
    item that is no text (a nested list or mapping) is left out."""
    if value is None:
        return ()
    if isinstance(value, str):
        words = value.split()
        if len(words) > 1 and all(w.startswith("#") for w in words):  # "#aws #til"
            return _tag_names(re.split(r"[,\s]+", value))
        return _tag_names(value.split(","))
    if isinstance(value, list | tuple):
        return _tag_names(str(t) for t in value if isinstance(t, str | int | float))
    raise TypeError(
        f"'tags' must be a list or a comma-separated string, got {type(value).__name__}"
    )
