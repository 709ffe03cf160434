# Quick start:  make demo   (set up, then run the experiments and a benchmark into results/)
#               make test   (set up, then run the whole test suite)
VENV   ?= .venv
PYTHON ?= python3
PY      = $(VENV)/bin/python
EXTRAS  = test,crosscheck,examples,mpi,cuda

.PHONY: setup demo test check bench clean

setup: $(VENV)/.installed

$(VENV)/.installed: setup.cfg pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[$(EXTRAS)]"
	touch $@

demo: setup
	$(PY) -m tinynorm demo --out results

test: setup
	$(PY) -m pytest -q

# The edit-test loop: everything but the CUDA tests, the experiments, MPI and the tutorial scripts.
check: setup
	$(PY) -m pytest -q -m "not slow"

bench: setup
	$(PY) -m tinynorm bench

clean:
	rm -rf $(VENV) results build *.egg-info
