# The two commands a newcomer needs:
#   make run    installs what is needed and starts the embedded default (Ctrl-C stops it)
#   make test   installs what is needed and runs the whole test suite (it starts its own services)
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run test test-unit bench bench-quick bench-recall install clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	# torch first and exact: the CPU build (an unpinned torch pulls a multi-GB CUDA build)
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	HF_HUB_OFFLINE=1 $(PY) -m ops.serve

test: $(STAMP)
	HF_HUB_OFFLINE=1 $(PY) -m pytest -q

test-unit: $(STAMP)
	$(PY) -m pytest -q tests/unit

# The whole benchmark suite: ops/bench/results/suite.json + suite.md (the README's Performance tables).
bench: $(STAMP)
	HF_HUB_OFFLINE=1 $(PY) -m ops.bench.suite

bench-quick: $(STAMP)
	HF_HUB_OFFLINE=1 $(PY) -m ops.bench.suite --quick

bench-recall: $(STAMP)
	HF_HUB_OFFLINE=1 $(PY) -m ops.bench.recall

clean:
	rm -rf $(VENV) .pytest_cache
