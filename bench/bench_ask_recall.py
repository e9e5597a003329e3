"""Recall of ask beside its three baselines at 500 / 1,000 / 2,000 tokens on every question
set of assets/eval/ whose corpus can be built, and the packs over budget (must be 0).

Corpora, each built once in its own home through the service layer, at the same path in
every run (``BUILD_ROOT``, emptied before and after; a second run waits for the first):
session keys come from the transcripts' paths and break ties between equal scores, so a
temporary path of its own made a session set move by a question from one run to the next
and blurred the comparison of two versions of ask.

- ``notes``: the demo notes (assets/demo/notes/til.jsonl) for questions.jsonl,
  holdout*.jsonl and dev.jsonl;
- ``conversations``: the notes of assets/eval/conversations/conversations.jsonl for
  conversations_dev.jsonl and conversations_blind.jsonl;
- ``sessions``: the real session files of tests/fixtures/sessions/ (not the hand-written ``shapes_`` ones), distilled with
  ``service.distill_run(all_files=True)``, for sessions_dev.jsonl, sessions_blind.jsonl and
  sessions_blind2.jsonl;
- ``sessions_dev2``: ten more real transcripts (assets/eval/sessions_dev2/), distilled the
  same way, for sessions_dev2.jsonl and sessions_dev4.jsonl (dev sets);
- ``sessions_more``: other real transcripts (assets/eval/sessions_more/, never looked at
  while tuning), distilled the same way, for sessions_blind3.jsonl;
- ``sessions_dev3``: nine more real transcripts (assets/eval/sessions_dev3/), distilled the
  same way, for sessions_dev3.jsonl and sessions_dev5.jsonl (dev sets);
- ``sessions_blind4``: thirteen more real transcripts (assets/eval/sessions_blind4/, never
  looked at while tuning), distilled the same way, for sessions_blind4.jsonl;
- ``locomo`` (with ``--locomo PATH`` only): the 272 sessions of LoCoMo's ten long
  conversations as notes and its questions with a word-for-word answer (``bench/locomo.py``;
  not shipped: its repository states no license), an unseen set.

Besides one line per set and budget, the blind and unseen sets of each kind of text (notes,
conversations, agent sessions) are pooled question by question: the paired difference of
ask and passage BM25 with a normal 95% interval, which tells a difference from the noise
of 30-question sets. A set whose question file or corpus is absent is skipped (named on
stderr). Only the questions whose ``source`` is in the corpus are asked
(``evaluate.applicable``). Baselines: newest-first, BM25 top-k documents, and BM25 over
~200-token passages packed in rank order (the baseline a user would write; the row's
``baseline`` column). ``--sets a,b`` chooses corpora or question files (``notes``,
``holdout3``, ``sessions_blind``, ...); ``--dev`` keeps only the dev sets (the ones rules
may be chosen on). To compare two versions of ask: ``--dev --save before.json`` on one,
``--dev --against before.json`` on the other prints, per kind of text and budget, the
paired difference question by question with its 95% interval and how many questions each
gained or lost.
"""

from __future__ import annotations

import argparse
import fcntl
import getpass
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench._common import BenchRow, print_rows  # noqa: E402
from selene_dag import service  # noqa: E402
from selene_dag.config import Settings, load_settings  # noqa: E402
from selene_dag.paths import assets_dir  # noqa: E402
from selene_dag.retrieval.evaluate import (  # noqa: E402
    METHODS,
    EvalReport,
    PairedDifference,
    applicable,
    evaluate,
    load_questions,
    paired_difference,
)
from selene_dag.store import connect  # noqa: E402

MODEL = "mistral:7b"
BUDGETS = (500, 1_000, 2_000)
EVAL = assets_dir() / "eval"
SESSIONS_NOW = datetime(2026, 7, 15, tzinfo=UTC)
# Question files written blind (never tuned on): only reported, see assets/eval/README.md.
BLIND = {
    "holdout3",
    "holdout4",
    "conversations_blind",
    "conversations_blind2",
    "sessions_blind",
    "sessions_blind2",
    "sessions_blind3",
    "sessions_blind4",
    "locomo",
}


@dataclass(frozen=True)
class Corpus:
    """A corpus, how to build it, and the question files asked over it."""

    name: str
    source: Path
    sets: tuple[str, ...]
    build: Callable[[Path, Path], Settings]
    questions: Path = EVAL


