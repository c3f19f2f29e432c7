# The GPU utilization playbook. `make help` lists the targets.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# Where no NVIDIA driver is present, torch comes from this pinned CPU build (never a multi-GB CUDA build).
# Outside a machine that keeps the wheel locally, point TORCH_INDEX at https://download.pytorch.org/whl/cpu.
TORCH_CPU := torch==2.13.0
TORCH_INDEX ?=
PYTEST_ARGS ?=
# Test files run in TEST_JOBS worker processes (pytest-xdist), a file per worker so a module's shared notebook or
# torchrun run happens once; TEST_JOBS=0 runs them in this process.
TEST_JOBS ?= 2

.PHONY: help setup demo test lab report bench lint format guide-figures guide-outputs clean

help:  ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-14s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml setup.py playbook/readers/_native.c
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	@if ! command -v nvidia-smi >/dev/null 2>&1 && ! $(PY) -c 'import torch' 2>/dev/null; then \
	  echo "no NVIDIA driver found: installing the CPU build $(TORCH_CPU)"; \
	  $(PY) -m pip install -q $(TORCH_CPU) $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX)); \
	fi
	$(PY) -m pip install -q -e '.[dev]'
	@touch $(STAMP)

setup: $(STAMP)  ## create .venv/ and install the project with its dev tools

demo: $(STAMP)  ## set up, then triage the embedded samples (64-GPU swing, then the real dflash poll) into an HTML report
	$(PY) -m playbook info data/samples
	$(PY) -m playbook report

test: $(STAMP)  ## set up, then run the whole test suite
	$(PY) -m pytest -q $(if $(filter-out 0,$(TEST_JOBS)),-n $(TEST_JOBS) --dist loadfile) $(PYTEST_ARGS)

lab: $(STAMP)  ## JupyterLab on notebooks/ (token authentication left on)
	$(VENV)/bin/jupyter lab --notebook-dir=notebooks

report: $(STAMP)  ## batch report: every notebook, quick parameters, into reports/
	$(PY) -m playbook report --labs all --quick

bench: $(STAMP)  ## benchmarks: ingest and diagnose speed, lab fault/fix ratios, printed side by side
	$(PY) benchmarks/ingest.py
	$(PY) benchmarks/diagnose.py
	$(PY) benchmarks/labs.py

lint: $(STAMP)  ## ruff, and notebooks must carry no outputs
	$(VENV)/bin/ruff check playbook tests benchmarks
	$(VENV)/bin/nbstripout --keep-id --verify notebooks/*.ipynb

format: $(STAMP)  ## strip notebook outputs and fix lint where ruff can
	$(VENV)/bin/nbstripout --keep-id notebooks/*.ipynb
	$(VENV)/bin/ruff check --fix playbook tests benchmarks

guide-figures: $(STAMP)  ## rerun the labs quickly and regenerate the field guide's tables and figures
	$(PY) -m playbook.report.guide docs/figures

guide-outputs: $(STAMP)  ## regenerate only the command outputs the docs quote (< 1 min, no labs)
	$(PY) -m playbook.report.guide --outputs docs/figures

clean:  ## remove caches, lab runs and reports (keeps .venv)
	rm -rf reports data/runs runs notebooks/runs .pytest_cache .ruff_cache .hypothesis
