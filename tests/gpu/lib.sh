# shellcheck shell=bash
# Shared by the GPU test scripts (sourced).  A test without a usable GPU
# exits 77 (skipped), or fails when DIST_BIND_GPU_REQUIRED is set (as
# smoke.sh and the fake-driver tests do, so a broken driver is not a pass).
#
# DIST_BIND_BUILD names the build folder (default build/; make coverage-gpu
# uses build/cov).  use_fake puts the fake driver of tests/gpu/fake in
# place of the real one, the way a real one is found: LD_LIBRARY_PATH.
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${DIST_BIND_BUILD:-$ROOT/build}
PROBE=$BUILD/rt-tests/gpu_probe
RANKP=$BUILD/rt-tests/gpu_nccl_rank
CHECK=$BUILD/dist-bind-check
fails=0

skip() {
    if [ -n "${DIST_BIND_GPU_REQUIRED:-}" ]; then echo "FAIL: a GPU was required: $*"; exit 1; fi
    echo "SKIP: $*"
    exit 77
}
ok() { echo "  ok   $*"; }
bad() { echo "  FAIL $*"; fails=$((fails + 1)); }
done_() { [ "$fails" -eq 0 ] && echo "passed" || echo "$fails failed"; exit $((fails > 0)); }

need_built() {
    local f
    for f in "$@"; do [ -x "$f" ] || skip "$f not built (make check builds it)"; done
}

# The machine's GPUs in PCI order (nvidia-smi's and CUDA_DEVICE_ORDER=
# PCI_BUS_ID's), as normalised bus ids, into the array BUS; skips without.
load_gpu_buses() {
    command -v nvidia-smi >/dev/null || skip "nvidia-smi not found"
    mapfile -t BUS < <(nvidia-smi --query-gpu=pci.bus_id --format=csv,noheader 2>/dev/null | norm_bus)
    [ ${#BUS[@]} -gt 0 ] || skip "nvidia-smi lists no GPU"
}

# "00000000:3B:00.0" (nvidia-smi) and "0000:3b:00.0" (CUDA) alike.
norm_bus() { tr 'A-Z' 'a-z' | sed -E 's/^0*([0-9a-f]{4}:)/\1/'; }

# The step's secret every rank of a TCP step must share (srun --dist-bind
# draws one; here each step of ranks gets its own).
new_secret() { od -An -tx1 -N32 /dev/urandom | tr -d ' \n'; }

free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# Run a program as rank 0 of a world of 1 with extra VAR=VALUE settings:
# one_rank [env VAR=VALUE ...] program
one_rank() {
    env -u SLURM_PROCID -u PMIX_NAMESPACE -u PMI_FD RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 NODE_RANK=0 \
        MASTER_ADDR=127.0.0.1 MASTER_PORT="$(free_port)" DIST_BIND_BOOTSTRAP=tcp DIST_BIND_TIMEOUT=60 \
        DIST_BIND_SECRET="$(new_secret)" "$@"
}

# ranks N [VAR=VALUE ...] -- program args: N ranks of one step on this
# machine over TCP, in the background, at most LIMIT seconds (default 60)
# each; rank r's environment also gets the values of the array RANK_ENV_r
# when set (e.g. RANK_ENV_1=(DIST_BIND_DEVICE=1)).  Sets OUT[r] and RC[r].
ranks() {
    local n=$1 port dir r
    shift
    local common=()
    while [ $# -gt 0 ] && [ "$1" != -- ]; do common+=("$1"); shift; done
    shift
    port=$(free_port)
    dir=$(mktemp -d)
    local secret; secret=$(new_secret)
    local pids=()
    for ((r = 0; r < n; r++)); do
        local extra=()
        if declare -p "RANK_ENV_$r" >/dev/null 2>&1; then eval "extra=(\"\${RANK_ENV_$r[@]}\")"; fi
        env -u SLURM_PROCID -u PMIX_NAMESPACE -u PMI_FD RANK=$r WORLD_SIZE=$n LOCAL_RANK=$r LOCAL_WORLD_SIZE=$n \
            NODE_RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port DIST_BIND_BOOTSTRAP=tcp DIST_BIND_TIMEOUT=30 \
            DIST_BIND_SECRET="$secret" "${common[@]}" "${extra[@]}" timeout -k 5 "${LIMIT:-60}" "$@" >"$dir/$r.out" 2>&1 &
        pids[r]=$!
    done
    OUT=() RC=()
    for ((r = 0; r < n; r++)); do
        wait "${pids[$r]}"
        RC[r]=$?
        OUT[r]=$(cat "$dir/$r.out")
    done
    rm -rf "$dir"
}

# use_fake DESCRIPTION [DIR]: the fake driver (build/fake, or DIR) with the
# GPUs of DESCRIPTION (FAKEGPU_DEVICES, see tests/gpu/fake/README.md), its
# nvidia-smi first on PATH, and a fresh FAKEGPU_STATE removed at exit.
use_fake() {
    local dir=${2:-$BUILD/fake}
    [ -f "$dir/libnccl.so.2" ] || { echo "FAIL: the fake driver is not built ($dir; make check builds it)"; exit 1; }
    export LD_LIBRARY_PATH=$dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    export PATH=$BUILD/fake:$PATH
    export FAKEGPU_DEVICES=$1
    [ -n "${FAKEGPU_STATE:-}" ] || {
        FAKEGPU_STATE=$(mktemp -d /tmp/fakegpu.XXXXXX)
        export FAKEGPU_STATE
        trap 'rm -rf "$FAKEGPU_STATE"' EXIT
    }
    export DIST_BIND_GPU_REQUIRED=1
}
