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

.PHONY: help install install-bench lock check-python check-java driver-archive demo run build docs lint test test-unit test-integration test-adapter \
	check-postgres cluster-up cluster-down cluster-status test-cluster test-cluster-ci bench bench-quick clean

help: ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-18s %s\n", $$1, $$2}'

# The Python that install uses: .venv's once it exists (a later make needs no PYTHON=), else $(PYTHON), which creates it.
check-python:
	@if [ -x $(BIN)/pip ]; then py=$(BIN)/python; where=".venv (made by an earlier make install)"; \
	else py=$(PYTHON); where="$(PYTHON)"; fi; \
	version=$$($$py -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null); \
	if [ "$$version" != 3.11 ]; then \
		if [ -n "$$version" ]; then echo "This project needs Python 3.11, and $$where is Python $$version."; \
		else echo "This project needs Python 3.11, and $$where is not found (or does not run)."; fi; \
		echo "Install it (Debian 12: apt-get install python3.11 python3.11-venv; or pyenv install 3.11), then run"; \
		if [ -x $(BIN)/pip ]; then echo "  rm -rf .venv && make install PYTHON=python3.11"; \
		else echo "  make install PYTHON=python3.11"; fi; \
		exit 1; \
	fi

check-java:
	@command -v java >/dev/null || { echo "Java is missing: install OpenJDK 17 (apt-get install openjdk-17-jre-headless)"; exit 1; }
	@major=$$(java -version 2>&1 | sed -nE 's/.*version "([0-9]+)(\.([0-9]+))?.*/\1 \3/p' | awk '{print ($$1 == 1) ? $$2 : $$1}'); \
	if [ -z "$$major" ] || [ "$$major" -lt 11 ]; then echo "Java $$major is too old for Spark 3.5 here: install OpenJDK 17"; exit 1; fi

# requirements.lock pins, with hashes, everything install puts into .venv, pip and setuptools included. Those two go
# first: the pip a venv starts with (23.x) rejects the lock in hash mode (a dependency asks for mashumaro[msgpack]),
# and with the locked setuptools in place nothing needs build isolation, which would download an unpinned one to build
# the packages published as sources only (pyspark, thrift, PyHive, pure-sasl) and the project itself.
$(STAMP): requirements.lock pyproject.toml
	[ -x $(BIN)/pip ] || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --require-hashes -r <(awk '/^[a-z]/ { keep = /^(pip|setuptools)==/ } keep' requirements.lock)
	$(BIN)/pip install --quiet --require-hashes --no-build-isolation -r requirements.lock
	$(BIN)/pip install --quiet --no-deps --no-build-isolation -e .
	touch $(STAMP)

# The jars of jars.lock (Delta Lake, the metastore's JDBC driver), checksummed, in .venv/jars: fetched once with Maven.
JARS_STAMP := $(VENV)/.installed-jars
$(JARS_STAMP): $(STAMP) jars.lock
	@command -v mvn >/dev/null || { echo "Maven is missing: install it (apt-get install maven), then run make install"; exit 1; }
	$(BIN)/entity-state jars >/dev/null
	touch $(JARS_STAMP)

install: check-python check-java $(STAMP) $(JARS_STAMP) ## Check Python 3.11, Java and Maven, create .venv, install requirements.lock, jars.lock and the project

BENCH_STAMP := $(VENV)/.installed-bench
$(BENCH_STAMP): $(STAMP) requirements-bench.lock
	$(BIN)/pip install --quiet --require-hashes --no-build-isolation -r requirements-bench.lock
	touch $(BENCH_STAMP)

install-bench: install $(BENCH_STAMP) ## Add the benchmark-only dependencies (chDB, matplotlib, psutil; requirements-bench.lock) to .venv

# Both lock files from pyproject.toml (dependencies, extras dev and bench, build-system requires) and pip, for
# Python 3.11 on every platform. Versions already locked are kept unless pyproject.toml rules them out; the bench lock
# is constrained by the first, so shared packages have one version. To move a package: make lock LOCK_ARGS="-P NAME".
LOCK_ARGS ?=
TOOLS := $(BIN)/python -c 'import tomllib; print("pip", *tomllib.load(open("pyproject.toml", "rb"))["build-system"]["requires"], sep="\n")'
UV_COMPILE := $(BIN)/uv pip compile --universal --python-version 3.11 --generate-hashes --custom-compile-command "make lock" --quiet $(LOCK_ARGS)
lock: ## Regenerate requirements.lock and requirements-bench.lock from pyproject.toml with .venv's uv
	@[ -x $(BIN)/uv ] || { echo "make lock runs .venv/bin/uv: run make install first"; exit 1; }
	$(TOOLS) | $(UV_COMPILE) pyproject.toml - --extra dev -o requirements.lock
	$(TOOLS) | $(UV_COMPILE) pyproject.toml - --extra dev --extra bench -c requirements.lock -o requirements-bench.lock

