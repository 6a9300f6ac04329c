#!/usr/bin/env bash
# Build and run every GPU test on a machine with an NVIDIA GPU (one is
# enough), in a few minutes.  Needs g++, make, CUDA and NCCL (CUDA_HOME,
# default /usr/local/cuda); Slurm is not needed.
#
#   tests/gpu/run-on-gpu.sh
#
# Here a test that finds no usable GPU fails instead of being skipped
# (DIST_BIND_GPU_REQUIRED=1): on a GPU machine that is a broken driver or
# build, not a pass.  Exit 0 only when every GPU test passed.
set -euo pipefail
cd "$(dirname "$0")/../.."
start=$SECONDS
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
export CUDA_HOME

command -v nvidia-smi >/dev/null || { echo "run-on-gpu: nvidia-smi not found: not a GPU machine?" >&2; exit 1; }
nvidia-smi -L
for h in cuda_runtime_api.h nccl.h; do
    [ -f "$CUDA_HOME/include/$h" ] || { echo "run-on-gpu: $CUDA_HOME/include/$h not found (set CUDA_HOME)" >&2; exit 1; }
done
# libdistbind loads libcudart and libnccl at run time: make sure it can.
export LD_LIBRARY_PATH=$CUDA_HOME/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

# Only what the GPU tests use (no Slurm headers needed).
targets=(build/libdistbind.so build/dist-bind-check)
for c in tests/gpu/*.c; do n=$(basename "$c" .c); targets+=("build/tests/gpu_$n"); done
for c in tests/gpu/helpers/*.c; do n=$(basename "$c" .c); targets+=("build/rt-tests/gpu_$n"); done
make -j"$(nproc)" --no-print-directory CUDA_HOME="$CUDA_HOME" "${targets[@]}"
grep -q DB_HAVE_CUDA <(make -s --no-print-directory -pn build/libdistbind.so 2>/dev/null | grep '^RT_FLAGS') \
    || { echo "run-on-gpu: the build did not find CUDA/NCCL headers under $CUDA_HOME" >&2; exit 1; }

export DIST_BIND_GPU_REQUIRED=1
mkdir -p build/test-logs
set +e
tests/run.sh gpu | tee build/test-logs/run-on-gpu.txt
rc=${PIPESTATUS[0]}
set -e
summary=$(tail -1 build/test-logs/run-on-gpu.txt)
if [[ $summary != *" 0 failed, 0 skipped" ]]; then
    echo "run-on-gpu: not every GPU test passed ($summary)" >&2
    rc=1
fi
echo "run-on-gpu: done in $((SECONDS - start)) s"
exit "$rc"
