#!/usr/bin/env bash
# Set up (idempotent, with test tools) and run the whole test suite. Extra args go to pytest.
# Two passes: the tests that need no model, browser or worker processes run two at a time
# (most of their time is spent waiting on servers and subprocesses); then the rest one at a
# time, because two copies of the model on two cores run many times slower than one after the
# other (tests/conftest.py says which tests are which).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --test
SERIAL="model or browser or workers"
status=0
# pytest exits 5 when a pass selects no test (a path given to only one of them)
.venv/bin/python -m pytest -n 2 --dist loadscope -m "not ($SERIAL)" "$@" || { s=$?; ((s == 5)) || status=$s; }
.venv/bin/python -m pytest -p no:xdist -m "$SERIAL" "$@" || { s=$?; ((s == 5)) || status=$s; }
exit $status
