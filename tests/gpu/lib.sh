# shellcheck shell=bash
# Shared by the GPU test scripts (sourced).  A test without a usable GPU
# exits 77 (skipped), or fails when DIST_BIND_GPU_REQUIRED is set (as
# run-on-gpu.sh does, so a broken driver on a GPU machine is not a pass).
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
PROBE=$ROOT/build/rt-tests/gpu_probe
CHECK=$ROOT/build/dist-bind-check
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

free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# Run PROBE (or another program) as rank 0 of a world of 1 with extra
# VAR=VALUE settings: env_one [VAR=VALUE ...] -- program
one_rank() {
    env -u SLURM_PROCID -u PMIX_NAMESPACE -u PMI_FD RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 NODE_RANK=0 \
        MASTER_ADDR=127.0.0.1 MASTER_PORT="$(free_port)" DIST_BIND_BOOTSTRAP=tcp DIST_BIND_TIMEOUT=60 "$@"
}
