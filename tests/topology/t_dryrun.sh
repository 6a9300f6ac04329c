#!/usr/bin/env bash
# The dry run an admin runs before enabling closest:
#   dist-bind-check --plan --topology FILE --task-cpus 'L;L' [--gpus ..] [--gpus-per-task K]
# Runs build/dist-bind-check --plan: the plan comes from libdistbind
# (distbind_plan_dry_run), the tool's client code from tools/check_plan.cc.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
XML=tests/topology/xml
[ -x build/dist-bind-check ] || { echo "FAIL: build/dist-bind-check is not built"; exit 1; }
PLAN=(build/dist-bind-check --plan)
echo "dry run: ${PLAN[*]}"
fails=0 checks=0
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# expect NAME WANT_RC WANT_STDOUT STDERR_SUBSTRING -- ARGS...
expect() {
    local name=$1 want_rc=$2 want_out=$3 want_err=$4; shift 5
    local out err rc
    out=$("${PLAN[@]}" "$@" 2>"$TMP/err"); rc=$?
    err=$(cat "$TMP/err")
    checks=$((checks + 1))
    if [ "$rc" != "$want_rc" ] || [ "$out" != "$want_out" ] || [[ "$err" != *"$want_err"* ]]; then
        fails=$((fails + 1))
        printf '  FAIL %s\n    rc %s (want %s)\n    stdout:\n%s\n    want:\n%s\n    stderr: %s (want ...%s...)\n' \
            "$name" "$rc" "$want_rc" "$out" "$want_out" "$err" "$want_err"
    else
        echo "  ok   $name"
    fi
}

# The README's worked example: Tioga, 8 tasks of 8 cores (16 CPUs) each.
# NUMA n holds cores 16n..16n+15; its GCDs in Slurm's (PCI bus) numbering are
# 4,5 (NUMA 0), 2,3 (1), 6,7 (2), 0,1 (3).
expect "Tioga whole node, Slurm's layout" 0 "task 0 cpus 0-7,64-71 gpus 4 numa 0 nics hsi2
task 1 cpus 8-15,72-79 gpus 5 numa 0 nics hsi2
task 2 cpus 16-23,80-87 gpus 2 numa 1 nics hsi1
task 3 cpus 24-31,88-95 gpus 3 numa 1 nics hsi1
task 4 cpus 32-39,96-103 gpus 6 numa 2 nics hsi3
task 5 cpus 40-47,104-111 gpus 7 numa 2 nics hsi3
task 6 cpus 48-55,112-119 gpus 0 numa 3 nics hsi0
task 7 cpus 56-63,120-127 gpus 1 numa 3 nics hsi0" "" -- \
    --topology $XML/eas-tioga.xml --step-cores 0-63 --tasks 8 --cpus-per-task 16

# Explicit CPU lists (OS numbering): task 0 on NUMA 3, task 1 on NUMA 0.
expect "Tioga --task-cpus" 0 "task 0 cpus 48-51 gpus 0 numa 3 nics hsi0
task 1 cpus 0-3 gpus 4 numa 0 nics hsi2" "" -- \
    --topology $XML/eas-tioga.xml --task-cpus '48-51;0-3'

# Only the step's GPUs: Lassen GPUs 1 (socket 0) and 3 (socket 1), the task
# on socket 1 (PUs 96-99) first.
expect "Lassen --gpus subset" 0 "task 0 cpus 96-99 gpus 3 numa 8 nics mlx5_2,mlx5_3
task 1 cpus 8-11 gpus 1 numa 0 nics mlx5_0,mlx5_1" "" -- \
    --topology=$XML/coral-lassen.xml --task-cpus='96-99;8-11' --gpus=1,3

# Two GPUs per task on POWER8: one task per socket.
expect "POWER8 --gpus-per-task 2" 0 "task 0 cpus 0-1 gpus 0,1 numa 0
task 1 cpus 80-81 gpus 2,3 numa 1" "" -- \
    --topology $XML/power8gpudistances.xml --task-cpus '0-1;80-81' --gpus-per-task 2

# Device minors from a driver view: minor 0 is the DGX-2 GPU at b7 (socket 1).
mkdir -p "$TMP/nv/0000:b7:00.0" "$TMP/nv/0000:34:00.0"
printf 'Model: \t Tesla V100\nBus Location: \t 0000:b7:00.0\nDevice Minor: \t 0\n' >"$TMP/nv/0000:b7:00.0/information"
printf 'Model: \t Tesla V100\nBus Location: \t 0000:34:00.0\nDevice Minor: \t 1\n' >"$TMP/nv/0000:34:00.0/information"
expect "DGX-2 --nvidia-proc" 0 "task 0 cpus 24 gpus 0 numa 1
task 1 cpus 0 gpus 1 numa 0" "" -- \
    --topology $XML/nvidiaDGX2.xml --task-cpus '24;0' --nvidia-proc "$TMP/nv"

# Bad input: one "dist-bind: " line, nothing on stdout, exit 1.
expect "unreadable file" 1 "" "dist-bind: $TMP/none.xml: No such file or directory" -- \
    --topology "$TMP/none.xml" --task-cpus 0
expect "directory as topology" 1 "" "dist-bind: $TMP: not a regular file" -- --topology "$TMP" --task-cpus 0
printf '<topology><object' >"$TMP/broken.xml"
expect "broken XML" 1 "" "dist-bind: $TMP/broken.xml: not an hwloc XML topology" -- \
    --topology "$TMP/broken.xml" --task-cpus 0
expect "CPU outside the machine" 1 "" "dist-bind: task 1 CPUs: CPU 128 is not in the machine (CPUs 0-127)" -- \
    --topology $XML/eas-tioga.xml --task-cpus '0;128'
expect "bad CPU list" 1 "" 'dist-bind: task 0 CPUs="0-x"' -- --topology $XML/eas-tioga.xml --task-cpus '0-x'
expect "more tasks than GPUs" 1 "" "dist-bind: 3 tasks with 1 GPU each need 3 GPUs, but there are 2" -- \
    --topology $XML/cts1-pascal.xml --task-cpus '0;1;2'
expect "GPU not in the topology" 1 "" "dist-bind: Slurm's GPU 9, but the topology shows only 8 GPUs" -- \
    --topology $XML/eas-tioga.xml --task-cpus 0 --gpus 9
expect "bad --gpus-per-task" 1 "" 'dist-bind: --gpus-per-task="0"' -- \
    --topology $XML/eas-tioga.xml --task-cpus 0 --gpus-per-task 0

# Bad usage: exit 2 and the usage text.
expect "unknown option" 2 "" 'dist-bind: unknown argument "--frobnicate"' -- --frobnicate
expect "no CPUs given" 2 "" "dist-bind: give either --task-cpus or --step-cores" -- --topology $XML/eas-tioga.xml
expect "--step-cores without --tasks" 2 "" "dist-bind: --step-cores needs --tasks" -- --step-cores 0-3
expect "option twice" 2 "" "dist-bind: --gpus given twice" -- --task-cpus 0 --gpus 0 --gpus 1
out=$("${PLAN[@]}" --help); rc=$?
checks=$((checks + 1))
if [ $rc -eq 0 ] && [[ "$out" == usage:*"task N cpus LIST gpus LIST numa N"* ]]; then echo "  ok   --help"; else
    fails=$((fails + 1)); echo "  FAIL --help: rc $rc: $out"; fi

echo "dryrun: $checks checks, $fails failed"
[ $fails -eq 0 ]
