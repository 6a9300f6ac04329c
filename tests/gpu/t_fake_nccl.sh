#!/usr/bin/env bash
# NCCL bring-up against the fake driver (tests/gpu/fake): every config
# (NULL blocking and non-blocking, a config of an older nccl.h, a bad one),
# the communicator on the device set_device chose whatever thread asks,
# NCCL_COMM_BLOCKING overriding either way with the set-up still bounded,
# one root and several (count and id order as NCCL splits the ranks), an
# NCCL without ncclCommInitRankScalable, failures and delays at one rank,
# the checked all-reduce and abort.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
need_built "$RANKP"
use_fake "8"
host=$(hostname)
all_ok() { # all_ok N WHAT: every rank printed OK
    local r
    for ((r = 0; r < $1; r++)); do
        [[ ${OUT[$r]} == *$'\nOK' && ${RC[$r]} == 0 ]] || { bad "$2: rank $r (exit ${RC[$r]}): ${OUT[$r]}"; return; }
    done
    ok "$2"
}
all_match() { # all_match N PATTERN WHAT: every rank's output ends in a match, and it failed
    local r
    for ((r = 0; r < $1; r++)); do
        # shellcheck disable=SC2053
        [[ ${OUT[$r]} == *$2 && ${RC[$r]} != 0 && ${RC[$r]} != 124 ]] \
            || { bad "$3: rank $r (exit ${RC[$r]}): ${OUT[$r]}"; return; }
    done
    ok "$3"
}

for mode in null nonblocking config-nb config-b; do
    ranks 3 -- "$RANKP" "$mode"
    all_ok 3 "3 ranks, $mode: a communicator"
done
ranks 2 -- "$RANKP" config-bad
all_match 2 "ERR DISTBIND_ERR_ARG*NCCL set-up failed: rank 0 on $host: distbind_nccl_init: config was not made with NCCL_CONFIG_INITIALIZER*" \
    "a config not made with NCCL_CONFIG_INITIALIZER: every rank says so"
ranks 2 -- "$RANKP" config-size
all_match 2 "ERR DISTBIND_ERR_ARG*distbind_nccl_init: config size 4 is not an ncclConfig_t's*" \
    "a config whose size is no ncclConfig_t's: every rank says so"

# The communicator is on the device set_device chose, also when
# distbind_nccl_init runs on another thread (a new thread starts on device
# 0, and NCCL takes the calling thread's device).
RANK_ENV_0=(DIST_BIND_DEVICE=2) RANK_ENV_1=(DIST_BIND_DEVICE=3) RANK_ENV_2=(DIST_BIND_DEVICE=1)
for mode in null nonblocking config-nb config-b; do
    ranks 3 -- "$RANKP" "$mode" --thread
    [[ ${OUT[0]} == *"COMM device=2"* && ${OUT[1]} == *"COMM device=3"* && ${OUT[2]} == *"COMM device=1"* ]] \
        && ok "$mode, init on another thread: each communicator on its rank's device" \
        || bad "$mode --thread: ${OUT[*]}"
done
unset RANK_ENV_0 RANK_ENV_1 RANK_ENV_2

# Set-up bounded whatever the blocking mode: rank 1 joins 30 s late, the
# timeout is 2 s.  NCCL_COMM_BLOCKING=1 makes even a non-blocking config
# blocking (NCCL's rule): the set-up still ends in time on every rank.
LIMIT=25
for m in "null" "config-nb NCCL_COMM_BLOCKING=1"; do
    set -- $m
    ranks 3 DIST_BIND_TIMEOUT=2 FAKEGPU_NCCL=delay-init=1:30 "${@:2}" -- "$RANKP" "$1"
    all_match 3 "ERR DISTBIND_ERR_TIMEOUT*NCCL communicator set-up did not finish within 2 s*left waiting on a helper thread*" \
        "blocking ($m), a rank 30 s late: every rank's set-up ends at the timeout"
done
# NCCL_COMM_BLOCKING=0 makes NCCL's default non-blocking: polled, aborted.
ranks 3 DIST_BIND_TIMEOUT=2 FAKEGPU_NCCL=delay-init=1:30 NCCL_COMM_BLOCKING=0 -- "$RANKP" null
# Each rank's 2 s run from its own start: a rank whose deadline comes a
# little later may first see a peer's abort, and ends on that instead.
timed_out=0 ended=0
for r in 0 1 2; do
    # shellcheck disable=SC2053
    if [[ ${OUT[$r]} == *"ERR DISTBIND_ERR_TIMEOUT"*"did not finish within 2 s on rank"*"so it was aborted"* ]]; then
        timed_out=$((timed_out + 1))
    elif [[ ${OUT[$r]} != *"ERR DISTBIND_ERR_NCCL"*"aborted its communicator"* ]]; then
        continue
    fi
    [[ ${RC[$r]} != 0 && ${RC[$r]} != 124 ]] && ended=$((ended + 1))
done
[ "$timed_out" -ge 1 ] && [ "$ended" = 3 ] \
    && ok "NCCL_COMM_BLOCKING=0 with config NULL: non-blocking, aborted at the timeout ($timed_out by its own deadline, the rest on the abort)" \
    || bad "NCCL_COMM_BLOCKING=0 with config NULL: non-blocking, aborted at the timeout: ${OUT[*]}"
unset LIMIT

