#!/usr/bin/env bash
# The real-GPU tests of this folder, run unchanged against the fake driver
# (tests/gpu/fake) where they must pass, not skip: four GPUs described out
# of bus order.  Without a GPU and without the fake they still skip (77).
set -uo pipefail
. "$(dirname "$0")/lib.sh"
real=("$ROOT/tests/gpu/t_device_choice.sh" "$ROOT/tests/gpu/t_duplicate_gpu.sh" "$ROOT/tests/gpu/t_check_world1.sh"
      "$BUILD/tests/gpu_nccl_world1")
need_built "${real[@]}" "$PROBE" "$CHECK"

if ! command -v nvidia-smi >/dev/null; then
    for t in "${real[@]}"; do
        env -u DIST_BIND_GPU_REQUIRED "$t" >/dev/null 2>&1
        rc=$?
        [ $rc = 77 ] && ok "without a GPU $(basename "$t") skips" || bad "without a GPU $(basename "$t") exits $rc"
    done
fi

use_fake "bus=0000:86:00.0;bus=0000:1b:00.0;bus=0000:af:00.0;bus=0000:3b:00.0"
for t in "${real[@]}"; do
    out=$("$t" 2>&1)
    rc=$?
    [ $rc = 0 ] && ok "on the fake $(basename "$t") passes" || { bad "on the fake $(basename "$t") exits $rc"; echo "$out" | tail -20; }
done
done_
