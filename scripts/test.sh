#!/usr/bin/env bash
# Set up (idempotent, with test tools) and run the whole test suite. Extra args go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --test
exec .venv/bin/python -m pytest "$@"
