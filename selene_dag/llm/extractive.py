"""ExtractiveEngine: the default engine — deterministic, offline, no model server.

Every answer is built from sentences and words of the input; nothing is generated.

* **Essence** (``analyze_note``): markdown, code blocks, tables, URLs and link syntax are
  stripped; the prose is split into sentences; each sentence is a TF-IDF vector (scikit-learn,
  fitted on the note's own sentences and its title). A sentence's score adds its centrality
  (mean cosine similarity to the other sentences), its similarity to the title, an early-position
  bonus, a bonus for insight cues ("the trick is", "turns out", "the fix", "you can", ...), and
  a length fit (40–260 characters preferred); it loses points for ending in ':' (it introduces
  a code block) or pointing at one ("the following", "like this"), or opening with a bare
  pronoun. The best sentence is the essence; a short best
  sentence (< 90 chars) is joined by the next best one (in document order). An essence is
  always > 10 characters for a note with text (the title is the last fallback).
* **Concepts / primary theme**: key phrases — word and bigram counts of the prose with stop
  words removed, title words counted three times, a title's leading "-ing" verb skipped,
  plural duplicates merged; lower-case, ties broken alphabetically. (Bigrams make better
  concepts than ``selene_dag.context.keywords``' single words: "apache bench", "github pages".) The theme is the first
  concept that occurs in the title (else the first concept).
* **Threads** (``detect_threads``): TF-IDF over each note's title, concepts, theme and essence,
  agglomerative clustering (cosine, average linkage, fixed distance threshold); clusters of at
  least ``min_thread_notes`` notes become threads named after their two strongest terms.
* **Digest**: an opening sentence naming the thread and its main terms, then the 2–4 most
  central essence sentences: 3–5 sentences in all.
* **Summaries**: the most central sentences, in document order, added while the result counts
  ≤ ``max_tokens`` in the target model's tokens (then cut by ``truncate_to_tokens`` as a guard).
* **Assessments**: transparent heuristics, see :meth:`ExtractiveEngine.assess_chunk`.
* **answer()**: not possible without a model: raises EngineUnavailable.

All operations go through the cache like the Ollama engine's, so "calls made vs cached" reads
the same whichever engine ran; the recipe of each task is an algorithm version string.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from functools import lru_cache
from itertools import pairwise
from typing import Any

import numpy as np
from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS, TfidfVectorizer

from selene_dag import text as _text
from selene_dag.llm.cache import LLMCache
from selene_dag.llm.engine import (
    MIN_ESSENCE_CHARS,
    Assessment,
    BaseEngine,
    EngineUnavailable,
    NoteAnalysis,
    ThreadProposal,
    count_tokens,
    note_ids_of,
    require_kind,
    require_max_tokens,
    require_text,
    truncate_to_tokens,
)
from selene_dag.llm.versions import ALGORITHM_VERSIONS

_EXTRA_STOP_TEXT = """
    use used using uses like just really want wanted need needed way ways thing things got get
    gets getting make makes made lot lots bit good great new turns turned actually also able
    let lets want does did doing done going went know knew think thought said says say tried
    try trying worked works work working look looks looking looked run running ran runs
    following follows example examples today little pretty quite simply simple stuff ended end
    e.g i.e etc til i'm i've it's don't can't didn't doesn't isn't that's there's here's
    you'll you're we're i'd i'll ve ll re
