#!/bin/bash
# Run as every task of a lab job: one tab-separated line of the variables
# the tests look at ("\x01" marks an unset variable), plus
#   OPEN_   the lab's fake GPUs ($PWD/dev/nvidiaN: srun runs in the lab
#           directory) this task can open, by index: open() fails with ENXIO
#           (no driver) where the device cgroup allows the device, EPERM
#           where it denies it;
#   ALLOC_  on each node's local task 0, the job's GPUs on this node as
#           slurmctld lists them (scontrol show job -d: "IDX:0-2").
export LC_ALL=C
HOSTNAME_=$(hostname)
OPEN_=""
for f in dev/nvidia[0-9]*; do
    [ -c "$f" ] || continue
    err=$( (exec 3<"$f") 2>&1 )
    case $err in "" | *"No such device"*) OPEN_+="${OPEN_:+,}${f#dev/nvidia}" ;; esac
done
OPEN_=$(tr ',' '\n' <<<"$OPEN_" | sort -n | paste -sd, -)
ALLOC_=$'\x01'
if [ "${SLURM_LOCALID:-}" = 0 ] && [ -n "${SLURM_JOB_ID:-}" ]; then
    ALLOC_=""
    while read -r line; do
        nodes=${line#*Nodes=}; nodes=${nodes%% *}
        # Every GRES entry's IDX (a node with two GPU types lists two):
        # "GRES=gpu:v100:2(IDX:2-3),gpu:a100:2(IDX:0-1)".
        idx=$(grep -o 'IDX:[^)]*' <<<"$line" | sed 's/^IDX://' | paste -sd, -)
        scontrol show hostnames "$nodes" | grep -qx "$HOSTNAME_" && ALLOC_=$idx
    done < <(scontrol show job -d "$SLURM_JOB_ID" | grep ' Nodes=')
fi
line="PROBE"
for v in SLURM_PROCID SLURM_LOCALID SLURMD_NODENAME SLURM_STEP_ID RANK WORLD_SIZE LOCAL_RANK \
         LOCAL_WORLD_SIZE NODE_RANK GROUP_RANK GROUP_WORLD_SIZE MASTER_ADDR MASTER_PORT \
         CUDA_VISIBLE_DEVICES GPU_DEVICE_ORDINAL ROCR_VISIBLE_DEVICES HIP_VISIBLE_DEVICES ZE_AFFINITY_MASK \
         CUDA_DEVICE_ORDER DIST_BIND_DEVICE DIST_BIND_GPUS DIST_BIND_MODE DIST_BIND_RANK0_ADDR \
         DIST_BIND_NODE_RANKS DIST_BIND_SRUN_DEVICES HOSTNAME_ OPEN_ ALLOC_; do
    if [ -n "${!v+x}" ] && [ "${!v}" != $'\x01' ]; then line+=$'\t'"$v=${!v}"; else line+=$'\t'"$v="$'\x01'; fi
done
printf '%s\n' "$line"
