# fx-katas: every target sets up .venv on first use (torch==2.13.0 pinned), then runs the checker.
#   make kata N=1      score your attempt at kata 1
#   make test          the repository's self-tests (what CI runs)
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.fx-katas-installed
N ?= 1

.PHONY: setup kata test list clean-venv

setup: $(STAMP)

$(STAMP): pyproject.toml
	@test -x $(PY) || { echo "fx-katas: creating $(VENV) (first run only)"; $(PYTHON) -m venv $(VENV); }
	@echo "fx-katas: installing torch==2.13.0 and the checker into $(VENV) (about a minute, first run only)"
	@$(PY) -m pip install --quiet --disable-pip-version-check -e '.[test]' 2>&1 | grep -v "is ignored: it is neither a file nor a directory" || true
	@$(PY) -c "import torch, hypothesis, pytest, xdist" || { echo "fx-katas: installation failed, see the pip output above"; exit 1; }
	@touch $(STAMP)

kata: $(STAMP)
	@$(PY) -m checker kata $(N) $(ARGS)

list: $(STAMP)
	@$(PY) -m checker list

test: $(STAMP)
	$(PY) -m pytest -n auto -q $(ARGS)

clean-venv:
	rm -rf $(VENV)
