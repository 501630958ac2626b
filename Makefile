# The two commands of the README:
#   make demo   record the experiments on whatever devices exist, verify them, and show the
#               verdicts beside the committed GPU ones (sample_traces/verdicts-h200x2.json)
#   make test   run the test suite
# Both set everything up first (scripts/bootstrap.sh: ./.venv and packages; for `make test` also
# chromium, for the browser test; the demo needs no browser).
VENV := .venv
BIN := $(VENV)/bin
OUT ?= traceprobe-out

.PHONY: setup setup-demo demo demo-steps test lint bench bench-scale clean

BENCH_TRACE ?= bench/transformer-h200.pt.trace.json.gz
BENCH_RUNS ?= 5
BENCH_SCALE ?= 1,2,4,8,13

setup:
	@bash scripts/bootstrap.sh

setup-demo:
	@bash scripts/bootstrap.sh --no-browser

# DEMO_RECORD: which experiments (default all); tests/test_demo.py runs demo-steps with a few.
DEMO_RECORD ?=

demo: setup-demo
	@$(MAKE) --no-print-directory demo-steps

demo-steps:
	$(BIN)/traceprobe record $(DEMO_RECORD) --out $(OUT) --force
	$(BIN)/traceprobe verify $(OUT)
	$(BIN)/python scripts/demo.py $(OUT)

test: setup
	@$(BIN)/python -m pytest -q; rc=$$?; if [ $$rc -eq 5 ]; then echo "no tests collected"; exit 1; fi; exit $$rc

lint: setup
	$(BIN)/ruff check traceprobe tests scripts
	$(BIN)/mypy

bench: setup
	$(BIN)/python scripts/bench.py $(BENCH_TRACE) --runs $(BENCH_RUNS) --write-docs docs/BENCHMARKS.md

bench-scale: setup
	$(BIN)/python scripts/bench.py $(BENCH_TRACE) --scale $(BENCH_SCALE) --runs 3 --write-docs docs/BENCHMARKS.md

# mutation testing (docs/TESTING.md): tens of minutes on one core, not part of `make test`
.PHONY: mutants
mutants: setup
	$(BIN)/python scripts/mutants.py --write-docs docs/TESTING.md

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
