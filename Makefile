# The two commands that matter: `make demo` and `make test`. Both install what is missing first.
SHELL := /bin/bash
.DEFAULT_GOAL := help
.PHONY: help setup up down test test-py312 lint demo bench unit integration system clean

help:
	@echo "make demo   set up, start the stack, run the demo"
	@echo "make test   set up, run lint and every test tier against the real stack"
	@echo "make test-py312  the unit tier again on Python 3.12, when the machine has one"
	@echo "make bench  set up, measure the product against its peers, write docs/benchmarks.md"
	@echo "make setup | up | down | lint | unit | integration | system"
	@echo "make clean  remove generated leftovers, safe to rebuild (refuses while the stack runs:"
	@echo "            make down first): tool caches, __pycache__, build/, spark-warehouse/,"
	@echo "            metastore_db/, derby.log, test-artifacts/, and .state/pg when it is a"
	@echo "            dangling link or an aborted initdb; never .venv, secrets, jars, data, topics,"
	@echo "            Airflow, GX, pipelines.d or the live cluster. Lists other PostgreSQL cluster"
	@echo "            folders in RECON_PG_HOME; DRY=1 only lists, ORPHANS=1 also removes orphaned ones"

setup:
	@bash scripts/setup.sh

up: setup
	@bash scripts/up.sh

down:
	@bash scripts/down.sh

lint: setup
	@bash scripts/lint.sh

test: setup
	@bash scripts/test.sh

test-py312: setup
	@bash scripts/test_py312.sh

demo: setup
	@bash scripts/demo.sh

bench: setup
	@bash scripts/bench.sh

unit integration system: setup
	@. scripts/test-env.sh && bash scripts/up.sh && scripts/with-env.sh python -m pytest -m $@

clean:
	@bash scripts/clean.sh $(if $(DRY),--dry-run) $(if $(ORPHANS),--orphan-clusters)
