"""Recall at a budget: ask's pack versus three baselines with the same budget and model.

A question file is JSONL, one ``{"question": str, "must_contain": [str, ...]}`` per line,
or a JSON list of them (other keys are ignored). Recall of a pack is the share of required
facts found in it (case-insensitive substring). Baselines: *newest-first* (notes newest
first, full text, cut at the budget), *BM25 top-k* (search hits in BM25 order, full text,
cut at the budget) and *BM25 passages*, what a user would write in thirty lines: every
document of the index cut into ~200-token passages (paragraph / line boundaries, the
document's title as first line), ranked by BM25 (DuckDB ``fts`` over the passages), packed
in rank order while they fit (a passage that does not fit is skipped).
"""

from __future__ import annotations

import json
import math
import threading
import unicodedata
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb

from selene_dag.context.tokens import (
    count_tokens,
    count_tokens_batch,
    default_model,
    truncate_to_tokens,
)
from selene_dag.errors import UsageError, check_budget
from selene_dag.retrieval.citations import same_text_note
from selene_dag.retrieval.index import index_state, load_fts
from selene_dag.retrieval.pack import ask
from selene_dag.retrieval.search import SOURCES, Candidate, newest_notes, parse_sources, search
from selene_dag.text import replace_lone_surrogates

# pandas is imported where frames are built: the Dagster definitions load without it.

METHODS = ("ask", "newest_first", "bm25_topk", "bm25_passages")
# Target size of a baseline passage, in the target model's tokens (title line included).
PASSAGE_TOKENS = 200


@dataclass(frozen=True)
class Question:
    """One evaluation question and the facts its pack must contain."""

    question: str
    must_contain: tuple[str, ...]
    source: str | None = None  # "note:<id>" or "session:<text in its file path or project>"


@dataclass(frozen=True)
class QuestionFile:
    """The questions of a file, and its entries left out: ``(where, reason)`` pairs, where
    is ``"line N"`` (JSONL) or ``"entry N"`` (a JSON list)."""

    questions: list[Question]
    problems: list[tuple[str, str]] = field(default_factory=list)

    @property
    def notices(self) -> list[str]:
        """One line per entry left out: ``"line N skipped: reason"``."""
        return [f"{where} skipped: {reason}" for where, reason in self.problems]


