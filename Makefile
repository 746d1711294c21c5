.PHONY: setup up down test unit integration e2e lint format typecheck bench

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

format: setup
	.venv/bin/ruff format .
	.venv/bin/ruff check --fix .

typecheck: setup
	.venv/bin/mypy

bench: setup
	.venv/bin/python -m benchmarks.scheduler_core
	.venv/bin/python -m benchmarks.simulator
