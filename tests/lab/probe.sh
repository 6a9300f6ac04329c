#!/bin/bash
# Run as every task of a lab job: one tab-separated line of the variables
# the tests look at ("\x01" marks an unset variable).
HOSTNAME_=$(hostname)
line="PROBE"
for v in SLURM_PROCID SLURM_LOCALID SLURMD_NODENAME SLURM_STEP_ID RANK WORLD_SIZE LOCAL_RANK \
         LOCAL_WORLD_SIZE NODE_RANK GROUP_RANK GROUP_WORLD_SIZE MASTER_ADDR MASTER_PORT \
         CUDA_VISIBLE_DEVICES GPU_DEVICE_ORDINAL ROCR_VISIBLE_DEVICES CUDA_DEVICE_ORDER \
         DIST_BIND_DEVICE DIST_BIND_GPUS DIST_BIND_MODE DIST_BIND_RANK0_ADDR HOSTNAME_; do
    if [ -n "${!v+x}" ]; then line+=$'\t'"$v=${!v}"; else line+=$'\t'"$v="$'\x01'; fi
done
printf '%s\n' "$line"
