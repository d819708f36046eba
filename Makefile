# The two newcomer commands live in README.md: `make run` and `make test`.
VENV ?= .venv
PYTHON ?= python3
BIN = $(VENV)/bin

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test]'
	touch $@

.PHONY: install run console test lint screenshots bench
install: $(BIN)/.installed

run: install
	$(BIN)/awa-tui run --demo

console: install
	$(BIN)/awa-tui --lead --demo

lint: install
	$(BIN)/ruff check awa_tui tests bench

test: install lint
	$(BIN)/pytest -n 2 -p no:cacheprovider $(PYTEST_ARGS)
