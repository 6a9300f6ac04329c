#!/usr/bin/env bash
# GPU test: dist-bind-check as a world of one on a GPU node: its table has
# the GPU's bus id, the NCCL all-reduce runs, its result is right, and the
# bus bandwidth is printed.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
need_built "$CHECK"
out=$(one_rank env CUDA_VISIBLE_DEVICES="${CUDA_VISIBLE_DEVICES:-0}" "$CHECK" --bytes 16777216 --iters 5 2>&1)
rc=$?
echo "$out"
grep -q "GPU checks skipped" <<<"$out" && skip "dist-bind-check found no usable GPU"
[ $rc -eq 0 ] && ok "exit 0" || bad "exit $rc"
grep -Eq "^0 +[^ ]+ +0 +0/1 +0 +[^ ]+ +[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-9] " <<<"$out" \
    && ok "the row has device 0 and its PCI bus id" || bad "row 0 lacks a bus id"
grep -q "NCCL all-reduce: 16777216 bytes x 5 on 1 rank, result correct on every rank" <<<"$out" \
    && ok "NCCL all-reduce result checked" || bad "no checked all-reduce"
grep -Eq "bus bandwidth [0-9.]+ GB/s" <<<"$out" && ok "bus bandwidth printed" || bad "no bus bandwidth"
grep -q "dist-bind-check: all checks passed" <<<"$out" && ok "verdict" || bad "verdict missing"
done_
