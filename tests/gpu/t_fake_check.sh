#!/usr/bin/env bash
# dist-bind-check's verdicts against the fake driver (tests/gpu/fake), over
# TCP without Slurm: a good step with its all-reduce through the fake NCCL,
# ranks sharing a GPU (by UUID), NCCL_COMM_BLOCKING=1, a wrong sum, a GPU
# held outside the step, and a rank slow to abort whose own failure must
# not be replaced by the exchange's timeout.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
need_built "$CHECK"
use_fake "4"
host=$(hostname)
ARGS=(--bytes 4096 --iters 2)

ranks 3 -- "$CHECK" "${ARGS[@]}"
[[ ${RC[*]} == "0 0 0" ]] && ok "a good step: every rank exits 0" || bad "good step: exits ${RC[*]}: ${OUT[0]}"
grep -Eq "^2 +$host +0 +2/3 +2 +- +0000:12:00\.0 .* ok$" <<<"${OUT[0]}" && ok "rank 2's row: device 2, its bus id" \
    || bad "rank 2's row: ${OUT[0]}"
grep -q "NCCL all-reduce: 4096 bytes x 2 on 3 ranks, result correct on every rank" <<<"${OUT[0]}" \
    && ok "the all-reduce ran through the fake NCCL, its result checked" || bad "no all-reduce: ${OUT[0]}"
[[ -z ${OUT[1]} && -z ${OUT[2]} ]] && ok "only rank 0 prints" || bad "ranks 1, 2 printed: ${OUT[1]} ${OUT[2]}"

ranks 3 DIST_BIND_DEVICE=0 -- "$CHECK" "${ARGS[@]}"
[[ ${RC[*]} == "1 1 1" ]] && ok "ranks on one GPU: every rank exits 1" || bad "shared GPU: exits ${RC[*]}"
grep -q "PROBLEM: ranks 0 and 1 would both use GPU GPU-.* (0000:10:00.0) on $host" <<<"${OUT[0]}" \
    && ok "named by the GPU's UUID and bus id" || bad "shared GPU: ${OUT[0]}"
[ "$(grep -cE '^[012] .*DUPLICATE$' <<<"${OUT[0]}")" = 3 ] && ok "every row flagged" || bad "rows: ${OUT[0]}"

ranks 2 NCCL_COMM_BLOCKING=1 -- "$CHECK" "${ARGS[@]}"
[[ ${RC[*]} == "0 0" ]] && grep -q "NCCL_COMM_BLOCKING=1 overridden: dist-bind-check needs a non-blocking NCCL communicator" \
    <<<"${OUT[0]}" && ok "NCCL_COMM_BLOCKING=1: overridden, said so, and the check passes" || bad "NCCL_COMM_BLOCKING=1: ${OUT[0]}"

ranks 3 FAKEGPU_NCCL=wrong-sum=2 -- "$CHECK" "${ARGS[@]}"
[[ ${RC[*]} == "1 1 1" ]] && grep -q "PROBLEM: NCCL all-reduce failed: .*rank 2 on $host: all-reduce result wrong at element 0" \
    <<<"${OUT[0]}" && ok "a wrong sum on rank 2: named, every rank exits 1" || bad "wrong sum (${RC[*]}): ${OUT[0]}"

# A GPU in exclusive-process mode that a process outside the step holds.
use_fake "bus=0000:1b:00.0,mode=exclusive;bus=0000:3b:00.0"
coproc HOLD { one_rank env DIST_BIND_DEVICE=0 "$RANKP" hold; }
# bash unsets HOLD_PID as soon as the coprocess exits: keep it in a variable of our own.
hold_pid=$HOLD_PID
read -r _ <&"${HOLD[0]}"
ranks 2 -- "$CHECK" "${ARGS[@]}"
exec {HOLD[1]}>&-
wait "$hold_pid" 2>/dev/null
[[ ${RC[*]} == "1 1" ]] && grep -q "PROBLEM: making the device current failed: .*rank 0 on $host: cudaSetDevice(0): cudaErrorDevicesUnavailable.*exclusive-process" \
    <<<"${OUT[0]}" && ok "an exclusive GPU held outside the step: named" || bad "held GPU (${RC[*]}): ${OUT[0]}"

# Rank 1's all-reduce hangs and its abort takes 8 s, past the 2 s the others
# wait for it: it still reports its own failure, then the exchange's.
use_fake "4"
LIMIT=40
ranks 3 DIST_BIND_TIMEOUT=2 FAKEGPU_NCCL=hang-allreduce=1,slow-abort=1:8 -- "$CHECK" "${ARGS[@]}"
unset LIMIT
[[ ${RC[*]} == "1 1 1" ]] && ok "every rank exits 1, none killed" || bad "slow abort: exits ${RC[*]}"
grep -q "rank 1 on $host: the all-reduce did not finish within 2 s (communicator aborted) (and the other ranks could not be told: " \
    <<<"${OUT[1]}" && ok "rank 1 reports its own failure, not only the exchange's" || bad "slow abort, rank 1: ${OUT[1]}"
grep -q "PROBLEM: NCCL all-reduce failed: .*rank 0 on $host: the all-reduce did not finish within 2 s" <<<"${OUT[0]}" \
    && ok "rank 0's table says its own failure" || bad "slow abort, rank 0: ${OUT[0]}"
done_
