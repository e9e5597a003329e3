"""Ask over notes whose words carry combining marks: Hindi's vowel signs, Greek accents
typed or left out, accents macOS stores apart (NFD). The index folds every mark away
(DuckDB's ``strip_accents``); a question's words did not: a Hindi question had "no
searchable words", and a fact whose words differed from the question's by an accent was
cut out of its note. Real files, a real ingest through Dagster, the real index."""

from __future__ import annotations

import pytest

from selene_dag import service
from selene_dag.retrieval.terms import CoverageMatcher, query_terms
from tests.support.ask import ingested_folder

NOTES = {
    "delhi.md": (
        "# दिल्ली यात्रा\n\nहमारे गाइड का नाम राजेश कुमार था। बुकिंग कोड DEL-7712 है।\n\n"
        "लाल किला सुबह नौ बजे खुलता है।\n"
    ),
    "athens.md": (
        "# Ταξίδι στην Αθήνα\n\nΤο ξενοδοχείο είναι κοντά στην Πλάκα.\n\n"
        "Ο κωδικός κράτησης είναι ΑΘΗ-5521.\n"
    ),
    # Decomposed, as a file written on macOS may hold it.
    "koeln.md": "# Ko\u0308ln\n\nDer Dom o\u0308ffnet um sechs.\n\nDer Schlu\u0308ssel liegt bei KÖ-5512.\n",
    "docker.md": "# Attaching a shell\n\nRun docker exec -it ID bash to open a shell.\n",
}


@pytest.fixture(scope="module")
def settings(tmp_path_factory: pytest.TempPathFactory):
    return ingested_folder(tmp_path_factory.mktemp("marks"), NOTES)


@pytest.mark.parametrize(
    ("question", "fact"),
    [
        ("राजेश कुमार", "DEL-7712"),  # "no searchable words"
        ("गाइड का नाम क्या था?", "राजेश"),  # "nothing matched"
        ("κωδικος κρατησης", "ΑΘΗ-5521"),  # accents left out: the note was a bare citation
        ("ΚΩΔΙΚΌΣ ΚΡΆΤΗΣΗΣ", "ΑΘΗ-5521"),
        ("Schlüssel", "KÖ-5512"),  # composed question, decomposed note
        ("schlussel", "KÖ-5512"),
    ],
)
def test_the_fact_is_in_the_pack(settings, question: str, fact: str) -> None:
    result = service.ask(settings, question, 400)
    assert fact in result.text, result.text


def test_a_word_keeps_its_marks_and_matches_without_them() -> None:
    assert query_terms("राजेश कुमार") == ["राजेश", "कुमार"]
    assert query_terms("i\u0307stanbul cafe\u0301") == ["i\u0307stanbul", "cafe\u0301"]
    matcher = CoverageMatcher(["κωδικος", "café"])
    assert matcher.found("Ο ΚΩΔΙΚΌΣ στο Cafe\u0301") == set(matcher.stems)


def test_a_long_line_is_cut_around_an_accented_word(tmp_path) -> None:
    # A long line is shown as a window around the rarest question word it holds; the
    # window looked for the word with its marks folded away in the text as written, found
    # nothing, and showed the line's start (a pasted log, a paragraph without a stop).
    import random

    rng = random.Random(1)
    words = ["le", "chat", "mange", "une", "souris", "dans", "la", "maison"]
    line = [rng.choice(words) for _ in range(3000)]
    line[1500:1500] = ["crème", "valeur42"]
    hindi = ["घर"] * 3000
    hindi[1500:1500] = ["गुप्तचाबी", "KEY-9917"]
    settings = ingested_folder(
        tmp_path,
        {"log.md": "# journal\n\n" + " ".join(line), "hi.md": "# लॉग\n\n" + " ".join(hindi)},
    )
    assert "valeur42" in service.ask(settings, "crème", 150).text
    assert "KEY-9917" in service.ask(settings, "गुप्तचाबी", 150).text


def test_a_one_letter_word_without_its_sign_is_no_search_word() -> None:
    # को and है fold to one letter: as stems they matched every word starting with it.
    assert query_terms("बिल्ली को दूध कहाँ है") == ["बिल्ली", "दूध", "कहाँ"]
