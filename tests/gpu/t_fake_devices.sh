#!/usr/bin/env bash
# Device choice against the fake driver (tests/gpu/fake): GPUs described out
# of bus order, lists that end early, UUIDs and MIG instances, two ranks on
# one GPU told by UUID (also in exclusive-process mode, where only one of
# them could open it), a GPU held by a process outside the step, a node with
# CUDA 12's runtime only, and why libcudart did not load.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
need_built "$PROBE" "$RANKP"
# Described out of bus order: CUDA numbers them by bus.
use_fake "bus=0000:5e:00.0;bus=0000:1b:00.0;bus=0000:3b:00.0,mig=2;bus=0000:86:00.0,mode=exclusive;bus=0000:af:00.0,mode=prohibited"
mapfile -t UUID < <(nvidia-smi --query-gpu=uuid --format=csv,noheader)
bus_of() { sed -n 's/^DEVICE [0-9]* BUS //p' <<<"$1"; }

out=$(one_rank env DIST_BIND_DEVICE=1 "$PROBE")
[ "$(bus_of "$out")" = 0000:3B:00.0 ] && ok "device 1 is the second GPU by bus (3b), not the second described" \
    || bad "device 1: $out"
out=$(one_rank env CUDA_VISIBLE_DEVICES="${UUID[2]},${UUID[0]}" DIST_BIND_DEVICE=1 "$PROBE")
[ "$(bus_of "$out")" = 0000:1B:00.0 ] && ok "CUDA_VISIBLE_DEVICES by UUID: device 1 is the second UUID's GPU" \
    || bad "UUIDs: $out"
out=$(one_rank env CUDA_VISIBLE_DEVICES="${UUID[2]:0:12}" "$PROBE")
[ "$(bus_of "$out")" = 0000:5E:00.0 ] && ok "a unique UUID prefix names its GPU" || bad "UUID prefix: $out"

# The list ends at the first entry that names no visible device.
out=$(one_rank env CUDA_VISIBLE_DEVICES=2,7,0 DIST_BIND_DEVICE=1 "$PROBE")
[[ $out == "ERR DISTBIND_ERR_DEVICE"*"device 1 (from DIST_BIND_DEVICE) does not exist: CUDA sees 1 device (CUDA_VISIBLE_DEVICES=\"2,7,0\")"* ]] \
    && ok "CUDA_VISIBLE_DEVICES=2,7,0: CUDA sees 1 device, and the error says so" || bad "2,7,0: $out"
out=$(one_rank env CUDA_VISIBLE_DEVICES=-1 "$PROBE")
[[ $out == "ERR DISTBIND_ERR_NO_GPU"*"CUDA sees no device"* ]] && ok "CUDA_VISIBLE_DEVICES=-1: no GPU" || bad "-1: $out"

# MIG: the process uses only the first instance listed; two ranks on two
# instances of one GPU share a bus id but not a GPU.
out=$(one_rank env CUDA_VISIBLE_DEVICES=1 "$PROBE")
[ "$(bus_of "$out")" = 0000:3B:00.0 ] && ok "a MIG-enabled GPU listed by index shows its first instance" \
    || bad "MIG by index: $out"
# The instances' UUIDs come from the description; name them explicitly.
use_fake "bus=0000:3b:00.0,mig=MIG-11111111-2222-3333-4444-555555555555+MIG-66666666-7777-8888-9999-000000000000;bus=0000:5e:00.0"
RANK_ENV_0=(CUDA_VISIBLE_DEVICES=MIG-11111111-2222-3333-4444-555555555555 DIST_BIND_DEVICE=0)
RANK_ENV_1=(CUDA_VISIBLE_DEVICES=MIG-66666666-7777-8888-9999-000000000000 DIST_BIND_DEVICE=0)
ranks 2 -- "$RANKP" none
[[ ${OUT[0]} == "DEVICE 0 BUS 0000:3B:00.0"*OK && ${OUT[1]} == "DEVICE 0 BUS 0000:3B:00.0"*OK ]] \
    && ok "two ranks on two MIG instances of one GPU: both fine" || bad "MIG pair: ${OUT[*]}"
RANK_ENV_0=(CUDA_VISIBLE_DEVICES=MIG-11111111-2222-3333-4444-555555555555,MIG-66666666-7777-8888-9999-000000000000 DIST_BIND_DEVICE=1)
ranks 2 -- "$RANKP" none
[[ ${OUT[0]} == "ERR DISTBIND_ERR_DEVICE"*"device 1 (from DIST_BIND_DEVICE) does not exist: CUDA sees 1 device"* ]] \
    && ok "two MIG instances listed: CUDA uses only the first" || bad "two MIG instances: ${OUT[0]}"
