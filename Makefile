# Every target that runs code builds .venv first when it is missing or older than pyproject.toml.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
SELENE_HOME ?= ./.selene
export SELENE_HOME

.PHONY: demo test dev bench lint clean venv

venv: $(STAMP)

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --upgrade pip
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	@touch $(STAMP)

demo: $(STAMP)
	$(BIN)/selene-dag demo

test: $(STAMP)
	$(BIN)/python -m pytest -n 2 --dist loadgroup -q

dev: $(STAMP)
	$(BIN)/selene-dag dev

bench: $(STAMP)
	$(BIN)/python bench/run_all.py

lint: $(STAMP)
	$(BIN)/ruff check selene_dag tests bench scripts
	$(BIN)/ruff format --check selene_dag tests bench scripts

clean:
	rm -rf $(VENV) .selene .selene-demo .pytest_cache .ruff_cache .hypothesis build dist *.egg-info