def _settings(home: Path, now: datetime, roots: str) -> Settings:
    env = {
        "SELENE_MODEL": MODEL,
        "SELENE_NOW": now.isoformat(),
        "SELENE_SESSION_ROOTS": roots,
        "SELENE_CLI_ASSESSORS": "",
        "SELENE_LLM": "extractive",
    }
    return load_settings(env, home=home)


def _notes_store(source: Path, home: Path) -> Settings:
    settings = _settings(home, service.demo_now(source), str(home / "no-sessions"))
    service.ingest(settings, source)
    return settings


def _sessions_store(source: Path, home: Path) -> Settings:
    # A bare folder: the platform is detected per file. Only the real transcripts: the
    # hand-written ``shapes_`` fixtures of the parser tests are not part of this corpus.
    copies = home / "transcripts"
    for path in sorted(source.rglob("*.json*")):
        relative = path.relative_to(source)
        if "shapes_" in str(relative) or path.name.endswith(".meta.json"):
            continue
        (copies / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, copies / relative)
    settings = _settings(home, SESSIONS_NOW, str(copies))
    rows = service.distill_run(settings, all_files=True)
    failed = [r["path"] for r in rows if not r["ok"]]
    if failed:
        print(f"bench_ask_recall: {len(failed)} session files failed to distill", file=sys.stderr)
    service.refresh_index_if_stale(settings)
    return settings


CORPORA = (
    Corpus(
        "notes",
        assets_dir() / "demo" / "notes" / "til.jsonl",
        ("questions", "holdout", "holdout2", "dev", "holdout3", "holdout4"),
        _notes_store,
    ),
    Corpus(
        "conversations",
        EVAL / "conversations" / "conversations.jsonl",
        ("conversations_dev", "conversations_blind", "conversations_blind2"),
        _notes_store,
    ),
    Corpus(
        "sessions",
        ROOT / "tests" / "fixtures" / "sessions",
        ("sessions_dev", "sessions_blind", "sessions_blind2"),
        _sessions_store,
    ),
    Corpus(
        "sessions_dev2",
        EVAL / "sessions_dev2",
        ("sessions_dev2", "sessions_dev4"),
        _sessions_store,
    ),
    Corpus(
        "sessions_more",
        EVAL / "sessions_more",
        ("sessions_blind3",),
        _sessions_store,
    ),
    Corpus(
        "sessions_dev3",
        EVAL / "sessions_dev3",
        ("sessions_dev3", "sessions_dev5"),
        _sessions_store,
    ),
    Corpus(
        "sessions_blind4",
        EVAL / "sessions_blind4",
        ("sessions_blind4",),
        _sessions_store,
    ),
)


@dataclass
class SetResult:
    """Reports of one question set at each budget."""

    corpus: str
    name: str
    questions: int
    reports: dict[int, EvalReport]


BUILD_ROOT = Path(tempfile.gettempdir()) / f"selene-bench-ask-recall-{getpass.getuser()}"


