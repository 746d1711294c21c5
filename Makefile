.PHONY: setup up down test unit integration e2e lint format typecheck bench bench-e2e

setup:
	scripts/setup.sh

up:
	scripts/up.sh

down:
	.venv/bin/phalanx down

test:
	scripts/test.sh

unit: setup
	.venv/bin/pytest -q -m unit

integration: setup
	.venv/bin/pytest -q -m integration

e2e: setup
	.venv/bin/pytest -q -m e2e

lint: setup
	.venv/bin/ruff check .
	.venv/bin/ruff format --check .
	.venv/bin/lint-imports

format: setup
	.venv/bin/ruff format .
	.venv/bin/ruff check --fix .

typecheck: setup
	.venv/bin/mypy

bench: setup
	.venv/bin/python -m benchmarks.scheduler_core
	.venv/bin/python -m benchmarks.simulator

SCENARIOS = s1 s2 s2-10000x1 s2-500x20 s2-20x500 s2-contended

bench-e2e: setup
	.venv/bin/phalanx bench $(SCENARIOS) --timeout 900
	.venv/bin/phalanx bench $(SCENARIOS) --timeout 900 --qps 5000