"""
EXTRA_STOP_WORDS = frozenset(_EXTRA_STOP_TEXT.split())
STOP_WORDS = ENGLISH_STOP_WORDS | EXTRA_STOP_WORDS
# The same list as scikit-learn's tokenizer sees it (apostrophes split "don't" into "don").
_VECTOR_STOP_WORDS = sorted(
    {w for w in STOP_WORDS if re.fullmatch(r"[a-z][a-z0-9_]+", w)}
    | {"didn", "doesn", "don", "isn", "ve", "ll", "re", "til"}
)

_INSIGHT_CUES = re.compile(
    r"\b(the trick|trick is|turns out|turned out|the fix|the solution|the answer|the key|"
    r"i learned|i figured|figured out|you can|lets you|allows you|it's possible|"
    r"the way to|the easiest way|the best way|the problem|the reason|the secret|"
    r"solved|solution|workaround|instead of|decided|realized|works by)\b",
    re.IGNORECASE,
)
_POINTS_AT_CODE = re.compile(
    r"\b(the following|like this|as follows|this command|this code|this snippet|here's how|doing this|by running)\b",
    re.IGNORECASE,
)
_WEAK_START = re.compile(
    r"^(it|this|that|these|those|here|so|but|and|then|which|they|he|she)\b", re.IGNORECASE
)
_CODE_LINE = re.compile(
    r"^\s*(\$ |>>> |[A-Za-z_][\w.]*\(.*\)\s*;?$|def |class |import |from \S+ import |"
    r"function |const |let |var |SELECT |INSERT |CREATE |UPDATE |[{}\[\]]\s*$)"
)
_FILE_PATH = re.compile(
    r"(?:[\w.-]+/)+[\w.-]+|\b[\w-]+\.(?:py|ts|tsx|js|jsx|md|json|jsonl|toml|ya?ml|sql|rs|go|sh|"
    r"txt|html|css|java|c|h|cpp|rb|lock|cfg|ini|env)\b"
)
_ERROR = re.compile(
    r"\b(error|errors|exception|traceback|failed|failure|fatal|panic|stack ?trace|errno|"
    r"segfault|warning|denied|not found|cannot|can't|undefined|refused)\b",
    re.IGNORECASE,
)
_DECISION = re.compile(
    r"\b(decided|decision|agreed|we will|we'll|let's|instead|because|root cause|the fix|fixed|"
    r"solution|resolved|should|must|plan|approach|chose|switch(ed)? to|todo|next step)\b",
    re.IGNORECASE,
)
_COMMAND = re.compile(
    r"^\s*(\$\s+)?(git|npm|npx|pnpm|yarn|pip|uv|python3?|pytest|docker|make|cargo|go|bun|"
    r"node|curl|ls|cd|grep|sed|brew|apt(-get)?|kubectl|ruff|sqlite3|duckdb)\s",
    re.MULTILINE,
)
_NOISE_LINE = re.compile(
    r"^\s*(ok(ay)?|thanks?( you)?|sure|great|got it|yes|no|done|hmm+|lgtm|cool|nice|"
    r"\.+|-+|=+|\*+)\s*[.!]?\s*$",
    re.IGNORECASE,
)


_HEXISH = re.compile(r"(?=[a-z]*\d)[0-9a-f]{4,}")


def _clamp_score(value: float) -> int:
    return int(max(1, min(10, round(value))))


@lru_cache(maxsize=65536)
def _keep_token(token: str) -> bool:
    if token in STOP_WORDS or sum(c.isalpha() for c in token) < 2:
        return False
    if _HEXISH.fullmatch(token):
        return False
    return not (len(token) > 6 and token.endswith("ly"))


def _singular(term: str) -> str:
    return " ".join(w[:-1] if len(w) > 3 and w.endswith("s") else w for w in term.split())


def _keywords_own(title: str, body: str, k: int) -> list[str]:
    """Word and bigram counts (title ×3), stop words removed, ties alphabetical."""
    counts: Counter[str] = Counter()
    for weight, text in ((3, title), (1, body)):
        for n, sentence in enumerate(_text.split_sentences(text) or [text]):
            tokens = [w.lower().strip(".'") for w in _text.words(sentence)]
            tokens = [t[:-2] if t.endswith("'s") else t for t in tokens]
            kept = [t if _keep_token(t) else "" for t in tokens]
            if weight > 1 and n == 0 and kept and kept[0].endswith("ing"):
                kept[0] = ""  # a title's leading verb ("Using", "Avoiding") is not a concept
            for token in kept:
                if token:
                    counts[token] += weight
            for a, b in pairwise(kept):
                if a and b and a != b:
                    counts[f"{a} {b}"] += weight * 1.5
    ranked = sorted(
        ((term, score) for term, score in counts.items() if " " not in term or score >= 3),
        key=lambda item: (-item[1], item[0]),
    )
    chosen: list[str] = []
    for term, _score in ranked:
        parts = term.split()
        if any(_singular(term) == _singular(c) for c in chosen):
            continue
        if len(parts) == 1:
            if any(term in c.split() for c in chosen):
                continue
        else:
            if all(p in chosen for p in parts) or any(
                set(parts) & set(c.split()) for c in chosen if " " in c
            ):
                continue
            chosen = [c for c in chosen if c not in parts]
        chosen.append(term)
        if len(chosen) >= k:
            break
    return chosen[:k]


def _keywords(title: str, body: str, k: int) -> list[str]:
    """Concept phrases of a text: :func:`_keywords_own` (see the module docstring)."""
    return _keywords_own(title, body, k)


_VECTOR_TOKEN = re.compile(r"\b[a-zA-Z][a-zA-Z0-9_]+\b")
_VECTOR_STOP_SET = frozenset(_VECTOR_STOP_WORDS)


def _analyze(text: str) -> list[str]:
    """Lower-case word tokens without stop words (a fast TfidfVectorizer analyzer)."""
    return [t for t in _VECTOR_TOKEN.findall(text.lower()) if t not in _VECTOR_STOP_SET]


def _tfidf_similarity(texts: list[str]) -> np.ndarray | None:
    """Cosine similarity matrix of TF-IDF vectors (None when no text has a usable word)."""
    vectorizer = TfidfVectorizer(analyzer=_analyze, sublinear_tf=True)
    try:
        matrix = vectorizer.fit_transform(texts)
    except ValueError:  # empty vocabulary
        return None
    return (matrix @ matrix.T).toarray()


def _centrality(sentences: list[str], extra: str | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(mean similarity of each sentence to the others, similarity to ``extra`` or zeros)."""
    n = len(sentences)
    texts = sentences + ([extra] if extra else [])
    sim = _tfidf_similarity(texts)
    if sim is None:
        return np.zeros(n), np.zeros(n)
    core = sim[:n, :n].copy()
    np.fill_diagonal(core, 0.0)
    central = core.sum(axis=1) / max(n - 1, 1)
    to_extra = sim[:n, n] if extra else np.zeros(n)
    return central, to_extra