RANK_ENV_0=(CUDA_VISIBLE_DEVICES=MIG-66666666-7777-8888-9999-000000000000 DIST_BIND_DEVICE=0)
ranks 2 -- "$RANKP" none
[[ ${OUT[0]} == *"ranks 0 and 1 would both use GPU GPU-66666666-7777-8888-9999-000000000000 (0000:3B:00.0)"* ]] \
    && ok "two ranks on one MIG instance: named by the instance's UUID" || bad "one MIG instance: ${OUT[0]}"
unset RANK_ENV_0 RANK_ENV_1

# Exclusive-process mode: two ranks of the step on it are named as sharing
# it (cudaSetDevice comes after that check); a process outside the step
# holding it is named as such.
use_fake "bus=0000:1b:00.0,mode=exclusive;bus=0000:3b:00.0,mode=prohibited;bus=0000:5e:00.0"
ranks 2 DIST_BIND_DEVICE=0 -- "$RANKP" none
for r in 0 1; do
    [[ ${OUT[$r]} == "ERR DISTBIND_ERR_DEVICE"*"ranks 0 and 1 would both use GPU "*"(0000:1B:00.0) on $(hostname) "* ]] \
        && ok "exclusive GPU, two ranks: rank $r names both" || bad "exclusive pair, rank $r: ${OUT[$r]}"
done
coproc HOLD { one_rank env DIST_BIND_DEVICE=0 "$RANKP" hold; }
# bash unsets HOLD_PID as soon as the coprocess exits: keep it in a variable of our own.
hold_pid=$HOLD_PID
read -r held <&"${HOLD[0]}"
RANK_ENV_1=(DIST_BIND_DEVICE=2)
ranks 2 -- "$RANKP" none
for r in 0 1; do
    [[ ${OUT[$r]} == "ERR DISTBIND_ERR_DEVICE"*"rank 0 on "*"cudaSetDevice(0): cudaErrorDevicesUnavailable"*"exclusive-process compute mode and another process, outside this step, is using it"* ]] \
        && ok "exclusive GPU held outside the step: rank $r says so" || bad "held outside ($held), rank $r: ${OUT[$r]}"
done
exec {HOLD[1]}>&-
wait "$hold_pid" 2>/dev/null
unset RANK_ENV_1
out=$(one_rank env DIST_BIND_DEVICE=1 "$PROBE")
[[ $out == "ERR DISTBIND_ERR_DEVICE"*"cudaSetDevice(1)"*"prohibited compute mode"* ]] && ok "prohibited mode is named" \
    || bad "prohibited: $out"

# A node with CUDA 12's runtime only (this machine's CUDA 13 hidden in a
# mount namespace): libdistbind finds libcudart.so.12 on the loader path.
if [ "$(id -u)" = 0 ] && command -v unshare >/dev/null; then
    hide='for d in /usr/local/cuda-*; do [ -d "$d" ] && mount -t tmpfs none "$d"; done; exec "$@"'
    out=$(env LD_LIBRARY_PATH="$BUILD/fake-cuda12" FAKEGPU_DEVICES=2 unshare --mount --propagation private \
        sh -c "$hide" sh bash -c ". '$ROOT/tests/gpu/lib.sh'; one_rank env DIST_BIND_DEVICE=1 '$PROBE'")
    [ "$(bus_of "$out")" = 0000:11:00.0 ] && ok "CUDA 12 only: libcudart.so.12 is used" || bad "CUDA 12 only: $out"
    # Nothing loads: every name tried and why, the first (a broken
    # libcudart.so.13) included.
    junk=$(mktemp -d)
    echo "not a library" >"$junk/libcudart.so.13"
    out=$(env LD_LIBRARY_PATH="$junk" FAKEGPU_DEVICES=2 unshare --mount --propagation private \
        sh -c "$hide" sh bash -c ". '$ROOT/tests/gpu/lib.sh'; one_rank '$PROBE'")
    rm -rf "$junk"
    [[ $out == "ERR DISTBIND_ERR_UNAVAILABLE"*"cannot load libcudart: $junk/libcudart.so.13: "*"libcudart.so.12: cannot open shared object file"*"libcudart.so.11: "*"libcudart.so: "*"/lib64/libcudart.so.13: "* ]] \
        && ok "libcudart not loadable: each name tried and why, the first first" || bad "no libcudart: $out"
else
    bad "the CUDA 12 node needs root and unshare (a mount namespace hides CUDA 13)"
fi
done_