def read_question_file(path: str | Path) -> QuestionFile:
    """The questions of a JSONL file (one ``{question, must_contain, source?}`` a line) or of
    a JSON file holding a list of them, in file order. ``must_contain`` may be one string.
    An entry that is not such a question is skipped and named in ``problems``; a byte
    order mark is ignored.

    Raises FileNotFoundError when ``path`` is not a file, UsageError (a ValueError) when it
    holds no question.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such question file")
    text = path.read_text(encoding="utf-8-sig")
    entries: list[tuple[str, object]] = []
    problems: list[tuple[str, str]] = []
    if text.lstrip().startswith("["):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise UsageError(f"{path}: not JSON ({exc.msg} at line {exc.lineno})") from None
        entries = [(f"entry {n}", item) for n, item in enumerate(data, 1)]
    else:
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                entries.append((f"line {number}", json.loads(line)))
            except json.JSONDecodeError as exc:
                problems.append((f"line {number}", f"not JSON ({exc.msg})"))
    questions = []
    for where, data in entries:
        try:
            questions.append(_question(data))
        except ValueError as exc:
            problems.append((where, str(exc)))
    # In file order: lines that are not JSON were noted while reading, the others after.
    problems.sort(key=lambda p: int(p[0].rsplit(" ", 1)[1]))
    if not questions:
        first = f" ({problems[0][0]}: {problems[0][1]})" if problems else ""
        raise UsageError(f"{path}: no questions{first}")
    return QuestionFile(questions, problems)


def _question(data: object) -> Question:
    if not isinstance(data, dict):
        raise ValueError(f"expected an object, got {type(data).__name__}")
    question = data.get("question")
    facts = data.get("must_contain")
    if isinstance(facts, str):
        facts = [facts]
    if not isinstance(question, str) or not question.strip():
        raise ValueError("'question' must be a non-empty string")
    if not isinstance(facts, list) or not facts:
        raise ValueError("'must_contain' must be a string or a non-empty list of strings")
    if not all(isinstance(f, str) and f.strip() for f in facts):
        raise ValueError("'must_contain' holds an empty string or a value that is not a string")
    source = data.get("source")
    if source is not None and not isinstance(source, str):
        raise ValueError("'source' must be a string")
    # JSON cut inside an emoji's escape: searched as U+FFFD (a tokenizer failed on it).
    return Question(
        replace_lone_surrogates(question),
        tuple(replace_lone_surrogates(f) for f in facts),
        source,
    )


def load_questions(path: str | Path) -> list[Question]:
    """The questions of a file ``read_question_file`` reads, every entry a question.

    Raises FileNotFoundError when ``path`` is not a file, and UsageError (a ValueError)
    naming the first malformed entry, or when the file holds no question.
    """
    loaded = read_question_file(path)
    if loaded.problems:
        where, reason = loaded.problems[0]
        raise UsageError(f"{Path(path)}, {where}: {reason}")
    return loaded.questions


def recall(text: str, facts: Sequence[str]) -> float:
    """Share of ``facts`` found in ``text`` (case-insensitive substring, both composed
    alike: a fact typed ``Ö`` is found in a note saved with ``O`` and its mark apart, as
    macOS writes file names); 1.0 for none."""
    if not facts:
        return 1.0
    low = _composed(text.lower())
    return sum(1 for f in facts if _composed(f.lower()) in low) / len(facts)


def _composed(text: str) -> str:
    return text if text.isascii() else unicodedata.normalize("NFC", text)


def truncation_pack(candidates: Sequence[Candidate], budget: int, model: str) -> str:
    """Full texts (citation header + body) in the given order, cut at ``budget`` tokens."""
    parts: list[str] = []
    used = 0
    for cand in candidates:
        block = f"[{cand.citation}] {cand.title}\n{cand.body}"
        parts.append(block)
        used += count_tokens(block, model)
        if used >= budget:
            break
    return truncate_to_tokens("\n\n".join(parts), budget, model)


# --- BM25 over passages (the baseline a user would write) ---------------------------------


def _split_long(text: str, tokens: int, limit: int) -> list[str]:
    """``text`` (one line of ``tokens`` tokens) in word windows of about ``limit`` tokens."""
    words = text.split(" ")
    per = max(1, len(words) * limit // max(tokens, 1))
    return [" ".join(words[i : i + per]) for i in range(0, len(words), per)]


def cut_document(title: str, body: str, model: str, limit: int = PASSAGE_TOKENS) -> list[str]:
    """``body`` cut into passages of about ``limit`` tokens of ``model``, each starting with
    ``title`` on its own line: paragraphs (blank-line separated) are joined while they fit;
    a paragraph too long alone is cut at its lines, a line too long alone at spaces."""
    head = f"{title}\n" if title else ""
    room = max(limit - (count_tokens(head, model) if head else 0), limit // 4, 1)
    paragraphs = [p.strip() for p in body.split("\n\n") if p.strip()]
    units: list[tuple[str, int, str]] = []  # (text, tokens, separator before it)
    for p, n in zip(paragraphs, count_tokens_batch(paragraphs, model), strict=True):
        if n <= room:
            units.append((p, n, "\n\n"))
            continue
        lines = [ln for ln in p.splitlines() if ln.strip()]
        for k, (ln, m) in enumerate(zip(lines, count_tokens_batch(lines, model), strict=True)):
            sep = "\n\n" if k == 0 else "\n"
            if m <= room:
                units.append((ln, m, sep))
                continue
            pieces = _split_long(ln, m, room)
            for j, (w, c) in enumerate(zip(pieces, count_tokens_batch(pieces, model), strict=True)):
                units.append((w, c, sep if j == 0 else " "))
    out: list[str] = []
    current, used = "", 0
    for text, n, sep in units:
        if current and used + n > room:
            out.append(head + current)
            current, used = "", 0
        current = f"{current}{sep}{text}" if current else text
        used += n
    if current:
        out.append(head + current)
    return out


class PassageIndex:
    """Every document of ``search_docs`` cut by ``cut_document`` into an in-memory DuckDB
    table under its own BM25 index (porter stemmer, English stopwords, as the search index)."""

    def __init__(self, docs: Sequence[tuple[str, str, str]], model: str) -> None:
        import pandas as pd

        kinds: list[str] = []
        texts: list[str] = []
        for kind, title, body in docs:
            for passage in cut_document(title or "", body or "", model):
                kinds.append(kind)
                texts.append(passage)
        self.kinds = kinds
        self.texts = texts
        self.tokens = count_tokens_batch(texts, model)
        self.model = model
        self._lock = threading.Lock()
        self._db = duckdb.connect(":memory:")
        load_fts(self._db)
        frame = pd.DataFrame({"id": range(len(texts)), "kind": kinds, "text": texts})
        self._db.execute("CREATE TABLE passages (id INTEGER, kind VARCHAR, text VARCHAR)")
        if texts:
            self._db.register("_frame", frame)
            self._db.execute("INSERT INTO passages SELECT id, kind, text FROM _frame")
            self._db.unregister("_frame")
            self._db.execute(
                "PRAGMA create_fts_index('passages', 'id', 'text', stemmer='porter', "
                "stopwords='english', strip_accents=1, lower=1)"
            )

    def __len__(self) -> int:
        return len(self.texts)

    def rank(self, question: str, kinds: Sequence[str]) -> list[int]:
        """Ids of the passages of ``kinds`` matching ``question``, best BM25 score first
        (ties by corpus order)."""
        if not self.texts:
            return []
        with self._lock:
            rows = self._db.execute(
                "SELECT id FROM (SELECT id, kind, fts_main_passages.match_bm25(id, ?) AS score "
                "FROM passages) WHERE score IS NOT NULL AND list_contains(?, kind) "
                "ORDER BY score DESC, id",
                [question, list(kinds)],
            ).fetchall()
        return [int(r[0]) for r in rows]

    def pack(self, question: str, budget: int, kinds: Sequence[str]) -> str:
        """The ranked passages joined by blank lines while they fit in ``budget`` tokens;
        one that does not fit is skipped and the next tried. Never over ``budget``."""
        sep = count_tokens("\n\n", self.model)
        parts: list[str] = []
        used = 0
        for i in self.rank(question, kinds):
            cost = self.tokens[i] + (sep if parts else 0)
            if used + cost > budget:
                continue
            parts.append(self.texts[i])
            used += cost
            if budget - used <= sep:
                break
        text = "\n\n".join(parts)
        # Counts of parts need not add up exactly to the count of their join.
        while parts and count_tokens(text, self.model) > budget:
            parts.pop()
            text = "\n\n".join(parts)
        return text


_PASSAGE_CACHE: OrderedDict[tuple[object, str, str], PassageIndex] = OrderedDict()
_PASSAGE_CACHE_SIZE = 4
_PASSAGE_CACHE_LOCK = threading.Lock()


def _database_key(conn: duckdb.DuckDBPyConnection) -> object:
    row = conn.execute(
        "SELECT path FROM duckdb_databases() WHERE database_name = current_database()"
    ).fetchone()
    return row[0] if row and row[0] else id(conn)


def passage_index(conn: duckdb.DuckDBPyConnection, model: str) -> PassageIndex:
    """The passage cut of ``conn``'s indexed documents in ``model``'s tokens, cached per
    (database, corpus version of the built index, model): a question set cuts it once."""
    key = (_database_key(conn), str(index_state(conn).built_version), model)
    with _PASSAGE_CACHE_LOCK:
        found = _PASSAGE_CACHE.get(key)
        if found is not None:
            _PASSAGE_CACHE.move_to_end(key)
            return found
    docs = conn.execute("SELECT kind, title, body FROM search_docs ORDER BY doc_id").fetchall()
    built = PassageIndex(docs, model)
    with _PASSAGE_CACHE_LOCK:
        _PASSAGE_CACHE[key] = built
        while len(_PASSAGE_CACHE) > _PASSAGE_CACHE_SIZE:
            _PASSAGE_CACHE.popitem(last=False)
    return built


def passage_pack(
    conn: duckdb.DuckDBPyConnection,
    question: str,
    budget: int,
    model: str,
    sources: Sequence[str] | None = None,
) -> str:
    """The *BM25 passages* baseline's pack for ``question`` (see the module docstring)."""
    kinds = [SOURCES[s] for s in parse_sources(sources)]
    return passage_index(conn, model).pack(question, budget, kinds)


