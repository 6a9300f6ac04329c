#!/usr/bin/env bash
# GPU test: the device libdistbind sets is the GPU the environment names,
# under permuted CUDA_VISIBLE_DEVICES (checked by PCI bus id against
# nvidia-smi), and bad ordinals fail with a message naming their source.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
need_built "$PROBE"
load_gpu_buses
out=$(one_rank env CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES=0 "$PROBE")
case $out in
    "ERR DISTBIND_ERR_NO_GPU"* | "ERR DISTBIND_ERR_UNAVAILABLE"*) skip "CUDA has no usable GPU: $out" ;;
esac
n=${#BUS[@]}
echo "GPUs in PCI order: ${BUS[*]}"

# Every rotation of the GPU list, reversed too; every ordinal in it.
lists=()
for ((s = 0; s < n; s++)); do
    fwd="" rev=""
    for ((i = 0; i < n; i++)); do fwd+="${fwd:+,}$(((s + i) % n))"; rev="$(((s + i) % n))${rev:+,}$rev"; done
    lists+=("$fwd" "$rev")
done
for vis in "${lists[@]}"; do
    IFS=, read -ra order <<<"$vis"
    for ((d = 0; d < ${#order[@]}; d++)); do
        want=${BUS[${order[$d]}]}
        out=$(one_rank env CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES="$vis" DIST_BIND_DEVICE=$d "$PROBE")
        got=$(sed -n 's/^DEVICE [0-9]* BUS //p' <<<"$out" | norm_bus)
        [ "$got" = "$want" ] && ok "CUDA_VISIBLE_DEVICES=$vis DIST_BIND_DEVICE=$d -> $got" \
            || bad "CUDA_VISIBLE_DEVICES=$vis DIST_BIND_DEVICE=$d: want GPU $want, got: $out"
    done
done

# Without DIST_BIND_DEVICE the local rank is the ordinal.
out=$(one_rank env CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES=0 "$PROBE")
[ "$(sed -n 's/^DEVICE [0-9]* BUS //p' <<<"$out" | norm_bus)" = "${BUS[0]}" ] && ok "LOCAL_RANK=0 -> GPU 0" || bad "LOCAL_RANK=0: $out"

# A GPU named by UUID is device 0.
uuid=$(nvidia-smi --query-gpu=uuid --format=csv,noheader | head -1)
out=$(one_rank env CUDA_VISIBLE_DEVICES="$uuid" "$PROBE")
[ "$(sed -n 's/^DEVICE [0-9]* BUS //p' <<<"$out" | norm_bus)" = "${BUS[0]}" ] && ok "CUDA_VISIBLE_DEVICES=<uuid> -> GPU 0" \
    || bad "CUDA_VISIBLE_DEVICES=$uuid: $out"

# An ordinal past the visible list: the error names its source and the list.
out=$(one_rank env CUDA_VISIBLE_DEVICES=0 DIST_BIND_DEVICE=1 "$PROBE")
[[ $out == "ERR DISTBIND_ERR_DEVICE"*"device 1 (from DIST_BIND_DEVICE) does not exist: CUDA sees 1 device (CUDA_VISIBLE_DEVICES=\"0\")"* ]] \
    && ok "DIST_BIND_DEVICE=1 with one visible GPU is refused" || bad "DIST_BIND_DEVICE=1: $out"
# Local rank 1 of two ranks on a node with one visible GPU: both ranks get
# the error, naming rank 1 and where its ordinal came from.  (A world of one
# cannot have LOCAL_RANK=1: the library refuses that before CUDA.)
ranks 2 CUDA_VISIBLE_DEVICES=0 -- "$PROBE"
for r in 0 1; do
    [[ ${OUT[$r]} == "ERR DISTBIND_ERR_DEVICE"*"rank 1 on "*"device 1 (from LOCAL_RANK) does not exist"* ]] \
        && ok "rank $r: LOCAL_RANK=1 with one visible GPU is refused" || bad "rank $r, LOCAL_RANK=1: ${OUT[$r]}"
done
# Nothing visible at all.
out=$(one_rank env CUDA_VISIBLE_DEVICES= "$PROBE")
[[ $out == "ERR DISTBIND_ERR_NO_GPU"* ]] && ok "CUDA_VISIBLE_DEVICES= -> no GPU" || bad "CUDA_VISIBLE_DEVICES empty: $out"
done_
