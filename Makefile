# Two commands on a fresh machine:  `make run`  (the main job on the embedded default)  and  `make test`.
# Each does its own set-up the first time: a virtualenv with the pinned packages, and the JVM artifacts
# (Kafka broker, Spark's Kafka source, Delta) resolved once from Maven Central into .cache/jars.

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup run smoke test test-long test-unit test-integration typecheck lint bench clean java-assignor

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info[:2] == (3, 11) else "Python 3.11 is required (found " + sys.version.split()[0] + "); set PYTHON=/path/to/python3.11")'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@touch $@

setup: $(STAMP)
	@$(BIN)/rebalancer setup

run: setup
	$(BIN)/rebalancer demo

smoke: setup
	$(BIN)/rebalancer smoke

# what CI runs: every test but the long proofs (each has a shorter form here); its measured time: README.
# Two worker processes (pytest-xdist), each test file whole in one of them (its module fixtures start once):
# one worker's waits on Kafka and Spark leave the cores to the other's work.
test: setup typecheck lint
	$(BIN)/python -m pytest tests -n 2 --dist loadfile --no-loadscope-reorder --durations=15

# the long proofs (an hour or more, alone on the machine): their results go to benchmarks/results/long/
test-long: setup
	$(BIN)/python -m benchmarks.long

test-unit: $(STAMP)
	$(BIN)/python -m pytest tests -m "not integration and not java"

test-integration: setup
	$(BIN)/python -m pytest tests -m "integration or java"

# the Java RecommendationAssignor (clients/java) into .cache/java/assignor; offline after the first resolve
java-assignor: setup
	mvn -B -q -s conf/maven/settings.xml -Dmaven.repo.local=.cache/m2 -f clients/java/pom.xml package
	@ls .cache/java/assignor/rebalancer-assignor-*.jar

# mypy over assignors/ and streaming/ ([tool.mypy] in pyproject.toml)
typecheck: $(STAMP)
	$(BIN)/python -m mypy

lint: $(STAMP)
	$(BIN)/ruff check .

bench: setup
	$(BIN)/python -m benchmarks.speed
	$(BIN)/python -m benchmarks.quality

clean:
	rm -rf .cache/kafka .cache/logs data checkpoints/*/
