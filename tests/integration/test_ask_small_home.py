"""A home of a few notes, one of them long: the dense list then reaches passages of every
note, and notes holding none of the question's words came back with text (a SUMMARY of an
unrelated note, stamped as used). Real files, a real ingest through Dagster, the real
index."""

from __future__ import annotations

import duckdb
import pytest

from selene_dag import service
from tests.support.ask import ingested_folder

NOTES = {
    "postgres.md": "# Database upkeep\n\nPostgres vacuum tuning with autovacuum_naptime.\n",
    "ingress.md": "# Spaced name\n\nKubernetes ingress uses nginx annotations for rewrites.\n"
    "Second line about ingress.\n",
    "helm.md": "# Bracket\n\nHelm charts values override.\n",
    "compile.md": "# Compile the thing\n\nTo compile it like this:\n\n```bash\ngcc -O2 -o prog main.c\n```\n",
    "retry.md": "# Retries\n\nRetry with exponential backoff and jitter.\n",
    "unicode.md": "# Café naïve\n\nEmoji test: the déjà vu of ünïcödé.\n\nRocket launch plan.\n",
    # More passages than the dense list takes: it no longer holds only near neighbours.
    "diary.md": "# Diary\n\n"
    + "\n\n".join(
        f"Day {n}: walked the dog along the river, read a chapter of the novel, "
        f"cooked lentil soup and wrote letters to {n % 7} old friends."
        for n in range(1, 501)
    )
    + "\n",
    # One line of long words (a note holding the question's word is shown in part).
    "longline.md": "# Long line note\n\n"
    + " ".join(f"verylongword{i}" for i in range(6000))
    + " helm\n",
}


@pytest.fixture(scope="module")
def settings(tmp_path_factory: pytest.TempPathFactory):
    return ingested_folder(tmp_path_factory.mktemp("small"), NOTES)


def test_notes_without_the_questions_words_show_no_text(settings) -> None:
    pack = service.ask(settings, "postgres", 500)
    assert pack.items[0].citation.endswith("postgres.md")
    assert pack.items[0].level == "full"
    shown = [i for i in pack.items if i.level != "reference"]
    # Only the note holding the word is shown; the others are named (their citation line).
    assert [i.citation for i in shown] == [pack.items[0].citation], pack.text
    assert "Kubernetes ingress uses" not in pack.text
    assert pack.stats["notes_marked"] == 1
    # BM25 matched one document; the others came from the passage ranking.
    assert pack.stats["fts_matches"] == 1
    assert pack.stats["passage_docs"] == len(pack.items) - 1
    with duckdb.connect(str(settings.db_path), read_only=True) as conn:
        used = conn.execute(
            "SELECT note_id FROM processed_notes WHERE last_accessed_at IS NOT NULL"
        ).fetchall()
    assert [u[0].rsplit("/", 1)[-1] for u in used] == ["postgres.md"]
    # A note holding the words is shown as before.
    pack = service.ask(settings, "ingress rewrites", 500)
    assert "Kubernetes ingress uses nginx annotations" in pack.text
    # A note holding the word deep in one long line is shown in part, at the word.
    pack = service.ask(settings, "helm", 500)
    long_line = next(i for i in pack.items if i.citation.endswith("longline.md"))
    assert long_line.excerpt and "helm" in long_line.text


def test_a_long_questions_unsearched_words_are_named(settings) -> None:
    # A pasted log with the question at its end: its last words were left out of the
    # search, and the note said only "nothing matched the question".
    filler = " ".join(f"zzfiller{chr(97 + i // 26)}{chr(97 + i % 26)}" for i in range(40))
    pack = service.ask(settings, f"{filler} postgres vacuum", 300)
    assert "postgres" not in pack.stats["terms"]
    note = pack.stats["note"]
    assert note.startswith("nothing matched the question; only the question's first 32"), note
    assert "not 10 words after them ('zzfillerbg', 'zzfillerbh', …, " in note
    assert note.endswith(", 'postgres', 'vacuum')"), note
    assert "first 32" not in service.ask(settings, "postgres vacuum", 300).stats["note"]


def test_eval_of_a_source_the_home_lacks_says_what_fills_it(settings) -> None:
    # A home of notes evaluated on sessions scored every question 0 for every method.
    from selene_dag.errors import UsageError
    from selene_dag.retrieval.evaluate import Question

    questions = [Question("how is autovacuum tuned", ("autovacuum_naptime",))]
    with pytest.raises(UsageError, match="nothing to evaluate: no agent session in this home"):
        service.evaluate_questions(settings, questions, 300, sources="sessions")
    report = service.evaluate_questions(settings, questions, 300, sources="notes")
    assert report.overall["ask"] == 1.0