def _length_fit(sentence: str) -> float:
    size = len(sentence)
    if size < 25:
        return -0.6
    if size < 40:
        return -0.2
    if size <= 260:
        return 0.15
    if size <= 400:
        return -0.1
    return -0.5


def pick_essence(title: str, content: str, prose: str | None = None) -> str:
    """The 1–2 most central sentences of a note (see the module docstring); never ≤ 10 chars.

    ``prose`` is ``content`` already passed through ``strip_markdown`` (computed if None).
    """
    prose = _text.strip_markdown(content) if prose is None else prose
    sentences = _text.split_sentences(prose)
    candidates = [s for s in sentences if len(_text.words(s)) >= 4 and 20 <= len(s) <= 600]
    if not candidates:
        candidates = [s for s in sentences if len(s) >= MIN_ESSENCE_CHARS]
    if not candidates:
        return _title_fallback(title, content)
    central, to_title = _centrality(candidates, title or None)
    top_central = float(central.max()) or 1.0
    n = len(candidates)
    scores = []
    for i, sentence in enumerate(candidates):
        score = 0.45 * float(central[i]) / top_central + 0.35 * float(to_title[i])
        score += 0.2 * (1.0 - i / n) if n > 1 else 0.2
        score += 0.2 if _INSIGHT_CUES.search(sentence) else 0.0
        score += _length_fit(sentence)
        if sentence.rstrip().endswith(":"):
            score -= 0.5
        if _POINTS_AT_CODE.search(sentence):
            score -= 0.3
        if _WEAK_START.match(sentence):
            score -= 0.1
        if "?" in sentence[-2:]:
            score -= 0.05
        scores.append(score)
    order = sorted(range(n), key=lambda i: (-scores[i], i))
    chosen = [order[0]]
    if len(candidates[order[0]]) < 90 and n > 1:
        second = order[1]
        if len(candidates[second]) <= 260 and not candidates[second].rstrip().endswith(":"):
            chosen.append(second)
    essence = " ".join(_text.ensure_period(candidates[i]) for i in sorted(chosen))
    essence = _text.shorten(essence, 360)
    if len(essence) < MIN_ESSENCE_CHARS:
        return _title_fallback(title, content)
    return essence


