# Everything runs from the project root, with the project's own virtual environment.
SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export DBT_PROFILES_DIR := $(CURDIR)/profiles
export ENTITY_STATE_HOME ?= $(CURDIR)/.local
export ENTITY_STATE_LANDING_DIR ?= $(CURDIR)/data/landing/events

.PHONY: help install install-bench check-java demo run build docs lint test test-unit test-integration test-adapter \
	cluster-up cluster-down cluster-status test-cluster test-cluster-ci bench bench-quick clean

help: ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-18s %s\n", $$1, $$2}'

check-java:
	@command -v java >/dev/null || { echo "Java is missing: install OpenJDK 17 (apt-get install openjdk-17-jre-headless)"; exit 1; }
	@major=$$(java -version 2>&1 | sed -nE 's/.*version "([0-9]+)(\.([0-9]+))?.*/\1 \3/p' | awk '{print ($$1 == 1) ? $$2 : $$1}'); \
	if [ -z "$$major" ] || [ "$$major" -lt 11 ]; then echo "Java $$major is too old for Spark 3.5 here: install OpenJDK 17"; exit 1; fi

$(STAMP): requirements.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -r requirements.txt
	$(BIN)/pip install --quiet --no-deps -e .
	touch $(STAMP)

install: check-java $(STAMP) ## Create .venv and install the pinned dependencies

BENCH_STAMP := $(VENV)/.installed-bench
$(BENCH_STAMP): $(STAMP) requirements-bench.txt
	$(BIN)/pip install --quiet -r requirements-bench.txt
	touch $(BENCH_STAMP)

install-bench: install $(BENCH_STAMP) ## Add the benchmark-only dependencies (chDB, matplotlib, psutil) to .venv

demo: install ## Land the demo events in batches, dbt build after each, print one entity's timeline
	ENTITY_STATE_SCHEMA=entity_state_demo ENTITY_STATE_LANDING_DIR=$(CURDIR)/data/landing/demo_events \
		$(BIN)/entity-state demo

run: install ## dbt run on the local target (lands nothing: use `entity-state load` first)
	$(BIN)/dbt run

build: install ## dbt build (run + data tests + unit tests) on the local target
	$(BIN)/dbt build

docs: install ## Generate the dbt docs site into target/ (serve it with `.venv/bin/dbt docs serve`)
	$(BIN)/dbt docs generate

lint: install ## ruff on the Python, sqlfluff on the SQL
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench
	ENTITY_STATE_HOME=$(CURDIR)/.local/lint $(BIN)/sqlfluff lint models tests/dbt/singular

test-unit: install ## Pure-Python tests: the reference and the model of the incremental design
	$(BIN)/python -m pytest tests/unit

test-integration: install ## dbt on local Spark, in-process: article splits, run orders, failures, property test
	$(BIN)/python -m pytest tests/integration

# A pytest process of its own: it starts its own in-process Spark, with its own warehouse and metastore.
test-adapter: install ## dbt's incremental adapter tests with this project as a package: users' models keep dbt-spark's
	$(BIN)/python -m pytest tests/adapter

cluster-up: install ## Start a local Spark master, worker and Thrift Server for the `cluster` target (.local/cluster)
	$(BIN)/entity-state cluster up

cluster-down: ## Stop what cluster-up started (safe to repeat)
	$(BIN)/entity-state cluster down

cluster-status: ## Show whether the local cluster runs and answers queries
	$(BIN)/entity-state cluster status

# The tests marked `cluster` (article splits, a failure and rerun, a property-test sample) against the Thrift Server.
test-cluster: install ## Integration test sample on the running cluster (start it with cluster-up)
	@$(BIN)/entity-state cluster status >/dev/null 2>&1 || { \
		echo "test-cluster: the local cluster is not up (or its Thrift Server does not answer): run make cluster-up"; \
		exit 1; }
	ENTITY_STATE_PROPERTY_EXAMPLES=$${ENTITY_STATE_PROPERTY_EXAMPLES:-3} \
		$(BIN)/python -m pytest tests/integration -m cluster --target cluster

# The cluster processes run in sessions of their own, so an interrupted make would leave them running: the trap
# stops them on every exit. A cluster that was already up is used and left up.
test-cluster-ci: install ## cluster-up, test-cluster, then cluster-down, even when the tests fail
	@if $(BIN)/entity-state cluster status >/dev/null 2>&1; then \
		echo "test-cluster-ci: the local cluster is already up; using it and leaving it up"; \
		$(MAKE) --no-print-directory test-cluster; \
	else \
		trap '$(BIN)/entity-state cluster down' EXIT; \
		$(BIN)/entity-state cluster up && $(MAKE) --no-print-directory test-cluster; \
	fi

test: lint test-unit test-integration test-adapter test-cluster-ci ## Everything CI runs

bench-quick: install-bench ## Benchmark at small sizes (measured 9.8 minutes on 2 idle cores before the landed-files section); results in .local/bench/quick/
	$(BIN)/python bench/run.py --mode quick

bench: install-bench ## Full benchmark (measured 22.8 + 11.8 minutes): 1M/2M/5M histories, 10,000 landed files; results in bench/results/
	$(BIN)/python bench/run.py --mode full --results bench/results

clean: ## Remove the local warehouse, metastore, landed files and dbt output (stops the local cluster first)
	if [ -x $(BIN)/entity-state ]; then $(BIN)/entity-state cluster down; fi
	rm -rf .local target logs data/landing
