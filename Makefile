# Subtext Forge — the two commands: `make demo` and `make test` (see README).
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(shell sha1sum pyproject.toml | cut -c1-12)

# Project-local instance and data; offline model settings (nothing downloads at run time).
export DAGSTER_HOME := $(CURDIR)/.dagster_home
export SUBTEXT_DATA_DIR ?= $(CURDIR)/data
# EasyOCR weights come from the pinned registry package; SUBTEXT_MODELS_DIR=<dir with easyocr/> overrides.
export YOLO_OFFLINE := 1
export YOLO_AUTOINSTALL := false
export YOLO_CONFIG_DIR := $(CURDIR)/.dagster_home/ultralytics
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export HF_DATASETS_OFFLINE := 1
# No usage reports or error reports from any dependency: the same values as forge/models/offline_env.py
# (which every entry point applies; tests/security/test_offline_env.py keeps the two equal).
export ORT_DISABLE_TELEMETRY := 1
export RAY_USAGE_STATS_ENABLED := 0
export HF_HUB_DISABLE_TELEMETRY := 1
export HF_HUB_DISABLE_UPDATE_CHECK := 1
export HF_HUB_DISABLE_IMPLICIT_TOKEN := 1
export DO_NOT_TRACK := 1
export LABEL_STUDIO_COLLECT_ANALYTICS := false
export LABEL_STUDIO_SENTRY_DSN :=
export LABEL_STUDIO_FRONTEND_SENTRY_DSN :=
export SENTRY_DSN :=
export FRONTEND_SENTRY_DSN :=
export LABEL_STUDIO_LATEST_VERSION_CHECK := false
export SE_AVOID_STATS := true
export SE_OFFLINE := true
export TOKENIZERS_PARALLELISM := false

# Postgres for teams (docs/operations.md): with DAGSTER_PG_URL set, the instance's runs, events
# and schedules live in Postgres; its settings are .dagster_home/dagster.yaml + dagster.postgres.yaml.
ifdef DAGSTER_PG_URL
export DAGSTER_HOME := $(CURDIR)/.dagster_home_pg
endif
PG_DIR ?= $(CURDIR)/.pg
PG_PORT ?= 5433

.PHONY: setup pools demo test test-deps review-venv system-packages test-s3 test-s3-ray ui query validate clean bench postgres postgres-stop review

# `make test` runs pytest on two workers (pytest-xdist; tests/conftest.py hands out
# a file at a time); TEST_WORKERS=0 is one process (docs/operations.md, "How long the suite takes").
TEST_WORKERS ?= 2
PY_SOURCES := assets cli data_contracts forge jobs resources scripts sensors tests definitions.py

# Concurrency pools (docs/operations.md "Instance"): named pool limits live in the instance's
# storage, not in dagster.yaml, so setup applies them (idempotent; re-applied when these change).
GPU_POOL_LIMIT ?= 1
LLM_POOL_LIMIT ?= 4
POOLS_STAMP := $(DAGSTER_HOME)/.pools-gpu$(GPU_POOL_LIMIT)-llm$(LLM_POOL_LIMIT)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade "pip>=25.1"
	$(PY) -m pip install -q --group test
	@test -f /usr/share/wordnet/data.noun || (apt-get -o DPkg::Lock::Timeout=600 install -y -qq wordnet-base >/dev/null 2>&1 || (apt-get update -qq >/dev/null 2>&1 && apt-get -o DPkg::Lock::Timeout=600 install -y -qq wordnet-base >/dev/null 2>&1)) || echo "wordnet-base not installed: METEOR will be skipped (docs/evals.md)"
	rm -f $(VENV)/.installed-*; touch $(STAMP)

setup: $(STAMP)
	@mkdir -p $(DAGSTER_HOME) $(SUBTEXT_DATA_DIR)
	@if [ -n "$$DAGSTER_PG_URL" ]; then bash scripts/dev_postgres.sh render $(DAGSTER_HOME); fi
	@$(MAKE) --no-print-directory $(POOLS_STAMP)

$(POOLS_STAMP):
	$(VENV)/bin/dagster instance concurrency set gpu $(GPU_POOL_LIMIT)
	$(VENV)/bin/dagster instance concurrency set llm $(LLM_POOL_LIMIT)
	@rm -f $(DAGSTER_HOME)/.pools-*; touch $@

pools: setup
	$(VENV)/bin/dagster instance concurrency get --all