def _title_fallback(title: str, content: str) -> str:
    text = " ".join(title.split()) or " ".join(content.split())[:200]
    if len(text) < MIN_ESSENCE_CHARS:
        text = f"A short note: {text}" if text else ""
    return _text.ensure_period(text) if text else text


class ExtractiveEngine(BaseEngine):
    """Deterministic offline engine; see the module docstring for every method's algorithm."""

    name = "extractive"

    def __init__(
        self,
        cache: LLMCache | None = None,
        *,
        token_model: str | None = None,
        concepts_k: int = 5,
        min_thread_notes: int = 3,
        thread_distance: float = 0.8,
    ) -> None:
        """``token_model`` is the default model whose tokens ``summarize`` counts."""
        super().__init__(cache)
        self.model = "extractive-v1"
        self.token_model = token_model
        self.concepts_k = concepts_k
        self.min_thread_notes = min_thread_notes
        self.thread_distance = thread_distance

    # -- notes ---------------------------------------------------------------------------

    def analyze_note(self, title: str, content: str) -> NoteAnalysis:
        """Concepts, primary theme and essence of a note (essence > 10 chars if any text).

        Raises TypeError for non-str input and ValueError when title and content are both empty.
        """
        require_text(title, "title")
        require_text(content, "content")
        if not title.strip() and not content.strip():
            raise ValueError("a note needs a title or content")

        def compute() -> tuple[dict[str, Any], None, None]:
            body = _text.strip_markdown(content)
            concepts = _keywords(title, body, self.concepts_k)
            lowered_title = title.lower()
            theme = next(
                (c for c in concepts if c in lowered_title), concepts[0] if concepts else ""
            )
            essence = pick_essence(title, content, body)
            return (
                {"concepts": concepts, "primary_theme": theme, "essence": essence},
                None,
                None,
            )

        out = self._cached(
            "analyze_note",
            ALGORITHM_VERSIONS["analyze_note"],
            {"title": title, "content": content, "k": self.concepts_k},
            compute,
        )
        return NoteAnalysis(
            concepts=list(out["concepts"]),
            primary_theme=out["primary_theme"],
            essence=out["essence"],
        )

    def detect_threads(
        self, context: str, notes: Sequence[Mapping[str, Any]]
    ) -> list[ThreadProposal]:
        """Cluster notes into threads (``context`` is not needed here and is ignored).

        Each note is a mapping with ``id`` and some of ``title``, ``essence``, ``concepts``
        (list or JSON list), ``primary_theme``, ``topic``, ``content``. Returns threads of at
        least ``min_thread_notes`` notes, largest first. Raises TypeError/ValueError on
        malformed notes.
        """
        ids = note_ids_of(notes)
        if len(set(ids)) != len(ids):
            raise ValueError("note ids must be unique")
        docs = {nid: _note_doc(note) for nid, note in zip(ids, notes, strict=True)}
        payload = {"docs": docs, "min": self.min_thread_notes, "dist": self.thread_distance}

        def compute() -> tuple[list[dict[str, Any]], None, None]:
            return _cluster_threads(docs, self.min_thread_notes, self.thread_distance), None, None

        out = self._cached("detect_threads", ALGORITHM_VERSIONS["detect_threads"], payload, compute)
        return [ThreadProposal(**t) for t in out]

    def digest_thread(self, name: str, why: str, essences: Sequence[str]) -> str:
        """A 3–5 sentence paragraph: an opening line naming the thread, then central essences.

        Raises ValueError when no essence has text.
        """
        require_text(name, "name", allow_empty=False)
        require_text(why, "why")
        cleaned = [require_text(e, "essence").strip() for e in essences]
        cleaned = [e for e in cleaned if e]
        if not cleaned:
            raise ValueError("digest_thread needs at least one non-empty essence")

        def compute() -> tuple[str, None, None]:
            return _digest(name, why, cleaned), None, None

        payload = {"name": name, "why": why, "essences": cleaned}
        return self._cached("digest_thread", ALGORITHM_VERSIONS["digest_thread"], payload, compute)

    # -- text -----------------------------------------------------------------------------

    def summarize(
        self, text: str, max_tokens: int, model: str | None = None, *, kind: str = "text"
    ) -> str:
        """The most central sentences of ``text`` in document order, ≤ ``max_tokens`` tokens.

        ``model`` names the tokenizer (default: the engine's ``token_model``). ``kind``
        "conversation" renders bullet points (seed 004's compaction summary). Raises
        TypeError/ValueError on bad arguments.
        """
        require_text(text, "text")
        require_max_tokens(max_tokens)
        require_kind(kind)
        target = model or self.token_model

        def compute() -> tuple[str, None, int]:
            summary = _summarize(text, max_tokens, target, kind)
            return summary, None, count_tokens(summary, model=target)

        payload = {"text": text, "max_tokens": max_tokens, "model": target, "kind": kind}
        return self._cached("summarize", ALGORITHM_VERSIONS["summarize"], payload, compute)

    def assess_chunk(self, text: str, context: str | None = None) -> Assessment:
        """Rate a chunk 1–10 with transparent heuristics (no model).

        Signals counted: code lines and fenced blocks, file paths, error words, decision words
        ("decided", "because", "the fix", "should", ...), shell commands, noise lines
        ("ok", "thanks", rules), words and the share of distinct words.

        * signal_density = 1 + 9 × min(1, 1.5 × signal lines / non-empty lines) scaled by
          (0.5 + 0.5 × distinct-word share) and reduced by the noise-line share.
        * relevance: with ``context`` (a question or task), 1 + 9 × min(1, 1.5 × share of the
          context's keywords found in the chunk); without it, 3 + 2 (errors) + 2 (decisions)
          + 1 (files) + 1 (code) + 1 (commands), −2 under 15 words.
        * reusability = 2 + 2 (decisions) + 2 (files) + 2 (code or commands) + 1 (an error
          together with a decision, i.e. a fix) + 1 (40–1500 words), −2 when noise lines are
          over half of the lines.

        ``reason`` lists the counts on one line. Raises TypeError for non-str input.
        """
        require_text(text, "text")
        if context is not None:
            require_text(context, "context")

        def compute() -> tuple[dict[str, Any], None, None]:
            return _heuristic_assessment(text, context), None, None

        payload = {"text": text, "context": context}
        out = self._cached("assess_chunk", ALGORITHM_VERSIONS["assess_chunk"], payload, compute)
        return Assessment(**out)

    def answer(self, question: str, context: str) -> str:
        """Always raises EngineUnavailable: answering needs a generative model."""
        raise EngineUnavailable("answering needs a model server: set SELENE_LLM=ollama")


