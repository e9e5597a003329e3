"""The ``ask``, ``eval`` and ``serve`` commands, and the store-level helpers they share with
the HTTP server (refresh a stale index, ask with access stamps).

``register(app)`` adds the commands to the ``selene-dag`` typer app. Stdout of ``ask`` is
the pack and nothing else; accounting and timings go to stderr.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Annotated

import typer

from selene_dag.retrieval.ask import AskResult, ask, check_budget
from selene_dag.config import Settings, load_settings


class AskError(ValueError):
    """A request the user must change (bad budget, format, sources, failed refresh)."""


def refresh_index_if_stale(settings: Settings) -> bool:
    """Materialize ``search_index`` (persistent instance, no checks) when its stored corpus
    version differs from the corpus now; True when it ran. The store is closed meanwhile."""
    from selene_dag.retrieval.index import index_exists, index_is_stale
    from selene_dag.store import open_store

    with open_store(settings.db_path) as conn:
        stale = index_is_stale(conn) or not index_exists(conn)
    if not stale:
        return False
    import dagster as dg

    from selene_dag.defs.runner import failure_message, instance_for, materialize

    instance = instance_for(settings)
    if _index_in_definitions():
        selection = dg.AssetSelection.assets("search_index").without_checks()
        result = materialize(selection, instance, raise_on_error=False)
    else:  # definitions not wired yet: run the asset alone against the same instance
        from selene_dag.defs.assets_context import search_index
        from selene_dag.defs.resources import default_resources

        result = dg.materialize(
            [search_index],
            instance=instance,
            resources=default_resources(),
            raise_on_error=False,
            run_config={"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}},
        )
    if not result.success:
        raise AskError(f"refreshing search_index failed: {failure_message(result)}")
    return True


def _index_in_definitions() -> bool:
    from selene_dag.definitions import defs

    return any(
        "search_index" in {k.to_user_string() for k in getattr(a, "keys", ())}
        for a in defs.assets or []
    )


def ask_store(
    settings: Settings,
    question: str,
    budget: int,
    *,
    model: str | None = None,
    sources: str | None = None,
    refresh: bool = True,
) -> tuple[AskResult, bool]:
    """Refresh a stale index (when ``refresh``), answer ``question`` from the store and
    stamp ``last_accessed_at`` of the notes in the pack. Returns (result, refreshed)."""
    from selene_dag.notes.context_notes import mark_accessed
    from selene_dag.store import open_store

    check_budget(budget)
    refreshed = refresh_index_if_stale(settings) if refresh else False
    with open_store(settings.db_path) as conn:
        result = ask(
            conn,
            question,
            budget,
            model=model or settings.model,
            sources=sources,
            now=settings.now(),
        )
        result.stats["notes_marked"] = mark_accessed(conn, result.note_ids, settings.now())
    result.stats["index_refreshed"] = refreshed
    return result, refreshed


def _accounting(result: AskResult, refreshed: bool) -> str:
    levels = ", ".join(f"{k} {v}" for k, v in result.stats.get("levels", {}).items() if v)
    parts = [
        f"ask: {len(result.items)} items ({levels or 'none'})",
        f"{result.total_tokens:,}/{result.budget:,} tokens of {result.model}",
        f"{result.stats.get('fts_matches', 0)} FTS matches → "
        f"{result.stats.get('after_dedup', 0)} unique",
        f"{result.stats.get('elapsed_ms', 0):.0f} ms",
    ]
    if refreshed:
        parts.append("search_index refreshed first")
    return "; ".join(parts)


def register(app: typer.Typer) -> None:
    """Add ``ask``, ``eval`` and ``serve`` to ``app`` (the ``selene-dag`` command)."""
    from selene_dag.cli import UserError, err, guarded
    from selene_dag.retrieval.index import SearchIndexError

    @app.command("ask")
    @guarded
    def ask_command(
        question: Annotated[str, typer.Argument(help="The question to build context for.")],
        budget: Annotated[int, typer.Option(help="Token budget of the pack (target model).")],
        sources: Annotated[
            str, typer.Option(help="Where to search: notes, sessions, or notes,sessions.")
        ] = "notes,sessions",
        model: Annotated[
            str | None, typer.Option(help="Target model (tokenizer); default SELENE_MODEL.")
        ] = None,
        format: Annotated[str, typer.Option("--format", help="md (the pack) or json.")] = "md",
        answer: Annotated[
            bool, typer.Option("--answer", help="Send the pack to the model and print its answer.")
        ] = False,
    ) -> None:
        """Question-driven context pack from notes and sessions, within --budget tokens."""
        if format not in ("md", "json"):
            raise UserError(f"--format must be md or json, got {format!r}")
        if budget < 1:
            raise UserError(f"--budget must be a positive number of tokens, got {budget}")
        settings = load_settings()
        if answer and settings.llm == "extractive":
            raise UserError("--answer needs a generative model: set SELENE_LLM=ollama")
        try:
            result, refreshed = ask_store(settings, question, budget, model=model, sources=sources)
        except (AskError, SearchIndexError) as exc:
            raise UserError(str(exc)) from None
        err.print(_accounting(result, refreshed), highlight=False, soft_wrap=True)
        if result.stats.get("note"):
            err.print(f"note: {result.stats['note']}", highlight=False, soft_wrap=True)
        if answer:
            from selene_dag.llm import get_engine
            from selene_dag.store import open_store

            if not result.text:
                raise UserError("nothing in the notes or sessions matches the question")
            started = time.perf_counter()
            with open_store(settings.db_path) as conn:
                reply = get_engine(settings, cache_conn=conn).answer(question, result.text)
            err.print(f"answer from {settings.model} in {time.perf_counter() - started:.1f} s")
            sys.stdout.write(reply.rstrip("\n") + "\n")
            return
        if format == "json":
            sys.stdout.write(json.dumps(result.to_json(), ensure_ascii=False, indent=2) + "\n")
        elif result.text:
            sys.stdout.write(result.text + "\n")

    @app.command("eval")
    @guarded
    def eval_command(
        questions: Annotated[Path, typer.Argument(help="JSONL: {question, must_contain}.")],
        budget: Annotated[int, typer.Option(help="Token budget of every pack.")] = 2000,
        model: Annotated[
            str | None, typer.Option(help="Target model (tokenizer); default SELENE_MODEL.")
        ] = None,
        format: Annotated[str, typer.Option("--format", help="table or json.")] = "table",
    ) -> None:
        """Recall of ask vs newest-first and BM25 baselines at the same budget."""
        from rich.console import Console
        from rich.table import Table

        from selene_dag.retrieval.evaluate import evaluate, load_questions
        from selene_dag.store import open_store

        if format not in ("table", "json"):
            raise UserError(f"--format must be table or json, got {format!r}")
        if budget < 1:
            raise UserError(f"--budget must be a positive number of tokens, got {budget}")
        items = load_questions(questions)
        settings = load_settings()
        try:
            refresh_index_if_stale(settings)
        except (AskError, SearchIndexError) as exc:
            raise UserError(str(exc)) from None
        started = time.perf_counter()
        with open_store(settings.db_path) as conn:
            report = evaluate(
                conn, items, budget, model=model or settings.model, now=settings.now()
            )
        err.print(
            f"eval: {len(items)} questions at {budget:,} tokens of {report.model} "
            f"in {time.perf_counter() - started:.1f} s",
            highlight=False,
        )
        if format == "json":
            sys.stdout.write(json.dumps(report.to_json(), ensure_ascii=False, indent=2) + "\n")
            return
        table = Table(title=f"recall at {budget:,} tokens")
        for col in ("question", "ask", "newest-first", "bm25 top-k"):
            table.add_column(col, justify="left" if col == "question" else "right")
        for row in report.rows:
            table.add_row(
                row["question"],
                f"{row['ask']:.2f}",
                f"{row['newest_first']:.2f}",
                f"{row['bm25_topk']:.2f}",
            )
        overall = report.overall
        table.add_row(
            "overall",
            f"{overall['ask']:.3f}",
            f"{overall['newest_first']:.3f}",
            f"{overall['bm25_topk']:.3f}",
            style="bold",
        )
        Console(width=120).print(table)

    @app.command("serve")
    @guarded
    def serve_command(
        host: Annotated[str, typer.Option(help="Address to bind (loopback by default).")] = (
            "127.0.0.1"
        ),
        port: Annotated[int, typer.Option(help="Port to listen on.")] = 8765,
    ) -> None:
        """HTTP API: /ask, /context, /compact, /health/compression (docs at /docs)."""
        import uvicorn

        from selene_dag.retrieval.server import create_app

        if not 0 < port < 65536:
            raise UserError(f"--port must be within 1..65535, got {port}")
        load_settings()  # fail early on bad settings
        err.print(f"selene-dag API on http://{host}:{port} (docs at /docs)")
        uvicorn.run(create_app(), host=host, port=port, log_level="warning")
