#!/usr/bin/env bash
# The figures only a GPU can give (tests/gpu/smoke.sh): libdistbind's NCCL
# set-up of a world of one against bare ncclGetUniqueId + ncclCommInitRank,
# interleaved in one process (goal: at most 5 % over).  Without a usable
# GPU the goal line says "needs-gpu", which does not count.
set -uo pipefail
cd "$(dirname "$0")/../.."
FIGURE="NCCL set-up through libdistbind / bare NCCL, world of one"
if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L 2>/dev/null | grep '^GPU ' >/dev/null; then
    echo "b_gpu: no usable GPU here (nvidia-smi -L lists none)"
    printf 'GOAL\t%s\tnot measured\t<= 1.05\tneeds-gpu\n' "$FIGURE"
    exit 0
fi
out=$(tests/gpu/smoke.sh 2>&1)
rc=$?
echo "$out"
ratio=$(grep -o 'ratio [0-9.]*' <<<"$out" | tail -1 | cut -d' ' -f2)
if [ $rc != 0 ] || [ -z "$ratio" ]; then
    printf 'GOAL\t%s\tsmoke.sh failed (exit %s)\t<= 1.05\tmissed\n' "$FIGURE" "$rc"
    exit 1
fi
met=$(awk -v r="$ratio" 'BEGIN { print (r <= 1.05) ? "met" : "missed" }')
printf 'GOAL\t%s\t%s\t<= 1.05\t%s\n' "$FIGURE" "$ratio" "$met"
[ "$met" = met ]
