# Every target that runs code builds .venv first when it is missing or older than pyproject.toml.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

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

# claude-code-log (a baseline of bench_sessions) pins libraries older than Dagster needs:
# it gets a venv of its own, used only by the bench.
.venv-ccl/.installed:
	@test -x .venv-ccl/bin/python || $(PYTHON) -m venv .venv-ccl
	.venv-ccl/bin/python -m pip install --quiet --disable-pip-version-check claude-code-log
	@touch .venv-ccl/.installed

bench: $(STAMP) .venv-ccl/.installed
	$(BIN)/python bench/run_all.py

lint: $(STAMP)
	$(BIN)/ruff check selene_dag tests bench scripts
	$(BIN)/ruff format --check selene_dag tests bench scripts

# Build files and the demo's home; never ./.selene, the default home (your notes and sessions).
clean:
	rm -rf $(VENV) .venv-ccl .selene-demo .pytest_cache .ruff_cache .hypothesis build dist *.egg-info
