#!/usr/bin/env bash
# Set up (idempotent) and start the FlowCall studio on the embedded model.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
home=${FLOWCALL_HOME:-$HOME/.flowcall}
if [[ -z "${FLOWCALL_MODEL_PATH:-}" ]]; then
  # The example flows' fixed prompts, read once into the prompt cache, in the background: the
  # studio answers at once, and a run before the warm-up ends is only slower (the studio says so).
  mkdir -p "$home"
  nohup .venv/bin/flowcall model warm >"$home/warm-up.log" 2>&1 &
  echo "Warming the embedded model's prompt cache in the background (log: $home/warm-up.log)."
else
  echo "FLOWCALL_MODEL_PATH is set: the studio uses $FLOWCALL_MODEL_PATH as it is. It is not fetched" \
    "or checked, and its prompt cache is not warmed (run \`.venv/bin/flowcall model warm\` for that)."
fi
# `flowcall studio`: the studio behind its server guard, with its settings (as the installed wheel)
exec .venv/bin/flowcall studio --host "${FLOWCALL_HOST:-127.0.0.1}" --port "${FLOWCALL_PORT:-8501}"
