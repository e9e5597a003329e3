"""Retrieval domain (asset group ``context``): the full-text ``search_index`` over notes and session chunks, and the
``ask_quality`` check (recall of ask at 2,000 tokens on the shipped example questions).

``search_index`` is unpartitioned and reads every session partition of ``chunk_scores``
(all-partitions mapping); following DESIGN, it is kept fresh by data-version-driven
automation, and ``ask`` rebuilds it first whenever its stored corpus version is stale.

No ``from __future__ import annotations`` here: Dagster inspects the ``context`` annotation.
"""

import dagster as dg

from selene_dag.defs.conditions import FOLLOW_UPSTREAM, WITH_ITS_ASSET
from selene_dag.defs.metadata import code_version, duckdb_asset, markdown_table
from selene_dag.defs.notes import fidelity_tiers, processed_notes
from selene_dag.defs.resources import SeleneResource
from selene_dag.defs.sessions import chunk_scores
from selene_dag.paths import assets_dir
from selene_dag.retrieval.evaluate import applicable, evaluate, load_questions
from selene_dag.retrieval.index import build_index

ASK_CHECK_BUDGET = 2_000


@duckdb_asset(
    "context",
    deps=[
        processed_notes,
        fidelity_tiers,
        dg.AssetDep(chunk_scores, partition_mapping=dg.AllPartitionMapping()),
    ],
    code_version=code_version("3", sql=("search_docs",)),
    automation_condition=FOLLOW_UPSTREAM,
    # Run before compression_health when both are ready: the index derives each note's
    # count from its passages' and stores it, and health then reads it instead of
    # tokenizing the corpus again.
    op_tags={"dagster/priority": "1"},
    description=(
        "Full-text (BM25, porter stemmer) index over live notes (title, content) and scored "
        "session chunks, with the static-score inputs of ask's rerank (fidelity tier, "
        "recency, consensus, importance) and each document's token count in SELENE_MODEL; "
        "every document cut into ~100-300-token passages (search_passages) with their own "
        "BM25 index and wordllama embeddings (passage_embeddings). Only new or changed "
        "documents are counted, cut, indexed and embedded again. Data version = corpus "
        "content hash."
    ),
)
def search_index(context: dg.AssetExecutionContext, selene: SeleneResource) -> dg.MaterializeResult:
    """Bring ``search_docs``, its BM25 indexes, passages and embeddings up to date."""
    settings = selene.settings()
    with selene.connection() as conn:
        built = build_index(conn, settings.now(), model=settings.model)
        sample = conn.execute(
            "SELECT kind, citation, title FROM search_docs ORDER BY kind DESC, doc_id LIMIT 8"
        ).fetchall()
    context.log.info(f"indexed {built.notes} notes and {built.chunks} chunks")
    return dg.MaterializeResult(
        data_version=dg.DataVersion(built.corpus_version.replace("/", "-")),
        metadata={
            "documents": dg.MetadataValue.int(built.documents),
            "notes": dg.MetadataValue.int(built.notes),
            "chunks": dg.MetadataValue.int(built.chunks),
            "passages": dg.MetadataValue.int(built.passages),
            "passages_embedded": dg.MetadataValue.int(built.embedded),
            "documents_counted": dg.MetadataValue.int(built.counted),
            "documents_counted_from_passages": dg.MetadataValue.int(built.derived),
            "corpus_version": dg.MetadataValue.text(built.corpus_version),
            "model": dg.MetadataValue.text(settings.model),
            "sample": markdown_table(["kind", "citation", "title"], sample),
            "dagster/row_count": dg.MetadataValue.int(built.documents),
        },
    )


@dg.asset_check(
    automation_condition=WITH_ITS_ASSET,
    asset=search_index,
    description=(
        "Recall of ask at 2,000 tokens on assets/eval/questions.jsonl (questions whose source "
        "is in the corpus) beside newest-first and BM25 baselines; fails under "
        "SELENE_ASK_MIN_RECALL."
    ),
)
def ask_quality(selene: SeleneResource) -> dg.AssetCheckResult:
    """Run the example questions through ask and both baselines."""
    settings = selene.settings()
    questions = load_questions(assets_dir() / "eval" / "questions.jsonl")
    with selene.connection() as conn:
        usable = applicable(conn, questions)
        if not usable:
            return dg.AssetCheckResult(
                passed=True,
                metadata={"questions": 0, "note": "no example question applies to this corpus"},
            )
        # The check guards ask on every index build: the passage baseline (seconds
        # to cut the corpus) is left to `selene-dag eval` and the bench.
        report = evaluate(
            conn,
            usable,
            ASK_CHECK_BUDGET,
            model=settings.model,
            now=settings.now(),
            methods=("ask", "newest_first", "bm25_topk"),
        )
    overall = report.overall
    rows = [
        (r["question"], f"{r['ask']:.2f}", f"{r['newest_first']:.2f}", f"{r['bm25_topk']:.2f}")
        for r in report.rows
    ]
    return dg.AssetCheckResult(
        passed=overall["ask"] >= settings.ask_min_recall,
        severity=dg.AssetCheckSeverity.ERROR,
        metadata={
            "questions": len(usable),
            "budget": ASK_CHECK_BUDGET,
            "min_recall": settings.ask_min_recall,
            "recall_ask": overall["ask"],
            "recall_newest_first": overall["newest_first"],
            "recall_bm25_topk": overall["bm25_topk"],
            "per_question": markdown_table(["question", "ask", "newest", "bm25"], rows),
        },
    )


RETRIEVAL_ASSETS = [search_index]
RETRIEVAL_CHECKS = [ask_quality]