def _note_doc(note: Mapping[str, Any]) -> str:
    parts = [str(note.get("title") or "")]
    concepts = note.get("concepts")
    if isinstance(concepts, str):
        import json

        try:
            concepts = json.loads(concepts)
        except ValueError:
            concepts = [concepts]
    if isinstance(concepts, (list, tuple)):
        parts.append(" ".join(str(c) for c in concepts))
    for key in ("primary_theme", "topic"):
        if note.get(key):
            parts.append(str(note[key]))
    essence = note.get("essence")
    if essence:
        parts.append(str(essence))
    elif note.get("content"):
        parts.append(_text.strip_markdown(str(note["content"]))[:800])
    return "\n".join(p for p in parts if p)


def _cluster_threads(docs: dict[str, str], min_notes: int, distance: float) -> list[dict[str, Any]]:
    from sklearn.cluster import AgglomerativeClustering

    ids = sorted(docs)
    if len(ids) < max(min_notes, 2):
        return []
    vectorizer = TfidfVectorizer(
        stop_words=_VECTOR_STOP_WORDS,
        sublinear_tf=True,
        ngram_range=(1, 2),
        min_df=2 if len(ids) >= 20 else 1,
        max_df=0.3 if len(ids) >= 20 else 1.0,
        token_pattern=r"(?u)\b[a-zA-Z][a-zA-Z0-9_]+\b",
    )
    try:
        matrix = vectorizer.fit_transform([docs[i] for i in ids])
    except ValueError:
        return []
    dense = matrix.toarray()
    usable = np.flatnonzero(dense.sum(axis=1) > 0)
    if len(usable) < max(min_notes, 2):
        return []
    labels = AgglomerativeClustering(
        n_clusters=None, distance_threshold=distance, metric="cosine", linkage="average"
    ).fit_predict(dense[usable])
    terms = vectorizer.get_feature_names_out()
    threads = []
    for label in sorted(set(labels.tolist())):
        rows = usable[labels == label]
        if len(rows) < min_notes:
            continue
        centroid = dense[rows].mean(axis=0)
        top = [terms[j] for j in np.argsort(-centroid, kind="stable")[:6]]
        name_terms = _distinct_terms(top, 2)
        name = " & ".join(t.title() for t in name_terms)
        main = _distinct_terms(top, 3)
        members = [ids[r] for r in rows]
        sims = dense[rows] @ centroid
        central_titles = [
            docs[ids[rows[j]]].split("\n", 1)[0] for j in np.argsort(-sims, kind="stable")[:3]
        ]
        size = len(members)
        threads.append(
            {
                "name": name,
                "why": f"Keeps returning to {_join_words(main)} across {size} notes.",
                "note_ids": members,
                "summary": "Notes such as " + _join_words([f"“{t}”" for t in central_titles]) + ".",
                "direction": "clear" if size >= 10 else "emerging" if size >= 5 else "exploring",
            }
        )
    threads.sort(key=lambda t: (-len(t["note_ids"]), t["name"]))
    return threads


