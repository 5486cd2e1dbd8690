#!/usr/bin/env bash
# Set up (idempotent) and start the FlowCall studio on the embedded model.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
if [[ -z "${FLOWCALL_MODEL_PATH:-}" ]]; then
  # the example flows' fixed prompts, read once into the prompt cache: their first run is quick
  .venv/bin/flowcall model warm || echo "(the warm-up failed; the first run will read its whole prompt)"
fi
echo "Open http://${FLOWCALL_HOST:-127.0.0.1}:${FLOWCALL_PORT:-8501}"
exec .venv/bin/streamlit run app.py --server.address "${FLOWCALL_HOST:-127.0.0.1}" \
  --server.port "${FLOWCALL_PORT:-8501}" --server.headless true --browser.gatherUsageStats false