# A rank's NCCL fails: it says why, and no rank waits past the timeout.
LIMIT=25
ranks 3 DIST_BIND_TIMEOUT=3 FAKEGPU_NCCL=fail-init=1 -- "$RANKP" nonblocking
[[ ${OUT[1]} == *"ERR DISTBIND_ERR_NCCL"*"ncclCommInitRankConfig: unhandled system error"*"injected init failure on rank 1"* ]] \
    && ok "rank 1's NCCL fails: rank 1 names NCCL's error" || bad "fail-init, rank 1: ${OUT[1]}"
for r in 0 2; do
    [[ ${OUT[$r]} == *"ERR DISTBIND_ERR_NCCL"*"remote process exited"*"rank 1 aborted its communicator"* && ${RC[$r]} != 124 ]] \
        && ok "and rank $r ends at once: rank 1 aborted" || bad "fail-init, rank $r: ${OUT[$r]}"
done
unset LIMIT

# Several roots: DIST_BIND_NCCL_RANKS_PER_ROOT=2 over 5 ranks gives roots
# 0, 2 and 4 (NCCL's split); the fake checks each id comes from the first
# rank of its block, in order.
ranks 5 DIST_BIND_NCCL_RANKS_PER_ROOT=2 -- "$RANKP" nonblocking --check 4096 2
all_ok 5 "5 ranks, 3 roots: ncclCommInitRankScalable, ids in NCCL's order, all-reduce checked"
ranks 7 DIST_BIND_NCCL_RANKS_PER_ROOT=3 -- "$RANKP" null
all_ok 7 "7 ranks, 3 per root (roots 0, 3, 5): a communicator"
ranks 5 DIST_BIND_NCCL_RANKS_PER_ROOT=2 FAKEGPU_NCCL=fail-uniqueid=2 -- "$RANKP" null
all_match 5 "ERR DISTBIND_ERR_NCCL*NCCL set-up failed: rank 2 on $host: ncclGetUniqueId: unhandled system error*" \
    "root 2 cannot make its id: every rank names it"
ranks 3 LD_LIBRARY_PATH="$BUILD/fake-oldnccl:$LD_LIBRARY_PATH" DIST_BIND_NCCL_RANKS_PER_ROOT=2 -- "$RANKP" null
all_match 3 "ERR DISTBIND_ERR_UNAVAILABLE*NCCL 22204 has no ncclCommInitRankScalable (2.23 or later needed) for 3 ranks; set DIST_BIND_NCCL_RANKS_PER_ROOT to 3*" \
    "NCCL before 2.23 with several roots: every rank says what to set"
ranks 3 LD_LIBRARY_PATH="$BUILD/fake-oldnccl:$LD_LIBRARY_PATH" -- "$RANKP" null
all_ok 3 "NCCL before 2.23, one root: a communicator"

# The checked all-reduce: right, wrong, failing, hanging; on a blocking
# communicator it refuses (its waits could not be bounded).
ranks 3 -- "$RANKP" nonblocking --check 65536 3 --abort
all_ok 3 "all-reduce checked on 3 ranks, then aborted (a second abort refused)"
ranks 3 FAKEGPU_NCCL=wrong-sum=1 -- "$RANKP" nonblocking --check 4096 2
all_match 3 "ERR DISTBIND_ERR_NCCL*check failed in the first all-reduce: rank 1 on $host: all-reduce result wrong at element 0: 6.000000, expected 3.000000*" \
    "rank 1's sum is wrong: every rank names rank 1 and the element"
ranks 3 FAKEGPU_NCCL=fail-allreduce=2 DIST_BIND_TIMEOUT=5 -- "$RANKP" nonblocking --check 4096 2
all_match 3 "ERR DISTBIND_ERR_NCCL*rank 2 on $host: ncclAllReduce: unhandled system error*injected all-reduce failure on rank 2 (communicator aborted)*" \
    "rank 2's all-reduce fails: every rank names rank 2, not the ranks it left waiting"
LIMIT=25
ranks 3 FAKEGPU_NCCL=hang-allreduce=0 DIST_BIND_TIMEOUT=2 -- "$RANKP" nonblocking --check 4096 2
all_match 3 "ERR DISTBIND_ERR_NCCL*the all-reduce did not finish within 2 s (communicator aborted)*" \
    "rank 0's all-reduce hangs: every rank aborts at the timeout"
unset LIMIT
use_fake "8*mem=65536"
ranks 2 -- "$RANKP" nonblocking --check 1048576 1
all_match 2 "ERR DISTBIND_ERR_NCCL*before the first all-reduce: rank 0 on $host: cudaMalloc(1048576 bytes): cudaErrorMemoryAllocation: out of memory (and 1 more rank)*" \
    "the GPU cannot hold the buffer: every rank names the allocation"
use_fake "8"
ranks 2 -- "$RANKP" null --check 4096 1
all_match 2 "ERR DISTBIND_ERR_STATE*the communicator is blocking*could not be bounded*" \
    "the check on a blocking communicator: refused on every rank"
ranks 2 NCCL_COMM_BLOCKING=1 -- "$RANKP" nonblocking --check 4096 1
all_match 2 "ERR DISTBIND_ERR_STATE*the communicator is blocking (NCCL_COMM_BLOCKING=1*" \
    "NCCL_COMM_BLOCKING=1 made it blocking: the check says so"
done_