def _distinct_terms(terms: list[str], k: int) -> list[str]:
    chosen: list[str] = []
    for term in terms:
        words = set(term.split())
        if any(words & set(c.split()) for c in chosen):
            continue
        chosen.append(term)
        if len(chosen) == k:
            break
    return chosen


def _join_words(items: list[str]) -> str:
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def _digest(name: str, why: str, essences: list[str]) -> str:
    sentences: list[str] = []
    for essence in essences:
        for s in _text.split_sentences(essence):
            if len(s) >= 20 and s not in sentences:
                sentences.append(s)
    if not sentences:
        sentences = [e for e in essences if e]
    body_terms = _keywords(name, " ".join(essences), 3)
    opening = f"The thread “{name}” brings together {len(essences)} notes"
    opening += f" about {_join_words(body_terms)}." if body_terms else "."
    central, to_name = _centrality(sentences, f"{name} {why}")
    order = sorted(range(len(sentences)), key=lambda i: (-(central[i] + 0.5 * to_name[i]), i))
    picked = sorted(order[: min(3, len(sentences))])
    lines = [opening] + [_text.ensure_period(_text.shorten(sentences[i], 300)) for i in picked]
    if len(lines) < 3 and why.strip():
        lines.append(_text.ensure_period(f"What drives it: {why.strip()}"))
    if len(lines) < 3:
        lines.append(
            f"It now holds {len(essences)} distilled note{'s' if len(essences) != 1 else ''}."
        )
    return " ".join(lines[:5])


