"""Citations as ask prints them, read back: which lines of a note or which events of a
session a pack item points at, shown whole (``selene-dag show``).

``parse_citation`` reads ``note <id> lines 12-30, 41``, ``<session key> events 3-9`` (or a
bare session key) and the JSON items' ids ``note:<id>`` / ``chunk:<id>``; ``widen`` adds
context around the ranges; ``cut_lines`` keeps the lines of a text that ranges name (all
three pure); ``show`` reads what a citation points at from the store.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from unicodedata import normalize

import duckdb

from selene_dag.errors import NotFoundError, UsageError
from selene_dag.files import file_state
from selene_dag.notes.writer import MOVED_MIN_CHARS
from selene_dag.retrieval.select import line_ranges, lines_text
from selene_dag.sessions.chunker import render_event
from selene_dag.sessions.parsers.model import SessionEvent
from selene_dag.sessions.store import load_events
from selene_dag.text import decode_text, plural, text_lines

__all__ = ["Citation", "Shown", "cut_lines", "parse_citation", "parse_ranges", "show", "widen"]

GAP = "…"
# Longer than any note id and ranges a pack prints.
MAX_CITATION_CHARS = 4096
_RANGES = r"\d+(?:-\d+)?(?:\s*,\s*\d+(?:-\d+)?)*"
_NOTE = re.compile(rf"note(?::| +)(?P<id>.+?)(?: +lines? +(?P<ranges>{_RANGES}))?")
_EVENTS = re.compile(rf"(?P<key>\S+) +events +(?P<ranges>{_RANGES})")
_CHUNK = re.compile(r"chunk:(?P<id>\S+)")
_KEY = re.compile(r"[\w.-]+")
_WITHOUT_ID = {
    "note": "note <id>",
    "note:": "note:<id>",
    "chunk": "chunk:<id>",
    "chunk:": "chunk:<id>",
}
_PROJECT_HASH = re.compile(r"[0-9a-f]{32,}")
_LINE_BREAK = re.compile(r"[ \t\u00a0]*[\r\n]\s*|[\t\u00a0]")
_HEADER = re.compile(r"\[(?P<citation>.+?)\](?= |$)")


@dataclass(frozen=True)
class Citation:
    """What a citation points at: a ``note`` (``ref`` its id; ``ranges`` 1-based lines),
    a ``session`` (``ref`` its key; ``ranges`` event numbers) or a ``chunk`` (``ref`` its
    id, as the JSON item's ``id`` names it). Ranges are inclusive ``(first, last)`` pairs
    in order; none means the whole note or session."""

    kind: str
    ref: str
    ranges: tuple[tuple[int, int], ...] = ()


def parse_ranges(text: str) -> tuple[tuple[int, int], ...]:
    """``"12-30, 41"`` as ``((12, 30), (41, 41))``. Raises UsageError for a range that
    runs backwards."""
    out: list[tuple[int, int]] = []
    for part in text.split(","):
        first, _, last = part.strip().partition("-")
        a, b = int(first), int(last or first)
        if b < a:
            raise UsageError(
                f"range {part.strip()} runs backwards: write the first line or event first "
                f"({last}-{first})"
            )
        out.append((a, b))
    return tuple(out)


def bracketed(line: str) -> str | None:
    """The citation of a header line ``[citation] title`` (None when ``line`` opens with no
    "["): up to the "]" that closes the opening one, brackets inside it balanced (a file
    named ``a [draft] b.md``), when a space or the line's end follows it; else up to the
    first "]" a space or the end follows (a "]" inside a note's id seldom has one)."""
    if not line.startswith("["):
        return None
    depth = 0
    for i, char in enumerate(line):
        if char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
            if depth == 0:
                if i + 1 == len(line) or line[i + 1] == " ":
                    return line[1:i]
                break
    found = _HEADER.match(line)
    return found["citation"] if found else None


def parse_citation(text: str) -> Citation:
    """The citation ``text`` (as an ask item's header or ``location`` prints it, or a JSON
    item's ``id``) read back. Raises UsageError naming the forms it takes when ``text``
    is none of them."""
    if len(text) > MAX_CITATION_CHARS:  # not echoed back in the error: it may be megabytes
        raise UsageError(f"a citation of {len(text):,} characters is no citation")
    # A citation pasted across lines is joined, a tab or a no-break space read as a space;
    # spaces inside it are kept (a file named with two spaces in a row is a note id with two).
    text = _LINE_BREAK.sub(" ", text).strip()
    # A header line as a pack prints it: the citation is inside the brackets, the title
    # after them.
    if (inside := bracketed(text)) is not None:
        text = inside
    if found := _CHUNK.fullmatch(text):
        return Citation("chunk", found["id"])
    if found := _NOTE.fullmatch(text):
        ranges = parse_ranges(found["ranges"]) if found["ranges"] else ()
        if any(a < 1 for a, _ in ranges):
            raise UsageError(f"{text!r}: a note's lines are numbered from 1")
        return Citation("note", found["id"], ranges)
    if found := _EVENTS.fullmatch(text):
        return Citation("session", found["key"], parse_ranges(found["ranges"]))
    if text in _WITHOUT_ID:  # "no session note in this home" answered this
        raise UsageError(f"{text!r} names no {text.rstrip(':')}: give its id ({_WITHOUT_ID[text]})")
    if _KEY.fullmatch(text):
        return Citation("session", text)
    raise UsageError(
        f"not a citation: {text!r} (expected note <id>, note <id> lines a-b, <session key>, "
        "<session key> events a-b, note:<id> or chunk:<id>)"
    )


def widen(
    ranges: Sequence[tuple[int, int]], around: int, first: int, last: int
) -> list[tuple[int, int]]:
    """``ranges`` each extended by ``around`` on both sides, kept within ``[first, last]``,
    overlapping or touching ones merged; ranges wholly outside are dropped."""
    out: list[list[int]] = []
    for a, b in sorted(ranges):
        a, b = max(first, a - around), min(last, b + around)
        if a > b:
            continue
        if out and a <= out[-1][1] + 1:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return [(a, b) for a, b in out]


def cut_lines(text: str, ranges: Sequence[tuple[int, int]]) -> str:
    """The lines of ``text`` (numbered from 1) that ``ranges`` name, in order, a line
    ``…`` between ranges that do not touch; the whole text when ``ranges`` is empty. A
    range that starts or ends inside a fenced code block gets that block's fence line
    before or after it (not one of the text's lines it names): a fence left open turned
    the rest of the output into code, and code without its fence read as prose."""
    if not ranges:
        return text
    lines = text_lines(text)
    before, after = _open_blocks(lines)
    parts: list[str] = []
    for a, b in widen(ranges, 0, 1, len(lines)):
        if parts:
            parts.append(GAP)
        if before[a - 1] is not None:
            parts.append(str(before[a - 1]).strip())
        parts.extend(lines[a - 1 : b])
        if after[b - 1] is not None:
            parts.append(_fence(str(after[b - 1])))
    return "\n".join(parts)


_FENCE_LINE = re.compile(r"^\s{0,3}(`{3,}|~{3,})(.*)$")


def _fence(line: str) -> str:
    """The fence characters a fence line opens with (``` or ~~~, as many as it has)."""
    match = _FENCE_LINE.match(line)
    return match.group(1) if match else "```"


def _open_blocks(lines: Sequence[str]) -> tuple[list[str | None], list[str | None]]:
    """For each line, the opening fence line of the code block open just before it and
    just after it (None when none is): a block closes at a fence of its own character, at
    least as long, with nothing after it (CommonMark)."""
    before: list[str | None] = []
    after: list[str | None] = []
    current: str | None = None
    for line in lines:
        before.append(current)
        match = _FENCE_LINE.match(line)
        if match and current is None:
            current = line
        elif match and not match.group(2).strip():
            opening = _fence(current or "")
            if match.group(1)[0] == opening[0] and len(match.group(1)) >= len(opening):
                current = None
        after.append(current)
    return before, after


@dataclass(frozen=True)
class Shown:
    """What a citation points at: ``text`` (a ``[citation] title`` line, then the note's
    lines or the session's events) and where it comes from: ``source`` (the note's file or
    the session's transcript; "" when unknown) and ``records`` (for a session, the
    transcript's records the events shown were read from, as ``a-b``: lines of a JSONL
    transcript, messages of a JSON one; "" when unknown)."""

    text: str
    source: str
    records: str = ""
    # For a note: how many lines of its file come before the note's first line (front
    # matter, page properties), None when the file is not there to tell.
    file_line_offset: int | None = None
    # What of the citation is not there ("the note has 46 lines"): "" when all of it is.
    note: str = ""

    @property
    def shown(self) -> str:
        """The citation of what ``text`` shows (its first line's, context included)."""
        return bracketed(self.text.split("\n", 1)[0]) or ""

    def to_json(self, citation: str) -> dict[str, str]:
        """``{citation, shown, text, source, records}``: what ``POST /show`` and ``show
        --format json`` answer for ``citation`` (as asked; ``shown`` names what the text
        holds, the lines or events ``--around`` added included); for a note whose file
        tells it, ``file_line_offset``."""
        return {
            "citation": citation,
            "shown": self.shown,
            "text": self.text,
            "source": self.source,
            "records": self.records,
            **(
                {"file_line_offset": self.file_line_offset}
                if self.file_line_offset is not None
                else {}
            ),
            **({"note": self.note} if self.note else {}),
        }


def show(conn: duckdb.DuckDBPyConnection, citation: str, around: int = 0) -> Shown:
    """The note lines or session events ``citation`` names (``parse_citation``, or a live
    note's id alone), each range
    widened by ``around`` lines or events on both sides: a note's lines as stored; a
    session's events (every stored one of the branch kept, those of low importance that
    chunks leave out included) rendered as in chunks, ``…`` between ranges that do not
    touch. Raises UsageError for a malformed citation or a negative ``around``,
    NotFoundError when the note, session or chunk is not in the store or no line or
    event falls in the ranges."""
    if around < 0:
        raise UsageError(f"--around must be 0 or more, got {around}")
    cited = _bare_note_id(conn, citation) or parse_citation(citation)
    if cited.kind == "chunk":
        row = conn.execute(
            "SELECT session_key, first_seq, last_seq FROM chunks WHERE id = ?", [cited.ref]
        ).fetchone()
        if row is None:
            raise NotFoundError(f"no session chunk {cited.ref} in this home")
        cited = Citation("session", str(row[0]), ((int(row[1]), int(row[2])),))
    if cited.kind == "note":
        return _show_note(conn, cited, around)
    return _show_session(conn, cited, around)


def _bare_note_id(conn: duckdb.DuckDBPyConnection, text: str) -> Citation | None:
    """``text`` as a note's id alone (as ``context --format json`` gives it) when a live
    note has that id, else None."""
    text = text.strip()
    if not text or len(text) > MAX_CITATION_CHARS:
        return None
    found = conn.execute(
        "SELECT 1 FROM notes WHERE id = ? AND deleted_at IS NULL AND NOT test_run", [text]
    ).fetchone()
    return Citation("note", text) if found else None


def _why_gone(conn: duckdb.DuckDBPyConnection, source: str) -> str:
    """What became of a deleted note's file ``source``: its note under another id, a file
    still there that gives none now (its folder forgotten), or a file gone."""
    now = conn.execute(
        "SELECT id FROM notes WHERE source = ? AND deleted_at IS NULL AND NOT test_run "
        "ORDER BY id LIMIT 1",
        [source],
    ).fetchone()
    if now is not None:
        return f'its file {source} now gives the note {now[0]} (`selene-dag show "note {now[0]}"`)'
    state = file_state(source)
    if state == "unreadable":
        return f"its file {source} cannot be read now (permission denied)"
    if state == "present":
        return (
            f"its file {source} is still there (its folder was forgotten, or the file is "
            "passed over now); ingest its folder again to bring it back"
        )
    return (
        f"its file {source} is gone: deleted, or renamed or moved with its text changed "
        "(`selene-dag ask` finds it by its words; a note moved to another folder comes back "
        "when that folder is ingested)"
    )


def same_text_note(conn: duckdb.DuckDBPyConnection, note_id: str) -> str | None:
    """The live note holding deleted note ``note_id``'s text (its file renamed, moved or
    copied): the same title and body (a copy has a creation date of its own), or the same
    body of MOVED_MIN_CHARS or more and the same creation date (``processed_moved.sql``
    asks the same creation date of both); one of the same creation date first. None when
    no note does."""
    found = conn.execute(
        "SELECT n.id FROM notes AS old JOIN notes AS n ON n.content = old.content "
        "AND (n.content_hash = old.content_hash "
        "OR (length(n.content) >= ? AND n.created_at = old.created_at)) "
        "WHERE old.id = ? AND n.id <> old.id AND n.deleted_at IS NULL AND NOT n.test_run "
        "ORDER BY n.created_at = old.created_at DESC, n.id LIMIT 1",
        [MOVED_MIN_CHARS, note_id],
    ).fetchone()
    return str(found[0]) if found else None


_BAD_RANGE = re.compile(r"(?P<id>.+?) lines? (?P<range>\S.*)")


def _refuse_a_bad_range(conn: duckdb.DuckDBPyConnection, ref: str) -> None:
    """Raise UsageError when ``ref`` is a live note's id followed by ``lines`` and no range
    (``lines 23–32`` with an en dash, ``lines a-b``): not "no note … in this home"."""
    found = _BAD_RANGE.fullmatch(ref)
    if found is None:
        return
    held = conn.execute(
        "SELECT 1 FROM notes WHERE id = ? AND deleted_at IS NULL", [found["id"]]
    ).fetchone()
    if held is not None:
        raise UsageError(
            f"note {found['id']}: {found['range']!r} is no range of lines "
            "(e.g. lines 12-30, 41: numbers, a hyphen, commas)"
        )


def _ids_ending_with(conn: duckdb.DuckDBPyConnection, spellings: list[str]) -> list[str]:
    """Up to three live note ids that are one of ``spellings`` under a folder's key
    (``notes/ab__x.md`` for ``ab__x.md``: an id cited before ids held their folder's key,
    or typed without it)."""
    rows = conn.execute(
        "SELECT id FROM notes WHERE deleted_at IS NULL AND NOT test_run "
        "AND list_has_any(?, [id[strpos(id, '/') + 1:]]) ORDER BY id LIMIT 3",
        [spellings],
    ).fetchall()
    return [str(row[0]) for row in rows]


def _show_note(conn: duckdb.DuckDBPyConnection, cited: Citation, around: int) -> Shown:
    # An id typed with composed accents names a file macOS stored decomposed, or back.
    spellings = list(dict.fromkeys([cited.ref, *(normalize(f, cited.ref) for f in _FORMS)]))
    row = conn.execute(
        "SELECT title, content, source FROM notes WHERE list_contains(?, id) "
        "AND deleted_at IS NULL AND NOT test_run ORDER BY array_position(?, id) LIMIT 1",
        [spellings, spellings],
    ).fetchone()
    moved = ""
    if row is None:
        gone = conn.execute(
            "SELECT source, deleted_at, id FROM notes WHERE list_contains(?, id) "
            "AND deleted_at IS NOT NULL AND NOT test_run ORDER BY deleted_at DESC LIMIT 1",
            [spellings],
        ).fetchone()
        if gone is None:
            _refuse_a_bad_range(conn, cited.ref)
            if meant := _ids_ending_with(conn, spellings):
                lines = ", ".join(f"{a}-{b}" if a != b else str(a) for a, b in cited.ranges)
                after = f" lines {lines}" if lines else ""
                raise NotFoundError(
                    f"no note {cited.ref} in this home; note ids start with their folder's "
                    f"key: {' or '.join(f'`note {m}{after}`' for m in meant)}?"
                )
            raise NotFoundError(
                f"no note {cited.ref} in this home: copy the citation from a pack (`ask`, "
                "`context`), or `selene-dag health` says what the home holds"
            )
        held_by = same_text_note(conn, str(gone[2]))
        if held_by is None:
            raise NotFoundError(
                f"note {cited.ref} was marked deleted at {gone[1]:%Y-%m-%d %H:%M} UTC: "
                + _why_gone(conn, str(gone[0]))
            )
        # Its text is another note's now (renamed, moved, copied): the same lines there.
        moved = (
            f"note {cited.ref} is gone; note {held_by} holds its text (renamed, moved or copied)"
        )
        cited = replace(cited, ref=held_by)
        row = conn.execute(
            "SELECT title, content, source FROM notes WHERE id = ?", [held_by]
        ).fetchone()
    title, content, source = (str(v or "") for v in row)
    count = len(text_lines(content))
    ranges = widen(cited.ranges, around, 1, count) if cited.ranges else []
    if cited.ranges and not ranges:
        raise NotFoundError(
            f"note {cited.ref} has {plural(count, 'line')}: none in {line_ranges(cited.ranges)}"
        )
    where = f"note {cited.ref}" + (f" {lines_text(ranges)}" if ranges else "")
    header = f"[{where}] {title}" if title else f"[{where}]"
    past = any(b > count for _, b in cited.ranges)
    past_end = f"the note has {plural(count, 'line')}: lines past {count} are not there"
    return Shown(
        f"{header}\n{cut_lines(content, ranges)}".rstrip("\n"),
        source,
        file_line_offset=file_line_offset(source, content),
        note="; ".join(n for n in (moved, past_end if past else "") if n),
    )


_FORMS = ("NFC", "NFD")
# A note file read to relate its lines to the note's is at most this large.
_OFFSET_READ_BYTES = 4_000_000


def file_line_offset(source: str, content: str) -> int | None:
    """How many lines of the file ``source`` precede the note's first line (``content``'s
    first non-blank line, found as a line of the file): a note's lines are those of its
    text as stored, without the front matter or page properties that open its file. None
    when the file is gone, large, not text, or does not hold that line (an export's note,
    a file changed since)."""
    lines = text_lines(content)
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is None or not source or "!/" in source:
        return None
    try:
        path = Path(source)
        if path.stat().st_size > _OFFSET_READ_BYTES:
            return None
        text, _ = decode_text(path.read_bytes())
    except (OSError, ValueError):
        return None
    wanted = lines[first].strip()
    for number, line in enumerate(text_lines(text)):
        if line.strip() == wanted:
            return max(0, number - first)
    return None


def _readable(event: SessionEvent) -> bool:
    """Whether ``event`` has anything to show: text, a tool's name or an error."""
    return bool(event.text.strip() or event.tool_name or event.is_error)


def _show_session(conn: duckdb.DuckDBPyConnection, cited: Citation, around: int) -> Shown:
    query = "SELECT path, platform, project FROM session_files WHERE session_key = ?"
    row = conn.execute(query, [cited.ref]).fetchone()
    moved_from = ""
    if row is None:  # its transcript moved: the session is stored under the new path's key
        moved = conn.execute(
            "SELECT new_key FROM session_moves WHERE old_key = ?", [cited.ref]
        ).fetchone()
        if moved is not None and (row := conn.execute(query, [moved[0]]).fetchone()):
            moved_from, cited = cited.ref, replace(cited, ref=moved[0])
    if row is None:
        raise NotFoundError(f"no session {cited.ref} in this home (`distill report` lists them)")
    path, platform, project = (str(v or "") for v in row)
    events = [e for e in load_events(conn, cited.ref) if not e.abandoned]
    if not events:
        raise NotFoundError(f"session {cited.ref} holds no events")
    # Context is counted in events, not in event numbers (a rewound branch leaves gaps).
    seqs = [e.seq for e in events]
    spans: list[tuple[int, int]] = []
    for a, b in cited.ranges or ((seqs[0], seqs[-1]),):
        first, last = bisect_left(seqs, a), bisect_right(seqs, b) - 1
        if first <= last:
            spans.append((first, last))
    if not spans:
        raise NotFoundError(
            f"session {cited.ref} has events {events[0].seq}-{events[-1].seq}: "
            f"none in {line_ranges(cited.ranges)}"
        )
    spans = widen(spans, around, 0, len(events) - 1)
    parts: list[str] = []
    for a, b in spans:
        if parts:
            parts.append(GAP)
        # An event with nothing to read (a Codex turn's bookkeeping) was a bare label.
        parts.extend(render_event(e) for e in events[a : b + 1] if _readable(e))
    shown = [(events[a].seq, events[b].seq) for a, b in spans]
    # As the pack's titles: a Gemini CLI project named by a hash of its path is left out.
    named = project and not _PROJECT_HASH.fullmatch(project)
    title = f"{platform} session" + (f" {project}" if named else "") if platform else ""
    events_shown = ", ".join(f"{a}-{b}" for a, b in shown)  # as ask cites events: always a-b
    header = f"[{cited.ref} events {events_shown}] {title}".rstrip()
    # Per range shown (events 1-2, 5-6 were read from records 2-3, 5-6, not 2-6).
    lines = [[e.line for e in events[a : b + 1] if e.line > 0] for a, b in spans]
    where = line_ranges([(min(run), max(run)) for run in lines if run], pairs=True)
    last = events[-1].seq
    past = any(b > last for _, b in cited.ranges)
    notes = [f"the session's last event is {last}: events past it are not there"] if past else []
    if moved_from:
        notes.insert(0, f"{moved_from}'s transcript moved: shown from {path}, now {cited.ref}")
    state = file_state(path) if path else "present"
    if state == "gone":
        notes.append(f"{path} is gone: these are the events stored when it was read")
    elif state == "unreadable":
        notes.append(
            f"{path} cannot be read now (permission denied): these are the events stored "
            "when it was read"
        )
    return Shown(header + "\n" + "\n".join(parts), path, where, note="; ".join(notes))
