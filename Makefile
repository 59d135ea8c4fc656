# Two commands on a fresh machine: `make run` and `make test`.
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run test install lint bench clean

$(STAMP): pyproject.toml scripts/install.sh tests/node/package-lock.json
	bash scripts/install.sh --venv $(VENV)
	touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(VENV)/bin/sparkwire serve --host 127.0.0.1 --port 6875 --data-dir ./data

test: $(STAMP)
	$(VENV)/bin/ruff check server planner spark_backend tests bench
	$(PY) -m pytest -q -p no:cacheprovider -n 2 --dist loadfile --durations=40 tests

lint: $(STAMP)
	$(VENV)/bin/ruff check server planner spark_backend tests bench

bench: $(STAMP)
	$(PY) bench/bench_select.py
	$(PY) bench/bench_insert.py
	$(PY) bench/bench_startup.py

clean:
	rm -rf $(VENV) data spark-warehouse metastore_db

# The sqllogictest conformance run against a real PostgreSQL 15 (tests/slt/README.md): every
# record of every file by default (hours on 2 cores); `make conformance SAMPLE=20` runs every
# 20th query of the third-party files. Writes its figures to CONFORMANCE.md and README.md.
.PHONY: conformance
SAMPLE ?= 1
conformance: $(STAMP)
	$(PY) -m tests.slt --sample $(SAMPLE) --report CONFORMANCE.md
	$(PY) -m tests.readme_catalog --write