def _summarize(text: str, max_tokens: int, model: str | None, kind: str) -> str:
    prose = _text.strip_markdown(text) if kind == "text" else text
    sentences = [s for s in _text.split_sentences(prose) if s.strip()]
    if kind == "conversation":
        sentences = [s for line in text.splitlines() for s in _text.split_sentences(line)]
        sentences = [s for s in sentences if len(_text.words(s)) >= 3]
    if not sentences:
        return truncate_to_tokens(" ".join(text.split()), max_tokens, model=model)
    central, _ = _centrality(sentences)
    scores = [central[i] + _length_fit(s) * 0.2 for i, s in enumerate(sentences)]
    order = sorted(range(len(sentences)), key=lambda i: (-scores[i], i))
    limit = 7 if kind == "conversation" else len(sentences)

    def render(indices: list[int]) -> str:
        parts = [sentences[i] for i in sorted(indices)]
        if kind == "conversation":
            return "\n".join(f"- {_text.shorten(p, 240)}" for p in parts)
        return " ".join(parts)

    chosen: list[int] = []
    for i in order:
        if len(chosen) >= limit:
            break
        if count_tokens(render([*chosen, i]), model=model) <= max_tokens:
            chosen.append(i)
    if not chosen:
        return truncate_to_tokens(render([order[0]]), max_tokens, model=model)
    return truncate_to_tokens(render(chosen), max_tokens, model=model)


def _heuristic_assessment(text: str, context: str | None) -> dict[str, Any]:
    lines = [line for line in text.splitlines() if line.strip()]
    n_lines = max(len(lines), 1)
    fences = len(_text.CODE_FENCE.findall(text)) // 2
    code_lines = sum(1 for line in lines if _CODE_LINE.match(line))
    files = len(set(_FILE_PATH.findall(text)))
    errors = len(_ERROR.findall(text))
    decisions = len(_DECISION.findall(text))
    commands = len(_COMMAND.findall(text))
    noise = sum(1 for line in lines if _NOISE_LINE.match(line))
    tokens = [w.lower() for w in _text.words(text)]
    n_words = len(tokens)
    distinct = len(set(tokens)) / n_words if n_words else 0.0
    signal_lines = sum(
        1
        for line in lines
        if _CODE_LINE.match(line)
        or _FILE_PATH.search(line)
        or _ERROR.search(line)
        or _DECISION.search(line)
        or _COMMAND.match(line)
    )
    noise_share = noise / n_lines
    density = min(1.0, 1.5 * signal_lines / n_lines) * (0.5 + 0.5 * distinct)
    signal_density = _clamp_score(1 + 9 * density * (1 - noise_share))

    has_code = fences > 0 or code_lines > 0
    overlap_note = ""
    if context is not None and context.strip():
        wanted = {
            w.lower() for w in _text.words(context) if w.lower() not in STOP_WORDS and len(w) > 2
        }
        found = wanted & set(tokens)
        share = len(found) / len(wanted) if wanted else 0.0
        relevance = _clamp_score(1 + 9 * min(1.0, 1.5 * share))
        overlap_note = f"; context overlap {share:.0%}"
    else:
        relevance = 3 + 2 * (errors > 0) + 2 * (decisions > 0) + (files > 0) + has_code
        relevance += commands > 0
        relevance = _clamp_score(relevance - (2 if n_words < 15 else 0))

    reusability = 2 + 2 * (decisions > 0) + 2 * (files > 0) + 2 * (has_code or commands > 0)
    reusability += (errors > 0 and decisions > 0) + (40 <= n_words <= 1500)
    reusability = _clamp_score(reusability - (2 if noise_share > 0.5 else 0))

    reason = (
        f"heuristic: {fences} code blocks, {code_lines} code lines, {files} file paths, "
        f"{errors} error words, {decisions} decision words, {commands} commands, "
        f"{noise} noise lines, {n_words} words{overlap_note}"
    )
    return {
        "relevance": relevance,
        "signal_density": signal_density,
        "reusability": reusability,
        "reason": reason,
    }
