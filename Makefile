# cairn's front door. `make serve` and `make test` bootstrap everything they need.
SHELL := /bin/bash
.DEFAULT_GOAL := help
# uv: on PATH, else where pip --user / its installer put it, else installed by scripts/find-uv
# (the same lookup as ./cairn). Deferred (=): `make help` never installs anything.
UV ?= $(shell scripts/find-uv)
RUN = $(UV) run --frozen
BENCH_DATA ?= ../shared/bench/scifact
export UV_PYTHON_DOWNLOADS := never
# Bytecode is cached in .venv/pycache, never beside the sources. A shell with
# PYTHONDONTWRITEBYTECODE=1 (this machine's default) otherwise has every process compile every
# module it imports: 12 s of CPU for infra's CDK modules alone, paid again by each test worker,
# server and synth (importing infra: 11.7 -> 2.5 CPU-s with the cache).
export PYTHONDONTWRITEBYTECODE :=
export PYTHONPYCACHEPREFIX := $(CURDIR)/.venv/pycache
# `make test` spreads the suite over the machine's cores (pytest-xdist), a file at a time: a
# file's tests run in order on one worker, its module fixtures built once. Files go out in the
# order tests/conftest.py sorts them (servers and synths first, quick unit tests last), not
# xdist's most-tests-first. TEST_WORKERS=0 runs it in one process.
TEST_WORKERS ?= auto

.PHONY: help bootstrap serve test test-fast lint typecheck synth diff deploy destroy bench bench-gateway bench-store node clean

help: ## list targets
	@grep -E '^[a-z-]+:.*##' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

bootstrap: .venv/.bootstrapped node_modules/.bootstrapped ## install uv, Python deps and the npm packages

# Everything: the runtime plus the dev (tests, lint) and infra (CDK) groups.
.venv/.bootstrapped: pyproject.toml uv.lock
	$(UV) sync --frozen
	@touch $@ .venv/.runtime-synced

# What serving needs and nothing more; --inexact keeps the dev tools of a full bootstrap.
.venv/.runtime-synced: pyproject.toml uv.lock
	$(UV) sync --frozen --no-default-groups --inexact
	@touch $@

node_modules/.bootstrapped: package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	@touch $@

serve: .venv/.runtime-synced ## run the local server (SQLite + embedded index) on 127.0.0.1:$${CAIRN_PORT:-8765}
	$(UV) run --frozen --no-sync cairn serve

test: bootstrap ## run the whole suite: unit, functional, protocol, conformance, infra (benchmarks: make bench)
	@scripts/install-test-packages  # Debian's chromium (console browser tests) and zsh (capture hook), as root
	$(RUN) pytest -q -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder --durations=25

# The unit tests, the storage contract suites on SQLite only (their moto half is `moto`-marked).
test-fast: .venv/.bootstrapped ## unit tests and the storage contracts on SQLite: no server, no moto, no browser
	$(RUN) pytest -q -p no:cacheprovider tests/unit -m "not moto and not bench"

typecheck: .venv/.bootstrapped ## mypy --strict over shared, functions and infra
	$(RUN) mypy --strict shared functions infra

lint: .venv/.bootstrapped ## ruff and mypy --strict
	$(RUN) ruff check shared functions infra tests
	$(RUN) ruff format --check shared functions infra tests
	$(RUN) mypy shared functions infra

# The CDK app's environment: dev (a stack per developer, cairn-dev-$$USER), staging (cairn-staging) or prod (cairn-prod).
CAIRN_ENV ?= dev
CDK := CDK_DISABLE_CLI_TELEMETRY=true npx --no-install cdk
# Extra context, e.g. CDK_EXTRA_ARGS="-c developer=ci -c alarm_email=oncall@example.com".
CDK_EXTRA_ARGS ?=
CDK_ARGS = -c env=$(CAIRN_ENV) --no-notices $(CDK_EXTRA_ARGS)

synth: bootstrap ## synthesize the CDK app (cdk-nag runs on every synth) and cfn-lint the templates
	rm -f cdk.out/*.template.json
	$(CDK) synth --quiet $(CDK_ARGS)
	$(RUN) cfn-lint cdk.out/*.template.json

diff: bootstrap ## diff the deployed stack against the code (CAIRN_ENV=dev|staging|prod)
	$(CDK) diff $(CDK_ARGS)

deploy: bootstrap ## deploy to the account in your AWS credentials (CAIRN_ENV=dev|staging|prod)
	$(CDK) deploy --all --require-approval never $(CDK_ARGS) --outputs-file cdk.out/outputs.json

# Prod keeps its data when its stack goes (docs/infra/security-and-data.md); deleting it is never
# a slip of CAIRN_ENV: it needs CAIRN_DESTROY_PROD=cairn-prod too.
destroy: bootstrap ## delete the stack (CAIRN_ENV=dev|staging; prod also needs CAIRN_DESTROY_PROD=cairn-prod)
	@if [ "$(CAIRN_ENV)" = prod ] && [ "$(CAIRN_DESTROY_PROD)" != cairn-prod ]; then \
	  echo "refusing to destroy prod: pass CAIRN_DESTROY_PROD=cairn-prod" >&2; exit 1; fi
	$(CDK) destroy --all --force $(CDK_ARGS)

bench: .venv/.bootstrapped ## retrieval quality and latency on BEIR SciFact, tool-call latency, indexing speed, storage at 1k-100k, conflict/duplicate detection, workflow step overhead, seed 003 knowledge (ingest, search_hybrid latency, recall@10), AWS cost per 1M calls and idle per month, DynamoDB calls per warm tool call, each function's cold import vs boto3 and bundle size, what connecting costs per toolset URL, git connector sync files/s, 30 minutes of mixed load on a local server (open files, RSS, errors), and the tests marked bench (each benchmark's tiny run)
	$(RUN) cairn bench retrieval --data $(BENCH_DATA) --split test --recall-depths 20,30,50 --cold
	$(RUN) cairn bench retrieval --data $(BENCH_DATA) --rerank-cost 10,20,30
	$(RUN) cairn bench gateway
	$(RUN) cairn bench aws_calls
	$(RUN) cairn bench index
	$(RUN) cairn bench embed --data $(BENCH_DATA)
	$(RUN) cairn bench retrieval --synthetic 10000,100000
	$(RUN) cairn bench store
	$(RUN) cairn bench curation
	$(RUN) cairn bench workflows
	$(RUN) cairn bench knowledge
	$(RUN) cairn bench cost
	$(RUN) cairn bench cold
	$(RUN) cairn bench context
	$(RUN) cairn bench portability
	$(RUN) cairn bench connectors
	$(RUN) cairn bench soak --minutes 30
	CAIRN_FUZZ_CASES=5000 $(RUN) pytest -q -s -p no:cacheprovider tests/protocol/test_fuzz.py
	$(RUN) pytest -q -p no:cacheprovider -m bench

bench-gateway: .venv/.bootstrapped ## tool-call latency and throughput of a local server
	$(RUN) cairn bench gateway

bench-store: .venv/.bootstrapped ## storage under load: SQLite at 1k/10k/100k, the old moto path as reference
	$(RUN) cairn bench store

clean:
	rm -rf .venv node_modules cdk.out .pytest_cache .mypy_cache .ruff_cache