demo: setup
	$(PY) -m cli.build --demo --only-stale $(if $(SELECT),--select $(SELECT)) $(if $(VERBOSE),--verbose)

# The test run's three installs at once (the project's venv, Label Studio's venv, the Debian packages):
# on a fresh CI machine they are mostly downloads, so they overlap instead of queueing.
test-deps:
	@$(MAKE) --no-print-directory -j3 setup review-venv system-packages

review-venv:
	bash scripts/ensure_review.sh

system-packages:
	bash scripts/ensure_system.sh

test: test-deps
	bash scripts/ensure_chromium.sh
	bash scripts/ensure_review.sh
	bash scripts/ensure_lmms.sh
	bash scripts/ensure_postgres.sh
	bash scripts/ensure_strace.sh
	$(PY) -m dagster definitions validate -w workspace.yaml
	@# The project's own bytecode, once (under a second): with PYTHONDONTWRITEBYTECODE set, as on this
	@# machine, every process the suite starts (builds, run workers, code servers) compiled it again.
	$(PY) -m compileall -q -j 0 $(PY_SOURCES) >/dev/null
	$(PY) -m pytest -n $(TEST_WORKERS) --durations=25
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	bash scripts/fresh_clone_check.sh

# The UI loads the recipe profile the data dir was built with (cli/demo.py records it), unless set.
ui: export SUBTEXT_RECIPE_PROFILE ?= $(shell cat $(SUBTEXT_DATA_DIR)/recipe_profile 2>/dev/null)
# `make ui PORT=3001` serves it on another port (127.0.0.1 only).
ui: setup
	$(VENV)/bin/dagster dev -w workspace.yaml -h 127.0.0.1 -p $(or $(PORT),3000)

# Human review (docs/review.md): two Label Studio instances from their own environment
# (.venv-review, installed once): review on 127.0.0.1:8080 (`make review PORT=8081`), SQLite under
# $(SUBTEXT_DATA_DIR)/review; the blind baseline's own on the next port (`BLIND_PORT=9090`), SQLite
# under $(SUBTEXT_DATA_DIR)/review/blind-studio. Ctrl-C stops both.
review: setup
	bash scripts/ensure_review.sh
	$(PY) -m forge.people.server --data-dir $(SUBTEXT_DATA_DIR) $(if $(PORT),--port $(PORT)) $(if $(BLIND_PORT),--blind-port $(BLIND_PORT))

validate: setup
	$(PY) -m dagster definitions validate -w workspace.yaml

# make query Q="select ..." (Q=tables lists every table) or F=file.sql; no DuckDB CLI needed (forge/console/query.py).
# Q reaches Python through the environment (any quotes, several lines); stdout carries only the result.
query: $(STAMP)
	@$(PY) -m forge.console.query query $(if $(F),--file "$(F)",--sql-env Q)

# The demo graph built on a bucket (moto on 127.0.0.1) and on local disk, compared (issue #57,
# docs/operations.md "Object storage"); not part of `make test`: two demo builds take minutes.
test-s3: setup
	$(PY) scripts/s3_build_check.py $(if $(OUT),--out $(OUT)) $(if $(LOCAL_DATA),--local-data $(LOCAL_DATA))

# Frames, OCR and detection on a two-node local Ray cluster sharing only a bucket (moto), against
# one node, plus a killed worker under injected faults (issue #57); not part of `make test`.
test-s3-ray: setup
	$(PY) scripts/ray_bucket_check.py $(if $(OUT),--out $(OUT))

bench: setup
	for f in perf/*.py; do echo "== $$f"; $(PY) $$f || exit 1; done

# A local development Postgres under .pg/ (installed from Debian packages when missing, as root);
# prints the line to export, then every target uses it: `export DAGSTER_PG_URL=...; make ui`.
postgres:
	@bash scripts/ensure_postgres.sh
	@echo "export DAGSTER_PG_URL=$$(bash scripts/dev_postgres.sh start $(PG_DIR) $(PG_PORT))"

postgres-stop:
	bash scripts/dev_postgres.sh stop $(PG_DIR)

clean:
	rm -rf $(SUBTEXT_DATA_DIR) $(DAGSTER_HOME)/.pools-* $(DAGSTER_HOME)/storage $(DAGSTER_HOME)/history $(DAGSTER_HOME)/schedules $(DAGSTER_HOME)/logs
