#!/usr/bin/env bash
# One command for a machine with an NVIDIA GPU (one is enough), without
# Slurm, in at most about 5 minutes:
#
#   tests/gpu/smoke.sh
#
# 1. Finds CUDA's and NCCL's headers and libraries wherever they are:
#    CUDA_HOME/CUDA_PATH/NCCL_HOME, nvcc's CUDA, /usr/local/cuda*, conda
#    (CONDA_PREFIX), the system's (/usr), and pip's nvidia-* packages
#    (site-packages/nvidia/cuda_runtime, .../nccl) of python3.
# 2. Builds only what the GPU tests need into build/smoke (SMOKE_BUILD):
#    libdistbind, the test programs, the fake driver (for one rank of the
#    timeout test); dist-bind-check only where hwloc is (it says so).
# 3. Runs, with a usable GPU required (a skip is a failure here): the
#    real-GPU tests (device choice, two ranks on one GPU, dist-bind-check
#    as a world of one); NCCL as a world of one with config NULL (blocking),
#    non-blocking and an older nccl.h's config, each with the checked
#    all-reduce where its waits can be bounded; the timeout paths: a rank
#    that never starts, and a rank whose NCCL never joins (blocking and
#    non-blocking: the set-up ends at DIST_BIND_TIMEOUT, aborted where it
#    can be); then the figures: NCCL set-up through libdistbind next to bare
#    ncclCommInitRank in the same run, and dist-bind-check's all-reduce.
# 4. Prints one summary line; exit 0 only when nothing failed.
#
# Logs: build/smoke/*.log.  SMOKE_ALLREDUCE_BYTES sets the all-reduce's
# size (default 256 MiB).  The same script runs in `make check` against
# the fake driver, with the CUDA and NCCL it must find laid out as pip
# installs them (tests/gpu/t_fake_smoke.sh).
set -uo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
SB=${SMOKE_BUILD:-$ROOT/build/smoke}
mkdir -p "$SB"
start=$SECONDS
say() { echo "smoke: $*"; }
die() { say "$*" >&2; exit 1; }