def repeated_questions(questions: Sequence[Question]) -> list[str]:
    """The questions asked again after their first time (in any case or spacing), in
    order: each counts every time it is asked, so a repeat weighs twice."""
    seen: set[str] = set()
    again = []
    for q in questions:
        key = " ".join(q.question.lower().split())
        if key in seen:
            again.append(q.question)
        seen.add(key)
    return again


def _moved_note(conn: duckdb.DuckDBPyConnection, ref: str) -> bool:
    """Whether the deleted note ``ref`` names (``<id>`` or ``<folder key>/<id>``) has its
    text in a live note now: its file renamed or moved, as `show` follows it (a question
    written before the rename was left out as "not in this home")."""
    rows = conn.execute(
        "SELECT id FROM notes WHERE deleted_at IS NOT NULL AND (id = ? OR id IN "
        "(SELECT key || '/' || ? FROM note_folders))",
        [ref, ref],
    ).fetchall()
    return any(same_text_note(conn, str(note_id)) for (note_id,) in rows)


def applicable(
    conn: duckdb.DuckDBPyConnection,
    questions: Sequence[Question],
    sources: Sequence[str] | None = None,
) -> list[Question]:
    """The questions whose ``source`` is in the index (all questions without a source):
    the shipped demo questions say nothing about a corpus that lacks their notes. With
    ``sources`` (``notes``, ``sessions``), a question about a note or a session is kept
    only when ask searches that kind.

    A ``note:<id>`` source names the note's id inside its folder (the question sets were
    written against the corpus files) or its full id: it matches a note whose id is
    ``<id>`` or ``<folder key>/<id>`` for any folder ingested into the home. A
    ``session:<text>`` source matches a session whose transcript path, key or project
    holds the text (any case). The kind is read in any case, spaces around it and the id
    left out; any other kind, or an empty id, names nothing."""
    searched = set(parse_sources(sources))
    kept = []
    for q in questions:
        if q.source is None:
            kept.append(q)
            continue
        kind, _, ref = q.source.partition(":")
        kind, ref = kind.strip().lower(), ref.strip()
        if not ref or kind not in ("note", "session") or f"{kind}s" not in searched:
            continue
        if kind == "note":
            # An id typed composed names a file stored decomposed, or back (as `show` reads it).
            spellings = list(dict.fromkeys(unicodedata.normalize(f, ref) for f in ("NFC", "NFD")))
            sql = (
                "SELECT count(*) FROM search_docs WHERE kind = 'note' AND (list_contains(?, ref) "
                "OR ref IN (SELECT key || '/' || unnest(?) FROM note_folders))"
            )
            args = [[ref, *spellings], [ref, *spellings]]
        else:
            sql = (
                "SELECT count(*) FROM search_docs d JOIN session_files f USING (session_key) "
                "WHERE d.kind = 'chunk' AND (contains(lower(f.path), ?) "
                "OR contains(lower(d.citation), ?) OR contains(lower(d.title), ?))"
            )
            args = [ref.lower()] * 3
        if conn.execute(sql, args).fetchone()[0] or (kind == "note" and _moved_note(conn, ref)):
            kept.append(q)
    return kept


