#!/usr/bin/env bash
# GPUs a task cannot open, as under Slurm's ConstrainDevices=yes: the test
# runs in a device cgroup (cgroup v1 here) that denies fake GPU nodes
# (mknod c 195 N: ENXIO where allowed, EPERM where denied), and the fake
# driver hides what open() refuses, as CUDA does.  Checks CUDA's view
# through libdistbind, and dist-bind-check flagging every listed GPU the
# task cannot open (CANNOT-OPEN) and failing.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
need_built "$PROBE" "$CHECK"
cgroot=/sys/fs/cgroup/devices

if [ -z "${FAKE_CGROUP:-}" ]; then
    # Outside: make the nodes and the cgroup, run this script inside it.
    why=""
    [ "$(id -u)" = 0 ] || why="needs root"
    [ -w "$cgroot/devices.deny" ] || why="${why:+$why, }needs the cgroup v1 devices controller at $cgroot"
    if [ -n "$why" ]; then
        [ -n "${DIST_BIND_CI:-}" ] && { echo "FAIL: $why"; exit 1; }
        echo "SKIP: $why"
        exit 77
    fi
    dev=$(mktemp -d /tmp/fakegpu-dev.XXXXXX)
    chmod 755 "$dev"
    for i in 0 1 2 3; do mknod -m 666 "$dev/nvidia$i" c 195 "$i"; done
    cg=$cgroot/dist-bind-fake.$$
    mkdir "$cg"
    # A task given GPU 0 only, as Slurm confines one.
    for i in 1 2 3; do echo "c 195:$i rwm" >"$cg/devices.deny"; done
    FAKE_CGROUP=$cg FAKE_DEV=$dev bash -c 'echo $$ >"$FAKE_CGROUP/cgroup.procs" && exec "$0"' "$0"
    rc=$?
    for _ in $(seq 50); do rmdir "$cg" 2>/dev/null && break; sleep 0.1; done
    rm -rf "$dev"
    exit $rc
fi

use_fake "4*file=$FAKE_DEV/nvidia%i"
out=$(cat "$FAKE_DEV/nvidia1" 2>&1)
[[ $out == *"Operation not permitted"* ]] && ok "inside the cgroup, GPU 1's node gives EPERM" || bad "nvidia1: $out"

out=$(one_rank env "$PROBE")
[ "$(sed -n 's/^DEVICE 0 BUS //p' <<<"$out")" = 0000:10:00.0 ] && ok "CUDA sees GPU 0 as device 0" || bad "device 0: $out"
out=$(one_rank env DIST_BIND_DEVICE=1 "$PROBE")
[[ $out == *"device 1 (from DIST_BIND_DEVICE) does not exist: CUDA sees 1 device (CUDA_VISIBLE_DEVICES unset)"* ]] \
    && ok "and nothing else: GPUs 1-3 are invisible" || bad "device 1: $out"
out=$(one_rank env CUDA_VISIBLE_DEVICES=1,0,2 "$PROBE")
[[ $out == "ERR DISTBIND_ERR_NO_GPU"*"CUDA sees no device (CUDA_VISIBLE_DEVICES=\"1,0,2\")"* ]] \
    && ok "CUDA_VISIBLE_DEVICES=1,0,2: the list ends at 1, CUDA sees no GPU" || bad "1,0,2: $out"

# dist-bind-check: rank 1 of the seed layout's node as --dist-bind's rank
# mode would list its GPUs there; rank 0 with a list that is right only at
# its head.
RANK_ENV_0=(CUDA_VISIBLE_DEVICES=0,1,2 DIST_BIND_GPUS=0) RANK_ENV_1=(CUDA_VISIBLE_DEVICES=1,0,2 DIST_BIND_GPUS=1)
ranks 2 -- "$CHECK" --bytes 4096 --iters 1
[[ ${RC[*]} == "1 1" ]] && ok "listed GPUs the tasks cannot open: every rank exits 1" || bad "exits ${RC[*]}: ${OUT[0]}"
grep -q "PROBLEM: rank 0 ($(hostname)): CUDA_VISIBLE_DEVICES=0,1,2 lists 3 GPUs but CUDA sees 1: 1,2 name no GPU this task can open" \
    <<<"${OUT[0]}" && ok "rank 0: 1,2 named" || bad "rank 0's problem: ${OUT[0]}"
grep -q "PROBLEM: rank 1 ($(hostname)): CUDA_VISIBLE_DEVICES=1,0,2 lists 3 GPUs but CUDA sees 0: 1,0,2 name no GPU" \
    <<<"${OUT[0]}" && ok "rank 1: the whole list named" || bad "rank 1's problem: ${OUT[0]}"
grep -Eq "^1 .*CANNOT-OPEN" <<<"${OUT[0]}" && grep -Eq "^0 .*CANNOT-OPEN" <<<"${OUT[0]}" && ok "both rows flagged CANNOT-OPEN" \
    || bad "rows: ${OUT[0]}"
done_
