"""Threads of notes (the ``detect_threads`` task).

TF-IDF over each note's title, concepts, theme and essence, agglomerative clustering
(cosine, average linkage, fixed distance threshold); clusters of at least ``min_notes``
notes become threads named after their two strongest terms.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import numpy as np

from selene_dag import text as _text
from selene_dag.llm.extractive.phrases import join_words
from selene_dag.llm.extractive.scoring import VECTOR_STOP_WORDS, VECTOR_TOKEN_PATTERN


def note_doc(note: Mapping[str, Any]) -> str:
    """The text a note is clustered by: title, concepts (list or JSON list), theme or topic,
    and essence (else the first 800 characters of its stripped content), one per line."""
    parts = [str(note.get("title") or "")]
    concepts = note.get("concepts")
    if isinstance(concepts, str):
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


def cluster_threads(docs: dict[str, str], min_notes: int, distance: float) -> list[dict[str, Any]]:
    """Threads (``ThreadProposal`` fields as dicts) over ``{note id: note_doc}``, largest first.

    Only clusters of at least ``min_notes`` notes count; ``[]`` when there are too few
    notes or no usable words.
    """
    ids = sorted(docs)
    if len(ids) < max(min_notes, 2):
        return []
    # Imported here: scikit-learn takes ~1.7 s to import, and every process that analyses
    # notes (each essence worker, each ingest) would pay it for a task it rarely runs.
    from sklearn.cluster import AgglomerativeClustering
    from sklearn.feature_extraction.text import TfidfVectorizer

    vectorizer = TfidfVectorizer(
        stop_words=VECTOR_STOP_WORDS,
        sublinear_tf=True,
        ngram_range=(1, 2),
        min_df=2 if len(ids) >= 20 else 1,
        max_df=0.3 if len(ids) >= 20 else 1.0,
        token_pattern=VECTOR_TOKEN_PATTERN,
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
                "why": f"Keeps returning to {join_words(main)} across {size} notes.",
                "note_ids": members,
                "summary": "Notes such as " + join_words([f"“{t}”" for t in central_titles]) + ".",
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
