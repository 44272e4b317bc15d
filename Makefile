# Each target sets itself up: a fresh machine needs only python3.
# `make help` lists the targets; the times are for an idle 2-core machine.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
LINTED := src tests tools bench
# pytest-xdist workers: one per core by default; PYTEST_ARGS adds options (e.g. -k NAME, -n 0).
JOBS ?= auto

.PHONY: help test test-plain lint dist wheel-check demo bench e2e-bench gateway-bench fuzz soak measure sdk-suites clean

help: ## list the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-z0-9-]+:.*## / {printf "  make %-13s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

BENCH_STAMP := $(VENV)/.bench-installed

$(BENCH_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[dev,bench]'
	touch $(BENCH_STAMP)

test: lint ## ruff, ruff format, mypy and the whole test suite (about 4 min; +1 min first install)
	$(BIN)/python -m pytest -q -n $(JOBS) $(PYTEST_ARGS)

test-plain: $(STAMP) ## the whole test suite with every acceleration off, RAILINGS_ACCELERATE=0 (about 4 min)
	RAILINGS_ACCELERATE=0 $(BIN)/python -m pytest -q -n $(JOBS) $(PYTEST_ARGS)

lint: $(STAMP) ## ruff check, ruff format --check and mypy --strict only (about 20 s)
	$(BIN)/ruff check $(LINTED)
	$(BIN)/ruff format --check $(LINTED)
	$(BIN)/mypy

dist: $(STAMP) ## build the sdist and the wheel into dist/ and check their metadata (about 10 s)
	rm -rf dist
	$(BIN)/python -m build --quiet --outdir dist .
	$(BIN)/python -m tools.check_dist dist

wheel-check: dist ## install the wheel into a fresh venv outside the tree, run demo and replay (about 30 s)
	$(BIN)/python -m tools.wheel_check dist

demo: $(STAMP) ## railings beside the plain official SDKs on the main faults (about 10 s)
	$(BIN)/railings demo

bench: $(BENCH_STAMP) ## benchmarks against the SDKs, httpx-sse and the floor, end to end over loopback, then the gateway load (about 7 min)
	$(BIN)/python bench/run.py $(BENCH_ARGS)
	$(BIN)/python bench/e2e.py $(if $(findstring --write-docs,$(BENCH_ARGS)),--write-docs) $(if $(findstring --quick,$(BENCH_ARGS)),--quick) $(E2E_BENCH_ARGS)
	$(BIN)/python bench/gateway.py $(if $(findstring --write-docs,$(BENCH_ARGS)),--write-docs) $(GATEWAY_BENCH_ARGS)

e2e-bench: $(BENCH_STAMP) ## railings, the official SDKs and httpx2 over loopback, 100 and 1,000 concurrent streams (about 90 s)
	$(BIN)/python bench/e2e.py $(E2E_BENCH_ARGS)

gateway-bench: $(STAMP) ## the gateway load alone: 1,000 streams, failures, added latency, memory (about 1 min)
	$(BIN)/python bench/gateway.py $(GATEWAY_BENCH_ARGS)

fuzz: $(STAMP) ## fuzz campaigns over every capture of tests/corpus (about 5 min)
	$(BIN)/python -m tools.reliability.fuzz $(FUZZ_ARGS)

soak: $(STAMP) ## many concurrent agent turns under random faults (about 1 min)
	$(BIN)/python -m tools.reliability.soak $(SOAK_ARGS)

measure: $(STAMP) ## what each SDK and framework does with a cut tool call, with and without railings (about 20 s)
	$(BIN)/python -m tools.measure_integrations $(MEASURE_ARGS)

sdk-suites: $(STAMP) ## the openai and anthropic SDKs' own streaming tests, plain and guarded: docs/sdk-suites.md (about 10 min)
	$(BIN)/python -m tools.sdk_suites $(SDK_SUITES_ARGS)

clean: ## remove the venv, the caches and the built distributions
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache build dist src/railings.egg-info