# --- 1. find CUDA and NCCL ----------------------------------------------------
prefixes=()
for v in CUDA_HOME CUDA_PATH NCCL_HOME CONDA_PREFIX; do [ -n "${!v:-}" ] && prefixes+=("${!v}"); done
command -v nvcc >/dev/null && prefixes+=("$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")")
for d in /usr/local/cuda /usr/local/cuda-*; do [ -d "$d" ] && prefixes+=("$d"); done
for py in python3 /usr/bin/python3; do
    command -v "$py" >/dev/null || continue
    while read -r p; do
        [ -d "$p" ] && for sub in "$p"/*/; do prefixes+=("${sub%/}"); done
    done < <("$py" -c 'import nvidia; print("\n".join(nvidia.__path__))' 2>/dev/null)
done
prefixes+=(/usr)
incdirs() { for p in "${prefixes[@]}"; do echo "$p/include"; echo "$p/targets/x86_64-linux/include"; done; }
libdirs() {
    for p in "${prefixes[@]}"; do
        echo "$p/lib64"; echo "$p/lib"; echo "$p/lib/x86_64-linux-gnu"; echo "$p/targets/x86_64-linux/lib"
    done
}
first_with() { # first_with PATTERN DIR...: the first DIR holding PATTERN
    local pat=$1 d
    shift
    for d in "$@"; do compgen -G "$d/$pat" >/dev/null && { echo "$d"; return; }; done
}
mapfile -t INC < <(incdirs)
mapfile -t LIB < <(libdirs)
cuda_inc=$(first_with cuda_runtime_api.h "${INC[@]}")
nccl_inc=$(first_with nccl.h "${INC[@]}")
[ -n "$cuda_inc" ] || die "no cuda_runtime_api.h found (set CUDA_HOME, or pip install nvidia-cuda-runtime-cu12)"
[ -n "$nccl_inc" ] || die "no nccl.h found (set NCCL_HOME, or pip install nvidia-nccl-cu12)"
major=$(sed -n 's/^#define CUDART_VERSION *\([0-9]*\)/\1/p' "$cuda_inc/cuda_runtime_api.h")
major=$((major / 1000))
cuda_lib=$(first_with "libcudart.so.$major" "${LIB[@]}")
[ -n "$cuda_lib" ] || cuda_lib=$(first_with "libcudart.so.[0-9]*" "${LIB[@]}")
nccl_lib=$(first_with "libnccl.so.2" "${LIB[@]}")
[ -n "$cuda_lib" ] || die "no libcudart.so found"
[ -n "$nccl_lib" ] || die "no libnccl.so.2 found"
say "CUDA $major headers in $cuda_inc, libcudart in $cuda_lib; NCCL headers in $nccl_inc, libnccl in $nccl_lib"

# One CUDA_HOME for the build: both sets of headers in one folder.
home=$SB/cuda
rm -rf "$home" && mkdir -p "$home/include" "$home/lib64"
for d in "$cuda_inc" "$nccl_inc"; do
    for f in "$d"/*; do [ -e "$home/include/$(basename "$f")" ] || ln -s "$f" "$home/include/"; done
done
export LD_LIBRARY_PATH=$cuda_lib:$nccl_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

# --- 2. build only what is needed ---------------------------------------------
targets=("$SB/libdistbind.so" "$SB/rt-tests/gpu_probe" "$SB/rt-tests/gpu_nccl_rank" "$SB/rt-tests/gpu_init_bench"
         "$SB/tests/gpu_nccl_world1" "$SB/fake/libcudart.so.13" "$SB/fake/libnccl.so.2" "$SB/fake/nvidia-smi")
if pkg-config --exists hwloc 2>/dev/null; then
    have_check=1
    targets+=("$SB/dist-bind-check")
else
    have_check=""
    say "hwloc not found (pkg-config hwloc): dist-bind-check is not built, its tests are skipped"
fi
make -j"$(nproc)" --no-print-directory B="$SB" CUDA_HOME="$home" "${targets[@]}" >"$SB/build.log" 2>&1 \
    || { tail -20 "$SB/build.log"; die "build failed (log: $SB/build.log)"; }
grep -q cudaGetDeviceProperties "$SB/libdistbind.so" || die "libdistbind was built without its GPU parts"
say "built in $((SECONDS - start)) s"

# --- 3. the tests ----------------------------------------------------------------
export DIST_BIND_BUILD=$SB DIST_BIND_GPU_REQUIRED=1
. "$ROOT/tests/gpu/lib.sh"
pass=0 failed=() skipped=()
result() { # result NAME RC
    if [ "$2" = 0 ]; then pass=$((pass + 1)); echo "  PASS $1"; else failed+=("$1"); echo "  FAIL $1 (log: $SB/$1.log)"; fi
}
run() { # run NAME COMMAND...
    local name=$1
    shift
    timeout -k 5 120 "$@" >"$SB/$name.log" 2>&1
    result "$name" $?
}
run t_device_choice "$ROOT/tests/gpu/t_device_choice.sh"
run t_duplicate_gpu "$ROOT/tests/gpu/t_duplicate_gpu.sh"
if [ -n "$have_check" ]; then run t_check_world1 "$ROOT/tests/gpu/t_check_world1.sh"; else skipped+=(t_check_world1); fi
run nccl_world1 "$SB/tests/gpu_nccl_world1"

# Timeout paths.  A rank that never starts: rank 0's set-up names it.
out=$(one_rank env WORLD_SIZE=2 DIST_BIND_TIMEOUT=3 "$PROBE" 2>&1)
echo "$out" >"$SB/timeout_missing_rank.log"
[[ $out == "ERR DISTBIND_ERR_TIMEOUT"*"rank 1"* ]]
result timeout_missing_rank $?
# A rank whose NCCL never joins: rank 1 runs on the fake driver, whose NCCL
# fails (a real id means nothing to it), so rank 0's real NCCL waits for it.
state=$(mktemp -d)
RANK_ENV_1=(LD_LIBRARY_PATH="$SB/fake:$LD_LIBRARY_PATH" FAKEGPU_DEVICES=bus=0000:99:00.0 FAKEGPU_STATE="$state"
            FAKEGPU_NCCL=fail-init=1)
for mode in null nonblocking; do
    LIMIT=60 ranks 2 DIST_BIND_TIMEOUT=8 DIST_BIND_DEVICE=0 -- "$RANKP" "$mode"
    printf '%s\n--\n%s\n' "${OUT[0]}" "${OUT[1]}" >"$SB/timeout_nccl_$mode.log"
    want="*NCCL communicator set-up did not finish within 8 s*"
    [ "$mode" = nonblocking ] && want="*did not finish within 8 s on rank 0, so it was aborted*"
    # shellcheck disable=SC2053
    [[ ${OUT[0]} == *"ERR DISTBIND_ERR_TIMEOUT"$want && ${RC[0]} = 1 && ${OUT[1]} == *"ERR DISTBIND_ERR_"* ]]
    result "timeout_nccl_$mode" $?
done
unset RANK_ENV_1
rm -rf "$state"

# --- 4. figures and summary ----------------------------------------------------
init=$("$SB/rt-tests/gpu_init_bench" 20 2>&1 | tail -1)
echo "$init" >"$SB/init_bench.log"
[[ $init == INIT* ]]
result init_bench $?
figures="NCCL set-up, world of one: $(sed -E 's/^INIT rounds=([0-9]+) distbind_ms=([0-9.]+) bare_ms=([0-9.]+) ratio=([0-9.]+)/libdistbind \2 ms, bare ncclCommInitRank \3 ms, ratio \4 (median of \1)/' <<<"$init")"
if [ -n "$have_check" ]; then
    out=$(one_rank env CUDA_VISIBLE_DEVICES="${CUDA_VISIBLE_DEVICES:-0}" "$CHECK" --bytes "${SMOKE_ALLREDUCE_BYTES:-268435456}" \
        --iters 20 2>&1)
    echo "$out" >"$SB/allreduce.log"
    line=$(grep -o 'NCCL all-reduce: .*' <<<"$out")
    [ -n "$line" ]
    result allreduce_figure $?
    figures+="; dist-bind-check ${line#NCCL }"
fi
summary="${#failed[@]} failed"
[ ${#failed[@]} -gt 0 ] && summary+=" (${failed[*]})"
[ ${#skipped[@]} -gt 0 ] && summary+=", ${#skipped[@]} skipped (${skipped[*]}: no hwloc)"
say "$pass passed, $summary in $((SECONDS - start)) s; $figures"
[ ${#failed[@]} -eq 0 ]
