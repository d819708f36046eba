# The two newcomer commands live in README.md: `make run` and `make test`.
VENV ?= .venv
PYTHON ?= python3
BIN = $(VENV)/bin

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test]'
	touch $@

.PHONY: install run run-headless test lint screenshots bench
install: $(BIN)/.installed

# The console, leading an in-process scheduler on the demo schedules.
run: install
	$(BIN)/awa-tui --lead --demo

# The same scheduler without the console, logging fires and jobs.
run-headless: install
	$(BIN)/awa-tui run --demo

# PNG + SVG of each console panel and dialog, from a seeded scratch database
# (AWA_TEST_DATABASE_URL's server, else the embedded Postgres). PNGs need rsvg-convert.
screenshots: install
	$(BIN)/python screenshots/render.py

# Benchmarks (bench/README.md): quick sizes, a few minutes, table + JSON in bench/results/.
# BENCH_ARGS="--full" for the 100k targets, "--compare" to run awa-pg side by side.
bench: install
	$(BIN)/python -m bench.run $(BENCH_ARGS)

lint: install
	$(BIN)/ruff check awa_tui tests bench

test: install lint
	$(BIN)/pytest -n 2 -p no:cacheprovider $(PYTEST_ARGS)