@contextmanager
def _build_dir(name: str) -> Iterator[Path]:
    """``BUILD_ROOT/name``, empty, for one corpus (the same path in every run, so the same
    session keys), held under a lock so that two runs do not share it; removed after."""
    BUILD_ROOT.mkdir(parents=True, exist_ok=True)
    with open(BUILD_ROOT / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        work = BUILD_ROOT / name
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir()
        try:
            yield work
        finally:
            shutil.rmtree(work, ignore_errors=True)


def locomo_corpus(path: Path) -> Corpus:
    """The LoCoMo conversations at ``path`` converted (``bench/locomo.py``) into
    ``BUILD_ROOT/locomo-source``: a notes corpus with its unseen question set ``locomo``."""
    from bench import locomo

    notes, questions, n_notes, n_questions = locomo.write(path, BUILD_ROOT / "locomo-source")
    print(
        f"bench_ask_recall: LoCoMo from {path}: {n_notes} sessions, {n_questions} questions",
        file=sys.stderr,
    )
    return Corpus("locomo", notes, ("locomo",), _notes_store, questions.parent)


def measure(
    chosen: set[str] | None = None, corpora: Sequence[Corpus] = CORPORA
) -> tuple[list[SetResult], dict[str, float]]:
    """Build each corpus that has a chosen set and evaluate its sets at every budget.
    Returns the results and the build seconds per corpus."""
    results: list[SetResult] = []
    builds: dict[str, float] = {}
    for corpus in corpora:
        sets = [s for s in corpus.sets if chosen is None or corpus.name in chosen or s in chosen]
        present = [s for s in sets if (corpus.questions / f"{s}.jsonl").is_file()]
        for s in sorted(set(sets) - set(present)):
            print(f"bench_ask_recall: skip {s}: no {corpus.questions / s}.jsonl", file=sys.stderr)
        if not present:
            continue
        if not corpus.source.exists():
            print(
                f"bench_ask_recall: skip {', '.join(present)}: no corpus at {corpus.source}",
                file=sys.stderr,
            )
            continue
        with _build_dir(corpus.name) as work:
            started = time.perf_counter()
            settings = corpus.build(corpus.source, work / "home")
            builds[corpus.name] = time.perf_counter() - started
            conn = connect(settings.db_path)
            try:
                for name in present:
                    usable = applicable(conn, load_questions(corpus.questions / f"{name}.jsonl"))
                    if not usable:
                        print(
                            f"bench_ask_recall: skip {name}: no question applies", file=sys.stderr
                        )
                        continue
                    reports = {
                        b: evaluate(conn, usable, b, model=MODEL, now=settings.now())
                        for b in BUDGETS
                    }
                    results.append(SetResult(corpus.name, name, len(usable), reports))
            finally:
                conn.close()
    return results, builds


def kind_of(res: SetResult) -> str:
    """The kind of text a set asks about: its corpus's (every sessions corpus is one kind)."""
    return "agent sessions" if res.corpus.startswith("sessions") else res.corpus


@dataclass(frozen=True)
class Pooled:
    """ask against passage BM25 over the questions of several sets at one budget."""

    kind: str
    budget: int
    ask: float
    baseline: float
    versus: PairedDifference


def pooled_blind(results: Sequence[SetResult]) -> list[Pooled]:
    """Per kind of text and budget, the blind and unseen sets pooled question by question
    (a set of 30 moves by 0.033 per question; pooled, a difference can be told from noise)."""
    groups: dict[tuple[str, int], list[dict]] = {}
    for res in results:
        if res.name not in BLIND:
            continue
        for budget, report in res.reports.items():
            groups.setdefault((kind_of(res), budget), []).extend(report.rows)
    out: list[Pooled] = []
    for (kind, budget), rows in groups.items():
        if rows:
            ask = sum(r["ask"] for r in rows) / len(rows)
            base = sum(r["bm25_passages"] for r in rows) / len(rows)
            out.append(Pooled(kind, budget, ask, base, paired_difference(rows)))
    return out


def print_pooled(pooled: Sequence[Pooled]) -> None:
    """One line per kind and budget: recall of both, the difference and its interval."""
    if not pooled:
        return
    print("blind and unseen sets pooled per kind (ask - BM25 passages, paired, 95% interval):")
    for p in pooled:
        v = p.versus
        print(
            f"  {p.kind:<14} {p.budget:>5,}  n={v.questions:<4} ask {p.ask:.3f}  "
            f"bm25p {p.baseline:.3f}  diff {v.difference:+.3f} [{v.low:+.3f}, {v.high:+.3f}]"
        )


def target_recall(baseline: float) -> float:
    """What ask must reach beside a passage-BM25 recall of ``baseline``: 0.10 more, or
    0.95 where the baseline is already above 0.85 (never more than 1)."""
    return min(1.0, 0.95 if baseline > 0.85 else baseline + 0.10)


def rows_for(results: Sequence[SetResult], builds: dict[str, float]) -> list[BenchRow]:
    """One row per (set, budget): ask vs BM25 passages, the other baselines in ``how``;
    then the packs over budget across everything."""
    rows: list[BenchRow] = []
    over = 0
    packs = 0
    for res in results:
        tag = f"{res.name}{' (blind)' if res.name in BLIND else ''}"
        for budget, report in res.reports.items():
            o = report.overall
            base = o["bm25_passages"]
            target = target_recall(base)
            over += sum(report.over_budget.values())
            packs += len(report.rows) * len(METHODS)
            rows.append(
                BenchRow(
                    f"{tag}: recall @{budget} ask vs BM25 passages",
                    o["ask"],
                    "",
                    base,
                    o["ask"] / base if base else None,
                    f">= {target:.2f}",
                    o["ask"] >= target - 1e-9,
                    f"{res.questions} questions, {MODEL}; bm25 top-k {o['bm25_topk']:.3f}, "
                    f"newest-first {o['newest_first']:.3f}; {report.passages} passages",
                )
            )
    built = ", ".join(f"{k} built in {v:.0f} s" for k, v in builds.items())
    how = f"{packs} packs; {built}"
    rows.append(
        BenchRow("packs over budget (all methods)", over, "", None, None, "= 0", over == 0, how)
    )
    return rows


def run(chosen: set[str] | None = None) -> list[BenchRow]:
    """Rows of every set (see module docstring)."""
    results, builds = measure(chosen)
    return rows_for(results, builds)


def print_matrix(results: Sequence[SetResult]) -> None:
    """Recall of every method, one line per (set, budget)."""
    header = ("set", "n", "budget", *METHODS, "over")
    table = [header]
    for res in results:
        for budget, report in res.reports.items():
            o = report.overall
            table.append(
                (
                    res.name + (" *" if res.name in BLIND else ""),
                    str(res.questions),
                    f"{budget:,}",
                    *(f"{o[m]:.3f}" for m in METHODS),
                    str(sum(report.over_budget.values())),
                )
            )
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    for row in table:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)))
    print("(* blind set: never tuned on)")


