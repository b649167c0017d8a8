# The two commands of the README:
#   make run   - set up, then `kedro run` (all eight pipelines on the embedded sample, offline)
#   make test  - set up, then the tests and the linter
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
UV := $(VENV)/bin/uv
# uv as requirements.lock pins it
UV_VERSION := 0.13.9
LOCK_INPUTS := pyproject.toml requirements.in --extra test
LOCK_FLAGS := -q --universal --python-version 3.11 --generate-hashes --no-emit-package torch --custom-compile-command "make lock"
PYTHON_SOURCES := src tests benchmarks mkdocs_hooks.py
export KEDRO_DISABLE_TELEMETRY := 1

.PHONY: setup system-packages test-tools run test type-check test-suite test-fast clean lock lock-upgrade

system-packages:
	@if ! command -v dot >/dev/null || ! command -v tesseract >/dev/null || \
	    ! test -f /usr/share/opencv4/haarcascades/haarcascade_frontalface_default.xml; then \
	  if command -v apt-get >/dev/null; then \
	    SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	    $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq graphviz tesseract-ocr opencv-data; \
	  else \
	    echo "Install Graphviz, Tesseract and OpenCV's cascades (see README, 'System packages'), then rerun." >&2; exit 1; \
	  fi; \
	fi

# What some tests need beside Python, installed where apt-get is (those tests skip elsewhere): headless Chromium
# (the report, Kedro-Viz and the review app's pages in a real browser) and PostgreSQL's server binaries (the review
# app's store tests start their own server in a temporary folder; the service itself is never started).
test-tools:
	@if ! command -v chromium >/dev/null && command -v apt-get >/dev/null; then \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  { $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq chromium; } || echo "chromium not installed: the browser tests will skip" >&2; \
	fi
	@if ! command -v initdb >/dev/null && ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && command -v apt-get >/dev/null; then \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  { $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq postgresql; } || echo "postgresql not installed: the review store's PostgreSQL tests will skip" >&2; \
	fi

# The environment is requirements.lock, installed exactly by uv (itself locked): every package at its version
# and hash, nothing resolved anew, anything else removed, compiled to bytecode as pip does (uv does not by
# default, and where PYTHONDONTWRITEBYTECODE is set every process would compile what it imports: a kedro
# command started in 7.7 s instead of 3.4 s). Then torch with pip, pinned and without dependencies (the lock
# holds them): an unpinned resolve pulls a multi-GB CUDA build, and pip takes the CPU build where it lies on
# disk. Then SciIR itself, editable.
$(VENV)/.installed: pyproject.toml requirements.lock
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q "uv==$(UV_VERSION)"
	$(UV) pip sync -q --python $(PY) --require-hashes --compile-bytecode requirements.lock
	$(PY) -m pip install -q --no-deps "torch==2.13.0"
	$(UV) pip install -q --python $(PY) --no-deps -e .
	touch $@

setup: system-packages $(VENV)/.installed

# requirements.lock from pyproject.toml (dependencies and the test extra) and requirements.in, for every
# platform, stamped with its inputs' sha256 (tests/test_environment_lock.py checks the stamp). The versions
# locked stay where the inputs still allow them; `make lock-upgrade` takes the newest allowed.
lock: $(VENV)/.installed
	$(UV) pip compile $(LOCK_INPUTS) $(LOCK_FLAGS) -o requirements.lock
	$(PY) -m sciir.runs.environment_lock stamp

lock-upgrade: LOCK_FLAGS += --upgrade
lock-upgrade: lock

run: setup
	$(VENV)/bin/kedro run

test: setup test-tools
	$(VENV)/bin/ruff check $(PYTHON_SOURCES)
	$(VENV)/bin/ruff format --check $(PYTHON_SOURCES)
	# The documentation site (mkdocs.yml) into site/: a broken link, anchor or page, or an unreadable docstring, fails it
	# (not -q: it would hide the warnings that --strict counts, and the build would pass).
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict
	# mypy beside the tests: alone it keeps one core busy for a minute and a half while the other waits.
	$(MAKE) --no-print-directory -j2 type-check test-suite

type-check:
	$(VENV)/bin/mypy

# One worker per core (three on two cores were no faster: docs/benchmarks.md, issue 38); a module's tests stay on one worker, the longest groups sent first (tests/conftest.py). The 15 slowest are printed.
# Python writes bytecode as it does by default, even where PYTHONDONTWRITEBYTECODE is set (as on CI): each of the
# suite's hundreds of processes (kedro commands in the project's copies, benchmarks) would otherwise compile the
# modules it imports again, and the suite runs as a newcomer's Python does.
test-suite:
	env -u PYTHONDONTWRITEBYTECODE $(VENV)/bin/pytest -q -n auto --dist loadgroup --no-loadscope-reorder --durations=15

# The inner loop (docs/CONTRIBUTING.md): the linter and every test but the slow kinds (a fresh clone or a default
# run, a browser, a test of seconds: the markers in pyproject.toml), on every core.
test-fast: setup
	$(VENV)/bin/ruff check $(PYTHON_SOURCES)
	env -u PYTHONDONTWRITEBYTECODE $(VENV)/bin/pytest -q -n auto --dist loadgroup -m "not e2e and not browser and not slow" --durations=5

clean:
	find data -mindepth 2 -not -name .gitkeep -delete 2>/dev/null; rm -rf data/cache mlruns