# The class archive the local profile starts every Spark driver with (profiles/profiles.yml): written by the
# commands below that start dbt when it is missing or older than .venv (a new PySpark or dbt install). Where
# ENTITY_STATE_DRIVER_ARCHIVE is set, that path; set empty, no archive is written or read.
DRIVER_ARCHIVE := $(if $(filter undefined,$(origin ENTITY_STATE_DRIVER_ARCHIVE)),$(ENTITY_STATE_HOME)/jvm/spark-driver.jsa,$(ENTITY_STATE_DRIVER_ARCHIVE))
ifneq ($(DRIVER_ARCHIVE),)
$(DRIVER_ARCHIVE): $(STAMP)
	$(BIN)/entity-state driver-archive
endif

driver-archive: install ## Write the Spark driver's class archive again (after a Java upgrade); demo, run, build, docs and sql write it when missing
	$(BIN)/entity-state driver-archive

# The demo decides its own landing folder (demo/landing in ENTITY_STATE_HOME) and schema (entity_state_demo), and says
# so when the environment names others. The landing folder exported above is only this Makefile's default, not a
# choice of the user's, so it is not passed on to the demo.
demo: install $(DRIVER_ARCHIVE) ## Land the demo events in batches, dbt build after each, print one entity's timeline (.local/demo)
	$(if $(filter file,$(origin ENTITY_STATE_LANDING_DIR)),env -u ENTITY_STATE_LANDING_DIR )$(BIN)/entity-state demo

run: install $(DRIVER_ARCHIVE) ## dbt run on the local target (lands nothing: use `entity-state load` first)
	$(BIN)/dbt run

build: install $(DRIVER_ARCHIVE) ## dbt build (run + data tests + unit tests) on the local target
	$(BIN)/dbt build

# The state of ENTITY_STATE_SCHEMA; unset, the demo's while the default schema holds no state (entity-state docs).
docs: install $(DRIVER_ARCHIVE) ## Generate the dbt docs site into target/ (serve it with `make docs-serve`)
	$(BIN)/entity-state docs

DOCS_PORT ?= 8080
.PHONY: docs-serve sql
docs-serve: install $(DRIVER_ARCHIVE) ## Generate the dbt docs and serve them on http://127.0.0.1:8080 (DOCS_PORT=... moves it)
	$(BIN)/entity-state docs --serve --port $(DOCS_PORT)

# The query reaches the command through the environment (make exports command-line variables), so its quotes survive.
sql: install $(DRIVER_ARCHIVE) ## Query the state: make sql Q="select * from {{ ref('entity_state_view') }}" (entity-state sql)
	@if [ -z "$$Q" ]; then echo "make sql: give the query as Q=\"select ... from {{ ref('entity_state_view') }}\""; exit 2; fi
	$(BIN)/entity-state sql "$$Q"

lint: install ## ruff on the Python, sqlfluff on the SQL
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench
	ENTITY_STATE_HOME=$(CURDIR)/.local/lint $(BIN)/sqlfluff lint models tests/dbt/singular

test-unit: install ## Pure-Python tests: the reference and the model of the incremental design
	$(BIN)/python -m pytest tests/unit

# Each Spark suite ends with its slowest tests, where the time of `make test` goes.
DURATIONS := --durations=10 --durations-min=5

# The test suites' Spark drivers collect garbage with the serial collector (profiles/profiles.yml reads the variable):
# two of them share the two cores, and G1's concurrent threads took CPU the other process needed. Integration suite
# 16:53 against 19:42 with G1 (BENCHMARKS.md, "The test suite: where its CPU goes").
test-integration test-adapter: export ENTITY_STATE_DRIVER_JAVA_OPTIONS ?= -XX:+UseSerialGC
# Each pytest process keeps its Spark driver for all its tests: the JVM's default compiler, not the profile's choice
# for a `dbt` command (BENCHMARKS.md, "the quick compiler for a driver that runs dbt once"). Tests that start dbt
# processes of their own give them what a user's command gets.
test-integration test-adapter: export ENTITY_STATE_DRIVER_KEPT_ALIVE ?= true

# Two pytest processes (pytest-xdist), each with its own Spark session, warehouse and metastore. Tests are handed out
# one at a time, the longest first (tests/integration/conftest.py orders them), so neither process sits idle while the
# other finishes a long one. Most of a test is dbt and Spark planning on one thread, so two processes fill the 2
# cores; INTEGRATION_WORKERS=0 runs them in this process, one after the other.
INTEGRATION_WORKERS ?= 2

