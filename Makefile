# The two newcomer commands live in README.md: `make run` and `make test`.
VENV ?= .venv
PYTHON ?= python3
BIN = $(VENV)/bin

# constraints.txt: the exact versions of what pyproject.toml declares as ranges, so that the
# suite and its snapshots run on the versions they were made with.
$(BIN)/.installed: pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -c constraints.txt -e '.[test]'
	touch $@

.PHONY: install run run-headless test test-tools croner-js lint screenshots bench image-check schema-doc release-check
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

# docs/schema.md: the schema after the last migration, from a scratch database
# (AWA_TEST_DATABASE_URL's server, else the embedded Postgres). Run it after adding a migration.
schema-doc: install
	$(BIN)/python -m awa_tui.engine.migrations.schema_doc --output docs/schema.md

# Benchmarks (bench/README.md): quick sizes, a few minutes, table + JSON in bench/results/.
# BENCH_ARGS="--full" for the 100k targets, "--compare" to run awa-pg side by side.
bench: install
	$(BIN)/python -m bench.run $(BENCH_ARGS)

# The container image built and run (deploy/image-check.sh): needs a Docker daemon that can
# pull the base image, so it is not part of `make test`, whose Dockerfile tests need none.
image-check:
	bash deploy/image-check.sh

# Can this tree be released as the version it names (tools/release_check.py; docs/versioning.md):
# the changelog entry, sdist and wheel with their metadata checked, the wheel installed in a
# clean venv outside the repository (migrate, check), and the upgrade tests.
release-check: install
	$(BIN)/python tools/release_check.py

lint: install
	$(BIN)/ruff check awa_tui tests bench tools
	$(BIN)/mypy

# Programs the tests drive (tmux: the terminal end-to-end test; systemd-analyze: the check
# of deploy/systemd; pgbouncer: the pooler scenarios, tests/reliability/test_pgbouncer.py;
# faketime: a runtime with a skewed host clock, tests/reliability/test_clock_skew.py;
# prometheus-alertmanager: the alert sink's real Alertmanager, tests/engine/alerts/test_alertmanager.py;
# node and npm: npm croner, the cron differential test's oracle, see croner-js below).
# No test skips for want of one: as root with apt-get (CI's Debian machine) a missing one is
# installed, otherwise this fails naming it. Debian installs pgbouncer in /usr/sbin, not on
# every user's PATH.
TEST_TOOLS = tmux systemd-analyze pgbouncer faketime prometheus-alertmanager node npm
# The Debian package of a tool whose package is not named after the command.
PACKAGE_systemd-analyze = systemd
PACKAGE_node = nodejs
# Files the tests need, each with its Debian package: the real pg_cron extension of Debian's
# Postgres 15 (the pg_cron import tests, tests/engine/imports/test_pg_cron.py, load it).
TEST_FILES = /usr/lib/postgresql/15/lib/pg_cron.so:postgresql-15-cron
test-tools:
	@PATH="$$PATH:/usr/sbin"; missing=""; for tp in $(foreach t,$(TEST_TOOLS),$(t):$(or $(PACKAGE_$(t)),$(t))); do \
	  command -v $${tp%%:*} >/dev/null 2>&1 || missing="$$missing $${tp#*:}"; done; \
	for fp in $(TEST_FILES); do [ -e $${fp%%:*} ] || missing="$$missing $${fp#*:}"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing test tools:$$missing"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq$$missing; \
	  else \
	    echo "the tests need:$$missing (Debian: apt-get install -y$$missing); not root, so not installed" >&2; \
	    exit 1; \
	  fi; \
	  for t in $(TEST_TOOLS); do command -v $$t >/dev/null 2>&1 || { echo "$$t still missing after apt-get" >&2; exit 1; }; done; \
	  for fp in $(TEST_FILES); do [ -e $${fp%%:*} ] || { echo "$${fp%%:*} still missing after apt-get" >&2; exit 1; }; done; \
	fi

# npm croner at the version package-lock.json pins: the independent implementation that
# tests/engine/cron/test_cron_differential.py compares the cron arithmetic with. npm ci
# reinstalls it whenever package.json or the lock file changes.
CRONER_JS = tests/engine/cron/croner_js
$(CRONER_JS)/node_modules/.package-lock.json: $(CRONER_JS)/package.json $(CRONER_JS)/package-lock.json
	@command -v npm >/dev/null 2>&1 || { echo "npm croner needs npm and node (Debian: apt-get install -y nodejs npm)" >&2; exit 1; }
	npm ci --prefix $(CRONER_JS) --no-audit --no-fund --loglevel=error
croner-js: test-tools $(CRONER_JS)/node_modules/.package-lock.json

test: install lint test-tools croner-js
	$(BIN)/pytest -n 2 -p no:cacheprovider $(PYTEST_ARGS)
