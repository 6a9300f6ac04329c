#!/usr/bin/env bash
# dist-bind-check above 64 ranks: 72 ranks over TCP on 9
# "nodes", each rank in a UTS namespace of its own with its node's host name
# (n000..n008), 8 fake GPUs per node (the fake's UUIDs differ by host).
# A good step prints one line per node and no rank's row, then runs its
# all-reduce; a step with two ranks on one GPU prints the node's line
# flagged, both rows in full under the node lines, and fails; --full prints
# every rank's row; --per-node the node lines below 64; --full with
# --per-node is bad usage.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
need_built "$CHECK"
why=""
[ "$(id -u)" = 0 ] || why="needs root (a UTS namespace per rank)"
[ -z "$why" ] && ! unshare -u true 2>/dev/null && why="unshare -u fails here"
if [ -n "$why" ]; then
    [ -n "${DIST_BIND_CI:-}" ] && { echo "FAIL: $why"; exit 1; }
    echo "SKIP: $why"
    exit 77
fi
use_fake "8"
N=72 PER=8
for ((r = 0; r < N; r++)); do
    eval "RANK_ENV_$r=(LOCAL_RANK=$((r % PER)) LOCAL_WORLD_SIZE=$PER NODE_RANK=$((r / PER)) DIST_BIND_GPUS=$((r % PER)))"
done
ARGS=(--bytes 4096 --iters 1)
# step [ARGS...]: the 72 ranks, each as its node's host.
step() {
    LIMIT=120 ranks $N CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7 -- \
        unshare -u sh -c 'hostname "n$(printf %03d "$NODE_RANK")" && exec "$@"' sh "$CHECK" "${ARGS[@]}" "$@"
}
all() { [ "$(printf '%s\n' "${RC[@]}" | sort -u)" = "$1" ]; }
rank_rows() { grep -cE '^[0-9]+ ' <<<"${OUT[0]}"; }
node_lines() { grep -cE '^n0[0-9]{2} ' <<<"${OUT[0]}"; }

step
all 0 && ok "a good step of 72 ranks: every rank exits 0" || bad "good step: exits ${RC[*]}: ${OUT[0]}"
grep -q "^dist-bind-check: 72 ranks on 9 nodes, place from env, exchange over tcp$" <<<"${OUT[0]}" \
    && ok "the step's line as ever" || bad "step line: ${OUT[0]}"
[ "$(node_lines)" = 9 ] && [ "$(rank_rows)" = 0 ] && ok "one line per node, no rank's row" \
    || bad "$(node_lines) node lines, $(rank_rows) rank rows: ${OUT[0]}"
grep -Eq '^n003 +3 +24-31 +8 +0-7 +ok$' <<<"${OUT[0]}" && ok "a node's line: host, node rank, ranks, tasks, devices" \
    || bad "n003's line: ${OUT[0]}"
grep -q "^no rank flagged (dist-bind-check --full prints every rank's row)$" <<<"${OUT[0]}" \
    && grep -q "NCCL all-reduce: 4096 bytes x 1 on 72 ranks, result correct on every rank" <<<"${OUT[0]}" \
    && grep -q "^dist-bind-check: all checks passed$" <<<"${OUT[0]}" && ok "no rank flagged; the all-reduce ran" \
    || bad "good step's end: ${OUT[0]}"

# Rank 13 on device 4, rank 12's GPU: both flagged on n001's line, both
# rows in full.
RANK_ENV_13+=(DIST_BIND_DEVICE=4)
step
all 1 && ok "two ranks on one GPU: every rank exits 1" || bad "shared GPU: exits ${RC[*]}"
grep -Eq '^n001 +1 +8-15 +8 +0-4,6-7 +DUPLICATE,NOT-OWN \(ranks 12-13\)$' <<<"${OUT[0]}" \
    && ok "n001's line names the flags and the ranks" || bad "n001's line: ${OUT[0]}"
[ "$(rank_rows)" = 2 ] && grep -Eq '^12 +n001 +1 +4/8 +4 +4 +0000:14:00\.0 .* DUPLICATE$' <<<"${OUT[0]}" \
    && grep -Eq '^13 +n001 +1 +5/8 +4 +4 +0000:14:00\.0 .* NOT-OWN,DUPLICATE$' <<<"${OUT[0]}" \
    && ok "both rows in full, and only those" || bad "problem rows: ${OUT[0]}"
grep -q "^PROBLEM: ranks 12 and 13 would both use GPU GPU-.* (0000:14:00.0) on n001$" <<<"${OUT[0]}" \
    && ok "the problem as ever" || bad "problem line: ${OUT[0]}"

step --full
all 1 && [ "$(rank_rows)" = 72 ] && [ "$(node_lines)" = 0 ] && ok "--full: every rank's row" \
    || bad "--full (${RC[*]}): $(rank_rows) rows, $(node_lines) node lines: ${OUT[0]}"
grep -Eq '^71 +n008 +8 +7/8 +7 +7 +0000:17:00\.0 .* ok$' <<<"${OUT[0]}" && ok "--full: the last rank's row" \
    || bad "--full, rank 71: ${OUT[0]}"
unset RANK_ENV_13

# Below 64 only when asked; both at once is bad usage.
for ((r = 0; r < N; r++)); do unset "RANK_ENV_$r"; done
ranks 3 -- "$CHECK" "${ARGS[@]}" --per-node
host=$(hostname)
all 0 && grep -Eq "^$host +0 +0-2 +3 +0-2 +ok$" <<<"${OUT[0]}" && [ "$(grep -cE '^[0-9]+ ' <<<"${OUT[0]}")" = 0 ] \
    && ok "--per-node on 3 ranks: one node line" || bad "--per-node (${RC[*]}): ${OUT[0]}"
out=$(one_rank "$CHECK" --full --per-node 2>&1)
rc=$?
[ $rc = 2 ] && grep -q "dist-bind-check: --full and --per-node exclude each other" <<<"$out" \
    && ok "--full with --per-node: bad usage (2)" || bad "--full --per-node: rc $rc: $out"
done_