test-integration: install ## dbt on local Spark, in-process: article splits, run orders, failures, property test
	$(BIN)/python -m pytest tests/integration -n $(INTEGRATION_WORKERS) --dist load --maxschedchunk 1 $(DURATIONS)

# A pytest process of its own: it starts its own in-process Spark, with its own warehouse and metastore.
test-adapter: install ## dbt's incremental adapter tests with this project as a package: users' models keep dbt-spark's
	$(BIN)/python -m pytest tests/adapter $(DURATIONS)

# The cluster's metastore runs on Debian's PostgreSQL server (its binaries only: the cluster starts a server of its own
# in .local/cluster/postgres). Installed here when missing, as root; apt-get update first only when the package
# lists do not know it yet (a fresh machine).
POSTGRES_PACKAGE := postgresql-15
check-postgres:
	@if [ -n "$$ENTITY_STATE_POSTGRES_BIN" ] || ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1; then exit 0; fi; \
	if [ "$$(id -u)" != 0 ]; then \
		echo "The PostgreSQL server is missing: install it (apt-get install $(POSTGRES_PACKAGE)), then run make cluster-up"; \
		exit 1; fi; \
	echo "Installing $(POSTGRES_PACKAGE) for the cluster's metastore"; \
	export DEBIAN_FRONTEND=noninteractive; \
	apt-get install -y --no-install-recommends $(POSTGRES_PACKAGE) >/dev/null 2>&1 || \
		{ apt-get update -q >/dev/null && apt-get install -y --no-install-recommends $(POSTGRES_PACKAGE) >/dev/null; }

cluster-up: install check-postgres ## Start PostgreSQL (metastore), a Spark master, two workers and the Thrift Server (.local/cluster)
	$(BIN)/entity-state cluster up

cluster-down: ## Stop what cluster-up started (safe to repeat)
	$(BIN)/entity-state cluster down

cluster-status: ## Show what of the local cluster runs where (ports, logs, data) and whether it answers queries
	$(BIN)/entity-state cluster status

# The tests marked `cluster` (article splits, failures and reruns, a dbt process killed mid-write, a property-test
# sample) against the Thrift Server. Two pytest processes, each in a schema of its
# own on the one server: while one compiles dbt's SQL, the server runs the other's statements (3:18 against 4:24 in
# one process, on 2 cores). Then, in one process, the tests that kill a worker or restart the whole cluster
# (`cluster_alone`): run beside the others, they would take the server away from them.
test-cluster: install ## Integration test sample on the running cluster (start it with cluster-up)
	@$(BIN)/entity-state cluster status >/dev/null 2>&1 || { \
		echo "test-cluster: the local cluster is not up (or its Thrift Server does not answer): run make cluster-up"; \
		exit 1; }
	ENTITY_STATE_PROPERTY_EXAMPLES=$${ENTITY_STATE_PROPERTY_EXAMPLES:-3} \
		$(BIN)/python -m pytest tests/integration -m "cluster and not cluster_alone" --target cluster \
		-n $(INTEGRATION_WORKERS) --dist load --maxschedchunk 1 $(DURATIONS)
	$(BIN)/python -m pytest tests/integration -m cluster_alone --target cluster $(DURATIONS)

# The cluster processes run in sessions of their own, so an interrupted make would leave them running: the trap
# stops them on every exit. A cluster that was already up is used and left up.
test-cluster-ci: install ## cluster-up, test-cluster, then cluster-down, even when the tests fail
	@if $(BIN)/entity-state cluster status >/dev/null 2>&1; then \
		echo "test-cluster-ci: the local cluster is already up; using it and leaving it up"; \
		$(MAKE) --no-print-directory test-cluster; \
	else \
		trap '$(BIN)/entity-state cluster down' EXIT; \
		$(MAKE) --no-print-directory check-postgres && $(BIN)/entity-state cluster up && \
		$(MAKE) --no-print-directory test-cluster; \
	fi

test: lint test-unit test-integration test-adapter test-cluster-ci ## Everything CI runs

bench-quick: install-bench ## Benchmark at small sizes; results in .local/bench/quick/
	$(BIN)/python bench/run.py --mode quick

bench: install-bench ## Full benchmark: 1M/2M/5M histories, 10,000 landed files, late events, a 20M history (BENCHMARKS.md: how long each section takes); results in bench/results/
	$(BIN)/python bench/run.py --mode full --results bench/results

# Never the landing folder: it is the only copy of every landed batch (entity-state clean refuses if it lies inside
# what clean removes). Without .venv the same command runs from the source tree: it needs the standard library only.
clean: ## Remove .local (warehouse, metastore, demo, driver archive), target and logs, never landed files (stops the local cluster first)
	if [ -x $(BIN)/entity-state ]; then $(BIN)/entity-state clean; \
	else PYTHONPATH=$(CURDIR)/src $(PYTHON) -m entity_state.clean; fi
