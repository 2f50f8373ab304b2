# fx-katas: every target sets up .venv on first use (torch==2.13.0 pinned), then runs the checker.
#   make kata N=1      score your attempt at kata 1          make hint N=1      the next hint for kata 1
#   make watch N=1     re-run kata 1's checks on every save  make progress      every kata, one table
#   make reset N=1     back up your attempt, restore the stub; make restore [N=1 BACKUP=<name>] lists/puts back
#   make diff N=1      your attempt next to the reference    make grade DIR=<folder of learners>  (mentors)
#   make graph N=1     pictures of kata 1's graphs (HTML)    make gradescope    autograder.zip for Gradescope (mentors)
#   make test          the repository's self-tests (what CI runs)   make bench   feedback-loop timings
#   make real-models   the references on tiny transformers models: docs/real-models.md's table
#   make mutate N=3    kata authors: mutation testing of kata 3's checks, rewrites its hidden/mutation.toml
#                      (no N: every kata, one after another; ARGS="--mutant ID" explains one mutant)
# Extra checker options go in ARGS, e.g. make kata N=1 ARGS=--verbose
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.fx-katas-installed
TEST_STAMP := $(VENV)/.fx-katas-test-tools
N ?= 1
# N as given on the command line (or environment), empty when only the default above applies:
# `make restore` lists every kata's backups, and `make reset` refuses to guess which kata to reset.
GIVEN_N = $(if $(filter file default undefined,$(origin N)),,$(N))

.PHONY: setup kata test list clean-venv hint watch reset restore progress diff graph grade gradescope gradescope-check bench mutate real-models verdicts

setup: $(STAMP)

# What a learner needs. On Linux x86-64, where the configured index would bring torch's multi-GB CUDA build,
# torch comes from PyTorch's CPU wheel index first (setup/torch_wheel.py decides; it prints nothing otherwise).
$(STAMP): pyproject.toml
	@test -x $(PY) || { echo "fx-katas: creating $(VENV) (first run only)"; $(PYTHON) -m venv $(VENV); }
	@echo "fx-katas: installing torch==2.13.0 and the checker into $(VENV) (about a minute, first run only)"
	@index="$$($(PY) setup/torch_wheel.py)"; [ -z "$$index" ] || { echo "fx-katas: taking PyTorch's CPU build ($$index)"; \
	  $(PY) -m pip install --quiet --disable-pip-version-check torch==2.13.0 $$index; }
	@$(PY) -m pip install --quiet --disable-pip-version-check -e . 2>&1 | grep -v "is ignored: it is neither a file nor a directory" || true
	@$(PY) -c "import torch, hypothesis, grandalf, transformers, katas.common.pt2e" || { echo "fx-katas: installation failed, see the pip output above"; exit 1; }
	@touch $(STAMP)

# What the self-tests and the authors' tools add (pytest, xdist, cosmic-ray, jsonschema): not a learner's concern.
$(TEST_STAMP): $(STAMP)
	@$(PY) -m pip install --quiet --disable-pip-version-check -e '.[test]' 2>&1 | grep -v "is ignored: it is neither a file nor a directory" || true
	@$(PY) -c "import pytest, xdist, cosmic_ray, jsonschema" || { echo "fx-katas: installing the test tools failed, see the pip output above"; exit 1; }
	@touch $(TEST_STAMP)

# The last lines of the output say pass/fail; make's own "Error 1" line would read like a crash to a newcomer,
# so learner-facing targets exit 0. Scripts that need the verdict as an exit code call `python -m checker`.
kata: $(STAMP)
	@$(PY) -m checker kata $(N) $(ARGS) || true

list: $(STAMP)
	@$(PY) -m checker list

hint: $(STAMP)
	@$(PY) -m checker hint $(N) $(ARGS)

watch: $(STAMP)
	@$(PY) -m checker watch $(N) $(ARGS)

# Without N the checker only says which katas there are; that is guidance, not a failure make should echo.
reset: $(STAMP)
	@$(PY) -m checker reset $(GIVEN_N) $(ARGS) || [ -z "$(GIVEN_N)" ]

restore: $(STAMP)
	@$(PY) -m checker restore $(GIVEN_N) $(BACKUP) $(ARGS)

progress: $(STAMP)
	@$(PY) -m checker all $(ARGS)

diff: $(STAMP)
	@$(PY) -m checker diff $(N) $(ARGS)

graph: $(STAMP)
	@$(PY) -m checker graph $(N) $(ARGS) || true

gradescope: $(STAMP)
	@$(PY) -m checker gradescope-bundle $(ARGS)

# The Gradescope autograder end to end (setup.sh installs torch in a new venv: slow); writes tests/gradescope/e2e.json
gradescope-check: $(TEST_STAMP)
	@$(PY) tests/gradescope_e2e.py

# As root with apt-get (a container), grading first installs bubblewrap, the sandbox attempts run in.
grade: $(STAMP)
	@command -v bwrap >/dev/null 2>&1 || [ "$$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1 \
	  || { echo "fx-katas: installing Debian's bubblewrap to sandbox the attempts (first run only)"; \
	       apt-get install -y -q bubblewrap >/dev/null 2>&1 \
	       || { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q bubblewrap >/dev/null 2>&1; } \
	       || echo "fx-katas: could not install bubblewrap; checker grade says which sandbox it used"; }
	@$(PY) -m checker grade $(DIR) $(ARGS)

# Mutation testing writes the report, unless ARGS only asks about mutants (--mutant ID, --list).
mutate: $(TEST_STAMP)
	@$(PY) -m checker mutate $(GIVEN_N) $(if $(filter --mutant% --list,$(ARGS)),,--write) $(ARGS)

bench: $(TEST_STAMP)
	@$(PY) tests/bench.py $(ARGS)

# The references on tiny transformers models (katas/common/real_models.py): writes tests/real_models.json and the
# table in docs/real-models.md. About 10 minutes on 2 cores; tests/test_real_models.py says when it is out of date.
real-models: $(TEST_STAMP)
	@$(PY) tests/real_model_table.py --write $(ARGS)

# Every kata's reference, pristine stub, first mutant and first alternative scored through the checker, cold and warm:
# writes tests/verdicts.json, which `make test` trusts for every kata but the smoke one while it is current (about
# 5 minutes on 2 cores; N=k re-records one kata, N=1,4 several).
verdicts: $(TEST_STAMP)
	FX_KATAS_RECORD_VERDICTS=$(or $(GIVEN_N),all) $(PY) -m pytest -n auto --dist worksteal -q tests/test_katas.py $(ARGS)

test: $(TEST_STAMP)
	@tests/setup_system_packages.sh
	$(PY) -m pytest -n auto --dist worksteal -q $(ARGS)

clean-venv:
	rm -rf $(VENV)
