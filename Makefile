# Codebox — every target sets up what it needs, idempotently (stamps live in .make/).
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := .make
NODE_DIR := codebox_tui/runtime/node
PYTEST_ARGS ?=
# pytest runs on PYTEST_WORKERS processes (pytest-xdist), whole test files per worker so a file's shared
# sandbox is booted once (docs/performance.md, "Test suite"). PYTEST_WORKERS=1: one process, no xdist.
PYTEST_WORKERS ?= 2
# Bytecode is written (and read back) while testing: with PYTHONDONTWRITEBYTECODE set, as on some CI images,
# every `codebox` subprocess a test starts recompiled the package from source and each pytest worker re-ran
# the assertion rewriting of every test module (docs/performance.md, "Test suite").
unexport PYTHONDONTWRITEBYTECODE
XDIST := $(if $(filter-out 0 1,$(PYTEST_WORKERS)),-n $(PYTEST_WORKERS) --dist loadfile,-p no:xdist)

.PHONY: setup demo demo-agent test lint typecheck unit pytest schemas screenshots bench clean

# The Python environment and the Node bridge are independent (about 45 s and 40 s on a fresh machine): `demo` and
# `test` set them up side by side (SETUP), after the system packages both may need.
setup: $(STAMP)/venv $(STAMP)/node
SETUP = $(MAKE) --no-print-directory -j2 --output-sync=target setup

$(STAMP)/system: scripts/install-system.sh
	bash scripts/install-system.sh
	@mkdir -p $(STAMP) && touch $@

# --no-compile: pip would compile every installed module (about 20 CPU-seconds); Python compiles, and caches,
# the ones a process imports.
$(STAMP)/venv: pyproject.toml | $(STAMP)/system
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check --upgrade pip 2>&1 | grep -v 'is ignored' || true
	$(PY) -m pip install -q --no-compile --disable-pip-version-check -e '.[dev]' 2>&1 | grep -v 'is ignored' || true
	$(PY) -c "import codebox_tui, textual, pydantic, unidiff, playwright"
	@mkdir -p $(STAMP) && touch $@

$(STAMP)/node: $(NODE_DIR)/package-lock.json | $(STAMP)/system
	cd $(NODE_DIR) && npm ci --prefer-offline --no-audit --no-fund --loglevel=error
	@mkdir -p $(STAMP) && touch $@

## The main job: a contributor's probe against the example plugin, in a real Playground sandbox.
demo:
	@$(SETUP)
	rm -rf demo-artifacts
	$(VENV)/bin/codebox run \
	  --mount examples/simple-plugin:/wordpress/wp-content/plugins/simple-plugin:readonly \
	  --command wordpress.run-php --arg code-file=examples/simple-plugin/probe.php \
	  --artifacts demo-artifacts
	$(VENV)/bin/codebox artifacts list demo-artifacts

## The example agent edits a private copy of the example plugin through the workspace tools (docs/agent-tasks.md).
demo-agent:
	@$(SETUP)
	rm -rf demo-artifacts
	$(VENV)/bin/codebox agent-task --task 'replace "Hello" with "Howdy"' \
	  --workspace examples/simple-plugin:/workspace/simple-plugin \
	  --agent "$(VENV)/bin/python examples/agents/example_agent.py" --artifacts demo-artifacts
	$(VENV)/bin/codebox artifacts list demo-artifacts

## Everything CI checks: lint, types, the import contracts, then all tests (real Playground, git, SQLite, Chromium).
# lint and typecheck (about 35 CPU-seconds) run beside pytest rather than before it: CI's time budget
test:
	@$(SETUP)
	$(MAKE) --no-print-directory -j3 lint typecheck pytest

lint: setup
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports
	$(PY) scripts/dead_code.py

typecheck: setup
	$(VENV)/bin/mypy

pytest: setup
	$(PY) -m compileall -q -j 2 codebox_tui store widgets tests > /dev/null
	$(PY) -m pytest -q $(XDIST) $(PYTEST_ARGS)

## The quick part: no Playground, no native sandboxes, no Chromium, no killed processes (tests/unit, tests/tui, snapshots…).
unit: setup
	$(PY) -m pytest -q $(XDIST) -m "not integration and not playground and not native" $(PYTEST_ARGS)

schemas: setup
	$(PY) -m codebox_tui.contracts.schemas --write

screenshots: setup
	$(PY) -m tests.factories.screenshots

bench: setup
	$(PY) bench/run_all.py

clean:
	rm -rf $(STAMP) demo-artifacts .pytest_cache .mypy_cache .ruff_cache
