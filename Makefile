# Subtext Forge — the two commands: `make demo` and `make test` (see README).
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(shell sha1sum pyproject.toml | cut -c1-12)

# Project-local instance and data; offline model settings (nothing downloads at run time).
export DAGSTER_HOME := $(CURDIR)/.dagster_home
export SUBTEXT_DATA_DIR ?= $(CURDIR)/data
export SUBTEXT_MODELS_DIR ?= $(abspath $(CURDIR)/../shared/models)
export YOLO_OFFLINE := 1
export YOLO_AUTOINSTALL := false
export YOLO_CONFIG_DIR := $(CURDIR)/.dagster_home/ultralytics
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export HF_DATASETS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false

.PHONY: setup demo test ui query validate clean bench

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade "pip>=25.1"
	$(PY) -m pip install -q --group test
	rm -f $(VENV)/.installed-*; touch $(STAMP)

setup: $(STAMP)
	@mkdir -p $(DAGSTER_HOME) $(SUBTEXT_DATA_DIR)

demo: setup
	$(PY) -m jobs.build --demo

test: setup
	bash scripts/ensure_chromium.sh
	$(PY) -m dagster definitions validate -w workspace.yaml
	$(PY) -m pytest

ui: setup
	$(VENV)/bin/dagster dev -w workspace.yaml -h 127.0.0.1 -p 3000

validate: setup
	$(PY) -m dagster definitions validate -w workspace.yaml

query: setup
	@$(PY) -c 'import duckdb,sys; con=duckdb.connect(sys.argv[1], read_only=True); print(con.sql(sys.argv[2]))' "$(SUBTEXT_DATA_DIR)/catalog.duckdb" "$(Q)"

bench: setup
	for f in benchmarks/*.py; do echo "== $$f"; $(PY) $$f || exit 1; done

clean:
	rm -rf $(SUBTEXT_DATA_DIR) $(DAGSTER_HOME)/storage $(DAGSTER_HOME)/history $(DAGSTER_HOME)/schedules $(DAGSTER_HOME)/logs
