#!/usr/bin/env bash
# Set up (idempotent) and start the FlowCall studio on the embedded model.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
echo "Open http://${FLOWCALL_HOST:-127.0.0.1}:${FLOWCALL_PORT:-8501}"
exec .venv/bin/streamlit run app.py --server.address "${FLOWCALL_HOST:-127.0.0.1}" \
  --server.port "${FLOWCALL_PORT:-8501}" --server.headless true --browser.gatherUsageStats false