@dataclass(frozen=True)
class PairedDifference:
    """How much one method's recall exceeds another's over the same questions: the mean
    of the per-question differences and a normal 95% interval around it (1.96 standard
    errors, within [-1, 1]; no width with fewer than two questions, nor when every question
    differs alike). An interval holding 0 means the questions cannot tell the two apart."""

    questions: int
    difference: float
    low: float
    high: float

    def to_json(self) -> dict[str, Any]:
        """Plain data, rounded to 4 places."""
        return {
            "questions": self.questions,
            "difference": round(self.difference, 4),
            "low": round(self.low, 4),
            "high": round(self.high, 4),
        }


def paired_difference(
    rows: Sequence[Mapping[str, Any]], a: str = "ask", b: str = "bm25_passages"
) -> PairedDifference:
    """``a`` minus ``b`` over ``rows`` (each holding both methods' recall of one
    question), paired question by question; all zero for no rows."""
    diffs = [float(r[a]) - float(r[b]) for r in rows]
    n = len(diffs)
    if not n:
        return PairedDifference(0, 0.0, 0.0, 0.0)
    mean = sum(diffs) / n
    var = sum((d - mean) ** 2 for d in diffs) / (n - 1) if n > 1 else 0.0
    half = 1.96 * math.sqrt(var / n)
    # A difference of recalls lies in [-1, 1]; a normal interval over few questions
    # reached past it (-0.48 to +1.48 over two).
    return PairedDifference(n, mean, max(-1.0, mean - half), min(1.0, mean + half))


