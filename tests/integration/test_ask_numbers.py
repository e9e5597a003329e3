"""Ask for a number: the full-text index drops digits (its tokenizer is the fts
extension's), so a ticket number, an error code or an identifier like ``zq1234x`` matched
nothing, and a question made of one said "nothing matched". Such words are looked up word
for word in the passages. Real files, a real ingest through Dagster, the real index."""

from __future__ import annotations

import pytest

from selene_dag import service
from selene_dag.retrieval.search import literal_terms
from selene_dag.retrieval.terms import version_terms, whole_terms
from tests.support.ask import ingested_folder

NOTES = {
    "locker.md": "# Locker\n\nThe locker code is 4471 and the ticket is JIRA-8812.\n",
    "marker.md": "# Vault anchor\n\nThe unique marker of the vault is zq1234x, keep it.\n",
    "player.md": "# Video player\n\nError 153 means the player configuration is wrong.\n",
    "api.md": "# Interface\n\nThe v2 release drops the legacy auth.\n",
    "release.md": "# Changelog\n\nVersion 2.0.1 fixed the login loop; 2.0.2 added dark mode.\n",
    # A record that names another beside one named after it: the one named after it first.
    "adr-003.md": "# ADR-003 Queue choice\n\nWe keep RabbitMQ; see [[ADR-005 Cache choice]] for "
    "the cache and ADR-004 for the logs. Queue latency, queue depth, queue owners.\n",
    "adr-005.md": "# ADR-005 Cache choice\n\nValkey replaces Redis for the session cache.\n",
}
# Notes that share every other word of the questions, and other numbers.
FILLER = {
    f"filler-{i}.md": f"# Locker and vault notes {i}\n\nThe code of the locker of the video "
    f"player vault is {1000 + i}; error {200 + i} means the marker of the ticket is fine.\n"
    for i in range(30)
} | {
    # Notes full of the question's other word: found by it, they outrank the one note that
    # holds the number unless that rare number weighs more.
    f"triage-{i}.md": f"# Ticket triage {i}\n\n"
    + "Every ticket gets a ticket owner; ticket by ticket. " * 8
    for i in range(12)
}


@pytest.fixture(scope="module")
def settings(tmp_path_factory: pytest.TempPathFactory):
    return ingested_folder(tmp_path_factory.mktemp("numbers"), {**NOTES, **FILLER})


@pytest.mark.parametrize(
    ("question", "note"),
    [
        ("4471", "locker.md"),
        ("which ticket is 8812", "locker.md"),
        ("ticket 8812", "locker.md"),
        ("v2", "api.md"),  # no word of it in the index: every word with a digit is looked up
        ("2.0.1", "release.md"),  # a version is a word of its own
        ("what is the unique marker zq1234x", "marker.md"),
        ("what does error 153 mean in the video player", "player.md"),
        ("What is ADR-005 about?", "adr-005.md"),
    ],
)
def test_a_number_finds_its_note(settings, question: str, note: str) -> None:
    result = service.ask(settings, question, 120)
    assert result.items, result.stats["note"]
    assert result.items[0].citation.startswith(f"note notes/{note}")


def test_versions_are_words_of_their_own() -> None:
    assert version_terms("what changed in 2.0.1 and v1.4, not 3.12.1.x") == [
        "2.0.1",
        "v1.4",
        "3.12.1",
    ]
    assert version_terms("0.7em and 1.5x") == []


def test_which_words_are_looked_up_word_for_word() -> None:
    assert literal_terms(["4471", "e403", "zq1234x", "jira", "spellfix1", "v2", "10", "p99"]) == [
        "4471",
        "e403",
        "zq1234x",
        "spellfix1",
        "p99",
    ]


def test_identifiers_joined_by_hyphens_are_terms_of_their_own() -> None:
    assert whole_terms("IP of db-17 in us-east-1, v1.4, DEL-7712, my-app, a-1") == [
        "v1.4",
        "db-17",
        "us-east-1",
        "del-7712",
    ]


def test_a_host_name_finds_its_line_in_a_long_outline(tmp_path) -> None:
    # "db-17" was the words "db" and "17", which every db host and every date ending in 17
    # hold: the pack held the first hosts of the page, not db-17's line.
    hosts = "".join(
        f"- {kind}-{i:02d}\n\t- ip 10.1.{i}.{100 + i}, rack R{i % 7}, warranty until "
        f"2026-0{1 + i % 9}-{10 + i % 18}\n"
        for i in range(40)
        for kind in ("db", "web", "cache")
    )
    settings = ingested_folder(tmp_path, {"servers.md": f"# Servers\n\n{hosts}"})
    for host, ip in (("db-17", "10.1.17.117"), ("web-30", "10.1.30.130")):
        result = service.ask(settings, f"what is the IP address of {host}", 300)
        assert ip in result.text, result.text


def test_an_identifier_spelled_otherwise_is_no_word_the_notes_lack(tmp_path) -> None:
    # "x86-64" asked, "x86_64" written: the note came first, and the pack's note said no
    # note held 'x86-64'. A pasted log's hundreds of identifiers: at most eight lookups.
    settings = ingested_folder(tmp_path, {"b.md": "# Builds\n\nWe ship x86_64 builds only.\n"})
    result = service.ask(settings, "which builds are x86-64", 200)
    assert "x86_64" in result.text and "x86-64" not in result.stats["note"], result.stats
    assert len(whole_terms(" ".join(f"node-{i}" for i in range(300)))) == 8


def test_the_answer_says_when_its_tokens_are_an_estimate(settings) -> None:
    # A model without a tokenizer here was only warned about on the server's stderr: an
    # API caller took the counts for the model's own.
    own = service.ask(settings, "locker code", 200)
    assert own.stats["tokens_exact"] is True and own.stats["tokenizer"].startswith("mistral")
    guessed = service.ask(settings, "locker code", 200, model="gemma2:9b")
    assert guessed.stats["tokens_exact"] is False
    assert "×" in guessed.stats["tokenizer"] and guessed.total_tokens <= 200


def test_an_identifier_with_a_digit_picks_its_note_among_its_siblings(tmp_path) -> None:
    # The index strips digits: "ERR7" was "err", which ERR1 to ERR10 share, and ERR1's note
    # came first for "ERR7 billing".
    settings = ingested_folder(
        tmp_path,
        {
            f"e{i}.md": f"---\ntitle: Error note {i}\n---\n\nHandling error code ERR{i} in the "
            "billing service; restart the worker.\n"
            for i in range(1, 11)
        },
    )
    result = service.ask(settings, "ERR7 billing", 60)
    assert result.items[0].id == "note:notes/e7.md" and result.stats["note"] == ""
    # One that no note holds is named (ERR1's note came first without a word).
    assert (
        "no note or session holds 'err11'"
        in service.ask(settings, "ERR11 billing", 60).stats["note"]
    )


def test_a_lone_word_with_a_digit_held_by_many_passages_finds_them(tmp_path) -> None:
    # "v2" alone: no word of it in the index, and held by more passages than the literal
    # list takes as telling, it found nothing ("nothing matched") at small budgets.
    settings = ingested_folder(
        tmp_path,
        {
            f"n{i}.md": f"# Note {i}\n\nThe v2 endpoint of service {i} replaces v1.\n"
            for i in range(60)
        },
    )
    result = service.ask(settings, "v2", 400)
    assert result.items and result.stats["note"] == ""
