#!/usr/bin/env bash
# llama.cpp's own llama-bench, built from the very sdist FlowCall pins, with the build options
# that change prompt speed (issue 12, point 3). It prints llama-bench's table for each build
# and batch size, at FLOWCALL_THREADS (default: the physical cores), on the embedded model, so
# the rates can be set beside benchmarks/latency.py's "raw speed" line for llama-cpp-python.
#
#   bash benchmarks/build_options.sh [variant ...]     variants: product avx2 openblas noopenmp
#
# product   the flags scripts/setup.sh picks for this CPU (OpenMP and llamafile's kernels on)
# avx2      AVX2/FMA/F16C only, as setup.sh picks on an AVX2-only CPU (e.g. an older AMD EPYC)
# openblas  product + OpenBLAS for the big matrix products (needs Debian's libopenblas-dev)
# noopenmp  product with ggml's own thread pool instead of OpenMP
# Each build takes ~5 min on 2 cores; they are kept under $WORK (default /tmp/flowcall-bench).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
WORK=${WORK:-/tmp/flowcall-bench}
VERSION=$(grep -Po '^llama-cpp-python==\K.*' requirements.txt)
MODEL=${MODEL:-$(.venv/bin/python -c 'from flowcall import config; print(config.model_path())')}
THREADS=${FLOWCALL_THREADS:-$(.venv/bin/python -c 'from flowcall import config; print(config.model_threads())')}
VARIANTS=("$@")
((${#VARIANTS[@]})) || VARIANTS=(product avx2 openblas noopenmp)

mkdir -p "$WORK"
SRC="$WORK/llama_cpp_python-$VERSION/vendor/llama.cpp"
if [[ ! -d $SRC ]]; then
  (cd "$WORK" && "$ROOT/.venv/bin/python" -m pip download -q --no-deps --no-binary :all: "llama-cpp-python==$VERSION" -d . \
     && tar xzf "llama_cpp_python-$VERSION.tar.gz")
fi

# the same choice as scripts/setup.sh
base="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON"
cpu=$base
flags=$(grep -m1 '^flags' /proc/cpuinfo || true)
for pair in avx512f:AVX512 avx512vbmi:AVX512_VBMI avx512_vnni:AVX512_VNNI avx512_bf16:AVX512_BF16 avx_vnni:AVX_VNNI; do
  [[ " $flags " == *" ${pair%%:*} "* ]] && cpu+=" -DGGML_${pair#*:}=ON"
done

build_of() {
  case $1 in
    product)  echo "$cpu" ;;
    avx2)     echo "$base" ;;
    openblas) echo "$cpu -DGGML_BLAS=ON -DGGML_BLAS_VENDOR=OpenBLAS" ;;
    noopenmp) echo "$cpu -DGGML_OPENMP=OFF" ;;
    *) echo "unknown variant $1" >&2; exit 2 ;;
  esac
}

# every build first, then every measurement: a compile beside a benchmark spoils its figures
for variant in "${VARIANTS[@]}"; do
  args=$(build_of "$variant")
  build="$WORK/build-$variant"
  if [[ ! -x $build/bin/llama-bench ]]; then
    echo "==> building llama-bench ($variant)" >&2
    # shellcheck disable=SC2086
    cmake -S "$SRC" -B "$build" -DCMAKE_BUILD_TYPE=Release -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF \
      -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF $args >"$build.log" 2>&1
    cmake --build "$build" --target llama-bench -j "$(nproc)" >>"$build.log" 2>&1
  fi
done
for variant in "${VARIANTS[@]}"; do
  for batch in 64 512; do
    echo "### $variant, batch $batch, $THREADS threads"
    "$WORK/build-$variant/bin/llama-bench" -m "$MODEL" -t "$THREADS" -b "$batch" -ub "$batch" -p 512 -n 128 -r 5 -o md
  done
done
