# Everything a fresh machine needs, from Python 3.11+ and make alone.
# uv is installed from the package registry into .tools/, never system-wide.

PYTHON ?= python3
UV_VERSION := 0.13.9
TOOLS := .tools
UV := $(TOOLS)/bin/uv
VENV := .venv
RUN := $(UV) run --no-sync
export UV_PYTHON_DOWNLOADS := never
export UV_PROJECT_ENVIRONMENT := $(VENV)

PYTEST_ARGS ?=

.PHONY: help install run test chaos lint typecheck contracts pytest format bench bench-relay bench-consume bench-checkout bench-notify bench-webhook bench-retention bench-e2e clean clean-data

help:
	@echo "make run    start the shop on embedded infrastructure (Ctrl-C stops it);"
	@echo "           SHOP_TRANSPORT=sqs make run runs it over SNS/SQS instead of Kafka"
	@echo "make test   lint, type-check, check contracts, run the whole test suite"
	@echo "make chaos  the chaos suite at full length on both buses (make test runs it bounded)"
	@echo "make bench  run the benchmarks (figures and their baselines)"
	@echo "make format apply ruff's formatting and safe fixes"
	@echo "make clean-data  wipe make run's data (.devstack)"

$(UV):
	$(PYTHON) -m venv $(TOOLS)
	$(TOOLS)/bin/pip install --quiet "uv==$(UV_VERSION)"

# The venv is rebuilt whenever the lock file (or this file) changes. Its packages are
# compiled to bytecode once, here: where PYTHONDONTWRITEBYTECODE is set (as in many
# containers) Python never writes a .pyc itself, and every process the suite or make run
# starts would compile every module it imports again (the payment worker's imports: 7.6 s
# of CPU from source, 2.6 s from bytecode).
$(VENV)/.synced: $(UV) uv.lock pyproject.toml Makefile
	$(UV) sync --locked --all-packages --compile-bytecode --python $(PYTHON)
	@touch $@

# The console's browser tests drive Debian's Chromium (Playwright's browser downloads are
# not used): installed from Debian's packages when missing (as root, or with sudo), or
# named by SHOP_TEST_CHROMIUM.
CHROMIUM ?= $(or $(SHOP_TEST_CHROMIUM),/usr/bin/chromium)
$(CHROMIUM):
	@if command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ]; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium fonts-dejavu-core; \
	elif command -v apt-get >/dev/null && command -v sudo >/dev/null; then \
		sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium fonts-dejavu-core; \
	else \
		echo "the console's browser tests need Chromium: install it, or set SHOP_TEST_CHROMIUM to its path"; \
		exit 1; \
	fi

# The workspace's own modules too, on every install: only those changed since are compiled
# again (a stale .pyc is never used: Python compares it with its source).
install: $(VENV)/.synced
	@$(VENV)/bin/python -m compileall -q -j 0 contracts libs services

run: install
	$(RUN) python -m shop.devstack up --workdir .devstack --procfile devstack.toml

lint: install
	$(RUN) ruff check .
	$(RUN) ruff format --check .

typecheck: install
	$(RUN) mypy

contracts: install
	$(RUN) python -m shop.contracts check
	$(RUN) python -m shop.messaging.asyncapi check

# A run that picks tests by marker without the browser tests (PYTEST_ARGS="-m unit") needs
# no Chromium; one whose marker expression may take them (browser, integration, a "not") does.
WITHOUT_BROWSER := $(and $(findstring -m ,$(PYTEST_ARGS)),$(if $(or $(findstring browser,$(PYTEST_ARGS)),$(findstring integration,$(PYTEST_ARGS)),$(findstring not,$(PYTEST_ARGS))),,yes))

# The suite runs on TEST_WORKERS processes (pytest-xdist), a test file to one process, so
# that a file's shared stack or database starts once, the longest files first (conftest.py);
# each process starts the servers it needs on ports of its own. Three on two cores: the
# stacks of the longest files spend much of their time waiting (payment windows, retries,
# the chaos load's steady rate), and a third process fills those waits. TEST_WORKERS=0 runs
# it in this process alone.
TEST_WORKERS ?= 3

pytest: install $(if $(WITHOUT_BROWSER),,$(CHROMIUM))
	$(RUN) pytest -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder $(PYTEST_ARGS)

test: lint typecheck contracts pytest

# The chaos suite at full length, on each bus in turn: CHAOS_ORDERS orders at CHAOS_RATE a
# second under CHAOS_KILLS SIGKILLs, SIGTERMs, a broker freeze and a failing e-mail provider;
# each run prints its invariants table, and every bus runs even when one fails (make test
# runs a bounded form on both buses). Each bus's run keeps its shop (logs, e-mails, the report)
# in .chaos/<bus> until the next: a folder of its own, which no other pytest run on the machine
# clears as pytest clears its older temporary folders.
CHAOS_ORDERS ?= 2000
CHAOS_KILLS ?= 30
CHAOS_RATE ?= 8
CHAOS_BUSES ?= kafka sqs

chaos: install
	@mkdir -p .chaos; failed=""; for bus in $(CHAOS_BUSES); do \
		SHOP_CHAOS_TRANSPORT=$$bus SHOP_CHAOS_ORDERS=$(CHAOS_ORDERS) SHOP_CHAOS_KILLS=$(CHAOS_KILLS) \
		SHOP_CHAOS_RATE=$(CHAOS_RATE) $(RUN) pytest tests/chaos/test_chaos.py -s -p no:cacheprovider \
		--basetemp=.chaos/$$bus \
		|| failed="$$failed $$bus"; \
	done; \
	if [ -n "$$failed" ]; then echo "chaos failed on:$$failed"; exit 1; fi

# Benchmarks measure speed (tests never do); each prints its baseline from the same run.
bench: install
	$(RUN) python bench/report.py

bench-relay: install
	$(RUN) python bench/relay/bench_relay.py

bench-consume: install
	$(RUN) python bench/consume/bench_consume.py --bus kafka
	$(RUN) python bench/consume/bench_consume.py --bus sqs

bench-checkout: install
	$(RUN) python bench/checkout/bench_checkout.py

bench-notify: install
	$(RUN) python bench/notify/bench_notify.py

bench-webhook: install
	$(RUN) python bench/webhook/bench_webhook.py

bench-retention: install
	$(RUN) python bench/retention/bench_retention.py

# The whole shop as make run starts it, at a steady rate (BENCH_E2E_ARGS="--bus sqs" …;
# --help lists them).
BENCH_E2E_ARGS ?=

bench-e2e: install
	$(RUN) python bench/e2e/bench_e2e.py $(BENCH_E2E_ARGS)

format: install
	$(RUN) ruff format .
	$(RUN) ruff check --fix .

# make run keeps its data (databases, e-mails, logs) in .devstack across restarts.
clean-data:
	rm -rf .devstack

clean: clean-data
	rm -rf $(VENV) $(TOOLS) .mypy_cache .pytest_cache .ruff_cache
