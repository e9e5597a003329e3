"""A note that is one very long line (minified JSON, a pasted log, a paragraph with no
sentence end) was one piece no room could hold: a pack showed only its title, or the
start of the line cut before the word asked about. Long lines are cut into pieces, and a
pack shows the piece holding the question's word. Real files, a real ingest through
Dagster, the real index."""

from __future__ import annotations

import json
import random

import pytest

from selene_dag import service
from selene_dag.context.tokens import count_tokens
from tests.support.ask import ingested_folder

MODEL = "mistral:7b"


def _minified() -> str:
    data = {f"k{i}": {"name": f"item{i}", "vals": [0, 1, 2, 3, 4]} for i in range(3000)}
    data["k1500"]["name"] = "quokkaflux"
    return json.dumps(data, separators=(",", ":"))


def _one_paragraph() -> str:
    rng = random.Random(7)
    words = [
        "alpha",
        "beta",
        "gamma",
        "delta",
        "epsilon",
        "zeta",
        "theta",
        "iota",
        "kappa",
        "lambda",
        "sigma",
        "omega",
    ]
    filler = [rng.choice(words) for _ in range(40_000)]
    return " ".join([*filler[:20_000], "the zanzibarite setting is 4242", *filler[20_000:]])


def _registry() -> str:
    rows = [
        {"name": f"service{i}", "port": 8000 + i, "region": "eu-west-1", "owner": f"team{i % 7}"}
        for i in range(60)
    ]
    rows[41]["name"] = "harbourmaster"
    return json.dumps(rows)


@pytest.fixture(scope="module")
def settings(tmp_path_factory: pytest.TempPathFactory):
    notes = {"dump.md": "# Minified dump\n\n" + _minified() + "\n"}
    notes["greek.md"] = "# Greek words\n\n" + _one_paragraph() + "\n"
    notes |= {f"n{i}.md": f"# Note {i}\n\nAn ordinary note about item {i}.\n" for i in range(8)}
    return ingested_folder(tmp_path_factory.mktemp("long_lines"), notes)


@pytest.mark.parametrize("budget", [500, 2000])
def test_minified_json_shows_the_part_holding_the_word(settings, budget: int) -> None:
    result = service.ask(settings, "quokkaflux", budget, model=MODEL)
    assert '"k1500":{"name":"quokkaflux"' in result.text
    assert count_tokens(result.text, MODEL) <= budget


@pytest.mark.parametrize("budget", [300, 500, 1000])
def test_a_paragraph_with_no_sentence_end_shows_the_word(settings, budget: int) -> None:
    result = service.ask(settings, "zanzibarite setting", budget, model=MODEL)
    assert "zanzibarite setting is 4242" in result.text
    assert "… " in result.text  # an excerpt from inside the line says so
    assert count_tokens(result.text, MODEL) <= budget


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory):
    notes = {"registry.md": "# Service registry dump\n\n" + _registry() + "\n"}
    notes["ports.md"] = "# Ports\n\nSomething about ports in general and services.\n"
    return ingested_folder(tmp_path_factory.mktemp("registry"), notes)


@pytest.mark.parametrize("budget", [150, 300, 400])
def test_the_cut_holding_the_rare_word_goes_before_its_neighbours(registry, budget: int) -> None:
    # Every cut of the dump holds "port"; the retrieved passage lifted its cuts to one
    # value and the first in reading order won, a cut without "harbourmaster". At 150
    # tokens that cut does not fit whole: the short last row that did was shown.
    result = service.ask(registry, "which port does harbourmaster use", budget, model=MODEL)
    assert '"harbourmaster", "port": 8041' in result.text
    assert count_tokens(result.text, MODEL) <= budget
