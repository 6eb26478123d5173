# offload: the two everyday commands are `make run` and `make test`; both create .venv when missing.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 20
export AWS_CDK_DISABLE_NOTICES := 1
export CDK_DISABLE_VERSION_CHECK := 1
export PYTHONDONTWRITEBYTECODE := 1
# No AWS calls at synth: keep the CDK CLI from probing instance metadata for credentials.
export AWS_EC2_METADATA_DISABLED := true

.PHONY: venv test lint typecheck unit synth deploy run demo bench clean openapi mutate browser screenshot

venv: $(VENV)/.installed

# The first install takes minutes: say what is happening, and let pip list what it fetches.
$(VENV)/.installed: requirements.txt requirements-tools.txt requirements-dev.txt pyproject.toml client/pyproject.toml
	@echo "==> [1/4] the virtualenv $(VENV) (its first install takes a few minutes)"
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@echo "==> [2/4] upgrading pip"
	@$(PY) -m pip install -q --upgrade pip
	@echo "==> [3/4] installing the Python dependencies (requirements-dev.txt)"
	@set -o pipefail; $(PY) -m pip install -r requirements-dev.txt | sed '/^Requirement already satisfied/d'
	@echo "==> [4/4] installing offload itself (the offload command, the local runtime) and offload-client"
	@$(PY) -m pip install -q --no-deps -e . -e ./client
	@touch $@

node_modules/.installed: package.json package-lock.json
	@echo "==> installing the pinned CDK CLI (npm ci)"
	npm ci --no-audit --no-fund --loglevel=error
	@touch $@

lint: venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

typecheck: venv
	$(VENV)/bin/mypy

# pydantic-core's WebAssembly wheel, for the CPython 3.14 run of the functions' code (tests/py314), fetched once.
PY314_WHEELS := $(VENV)/pyodide-wheels
$(PY314_WHEELS)/.installed: $(VENV)/.installed node_modules/.installed
	$(PY) -m tests.py314.wheels $(PY314_WHEELS)
	@touch $@

test: venv node_modules/.installed browser lint typecheck $(PY314_WHEELS)/.installed
	$(VENV)/bin/pytest -n 2 --dist loadgroup

# Mutation testing of lambdas/lifecycle and lambdas/store (not part of `make test`: it takes long).
# MUTANTS narrows the run, e.g. MUTANTS='lambdas.store.queue.*'; the report prints the kill rate.
# MUTATE_SAMPLE=N runs N mutants chosen at random, stratified by file (MUTATE_SEED repeats a choice);
# the report then gives each package's kill rate with its 95 % interval. The full run is the default.
MUTANTS ?=
MUTATE_CHILDREN ?= 2
MUTATE_SAMPLE ?=
MUTATE_SEED ?=
mutate: venv
ifeq ($(MUTATE_SAMPLE),)
	nice -n 19 $(VENV)/bin/mutmut run --max-children $(MUTATE_CHILDREN) $(MUTANTS)
	$(PY) -m tests.support.mutation_report $(MUTANTS)
else
	$(PY) -m tests.support.mutation_sample $(MUTATE_SAMPLE) $(MUTATE_SEED) $(MUTANTS)
	nice -n 19 $(VENV)/bin/mutmut run --max-children $(MUTATE_CHILDREN) $$($(PY) -m tests.support.mutation_sample --names)
	$(PY) -m tests.support.mutation_report --sample
endif

# The console's browser tests drive a system Chromium (Playwright cannot download its own here): found on
# PATH or at $(CHROMIUM), installed with apt-get when missing and allowed to, else a clear error.
browser: venv
	@$(PY) -m tests.support.browser --install

unit: venv
	$(VENV)/bin/pytest tests/unit

synth: venv node_modules/.installed
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" npx cdk synth --quiet

deploy: venv node_modules/.installed
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" npx cdk deploy

# The README's console screenshot: the console's overview test, writing docs/console.png.
screenshot: venv node_modules/.installed browser
	OFFLOAD_UPDATE_SCREENSHOT=1 $(VENV)/bin/pytest -n 0 -p no:randomly tests/e2e/test_console.py -k overview

openapi: venv
	$(PY) -m lambdas.handlers.api > docs/openapi.json

# Options of the local runtime, e.g. `make run RUN_ARGS="-c auth=iam"` (python -m local_runtime --help).
RUN_ARGS ?=
run: venv node_modules/.installed
	$(PY) -m local_runtime $(RUN_ARGS)

demo: venv
	$(PY) -m local_runtime.demo

# `make bench BENCH_ARGS=--check` fails when a goal of docs/performance.md is missed;
# `make bench BENCH_LOAD=4` measures at a 1-minute load average of about 4 (bench/load.py).
BENCH_LOAD ?=
bench: venv
	$(PY) -m bench $(if $(BENCH_LOAD),--load $(BENCH_LOAD)) $(BENCH_ARGS)

clean:
	rm -rf cdk.out .mypy_cache .ruff_cache .pytest_cache mutants