def ask_recalls(results: Sequence[SetResult]) -> list[dict]:
    """Ask's recall of every question at every budget, as saved by ``--save``."""
    return [
        {"set": res.name, "budget": budget, "question": row["question"], "ask": row["ask"]}
        for res in results
        for budget, report in res.reports.items()
        for row in report.rows
    ]


@dataclass(frozen=True)
class Change:
    """Ask now against a saved run of other code, for one kind of text and budget."""

    kind: str
    budget: int
    versus: PairedDifference
    gained: int
    lost: int


def compare(saved: Sequence[dict], results: Sequence[SetResult]) -> list[Change]:
    """Per kind of text and budget, the paired difference over the questions both runs
    hold, and how many questions gained or lost."""
    before = {(r["set"], r["budget"], r["question"]): r["ask"] for r in saved}
    groups: dict[tuple[str, int], list[dict]] = {}
    for res in results:
        for budget, report in res.reports.items():
            for row in report.rows:
                then = before.get((res.name, budget, row["question"]))
                if then is not None:
                    pair = {"now": row["ask"], "then": then}
                    groups.setdefault((kind_of(res), budget), []).append(pair)
    return [
        Change(
            kind,
            budget,
            paired_difference(pairs, "now", "then"),
            sum(1 for p in pairs if p["now"] > p["then"]),
            sum(1 for p in pairs if p["now"] < p["then"]),
        )
        for (kind, budget), pairs in groups.items()
    ]


def print_compare(changes: Sequence[Change]) -> None:
    """One line per kind and budget: ask now minus ask in the saved run."""
    print("ask now - ask in the saved run (paired, 95% interval):")
    for c in changes:
        v = c.versus
        print(
            f"  {c.kind:<14} {c.budget:>5,}  n={v.questions:<4} diff {v.difference:+.3f} "
            f"[{v.low:+.3f}, {v.high:+.3f}]  questions gained {c.gained}, lost {c.lost}"
        )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", help="comma-separated corpora or question files")
    parser.add_argument(
        "--dev", action="store_true", help="only the dev sets (the sets rules may be tuned on)"
    )
    parser.add_argument("--save", type=Path, help="write ask's recall of every question here")
    parser.add_argument(
        "--against", type=Path, help="compare ask with a run saved by --save (other code)"
    )
    parser.add_argument(
        "--locomo",
        type=Path,
        help="also measure on LoCoMo's conversations (its data/locomo10.zip, the folder it "
        "unpacks to, or locomo10.json): an unseen set, see bench/locomo.py",
    )
    args = parser.parse_args(argv)
    chosen = {s.strip() for s in args.sets.split(",") if s.strip()} if args.sets else None
    if args.dev:
        dev = {s for corpus in CORPORA for s in corpus.sets if s not in BLIND}
        chosen = dev if chosen is None else {s for s in dev if s in chosen}
    corpora = list(CORPORA)
    if args.locomo:
        corpora.append(locomo_corpus(args.locomo))
        if chosen is not None and not args.dev:
            chosen.add("locomo")
    started = time.perf_counter()
    results, builds = measure(chosen, corpora)
    print_matrix(results)
    print()
    print_pooled(pooled_blind(results))
    print()
    if args.save:
        args.save.write_text(json.dumps(ask_recalls(results), indent=1), encoding="utf-8")
    if args.against:
        print_compare(compare(json.loads(args.against.read_text(encoding="utf-8")), results))
        print()
    print_rows(rows_for(results, builds))
    print(f"\n{time.perf_counter() - started:.0f} s in all", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
