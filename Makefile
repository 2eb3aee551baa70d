# Two entry points do all the set-up on a fresh machine with only python3:
#   make run    -> the default evaluation, redone from scratch each time (--force; ARGS=... to
#                  choose; installs the core, plotting and RL deps: the
#                  default evaluation includes the shipped learned agent)
#   make test   -> the whole test suite (installs torch's CPU build, the rl and dev extras;
#                  dev includes Ray with RLlib, Minari, MkDocs and build)
#   make docs   -> the documentation site in site/ (MkDocs, strict)
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
# A pinned torch: on this project's machines this version is a local CPU build.
TORCH ?= torch==2.13.0

.PHONY: run test test-fast lint bench docs clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

$(VENV)/.core: $(BIN)/python pyproject.toml setup.py $(wildcard gpushare_env/compiled/*.pyx gpushare_env/compiled/*.pxi)
	$(BIN)/pip install --quiet "$(TORCH)"
	$(BIN)/pip install --quiet -e ".[rl,plot]"
	touch $@

$(VENV)/.full: $(BIN)/python pyproject.toml setup.py $(wildcard gpushare_env/compiled/*.pyx gpushare_env/compiled/*.pxi)
	$(BIN)/pip install --quiet "$(TORCH)"
	$(BIN)/pip install --quiet -e ".[rl,dev]"
	touch $@ $(VENV)/.core

run: $(VENV)/.core
	$(BIN)/python -m scripts.evaluate $(or $(ARGS),--force)

test: $(VENV)/.full
	$(BIN)/python -m pytest -q -n 2 $(ARGS)

test-fast: $(VENV)/.full
	$(BIN)/python -m pytest -q -n 2 -m "not slow" $(ARGS)

lint: $(VENV)/.full
	$(BIN)/ruff check . && $(BIN)/ruff format --check . && $(BIN)/mypy && $(BIN)/lint-imports

bench: $(VENV)/.core
	$(BIN)/python -m scripts.benchmark $(ARGS)

# The documentation site into site/ (mkdocs.yml; strict: a broken link or reference fails).
# `$(BIN)/mkdocs serve` previews it.
docs: $(VENV)/.full
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache site
