"""Helpers shared by the platform parsers: streaming JSONL reading, text and path extraction."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import orjson

from selene_dag.sessions.parsers.model import EventBuilder, ParseStats, SessionEvent

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_PATCH_FILE = re.compile(r"^\*\*\* (?:Add|Update|Delete) File: (.+?)\s*$", re.MULTILINE)
_PATH_KEYS = ("file_path", "notebook_path", "absolute_path", "filePath")


def loads_lenient(raw: bytes) -> Any:
    """``orjson.loads(raw)``, with bytes that are not UTF-8 (a terminal's output cut inside a
    character, a Latin-1 file name) read as U+FFFD instead of failing: one bad byte cost a
    whole line (a session's first prompt). Raises ``orjson.JSONDecodeError`` for text that
    is not JSON."""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        if "not valid UTF-8" in exc.msg:
            text = raw.decode("utf-8", "replace")
            try:
                return orjson.loads(text)
            except orjson.JSONDecodeError as again:
                if "low surrogate" not in again.msg and "lone" not in again.msg:
                    raise
                return _with_lone_surrogates_replaced(text.encode())
        if "surrogate" in exc.msg:
            return _with_lone_surrogates_replaced(raw)
        raise


# An escaped half of a surrogate pair with no other half (``\ud83c``: a JavaScript string cut
# inside an emoji, as Claude Code writes it): orjson refuses the whole line.
_LONE_SURROGATE_ESCAPE = re.compile(
    rb"(?<!\\)((?:\\\\)*)\\u[dD][89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F][0-9a-fA-F]{2})"
    rb"|(?<!\\)((?:\\\\)*)(?<![89abAB][0-9a-fA-F]{2})\\u[dD][c-fC-F][0-9a-fA-F]{2}"
)


def _with_lone_surrogates_replaced(raw: bytes) -> Any:
    """``raw`` parsed with each escaped lone surrogate read as U+FFFD (raises
    ``orjson.JSONDecodeError`` when it is still not JSON)."""
    fixed = _LONE_SURROGATE_ESCAPE.sub(
        lambda m: (m.group(1) or m.group(2) or b"") + rb"\ufffd", raw
    )
    return orjson.loads(fixed)


def iter_json_lines(path: Path, stats: ParseStats) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line_number, object)`` for each JSON object line of ``path``, streaming.

    Blank lines are ignored; lines that are not JSON and non-object values are counted in
    ``stats`` and skipped (bytes that are not UTF-8 are read as U+FFFD: ``loads_lenient``).
    A last line without its line break that opens as a JSON object but is not JSON yet is
    a record the agent is still writing (a session read while it runs): it is not an
    error, its number goes to ``stats.unfinished_line``, and the file is read again once
    it has changed.
    Memory use does not grow with the file size.
    """
    loads = loads_lenient
    keys: set[str] = set()  # the keys of this file's records so far
    first_keys: set[str] = set()  # and the key each opens with
    with path.open("rb", buffering=1 << 20) as handle:
        for number, raw in enumerate(handle, 1):
            if number == 1:  # a byte-order mark (a file saved by an editor, or by PowerShell)
                raw = raw.removeprefix(b"\xef\xbb\xbf")
            if len(raw) < 3 and not raw.strip():  # strip() copies: only test short lines
                continue
            try:
                found = [loads(raw)]
            except orjson.JSONDecodeError as exc:
                if not raw.strip():
                    continue
                # Only the file's last line lacks its break; a record being written opens
                # as one (a text file's last line is no record in progress).
                if not raw.endswith(b"\n") and raw.lstrip().startswith(b"{"):
                    stats.unfinished_line = number
                    continue
                glued = split_glued(raw, keys, first_keys)
                if glued is None:
                    stats.lines += 1
                    stats.record_error(number, f"invalid JSON ({exc.msg})")
                    continue
                # Records written one after another with no line break, or one cut short
                # (its writer crashed) with the next run's first record right after it:
                # each whole one is read, a cut one is lost and counted.
                found, cuts = glued
                for _ in range(cuts):
                    stats.record_error(
                        number,
                        f"a record cut short (invalid JSON: {exc.msg}); "
                        f"{_whole_records(len(found))} on the same line read",
                    )
            for obj in found:
                stats.lines += 1
                if not isinstance(obj, dict):
                    stats.record_error(number, f"expected a JSON object, got {type(obj).__name__}")
                    continue
                if obj:
                    keys.update(obj)
                    first_keys.add(next(iter(obj)))
                yield number, obj


# Places tried on one broken line where no record is read, at most: only where an object
# opens with a key the file's records open with (a cut record's own nested objects seldom
# do).
_MAX_GLUE_TRIES = 64
_RECORD_END = re.compile(r"\s*(?:\{|\Z)")
_GLUE_WORK = 8
_ANY_OBJECT_START = re.compile(r'\{\s*"[^"\\]{1,64}"\s*:')
_DECODER = json.JSONDecoder()


def _looks_like_a_record(obj: Any, keys: set[str], first_keys: set[str]) -> bool:
    """Whether ``obj`` is shaped like the file's records so far: a JSON object opening with
    a key one of them opened with, three keys or more and three in four of its keys theirs
    (an object nested in a record, a content block or a tool call, shares one or two)."""
    if not isinstance(obj, dict) or not obj or next(iter(obj)) not in first_keys:
        return False
    shared = len(keys.intersection(obj))
    return shared >= 3 and shared * 4 >= len(obj) * 3


def _whole_records(count: int) -> str:
    """``"1 whole record"`` or ``"2 whole records"``."""
    return f"{count} whole record" + ("" if count == 1 else "s")


def split_glued(
    raw: bytes, keys: set[str], first_keys: set[str]
) -> tuple[list[dict[str, Any]], int] | None:
    """The records of a line that is not one JSON value: whole records written one after
    another with no line break, and records cut short by a crash with the next written
    right after. Returns the records read, in order, and how many cut ones (or runs of
    text that open no record) were skipped; None when no record is found (a line that is
    only broken). An object right after a whole record is a record; one after a cut
    record must look like the file's records so far (``_looks_like_a_record``; on a
    file's first line, like the line's first object, which is taken as a record).
    Places where no record opens are tried at most ``_MAX_GLUE_TRIES`` times, and the
    parsing done is bounded (``_GLUE_WORK`` times the line, plus a little): a line made
    to make each try read to its end costs seconds, not minutes."""
    text = raw.decode("utf-8", "replace")
    records: list[dict[str, Any]] = []
    cuts = tries = 0
    in_cut = False
    work = _GLUE_WORK * len(text) + (1 << 21)
    at = first = len(text) - len(text.lstrip())
    while at < len(text) and work > 0:
        try:
            obj, end = _DECODER.raw_decode(text, at)
        except json.JSONDecodeError as exc:  # it read up to where the text went wrong
            obj, end = None, at
            work -= max(exc.pos - at, 1)
        except (ValueError, RecursionError):  # RecursionError: nested past Python's limit
            obj, end = None, at
            work -= len(text) - at
        work -= end - at  # read; a record is read again below, as every line is
        record = None
        # On a file's first line nothing says what a record looks like: its first object is,
        # or, after a cut one, the first object of three keys or more that ends where a
        # record may (a cut record's nested content blocks hold two keys or are followed
        # by more of the record).
        # Right after a whole record, an object sharing a key with the file's records that
        # ends where a record may (the line's end, or the next object) is one of the
        # line's own values: a record (a summary, then a prompt). One followed by more of a
        # record (``]},"uuid": …``) is nested in a record whose opening was lost, and an
        # empty one is no record.
        trusted = (
            not first_keys
            and (
                at == first
                or (
                    isinstance(obj, dict)
                    and len(obj) >= 3
                    and _RECORD_END.match(text, end) is not None
                )
            )
        ) or (
            bool(records)
            and not in_cut
            and isinstance(obj, dict)
            and not keys.isdisjoint(obj)
            and _RECORD_END.match(text, end) is not None
        )
        if (
            isinstance(obj, dict)
            and obj
            and (trusted or _looks_like_a_record(obj, keys, first_keys))
        ):
            work -= end - at
            try:  # as every line is read: a lone surrogate escape as U+FFFD, no NaN
                record = loads_lenient(text[at:end].encode("utf-8", "surrogatepass"))
            except (orjson.JSONDecodeError, UnicodeEncodeError):
                record = None
        if isinstance(record, dict):
            if not first_keys and record:  # a file's first line: its first record's shape
                keys, first_keys = set(record), {next(iter(record))}
            records.append(record)
            in_cut = False
            at = end
            while at < len(text) and text[at].isspace():
                at += 1
            continue
        # No record opens here: a cut one runs on to the next place a record may open.
        if not in_cut:
            cuts += 1
            in_cut = True
        tries += 1
        at = _next_record_start(text, at + 1, first_keys) if tries < _MAX_GLUE_TRIES else len(text)
    if at < len(text) and not in_cut:  # out of work: the rest is not read
        cuts += 1
    return (records, cuts) if records else None


def _next_record_start(text: str, at: int, first_keys: set[str]) -> int:
    """Where the next object opening with one of ``first_keys`` starts at or after
    ``at`` (any object opening with a key when none is known yet: a file's first line),
    or the text's length."""
    if not first_keys:
        found = _ANY_OBJECT_START.search(text, at)
        return found.start() if found else len(text)
    names = "|".join(sorted(map(re.escape, first_keys)))
    found = re.compile(rf'\{{\s*"(?:{names})"\s*:').search(text, at)
    return found.start() if found else len(text)


def strip_ansi(text: str) -> str:
    """Remove terminal colour escapes."""
    return _ANSI.sub("", text) if "\x1b" in text else text


def to_text(value: Any) -> str:
    """Flatten a content value (string, list of blocks, dict) into plain text."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        parts = [to_text(item) for item in value]
        return "\n".join(p for p in parts if p)
    if isinstance(value, dict):
        placeholder = binary_placeholder(value)
        if placeholder:
            return placeholder
        for key in ("text", "output", "content", "message", "error"):
            if key in value and value[key] is not None:
                return to_text(value[key])
        return dumps(value)
    return str(value)


_DATA_URL = re.compile(r"^data:([\w.+-]+/[\w.+-]+)?;base64,")


def binary_placeholder(block: dict[str, Any]) -> str | None:
    """``[image image/png, 12 KB]`` for a block that carries an image or other base64
    payload (Claude ``{"type": "image", "source": {"data": …}}``, Codex ``input_image`` with
    a ``data:`` URL, Gemini ``{"inlineData": {"mimeType", "data"}}``); None for any other
    block. The data itself is never kept."""
    source = block.get("source")
    data = source.get("data") if isinstance(source, dict) else None
    media = source.get("media_type") if isinstance(source, dict) else None
    inline = block.get("inlineData", block.get("inline_data"))  # Gemini's part
    if isinstance(inline, dict) and isinstance(inline.get("data"), str):
        data = inline["data"]
        media = inline.get("mimeType", inline.get("mime_type")) or "application/octet-stream"
    url = block.get("image_url")
    if isinstance(url, dict):
        url = url.get("url")
    if isinstance(url, str) and (found := _DATA_URL.match(url)):
        data, media = url[found.end() :], found.group(1)
    btype = str(block.get("type") or "")
    if not isinstance(data, str) or not (btype in ("image", "input_image", "document") or media):
        return None
    size = len(data) * 3 // 4  # base64 → bytes
    kind = "image" if "image" in btype or str(media or "").startswith("image/") else "file"
    return f"[{kind} {media or 'unknown type'}, {max(1, round(size / 1024))} KB]"


def dumps(value: Any) -> str:
    """Compact JSON text of ``value`` (used for tool inputs)."""
    try:
        return orjson.dumps(value).decode()
    except TypeError:
        return str(value)


class ModelChanges:
    """The text of a ``system`` event naming the model a session runs on, when it starts or
    changes ("Model: claude-opus-4-7"; a placeholder such as ``<synthetic>`` is no model):
    which model answered is something a user asks about later."""

    def __init__(self) -> None:
        self.current: str | None = None

    def note(self, model: object, detail: str = "") -> str | None:
        """``Model: <model>[ (detail)]`` when ``model`` differs from the last one noted,
        else None."""
        if not isinstance(model, str) or not model.strip() or model.startswith("<"):
            return None
        if model == self.current:
            return None
        self.current = model
        return f"Model: {model}" + (f" ({detail})" if detail else "")

    def event(
        self,
        b: EventBuilder,
        model: object,
        *,
        detail: str = "",
        raw_type: str = "model_change",
        **fields: Any,
    ) -> SessionEvent | None:
        """The ``system`` event of :meth:`note`'s text (``fields``: line, timestamp, ...),
        or None when the model did not change."""
        text = self.note(model, detail)
        if text is None:
            return None
        return b.make(role="system", kind="system", text=text, raw_type=raw_type, **fields)


def paths_from_input(tool_input: Any, text: str = "") -> tuple[str, ...]:
    """File paths named by a tool call: path-like input keys and apply_patch headers."""
    found: list[str] = []
    if isinstance(tool_input, dict):
        for key in _PATH_KEYS:
            value = tool_input.get(key)
            if isinstance(value, str) and value:
                found.append(value)
        edits = tool_input.get("edits")
        if isinstance(edits, list):
            for edit in edits:
                if isinstance(edit, dict) and isinstance(edit.get("file_path"), str):
                    found.append(edit["file_path"])
    if "*** " in text:
        found.extend(_PATCH_FILE.findall(text.replace("\\n", "\n")))
    return tuple(dict.fromkeys(found))


T = TypeVar("T")


def type_of(obj: dict[str, Any]) -> str:
    """The record's ``type`` when it is a string, else "" (wrong types are data, not crashes)."""
    value = obj.get("type")
    return value if isinstance(value, str) else ""


def guarded_events(events: Iterable[T], line: int, stats: ParseStats) -> list[T]:
    """Run one record's event generator; a record of unexpected shape becomes a counted error.

    Real files hold every kind of surprise (a list where a string was, a number for a list);
    one such record must cost that record, never the rest of the file.
    """
    try:
        return list(events)
    except (TypeError, ValueError, AttributeError, KeyError, IndexError) as exc:
        stats.record_error(line, f"unexpected record shape ({type(exc).__name__}: {exc})")
        return []