@dataclass
class EvalReport:
    """Per-question recall for each method, and the mean over questions."""

    budget: int
    model: str
    rows: list[dict[str, Any]] = field(default_factory=list)
    passages: int = 0  # passages the *BM25 passages* baseline ranks over
    methods: tuple[str, ...] = METHODS

    @property
    def overall(self) -> dict[str, float]:
        """Mean recall per method (0.0 with no rows)."""
        n = len(self.rows) or 1
        return {m: round(sum(r[m] for r in self.rows) / n, 4) for m in self.methods}

    @property
    def over_budget(self) -> dict[str, int]:
        """Per method, how many packs count more than ``budget`` tokens (must all be 0)."""
        return {m: sum(1 for r in self.rows if r["tokens"][m] > self.budget) for m in self.methods}

    @property
    def versus_passages(self) -> PairedDifference | None:
        """ask minus the BM25-passages baseline, question by question (None when that
        baseline was not run)."""
        if "bm25_passages" not in self.methods:
            return None
        return paired_difference(self.rows)

    def to_json(self) -> dict[str, Any]:
        """Plain data for ``--format json`` and the asset check's metadata (each row's
        ``tokens`` holds every method's pack size, from which ``over_budget`` is counted;
        ``ask_vs_bm25_passages`` when that baseline was run)."""
        out: dict[str, Any] = {
            "budget": self.budget,
            "model": self.model,
            "overall": self.overall,
            "questions": self.rows,
        }
        versus = self.versus_passages
        if versus is not None:
            out["ask_vs_bm25_passages"] = versus.to_json()
        return out


def evaluate(
    conn: duckdb.DuckDBPyConnection,
    questions: Sequence[Question],
    budget: int,
    *,
    model: str | None = None,
    now: datetime | None = None,
    sources: Sequence[str] | None = None,
    methods: Sequence[str] = METHODS,
) -> EvalReport:
    """Recall of ask and the baselines in ``methods`` (default: all three) for every
    question, at the same budget and model; every pack is counted again in ``model``'s
    tokens (``tokens`` of each row). Leaving out ``bm25_passages`` skips cutting the
    corpus into passages (seconds on a large corpus).

    Read-only: no ``last_accessed_at`` stamps. Needs a built ``search_index``.
    """
    budget = check_budget(budget, "budget", minimum=1)
    model = model or default_model()
    methods = tuple(m for m in METHODS if m in methods)
    kinds = [SOURCES[s] for s in parse_sources(sources)]
    passages = passage_index(conn, model) if "bm25_passages" in methods else None
    report = EvalReport(budget, model, passages=len(passages) if passages else 0, methods=methods)
    newest = truncation_pack(newest_notes(conn), budget, model)
    newest_tokens = count_tokens(newest, model)
    for q in questions:
        result = ask(conn, q.question, budget, model=model, now=now, sources=sources)
        hits = search(conn, q.question, sources or ("notes", "sessions"), limit=20)
        packs = {
            "ask": result.text,
            "newest_first": newest,
            "bm25_topk": truncation_pack(hits, budget, model),
        }
        if passages is not None:
            packs["bm25_passages"] = passages.pack(q.question, budget, kinds)
        row: dict[str, Any] = {"question": q.question, "facts": len(q.must_contain)}
        row.update({m: recall(packs[m], q.must_contain) for m in methods})
        row["missing"] = [f for f in q.must_contain if not recall(result.text, [f])]
        row["ask_tokens"] = result.total_tokens
        row["tokens"] = {
            m: newest_tokens if m == "newest_first" else count_tokens(packs[m], model)
            for m in methods
        }
        report.rows.append(row)
    return report
